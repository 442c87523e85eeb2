"""The parts of one emulator, handed to every route through `app.state.services`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from toolkit.emulator.core.chaos import Chaos
from toolkit.emulator.core.clock import Clock
from toolkit.emulator.core.control import Control
from toolkit.emulator.core.db import Database
from toolkit.emulator.core.engine import Engine
from toolkit.emulator.core.faults import Faults
from toolkit.emulator.core.operations import Operations
from toolkit.emulator.core.state import State, to_ms
from toolkit.emulator.delivery.deliveries import Deliveries
from toolkit.emulator.intake.uploads import PageFolder

if TYPE_CHECKING:
    from starlette.requests import Request

    from toolkit.emulator.core.scheduler import Scheduler

__all__ = ["Services", "services_of"]


@dataclass
class Services:
    """The parts of one emulator, made together and shared by its routes."""

    db: Database
    state: State
    clock: Clock
    faults: Faults
    engine: Engine
    files: PageFolder
    operations: Operations
    scheduler: Scheduler
    admin_token: str
    deliveries: Deliveries
    control: Control
    chaos: Chaos = field(default_factory=Chaos)

    def now_ms(self) -> int:
        return to_ms(self.clock.now())


def services_of(request: Request) -> Services:
    """The emulator's `Services` a request is answered by."""
    services: Services = request.app.state.services
    return services

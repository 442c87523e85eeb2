"""The parts of one emulator, handed to every route through `app.state.services`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from toolkit.emulator.clock import Clock
from toolkit.emulator.db import Database
from toolkit.emulator.engine import Engine
from toolkit.emulator.faults import Faults
from toolkit.emulator.operations import Operations
from toolkit.emulator.state import State, to_ms
from toolkit.emulator.uploads import PageFiles

if TYPE_CHECKING:
    from starlette.requests import Request

    from toolkit.emulator.scheduler import Scheduler


@dataclass
class Services:
    db: Database
    state: State
    clock: Clock
    faults: Faults
    engine: Engine
    files: PageFiles
    operations: Operations
    scheduler: Scheduler
    admin_token: str
    deliveries: Any = None  # toolkit.emulator.deliveries.Deliveries once it exists

    def now_ms(self) -> int:
        return to_ms(self.clock.now())


def services_of(request: Request) -> Services:
    services: Services = request.app.state.services
    return services

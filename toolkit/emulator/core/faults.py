"""Injected faults: failing and stalling runs, slow answers, and 503s.

Kept in the database and drawn from seeded generators, so a test sees the same outcome
on every run (docs/emulator.md, "Faults").
"""

from __future__ import annotations

import random
import threading
from dataclasses import asdict, dataclass
from typing import Any, Literal

from toolkit.emulator.core.fields import rate_field, whole_field
from toolkit.emulator.core.state import State
from toolkit.emulator.routes.errors import EmulatorError

__all__ = ["Fate", "FaultSettings", "Faults"]

Fate = Literal["ok", "fail", "stall"]
_MAX_LATENCY_MS = 60_000


@dataclass(frozen=True)
class FaultSettings:
    """The faults the admin asked for: failure, stall and error rates, latency, seed."""

    failure_rate: float = 0.0
    stall_rate: float = 0.0
    latency_ms: int = 0
    error_rate: float = 0.0
    seed: int = 0

    @classmethod
    def from_json(cls, body: Any) -> FaultSettings:
        """Settings from the admin body; missing fields are 0, a bad value is a 400."""
        if not isinstance(body, dict):
            raise EmulatorError(400, "the body must be a JSON object of fault settings")
        unknown = set(body) - set(_JSON_NAMES.values())
        if unknown:
            raise EmulatorError(
                400,
                f"unknown fault settings {sorted(unknown)}; use failureRate, stallRate, "
                "latencyMs, errorRate and seed",
            )
        settings = cls(
            failure_rate=rate_field(body.get("failureRate", 0.0), "failureRate"),
            stall_rate=rate_field(body.get("stallRate", 0.0), "stallRate"),
            latency_ms=whole_field(body.get("latencyMs", 0), "latencyMs", maximum=_MAX_LATENCY_MS),
            error_rate=rate_field(body.get("errorRate", 0.0), "errorRate"),
            seed=whole_field(body.get("seed", 0), "seed", minimum=None),
        )
        if settings.failure_rate + settings.stall_rate > 1:
            raise EmulatorError(400, "failureRate and stallRate together must be at most 1")
        return settings

    def to_json(self) -> dict[str, Any]:
        return {_JSON_NAMES[name]: value for name, value in asdict(self).items()}


_JSON_NAMES = {
    "failure_rate": "failureRate",
    "stall_rate": "stallRate",
    "latency_ms": "latencyMs",
    "error_rate": "errorRate",
    "seed": "seed",
}


class Faults:
    """The current settings, and the seeded draws made from them."""

    def __init__(self, state: State) -> None:
        self._state = state
        self._lock = threading.Lock()
        stored = state.setting("faults")
        self.settings = FaultSettings(**stored) if stored else FaultSettings()
        self._requests = random.Random(self.settings.seed)

    def put(self, settings: FaultSettings) -> FaultSettings:
        # The database's lock first, then ours (never the other way round): a run
        # starting inside a transaction draws its fate while holding the database's.
        with self._state.db.transaction():
            self._state.put_setting("faults", asdict(settings))
            self._state.put_setting("fates_drawn", 0)
            with self._lock:
                self.settings = settings
                self._requests = random.Random(settings.seed)
        return settings

    def answer_503(self) -> bool:
        """Draw whether this `/api/v1` request fails before anything is done."""
        rate = self.settings.error_rate
        if rate <= 0:
            return False
        with self._lock:
            return self._requests.random() < rate

    def draw_fate(self, translate_steps: int) -> tuple[Fate, int]:
        """A new run's fate, and the translation step at which it fails or stalls."""
        with self._state.db.transaction():
            drawn = int(self._state.setting("fates_drawn") or 0)
            self._state.put_setting("fates_drawn", drawn + 1)
            settings = self.settings
        rng = random.Random(f"{settings.seed}:{drawn}")
        roll, step = rng.random(), rng.randrange(max(translate_steps, 1))
        if roll < settings.failure_rate:
            return "fail", step
        if roll < settings.failure_rate + settings.stall_rate:
            return "stall", step
        return "ok", step

"""Moves time forward: run steps and webhook attempts, interleaved in time order.

How the manual and realtime clocks advance, and why the reading is saved: docs/emulator.md.
"""

from __future__ import annotations

import logging
import threading
import time
from datetime import datetime, timedelta

from toolkit.emulator.core.clock import Clock
from toolkit.emulator.core.control import Control
from toolkit.emulator.core.engine import Engine
from toolkit.emulator.core.state import State, to_ms
from toolkit.emulator.delivery.deliveries import Deliveries

__all__ = ["CLOCK_SETTING", "Scheduler"]

log = logging.getLogger(__name__)

CLOCK_SETTING = "clock_ms"
_IDLE_WAIT = 0.5
_SAVE_EVERY = 1.0


class Scheduler:
    """What happens as the clock moves: runs advance and deliveries are sent, in time order."""

    def __init__(
        self,
        clock: Clock,
        engine: Engine,
        state: State,
        deliveries: Deliveries,
        control: Control | None = None,
    ) -> None:
        self.control = control
        self.clock = clock
        self.engine = engine
        self.state = state
        self.deliveries = deliveries
        self._lock = threading.RLock()
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        engine.on_work = self.wake

    def next_due(self) -> datetime | None:
        times = [self.engine.next_due(), self.deliveries.next_due()]
        if self.control is not None:
            times.append(self.control.next_due())
        present = [t for t in times if t is not None]
        return min(present) if present else None

    def advance(self, seconds: float) -> datetime:
        """Manual clock: perform everything due in the next `seconds`, in time order."""
        if self.clock.mode != "manual":
            raise RuntimeError("the realtime clock moves by itself; only a manual one advances")
        with self._lock:
            target = self.clock.now() + timedelta(seconds=seconds)
            while (due := self.next_due()) is not None and due <= target:
                self.clock.set(due)
                self._run_at(due)
            self.clock.set(target)
            self.save_clock()
            return self.clock.now()

    def _run_at(self, when: datetime) -> None:
        self.engine.run_due(when)
        self.deliveries.run_due(when)
        if self.control is not None:
            self.control.run_due(when)

    def save_clock(self) -> None:
        self.state.put_setting(CLOCK_SETTING, to_ms(self.clock.now()))

    # -- the realtime clock's thread ------------------------------------------------------

    def start(self) -> None:
        if self.clock.mode != "realtime" or self._thread is not None:
            return
        self._thread = threading.Thread(target=self._loop, name="cts-emulator-clock", daemon=True)
        self._thread.start()

    def wake(self) -> None:
        self._wake.set()

    def stop(self) -> None:
        self._stopping.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
            self._thread = None
        with self._lock:
            self.save_clock()

    def _loop(self) -> None:
        saved_at = time.monotonic()
        while not self._stopping.is_set():
            try:
                wait = self._tick()
            except Exception:  # keep the clock alive; the next tick retries
                log.exception("the emulator's clock thread failed a step")
                wait = _IDLE_WAIT
            if time.monotonic() - saved_at > _SAVE_EVERY:
                self.save_clock()
                saved_at = time.monotonic()
            if wait > 0:
                self._wake.wait(wait)
                self._wake.clear()

    def _tick(self) -> float:
        """Run what is due now; return how long to wait for the next moment."""
        with self._lock:
            due = self.next_due()
            if due is not None and due <= self.clock.now():
                self._run_at(due)
                return 0.0
        if due is None:
            return _IDLE_WAIT
        return min(_IDLE_WAIT, self.clock.real_seconds_until(due))

"""The emulator's clock: every time the API shows comes from here.

`manual` stands still until `set()` moves it (the admin clock route does, step by step,
so that each run step and delivery happens at its own simulated time). `realtime` runs at
`speed` simulated seconds per real second from the moment it was made. Both start at
`start` (tests name their instant, so nothing depends on the hour they run at), else at
the wall-clock time of start-up.
"""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta
from typing import Literal

__all__ = ["Clock", "ClockMode", "iso"]

ClockMode = Literal["manual", "realtime"]


class Clock:
    """The emulator's time: manual (advanced by the caller) or real time at `speed`."""

    def __init__(
        self, mode: ClockMode = "manual", *, speed: float = 60.0, start: datetime | None = None
    ) -> None:
        if mode not in ("manual", "realtime"):
            raise ValueError(f"clock must be 'manual' or 'realtime', not {mode!r}")
        if speed <= 0:
            raise ValueError(f"speed must be positive, not {speed}")
        if start is not None and start.tzinfo is None:
            raise ValueError(f"start must carry its time zone (UTC, say), not {start.isoformat()}")
        self.mode: ClockMode = mode
        self.speed = speed
        self._start = (start or datetime.now(UTC)).astimezone(UTC)
        self._real_start = time.monotonic()
        self._manual_now = self._start
        self._lock = threading.Lock()

    def now(self) -> datetime:
        if self.mode == "manual":
            with self._lock:
                return self._manual_now
        elapsed = (time.monotonic() - self._real_start) * self.speed
        return self._start + timedelta(seconds=elapsed)

    def set(self, when: datetime) -> None:
        """Move a manual clock forward to `when` (never backwards)."""
        if self.mode != "manual":
            raise RuntimeError("only a manual clock is set by hand")
        with self._lock:
            if when > self._manual_now:
                self._manual_now = when

    def real_seconds_until(self, when: datetime) -> float:
        """How long a realtime clock takes to reach `when`, in real seconds."""
        return max(0.0, (when - self.now()).total_seconds() / self.speed)


def iso(when: datetime) -> str:
    """ISO 8601 in UTC with milliseconds and a `Z`, as the service writes times."""
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{when.microsecond // 1000:03d}Z"


def _millis(when: datetime) -> int:
    """Milliseconds since 1970, as `lastChapterAt` is written."""
    return int(when.timestamp() * 1000)

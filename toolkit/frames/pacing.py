"""How many of a pull's requests are in flight at once: adaptive, polite and fast.

`Pace` is a limit on requests in flight that moves with the service's answers, the way
TCP paces a connection:

- It starts modestly (`_START`) and grows while answers come back fast and clean: by one
  per answer at first (doubling each round of answers), by one per round once it has
  had to back off.
- It halves on a 429, a 5xx or a request that got no answer, at most once per round
  (the answers already on their way say nothing new), and waits out a `Retry-After`
  before sending anything else.
- It shrinks by a quarter when answers slow down: when the recent latency (a quick
  moving average) passes twice the usual latency (a slow one) and 10 ms more. A sharp
  rise is queueing at the service; a latency that creeps up as the limit grows, or stays
  high, is not held against it (the slow average follows): on a busy machine the
  client's own wait for the CPU shows up as latency too, and measured against the
  fastest answer ever seen it kept the pace at a fraction of what the service could
  take (the approach of Netflix's concurrency-limits "gradient", simplified).
- It never goes under 1 or over `CEILING`.

A round is as many answers as the limit when it last moved. `Pace(fixed=n)` keeps `n`
in flight whatever happens (what `pull(concurrency=n)` asks for).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

__all__ = ["CEILING", "Pace"]

_START = 4
CEILING = 32
_SLOW_FACTOR = 2.0
_SLOW_MARGIN = 0.010  # seconds: jitter of a fast loopback answer is not a slowdown
_RECENT_WEIGHT = 0.1  # the quick average: about the last 10 answers
_USUAL_WEIGHT = 0.01  # the slow one: about the last 100
_BACK_OFF_STATUSES = frozenset({429, 500, 502, 503, 504})


class Pace:
    """A limit on requests in flight, moved by what each attempt's answer says."""

    def __init__(
        self,
        *,
        fixed: int | None = None,
        start: int = _START,
        ceiling: int = CEILING,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], object] = time.sleep,
    ) -> None:
        if fixed is not None and fixed < 1:
            raise ValueError(f"concurrency must be 1 or more, not {fixed}")
        self.fixed = fixed
        self.ceiling = fixed or ceiling
        self.limit = float(fixed or min(start, ceiling))
        self.peak = self.limit
        self.backoffs = 0
        self.retries = 0
        self._clock, self._sleep = clock, sleep
        self._in_flight = 0
        self._slow_start = True
        self._round_left = 0  # answers to go before the limit may move down again
        self._usual: float | None = None
        self._recent: float | None = None
        self._paused_until = 0.0
        self._changed = threading.Condition()

    @property
    def size(self) -> int:
        """Requests allowed in flight now."""
        return max(1, int(self.limit))

    @contextmanager
    def slot(self) -> Iterator[None]:
        """Hold one of the requests in flight for the duration of the block."""
        self._acquire()
        try:
            yield
        finally:
            with self._changed:
                self._in_flight -= 1
                self._changed.notify_all()

    def _acquire(self) -> None:
        while True:
            with self._changed:
                pause = self._paused_until - self._clock()
                if pause <= 0 and self._in_flight < self.size:
                    self._in_flight += 1
                    return
                if pause <= 0:
                    self._changed.wait(timeout=1.0)
                    continue
            self._sleep(pause)  # a Retry-After: outside the lock, so answers still count

    def observe(self, status: int | None, seconds: float, retry_after: float | None) -> None:
        """One attempt's outcome: its status (None when no answer came) and its latency."""
        with self._changed:
            self._round_left -= 1
            if status is None or status in _BACK_OFF_STATUSES:
                self.retries += 1
                if retry_after:
                    self._paused_until = max(self._paused_until, self._clock() + retry_after)
                self._back_off(0.5)
            elif status < 400:
                self._answered(seconds)
            self._changed.notify_all()

    def _answered(self, seconds: float) -> None:
        if self._recent is None or self._usual is None:
            self._recent = self._usual = seconds
        else:
            self._recent += _RECENT_WEIGHT * (seconds - self._recent)
            self._usual += _USUAL_WEIGHT * (seconds - self._usual)
        if self._recent > self._usual * _SLOW_FACTOR + _SLOW_MARGIN:
            self._back_off(0.75)
        elif self.fixed is None:
            step = 1.0 if self._slow_start else 1.0 / self.limit
            self.limit = min(float(self.ceiling), self.limit + step)
            self.peak = max(self.peak, self.limit)

    def _back_off(self, factor: float) -> None:
        if self.fixed is not None or self._round_left > 0:
            return
        self._slow_start = False
        self.limit = max(1.0, self.limit * factor)
        self._round_left = self.size
        self.backoffs += 1
        # Latency measured at the old limit says nothing about the new one.
        self._recent = self._usual

"""When a request is tried again, and after how long: pure decisions, no I/O, no sleeping.

The rules are in docs/client.md ("Retries").
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

import httpx

from toolkit.timestamps import parse_http_date

__all__ = ["BodyNotSent", "RetryPolicy", "never_sent", "parse_retry_after"]

_RETRY_STATUSES = frozenset({429, 502, 503, 504})


class BodyNotSent(httpx.WriteError):
    """The connection broke before httpx had written the request's whole body: no service
    acts on a request it did not receive whole (its length or last chunk is missing)."""


# The connection was never made, or broke before the whole request was written: the
# service cannot have acted.
_NOT_SENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout, BodyNotSent)
# Failures worth another try for a request that may be repeated.
_TRANSIENT = (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError)


def never_sent(error: httpx.TransportError) -> bool:
    """True when the request cannot have reached the service."""
    return isinstance(error, _NOT_SENT)


def parse_retry_after(value: str | None, *, now: datetime | None = None) -> float | None:
    """`Retry-After` in seconds (from seconds or an HTTP date); None when absent or unreadable."""
    if value is None or not value.strip():
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    when = parse_http_date(value)
    if when is None:
        return None
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


@dataclass(frozen=True)
class _Delay:
    """What to do after a failed attempt: wait `seconds` and try again, or stop.

    `too_long` is set when the service asked (with Retry-After) for a wait past the cap.
    """

    seconds: float | None
    too_long: float | None = None

    @property
    def retry(self) -> bool:
        return self.seconds is not None


_STOP = _Delay(None)


@dataclass(frozen=True)
class RetryPolicy:
    """When a client tries again, and the clock it waits by: `Client(retry=RetryPolicy(...))`.

    Tests pass a constant jitter and a fake clock instead of waiting.

    Args:
        max_retries: Tries after the first, at most (0: never try again).
        base: The first wait, in seconds, before jitter; each later one doubles.
        cap: The longest wait between tries, in seconds, before jitter.
        max_retry_after: The longest wait a `Retry-After` may ask for; a longer one
            stops the retries and the error says how long the service asked for.
        jitter: Returns a float in [0, 1); a wait is between half and all of the
            doubled base.
        sleep: Waits a number of seconds; None for `time.sleep` (`Client`) or
            `asyncio.sleep` (`AsyncClient`, which awaits what it returns if it can).
        monotonic: Reads the clock that `wait_for_chapter` times out by.

    Raises:
        ValueError: `max_retries` or `max_retry_after` is below 0.
    """

    max_retries: int = 4
    base: float = 0.5
    cap: float = 8.0
    max_retry_after: float = 60.0
    jitter: Callable[[], float] = field(default=random.random, repr=False, compare=False)
    sleep: Callable[[float], object] | None = field(default=None, repr=False, compare=False)
    monotonic: Callable[[], float] = field(default=time.monotonic, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.max_retries < 0:
            raise ValueError(f"max_retries must be 0 or more, not {self.max_retries}")
        if self.max_retry_after < 0:
            raise ValueError(f"max_retry_after must be 0 or more, not {self.max_retry_after}")

    def backoff(self, attempt: int) -> float:
        """Seconds to wait after a failed attempt: the doubled base, capped, jittered.

        Args:
            attempt: The attempt that failed, 0 for the first.

        Returns:
            The seconds to wait.
        """
        ceiling = min(self.cap, self.base * 2.0**attempt)
        return ceiling * (0.5 + 0.5 * self.jitter())

    def after_response(self, response: httpx.Response, attempt: int, *, repeatable: bool) -> _Delay:
        """Whether and when to try again after an error answer.

        Only 429, 502, 503 and 504 are tried again; a `Retry-After` is honoured up to
        `max_retry_after`.

        Args:
            response: The error answer.
            attempt: The attempt that failed, 0 for the first.
            repeatable: Sending the request twice does no harm (a GET, or a create
                that can be recognised); a request that is not is tried again only
                after 429, which the service refused before acting.

        Returns:
            The wait before the next try, or a stop (with `too_long` set when the
            service asked for a wait past `max_retry_after`).
        """
        status = response.status_code
        if status not in _RETRY_STATUSES or attempt >= self.max_retries:
            return _STOP
        if status != 429 and not repeatable:
            return _STOP
        asked = parse_retry_after(response.headers.get("Retry-After"))
        if asked is None:
            return _Delay(self.backoff(attempt))
        if asked > self.max_retry_after:
            return _Delay(None, too_long=asked)
        return _Delay(asked)

    def after_error(self, error: httpx.TransportError, attempt: int, *, repeatable: bool) -> _Delay:
        """Whether and when to try again after a transport failure.

        Args:
            error: The httpx error.
            attempt: The attempt that failed, 0 for the first.
            repeatable: Sending the request twice does no harm; a request that is not
                is tried again only when the connection was never made.

        Returns:
            The wait before the next try, or a stop.
        """
        if attempt >= self.max_retries:
            return _STOP
        if never_sent(error) or (repeatable and isinstance(error, _TRANSIENT)):
            return _Delay(self.backoff(attempt))
        return _STOP

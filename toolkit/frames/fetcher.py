"""Concurrent reads for `toolkit.frames`: many GETs over one client's connection pool.

A thread pool over the sync `Client` rather than an `AsyncClient` on a private event
loop: httpx's sync client is safe to share between threads, its pool bounds the
connections, and a thread pool works the same in a script and inside Jupyter (whose
kernel thread already runs an event loop, so `asyncio.run` there would fail).

How many requests are in flight is up to a `Pace` (`toolkit.frames.pacing`), which the
client tells of every attempt through its public `on_attempt` hook: it starts modestly,
grows while answers are fast and clean, and backs off on 429s, 5xxs and slow answers.
`concurrency=n` fixes it at n. The fetcher times itself, keeps its deadline and pauses on
the clock of the client's `RetryPolicy` (`monotonic`, `sleep`), so a policy with a fake
clock fakes the whole pull.

Decisions the design leaves open:

- Resources that vanish between the list and the read (a project or chapter moved to the
  trash meanwhile, answered 404) are skipped: a snapshot shows the workspace as the
  service answered, and a chapter in the trash is gone from it anyway.
- A request that still fails after the client's own retries with an error that may pass
  (5xx, 429, no answer) does not end the pull: the answers in hand are kept and the
  failed requests are sent again in another pass, after a pause (1 s, doubling, at most
  30 s), until they all succeed or the pull's deadline (15 minutes by default) has
  passed; then `IncompletePull` says how many failed and why. Each such pause is logged
  as a warning (the command shows it on stderr). Any other error (a refused key, a 400)
  ends the pull at once: sending it again would not help.
- Until the service has answered once, no answer (a refused connection, an unknown host,
  a failed TLS handshake) ends the pull after the client's own retries with the client's
  `TransportError`: a wrong address or a service that is down would otherwise be retried
  silently for the whole deadline.
"""

from __future__ import annotations

import inspect
import itertools
import logging
import math
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TypeVar

from toolkit.errors import (
    ApiError,
    IncompletePull,
    NotFound,
    RateLimited,
    ServerError,
    TransportError,
)
from toolkit.frames.pacing import Pace
from toolkit.timestamps import parse_http_date

if TYPE_CHECKING:
    from toolkit.client import AttemptHook, Client, RetryPolicy
    from toolkit.models import ChapterDetail, ChapterListItem, Project

__all__ = ["DEFAULT_DEADLINE", "Fetcher"]

logger = logging.getLogger(__name__)

_T = TypeVar("_T")
_R = TypeVar("_R")

# Seconds a whole pull may take, retries and passes included.
DEFAULT_DEADLINE = 900.0
_PASS_PAUSE = 1.0
_PASS_PAUSE_CAP = 30.0
# Pulls with more requests than this show a progress bar unless told otherwise.
_PROGRESS_THRESHOLD = 50


def _service_date(client: Any) -> datetime | None:
    """The service's clock from the `Date` header of the client's latest answer, if known."""
    value = getattr(client, "last_response_date", None)
    if callable(value):
        value = value()
    if isinstance(value, datetime):
        return value.astimezone(UTC)
    return parse_http_date(value)


class Fetcher:
    """Sends a pull's GETs, paced, in passes until each has an answer or the deadline passes.

    `pulled_at` is the service clock of the first answer (`None` when the client does not
    tell it); `requests` counts the calls that succeeded; `seconds` runs from creation. A
    context manager: while open, the client tells the fetcher's pace of every attempt.
    """

    def __init__(
        self,
        client: Client,
        *,
        concurrency: int | None = None,
        progress: bool | None = None,
        deadline: float | None = DEFAULT_DEADLINE,
    ) -> None:
        if concurrency is not None and concurrency < 1:
            raise ValueError(f"concurrency must be 1 or more, not {concurrency}")
        if inspect.iscoroutinefunction(getattr(client, "list_projects", None)):
            raise TypeError(
                "frames are pulled with the blocking tk.Client (it runs requests "
                "concurrently itself); pass tk.Client(...) rather than tk.AsyncClient"
            )
        self.client = client
        self.progress = progress
        self.requests = 0
        self.pulled_at: datetime | None = None
        # The client's own clock, so that a policy with a fake clock moves ours too.
        policy: RetryPolicy | None = getattr(client, "retry", None)
        self._clock: Callable[[], float] = policy.monotonic if policy else time.monotonic
        self._sleep: Callable[[float], object] = (policy and policy.sleep) or time.sleep
        self.pace = Pace(fixed=concurrency, clock=self._clock, sleep=self._sleep)
        self._deadline = math.inf if deadline is None else self._clock() + deadline
        self._lock = threading.Lock()
        self._started = self._clock()
        self._bar: Any = None
        # A client that reports its attempts paces the pull; for anything else, each call.
        self._hooked = hasattr(client, "on_attempt")
        self._outer_hook: AttemptHook | None = None

    def __enter__(self) -> Fetcher:
        if self._hooked:
            self._outer_hook, self.client.on_attempt = self.client.on_attempt, self._observe
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._hooked:
            self.client.on_attempt = self._outer_hook

    def _observe(self, status: int | None, seconds: float, retry_after: float | None) -> None:
        self.pace.observe(status, seconds, retry_after)
        if self._outer_hook is not None:  # a hook the caller set is still told
            self._outer_hook(status, seconds, retry_after)

    @property
    def seconds(self) -> float:
        return self._clock() - self._started

    def _call(self, method: Callable[[_T], _R], argument: _T) -> _R:
        started = self._clock()
        result = method(argument)
        if not self._hooked:
            self.pace.observe(200, self._clock() - started, None)
        with self._lock:
            self.requests += 1
            if self.requests == 1:
                self.pulled_at = _service_date(self.client)
            if self._bar is not None:
                self._bar.update(1)
                self._bar.set_postfix(retries=self.pace.retries, refresh=False)
        return result

    def projects(self) -> list[Project]:
        found = self._passes(lambda _: self.client.list_projects(), ["projects"], "projects")
        return found["projects"]

    def chapters(self, project_ids: Sequence[str]) -> dict[str, list[ChapterListItem]]:
        """Each project's chapter list; projects answered 404 are left out."""
        return self._many(self.client.list_chapters, project_ids, "chapter lists")

    def chapter_details(self, chapter_ids: Sequence[str]) -> dict[str, ChapterDetail]:
        """Each chapter's detail; chapters answered 404 are left out."""
        return self._many(self.client.get_chapter, chapter_ids, "chapter details")

    def _many(self, method: Callable[[str], _R], ids: Sequence[str], what: str) -> dict[str, _R]:
        if not ids:
            return {}
        show = self.progress if self.progress is not None else len(ids) > _PROGRESS_THRESHOLD
        with _Bar(self, show, len(ids), what):
            return self._passes(method, ids, what)

    def _passes(self, method: Callable[[str], _R], ids: Sequence[str], what: str) -> dict[str, _R]:
        """Every id's answer, sending the failed ones again until the deadline."""
        found: dict[str, _R] = {}
        pending, failed = list(ids), {}
        answered = False
        for number in itertools.count():
            if self.requests == 0 and len(pending) > 1:
                # The first answer's Date header stamps the pull: send it alone, since
                # the client's latest answer is ambiguous once requests overlap.
                failed = self._pass(method, pending[:1], found)
                failed |= self._pass(method, pending[1:], found)
            else:
                failed = self._pass(method, pending, found)
            if not failed:
                return found
            answered = answered or self.requests > 0 or _any_answer(failed)
            if not answered and all(isinstance(e, TransportError) for e in failed.values()):
                raise next(iter(failed.values()))
            pause = min(_PASS_PAUSE_CAP, _PASS_PAUSE * 2**number)
            if self._clock() + pause > self._deadline:
                raise _incomplete(failed, len(ids), what, number + 1, self.seconds)
            pending = [item for item in pending if item in failed]
            logger.warning(
                "%d of %d requests for %s failed (%s); trying again in %.0f s",
                *(len(pending), len(ids), what, _reasons(failed), pause),
            )
            with self._lock:
                self.pace.retries += len(pending)
                if self._bar is not None:
                    self._bar.set_postfix(retries=self.pace.retries, waiting=f"{pause:.0f}s")
            self._sleep(pause)
        raise AssertionError("unreachable")

    def _pass(
        self, method: Callable[[str], _R], ids: Sequence[str], found: dict[str, _R]
    ) -> dict[str, Exception]:
        """Send each id once (paced); fill `found`; return the ids that failed and why."""
        if not ids:
            return {}

        def one(item: str) -> tuple[str, _R | None, Exception | None]:
            if self._clock() > self._deadline:
                return item, None, _NotSent("the pull's deadline passed before it was sent")
            with self.pace.slot():
                try:
                    return item, self._call(method, item), None
                except NotFound:
                    return item, None, None
                except _PASSING as exc:
                    return item, None, exc

        workers = min(self.pace.ceiling, len(ids))
        if workers == 1:
            outcomes = [one(item) for item in ids]
        else:
            with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="toolkit-pull") as pool:
                outcomes = list(pool.map(one, ids))
        failed = {}
        for item, value, error in outcomes:
            if error is not None:
                failed[item] = error
            elif value is not None:
                found[item] = value
        return failed


class _NotSent(Exception):
    """A request the pull did not send, its deadline having passed."""


# Errors that may pass with time: answered 5xx or 429, or no answer at all.
_PASSING = (ServerError, RateLimited, TransportError, _NotSent)


def _any_answer(failed: dict[str, Exception]) -> bool:
    """True when the service answered any of the failed requests (with an error status)."""
    return any(isinstance(error, ApiError) for error in failed.values())


def _reasons(failed: dict[str, Exception]) -> str:
    reasons = Counter(_reason(error) for error in failed.values())
    return ", ".join(f"{reason} ({count})" for reason, count in reasons.most_common())


def _incomplete(
    failed: dict[str, Exception], total: int, what: str, passes: int, seconds: float
) -> IncompletePull:
    why = _reasons(failed)
    return IncompletePull(
        f"the pull gave up after {passes} pass{'es' * (passes > 1)} and {seconds:.0f} s: "
        f"{len(failed)} of {total} requests for {what} failed: {why}. Nothing was returned "
        "or stored, since a snapshot must be whole; try again later, or pass a longer "
        "deadline=",
        failed=failed,
    )


def _reason(error: Exception) -> str:
    if isinstance(error, ApiError):
        return f"answered {error.status}"
    if isinstance(error, TransportError):
        return "no answer"
    return str(error)


class _Bar:
    """A tqdm.auto bar over one batch of requests, or nothing when not shown."""

    def __init__(self, fetcher: Fetcher, show: bool, total: int, what: str) -> None:
        self.fetcher, self.show, self.total, self.what = fetcher, show, total, what

    def __enter__(self) -> _Bar:
        if self.show:
            from tqdm.auto import tqdm

            self.fetcher._bar = tqdm(total=self.total, desc=f"Pulling {self.what}", unit="req")
        return self

    def __exit__(self, *exc: object) -> None:
        bar, self.fetcher._bar = self.fetcher._bar, None
        if bar is not None:
            bar.close()

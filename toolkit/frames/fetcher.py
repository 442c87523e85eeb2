"""Concurrent reads for `toolkit.frames`: many GETs over one client's connection pool.

A thread pool over the sync `Client` rather than an `AsyncClient` on a private event
loop: httpx's sync client is safe to share between threads, its pool bounds the
connections, and a thread pool works the same in a script and inside Jupyter (whose
kernel thread already runs an event loop, so `asyncio.run` there would fail).

Resources that vanish between the list and the read (a project or chapter moved to the
trash meanwhile, answered 404) are skipped: a snapshot shows the workspace as the
service answered, and a chapter in the trash is gone from it anyway. Any other error
ends the pull.
"""

from __future__ import annotations

import inspect
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TypeVar

from toolkit.errors import NotFound
from toolkit.timestamps import parse_http_date

if TYPE_CHECKING:
    from toolkit.client import Client
    from toolkit.models import ChapterDetail, ChapterListItem, Project

T = TypeVar("T")
R = TypeVar("R")

DEFAULT_CONCURRENCY = 8
# Pulls with more requests than this show a progress bar unless told otherwise.
PROGRESS_THRESHOLD = 50


def service_date(client: Any) -> datetime | None:
    """The service's clock from the `Date` header of the client's latest answer, if known."""
    value = getattr(client, "last_response_date", None)
    if callable(value):
        value = value()
    if isinstance(value, datetime):
        return value.astimezone(UTC)
    return parse_http_date(value)


class Fetcher:
    """Sends a pull's GETs, a bounded number at a time, counting them and timing the pull.

    `pulled_at` is the service clock of the first answer (`None` when the client does not
    tell it); `requests` counts the calls made; `seconds` runs from creation.
    """

    def __init__(
        self,
        client: Client,
        *,
        concurrency: int = DEFAULT_CONCURRENCY,
        progress: bool | None = None,
    ) -> None:
        if concurrency < 1:
            raise ValueError(f"concurrency must be 1 or more, not {concurrency}")
        if inspect.iscoroutinefunction(getattr(client, "list_projects", None)):
            raise TypeError(
                "frames are pulled with the blocking tk.Client (it runs requests "
                "concurrently itself); pass tk.Client(...) rather than tk.AsyncClient"
            )
        self.client = client
        self.concurrency = concurrency
        self.progress = progress
        self.requests = 0
        self.pulled_at: datetime | None = None
        self._lock = threading.Lock()
        self._started = time.perf_counter()
        self._bar: Any = None

    @property
    def seconds(self) -> float:
        return time.perf_counter() - self._started

    def _call(self, method: Callable[[T], R], argument: T) -> R:
        result = method(argument)
        with self._lock:
            self.requests += 1
            if self.requests == 1:
                self.pulled_at = service_date(self.client)
            if self._bar is not None:
                self._bar.update(1)
        return result

    def projects(self) -> list[Project]:
        return self._call(lambda _: self.client.list_projects(), None)

    def chapters(self, project_ids: Sequence[str]) -> dict[str, list[ChapterListItem]]:
        """Each project's chapter list; projects answered 404 are left out."""
        return self._many(self.client.list_chapters, project_ids, "chapter lists")

    def details(self, chapter_ids: Sequence[str]) -> dict[str, ChapterDetail]:
        """Each chapter's detail; chapters answered 404 are left out."""
        return self._many(self.client.get_chapter, chapter_ids, "chapter details")

    def _many(self, method: Callable[[str], R], ids: Sequence[str], what: str) -> dict[str, R]:
        if not ids:
            return {}
        show = self.progress if self.progress is not None else len(ids) > PROGRESS_THRESHOLD
        with _Bar(self, show, len(ids), what):
            if self.requests == 0:
                # The first answer's Date header stamps the pull: send it alone, since
                # the client's latest answer is ambiguous once requests overlap.
                return dict(self._run(method, ids[:1])) | dict(self._run(method, ids[1:]))
            return dict(self._run(method, ids))

    def _run(self, method: Callable[[str], R], ids: Sequence[str]) -> list[tuple[str, R]]:
        if not ids:
            return []

        def one(item: str) -> tuple[str, R | None]:
            try:
                return item, self._call(method, item)
            except NotFound:
                return item, None

        workers = min(self.concurrency, len(ids))
        if workers == 1:
            results = [one(item) for item in ids]
        else:
            with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="toolkit-pull") as pool:
                results = list(pool.map(one, ids))
        return [(item, value) for item, value in results if value is not None]


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

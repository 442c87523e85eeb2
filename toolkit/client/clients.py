"""`Client` and `AsyncClient`: every `/api/v1` route, driven by the flows in `flows`.

The two differ only in how they wait (blocking or awaiting); see docs/client.md.

Past 400 lines on purpose: the two classes mirror each other method for method (with
`create_chapter`'s overloads), and keeping them in one file is what lets a reader see
that they do. All logic is in `flows`; each method here is one line that drives a flow.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any, Literal, TypeVar, overload

import httpx

from toolkit.client import flows as _flows
from toolkit.client.flows import Flow, Send, Sleep
from toolkit.client.requests import BearerAuth, RequestSpec, scrubbed, sent_wholly, watched
from toolkit.client.retry import RetryPolicy, parse_retry_after
from toolkit.client.uploads import PageSource
from toolkit.client.waiting import wait_for_chapter as _wait_flow
from toolkit.config import Secret, Settings, held
from toolkit.models import (
    AddedPages,
    ChapterDetail,
    ChapterListItem,
    NewChapter,
    Project,
    RescanResult,
    StartResult,
)
from toolkit.timestamps import parse_http_date

__all__ = ["AsyncClient", "AttemptHook", "Client", "PollHook"]

_T = TypeVar("_T")
_USER_AGENT = "toolkit-python/0.1"
PollHook = Callable[[ChapterDetail], object]
# on_attempt(status, seconds, retry_after): status None when no answer came.
AttemptHook = Callable[[int | None, float, float | None], object]


class _BaseClient:
    """What both clients share: settings, retry policy, flows. No I/O happens here."""

    def __init__(
        self,
        base_url: str | None,
        api_key: str | Secret[str] | None,
        *,
        timeout: float | None,
        max_retries: int | None,
        max_retry_after: float | None,
        retry: RetryPolicy | None,
        on_attempt: AttemptHook | None,
    ) -> None:
        api_key = held(api_key) if api_key else None
        self._settings = Settings.resolve(base_url, api_key)
        policy = retry or RetryPolicy()
        if max_retries is not None:
            policy = replace(policy, max_retries=max_retries)
        if max_retry_after is not None:
            policy = replace(policy, max_retry_after=max_retry_after)
        self._retry = policy
        self._kinds: dict[str, str | None] = {}
        self._timeout = timeout
        self._last_date: str | None = None
        self.on_attempt = on_attempt

    @property
    def timeout(self) -> float | None:
        """Seconds allowed per network operation (connect, each read); None for no limit."""
        return self._timeout

    @property
    def base_url(self) -> str:
        """The service's base URL (without `/api/v1`)."""
        return self._settings.base_url

    @property
    def max_retries(self) -> int:
        return self._retry.max_retries

    @property
    def retry(self) -> RetryPolicy:
        """The retry policy, with the clock (`monotonic`, `sleep`) the client waits by."""
        return self._retry

    @property
    def last_response_date(self) -> datetime | None:
        """The service's clock as the `Date` header of the latest answer gave it, if any.

        With requests running in several threads, "latest" is whichever answered last.
        """
        return parse_http_date(self._last_date)

    def __repr__(self) -> str:
        # Safe on a half-built client too: a traceback printing locals shows `self`.
        settings = getattr(self, "_settings", None)
        return f"<{type(self).__name__} base_url={settings.base_url if settings else None!r}>"

    def _repr_html_(self) -> str:
        from toolkit.formatting import card

        settings = getattr(self, "_settings", None)
        # The key is never shown, not even in part: only that one is set.
        return card(type(self).__name__, {
            "base URL": str(settings.base_url) if settings else "not set",
            "API key": "set (not shown)" if settings else "not set",
        })  # fmt: skip

    def _note(self, response: httpx.Response) -> httpx.Response:
        self._last_date = response.headers.get("date", self._last_date)
        return response

    def _observe(self, answer: httpx.Response | None, started: float) -> None:
        hook = self.on_attempt
        if hook is None:
            return
        seconds = self._retry.monotonic() - started
        if answer is None:
            hook(None, seconds, None)
        else:
            hook(answer.status_code, seconds, parse_retry_after(answer.headers.get("Retry-After")))

    def _http_options(self) -> dict[str, Any]:
        return {
            "base_url": self._settings.api_url,
            "auth": BearerAuth(self._settings.api_key),
            "timeout": self._timeout,
            "headers": {"User-Agent": _USER_AGENT, "Accept": "application/json"},
            "follow_redirects": False,
        }

    @staticmethod
    def _build(http: httpx.Client | httpx.AsyncClient, spec: RequestSpec) -> httpx.Request:
        request = http.build_request(spec.method, spec.path, json=spec.json, files=spec.files)
        return watched(request)

    # Flows, one per public method; the clients below only drive them.

    def _create_flow(
        self,
        project_id: str,
        pages: Iterable[PageSource] | None,
        staged: bool,
        text: str | None,
        position: int | None,
    ) -> Flow[NewChapter]:
        return _flows.create_chapter(
            project_id,
            self._retry,
            self._kinds,
            pages=pages,
            staged=staged,
            text=text,
            position=position,
        )

    def _add_flow(
        self, chapter_id: str, pages: Iterable[PageSource], hold: bool, position: int | None
    ) -> Flow[AddedPages]:
        return _flows.add_pages(
            chapter_id, self._retry, self._kinds, pages=pages, hold=hold, position=position
        )

    def _wait(
        self,
        chapter_id: str,
        timeout: float | None,
        poll_interval: float,
        max_interval: float,
        progress: bool,
        on_poll: PollHook | None,
    ) -> Flow[ChapterDetail]:
        return _wait_flow(
            chapter_id,
            self._retry,
            timeout=timeout,
            poll_interval=poll_interval,
            max_interval=max_interval,
            monotonic=self._retry.monotonic,
            progress=progress,
            on_poll=on_poll,
        )


class Client(_BaseClient):
    """The service's routes as blocking calls. A context manager; `close()` ends the pool.

    Args:
        base_url: The service's base URL; `CTS_BASE_URL` when not given.
        api_key: The workspace key; `CTS_API_KEY` when not given. Never printed.
        timeout: Seconds per network operation (connect, each read), not a total.
        max_retries: Retries after the first try; overrides the field of `retry`.
        max_retry_after: A `Retry-After` longer than this many seconds fails at once
            instead of waiting; overrides the field of `retry`.
        retry: A whole `RetryPolicy` (backoff, jitter, the clock waited by).
        transport: Replaces httpx's network layer (tests use it to inject faults).
        on_attempt: `on_attempt(status, seconds, retry_after)`, also settable as an
            attribute, is told of every attempt as it ends: its status (None when no
            answer came), its seconds on the policy's clock and any `Retry-After` in
            seconds; a pull paces itself by it.

    Raises:
        ConfigError: The key or base URL is missing, or an `http://` URL is not loopback.
    """

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | Secret[str] | None = None,
        *,
        timeout: float | None = 30.0,
        max_retries: int | None = None,
        max_retry_after: float | None = None,
        retry: RetryPolicy | None = None,
        transport: httpx.BaseTransport | None = None,
        on_attempt: AttemptHook | None = None,
    ) -> None:
        api_key = held(api_key) if api_key else None  # first: a traceback's locals show the holder
        super().__init__(
            base_url,
            api_key,
            timeout=timeout,
            max_retries=max_retries,
            max_retry_after=max_retry_after,
            retry=retry,
            on_attempt=on_attempt,
        )
        self._sleep: Callable[[float], object] = self._retry.sleep or time.sleep
        self._http = httpx.Client(transport=transport, **self._http_options())

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _run(self, flow: Flow[_T]) -> _T:
        reply: Any = None
        try:
            while True:
                try:
                    step = flow.send(reply)
                except StopIteration as done:
                    return done.value  # type: ignore[no-any-return]
                reply = self._step(step)
        finally:
            flow.close()

    def _step(self, step: Send | Sleep) -> Any:
        if isinstance(step, Sleep):
            self._sleep(step.seconds)
            return None
        started = self._retry.monotonic()
        request = self._build(self._http, step.spec)
        try:
            response = self._http.send(request)
        except httpx.TransportError as exc:
            self._observe(None, started)
            return sent_wholly(scrubbed(exc), request)
        self._observe(response, started)
        return self._note(response)

    def list_projects(self) -> list[Project]:
        """Every project of the workspace not in the trash, newest chapter first."""
        return self._run(_flows.list_projects(self._retry))

    def get_project(self, project_id: str) -> Project:
        """One project.

        Args:
            project_id: The project's id.

        Raises:
            NotFound: No such project in the workspace.
        """
        return self._run(_flows.get_project(project_id, self._retry, self._kinds))

    def list_chapters(self, project_id: str) -> list[ChapterListItem]:
        """The project's chapters not in the trash, by chapter number.

        Args:
            project_id: The project's id.
        """
        return self._run(_flows.list_chapters(project_id, self._retry))

    def get_chapter(self, chapter_id: str) -> ChapterDetail:
        """One chapter with its languages' progress and prepared files.

        Args:
            chapter_id: The chapter's id.

        Raises:
            NotFound: No such chapter in the workspace.
        """
        return self._run(_flows.get_chapter(chapter_id, self._retry, self._kinds))

    @overload
    def create_chapter(
        self, project_id: str, pages: Iterable[PageSource], *, position: int | None = None
    ) -> NewChapter: ...

    @overload
    def create_chapter(
        self, project_id: str, *, staged: Literal[True], position: int | None = None
    ) -> NewChapter: ...

    @overload
    def create_chapter(
        self, project_id: str, *, text: str, position: int | None = None
    ) -> NewChapter: ...

    def create_chapter(
        self,
        project_id: str,
        pages: Iterable[PageSource] | None = None,
        *,
        staged: bool = False,
        text: str | None = None,
        position: int | None = None,
    ) -> NewChapter:
        """Create a chapter in one of three forms: pages, staged or text.

        Args:
            project_id: The project's id.
            pages: Comic pages (paths, bytes or binary files, streamed); the chapter runs
                at once.
            staged: True for an empty comic chapter, to add pages to and start later.
            text: A novel chapter's text (at most 200,000 characters); it runs at once.
            position: The chapter number. With it, a create whose answer was lost is
                retried without making a second chapter; the chapter then found at that
                number is named (`UnconfirmedCreate`), never taken as this create's.

        Returns:
            The new chapter, with its pages' storage keys.

        Raises:
            InvalidUpload: A page or the text is refused before sending.
            InsufficientCredits: The workspace cannot pay for the run.
            Conflict: `position` is taken.
            UnconfirmedCreate: The answer was lost and `position` is taken now, perhaps
                by this create: `chapter_id` names the chapter to check.
        """
        return self._run(self._create_flow(project_id, pages, staged, text, position))

    def add_pages(
        self,
        chapter_id: str,
        pages: Iterable[PageSource],
        *,
        hold: bool = False,
        position: int | None = None,
    ) -> AddedPages:
        """Add pages to a comic chapter.

        Args:
            chapter_id: The chapter's id.
            pages: Paths, bytes or binary files, streamed.
            hold: True keeps the pages without running them (start them with
                `start_chapter(chapter_id, page_ids=...)`).
            position: Where the pages go among the chapter's (one page only).

        Raises:
            InvalidUpload: A page is refused before sending.
            Conflict: The chapter is processing.
        """
        return self._run(self._add_flow(chapter_id, pages, hold, position))

    def start_chapter(self, chapter_id: str, page_ids: Sequence[str] | None = None) -> StartResult:
        """Run a staged chapter, or held pages of a chapter that has run.

        Args:
            chapter_id: The chapter's id.
            page_ids: The held pages to run; None runs a staged chapter's pages.
        """
        return self._run(_flows.start_chapter(chapter_id, self._retry, page_ids=page_ids))

    def rescan_chapter(self, chapter_id: str) -> RescanResult:
        """Run the chapter again from its art: clears `failed`, discards translations and
        charges again.

        Args:
            chapter_id: The chapter's id.
        """
        return self._run(_flows.rescan_chapter(chapter_id, self._retry))

    def wait_for_chapter(
        self,
        chapter_id: str,
        timeout: float | None = None,
        *,
        poll_interval: float = 2.0,
        max_interval: float = 30.0,
        progress: bool = False,
        on_poll: PollHook | None = None,
    ) -> ChapterDetail:
        """Poll until the chapter stops processing (failed or not).

        Args:
            chapter_id: The chapter's id.
            timeout: Seconds to wait at most; None waits as long as it takes.
            poll_interval: Seconds between the first polls; the pause grows from there.
            max_interval: The longest pause between polls, in seconds.
            progress: True shows a progress bar per language.
            on_poll: Called with each detail read, between polls.

        Returns:
            The chapter's detail once it stopped processing.

        Raises:
            WaitTimeout: `timeout` passed first (a `TimeoutError`; `.last` is the last
                detail seen).
        """
        flow = self._wait(chapter_id, timeout, poll_interval, max_interval, progress, on_poll)
        return self._run(flow)


class AsyncClient(_BaseClient):
    """The same routes as `Client`, awaitable. An async context manager; `aclose()`.

    Its options and its methods' parameters are `Client`'s, name for name.

    Use one per event loop: an httpx.AsyncClient cannot move between loops. Page checks
    and page reads are plain file reads in 64 KB pieces, done on the loop's thread.
    """

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | Secret[str] | None = None,
        *,
        timeout: float | None = 30.0,
        max_retries: int | None = None,
        max_retry_after: float | None = None,
        retry: RetryPolicy | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        on_attempt: AttemptHook | None = None,
    ) -> None:
        api_key = held(api_key) if api_key else None  # first: a traceback's locals show the holder
        super().__init__(
            base_url,
            api_key,
            timeout=timeout,
            max_retries=max_retries,
            max_retry_after=max_retry_after,
            retry=retry,
            on_attempt=on_attempt,
        )
        self._sleep: Callable[[float], object] = self._retry.sleep or asyncio.sleep
        self._http = httpx.AsyncClient(transport=transport, **self._http_options())

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def _run(self, flow: Flow[_T]) -> _T:
        reply: Any = None
        try:
            while True:
                try:
                    step = flow.send(reply)
                except StopIteration as done:
                    return done.value  # type: ignore[no-any-return]
                reply = await self._step(step)
        finally:
            flow.close()

    async def _step(self, step: Send | Sleep) -> Any:
        if isinstance(step, Sleep):
            waited = self._sleep(step.seconds)
            if inspect.isawaitable(waited):
                await waited
            return None
        started = self._retry.monotonic()
        request = self._build(self._http, step.spec)
        try:
            response = await self._http.send(request)
        except httpx.TransportError as exc:
            self._observe(None, started)
            return sent_wholly(scrubbed(exc), request)
        self._observe(response, started)
        return self._note(response)

    async def list_projects(self) -> list[Project]:
        return await self._run(_flows.list_projects(self._retry))

    async def get_project(self, project_id: str) -> Project:
        return await self._run(_flows.get_project(project_id, self._retry, self._kinds))

    async def list_chapters(self, project_id: str) -> list[ChapterListItem]:
        return await self._run(_flows.list_chapters(project_id, self._retry))

    async def get_chapter(self, chapter_id: str) -> ChapterDetail:
        return await self._run(_flows.get_chapter(chapter_id, self._retry, self._kinds))

    @overload
    async def create_chapter(
        self, project_id: str, pages: Iterable[PageSource], *, position: int | None = None
    ) -> NewChapter: ...

    @overload
    async def create_chapter(
        self, project_id: str, *, staged: Literal[True], position: int | None = None
    ) -> NewChapter: ...

    @overload
    async def create_chapter(
        self, project_id: str, *, text: str, position: int | None = None
    ) -> NewChapter: ...

    async def create_chapter(
        self,
        project_id: str,
        pages: Iterable[PageSource] | None = None,
        *,
        staged: bool = False,
        text: str | None = None,
        position: int | None = None,
    ) -> NewChapter:
        return await self._run(self._create_flow(project_id, pages, staged, text, position))

    async def add_pages(
        self,
        chapter_id: str,
        pages: Iterable[PageSource],
        *,
        hold: bool = False,
        position: int | None = None,
    ) -> AddedPages:
        return await self._run(self._add_flow(chapter_id, pages, hold, position))

    async def start_chapter(
        self, chapter_id: str, page_ids: Sequence[str] | None = None
    ) -> StartResult:
        return await self._run(_flows.start_chapter(chapter_id, self._retry, page_ids=page_ids))

    async def rescan_chapter(self, chapter_id: str) -> RescanResult:
        return await self._run(_flows.rescan_chapter(chapter_id, self._retry))

    async def wait_for_chapter(
        self,
        chapter_id: str,
        timeout: float | None = None,
        *,
        poll_interval: float = 2.0,
        max_interval: float = 30.0,
        progress: bool = False,
        on_poll: PollHook | None = None,
    ) -> ChapterDetail:
        flow = self._wait(chapter_id, timeout, poll_interval, max_interval, progress, on_poll)
        return await self._run(flow)

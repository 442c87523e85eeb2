"""`Receiver`: the Starlette app that takes the service's deliveries.

One route takes POST at any path; Starlette answers other methods with 405 (turned into
the error shape below), and its lifespan hands waiting events to the store at start-up.
Starlette is imported when a receiver is built, so `tk.webhooks.verify` stays light.

What it answers, keeps and hands to the store is in docs/webhooks.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sqlite3
import threading
from collections.abc import AsyncIterator, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Protocol

from toolkit.config import Secret, held
from toolkit.errors import ConfigError, WebhookVerificationError
from toolkit.timestamps import parse_time
from toolkit.webhooks.groups import WINDOW, CommitGroups
from toolkit.webhooks.inbox import Inbox
from toolkit.webhooks.verification import TOLERANCE, check_signature, parse_payload, signing_key

if TYPE_CHECKING:
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.types import Receive, Scope, Send

__all__ = ["EventSink", "Receiver"]

log = logging.getLogger(__name__)

_MAX_BODY = 1 << 20
# Seconds a sender has for a whole body: a slow one must not hold a connection forever.
_BODY_TIMEOUT = 10.0
_KEEP_FORWARDED = timedelta(days=7)


class EventSink(Protocol):
    """What the receiver needs of a store: `SnapshotStore` is one."""

    def record_events(self, events: Sequence[Mapping[str, Any]]) -> Any: ...


class Receiver:
    """A Starlette (ASGI) app that takes the service's deliveries: POST at any path.

    It verifies each delivery, keeps each new event durably before answering 2xx,
    answers a repeated `webhook-id` with 2xx without keeping it again, and hands events to
    the store in groups, each event answered once its group is stored.

    ```python
    app = Receiver(secret, store=tk.SnapshotStore("data/snapshots"),
                   seen_path="data/snapshots/_receiver.sqlite")
    uvicorn.run(app, port=8766)        # or: toolkit webhooks serve
    ```

    Args:
        secret: The endpoint's signing secret (`whsec_...`).
        store: Where events go: a `SnapshotStore`, or anything with `record_events`.
            Without one, `events()` lists what arrived.
        seen_path: The SQLite file of handled ids; in memory when None (repeats are
            then recognised only while the process lives).
        tolerance: Seconds a delivery's timestamp may be from the local clock.
        body_timeout: A body not arrived whole within this many seconds is answered 408.
        commit_window: Events that arrive within this many seconds go to the store in
            one `record_events` call.

    Raises:
        ConfigError: The secret is not a signing secret.
    """

    def __init__(
        self,
        secret: str | Secret[str],
        store: EventSink | None = None,
        seen_path: str | os.PathLike[str] | None = None,
        *,
        tolerance: int = TOLERANCE,
        body_timeout: float = _BODY_TIMEOUT,
        commit_window: float = WINDOW,
    ) -> None:
        secret = held(secret)  # rebound at once: a traceback's locals show the holder only
        try:
            self._key = signing_key(secret)
        except WebhookVerificationError as exc:
            raise ConfigError(str(exc)) from None
        self.store = store
        self.tolerance = tolerance
        self.body_timeout = body_timeout
        self._inbox = Inbox(seen_path)
        self._forwarding = threading.Lock()
        self._groups = CommitGroups(self._flush_quietly, window=commit_window)
        # A full disk refuses every delivery and every group until space is freed: each
        # trouble is logged when it starts, not once per retried delivery.
        self._keeping = _Trouble()
        self._storing = _Trouble()
        self.app = self._build_app()

    def _build_app(self) -> Starlette:
        from starlette.applications import Starlette
        from starlette.exceptions import HTTPException
        from starlette.requests import ClientDisconnect
        from starlette.routing import Route

        async def http_error(request: Request, exc: Exception) -> Response:
            assert isinstance(exc, HTTPException)
            if exc.status_code == 405:
                return _refusal(405, "webhook deliveries are sent with POST", allow="POST")
            return _refusal(exc.status_code, str(exc.detail))

        async def disconnected(request: Request, exc: Exception) -> Response:
            # Nothing was kept and no one is left to answer: a line, not a traceback.
            log.warning(
                "a sender disconnected before its whole body arrived (POST %s); nothing was kept",
                request.url.path,
            )
            return _refusal(400, "the sender disconnected")

        return Starlette(
            routes=[Route("/{path:path}", self._respond, methods=["POST"])],
            lifespan=self._lifespan,
            exception_handlers={HTTPException: http_error, ClientDisconnect: disconnected},
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.app(scope, receive, send)

    def events(self) -> list[dict[str, Any]]:
        """The events in the receiver's own SQLite, in the order they arrived."""
        return self._inbox.events()

    def flush(self) -> int:
        """Hand the store every event it has not taken yet; returns how many were handed."""
        if self.store is None:
            return 0
        with self._forwarding:
            pending = self._inbox.pending()
            if pending:
                self.store.record_events(pending)
                self._inbox.mark_forwarded([event["webhook_id"] for event in pending])
            self._inbox.prune(datetime.now(UTC) - _KEEP_FORWARDED)
            return len(pending)

    def close(self) -> None:
        self._inbox.close()

    async def _respond(self, request: Request) -> Response:
        from starlette.concurrency import run_in_threadpool
        from starlette.responses import JSONResponse

        try:
            async with asyncio.timeout(self.body_timeout):
                body = await _read_body(request)
        except TimeoutError:
            message = f"the body did not arrive whole within {self.body_timeout:g} s"
            return _refusal(408, f"{message}; send it again")
        if body is None:
            return _refusal(413, f"the body is over {_MAX_BODY} bytes")
        try:
            webhook_id = check_signature(body, request.headers, self._key, tolerance=self.tolerance)
        except WebhookVerificationError as exc:
            return _refusal(401, str(exc))
        try:
            event = _event(webhook_id, body)
        except WebhookVerificationError as exc:
            return _refusal(400, str(exc))
        if event["type"] == "ping":
            return JSONResponse({"ok": True})
        try:
            fresh = await run_in_threadpool(self._inbox.add, event)
        except sqlite3.OperationalError as exc:
            # Its own SQLite cannot keep it (a full or read-only disk): a line, not a
            # traceback per delivery, and a 503 the service retries later.
            self._keeping.began(
                "the receiver could not keep event %s (%s); it answers 503 (the service "
                "sends again) until it can: free space where its SQLite is",
                webhook_id,
                exc,
            )
            return _refusal(503, f"the receiver could not keep the event ({exc}); send it again")
        self._keeping.ended("the receiver keeps events again")
        if fresh and self.store is not None:
            await self._groups.wait()
        return JSONResponse({"webhookId": webhook_id, "repeat": not fresh})

    def _flush_quietly(self) -> None:
        # The event is already safe in SQLite: a failing store must not turn into a
        # non-2xx answer (a repeat would then be dropped as seen). It is retried later.
        try:
            self.flush()
        except Exception:
            self._storing.began(
                "the store refused webhook events; they wait in the receiver's SQLite",
                exc_info=True,
            )
        else:
            self._storing.ended("the store takes webhook events again")

    @contextlib.asynccontextmanager
    async def _lifespan(self, app: Starlette) -> AsyncIterator[None]:
        from starlette.concurrency import run_in_threadpool

        await run_in_threadpool(self._flush_quietly)
        yield


class _Trouble:
    """A failure that lasts (a full disk): logged when it begins and when it ends, not
    at every attempt in between."""

    def __init__(self) -> None:
        self.lasting = False

    def began(self, message: str, *args: object, exc_info: bool = False) -> None:
        if not self.lasting:
            self.lasting = True
            log.warning(message, *args, exc_info=exc_info)

    def ended(self, message: str) -> None:
        if self.lasting:
            self.lasting = False
            log.warning(message)


def _refusal(status: int, message: str, *, allow: str | None = None) -> Response:
    from starlette.responses import JSONResponse

    headers = {"Allow": allow} if allow else {}
    if status in (408, 413):
        # The rest of the body may still be on its way: close rather than read it.
        headers["Connection"] = "close"
    return JSONResponse({"error": {"status": status, "message": message}}, status, headers)


async def _read_body(request: Request) -> bytes | None:
    """The body, or None when it is over `_MAX_BODY` (read no further than that)."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > _MAX_BODY:
        return None
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > _MAX_BODY:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


def _event(webhook_id: str, body: bytes) -> dict[str, Any]:
    """The store's event row from a verified body, or `WebhookVerificationError`."""
    payload = parse_payload(body)
    kind, stamp, data = payload.get("type"), payload.get("timestamp"), payload.get("data")
    if not isinstance(kind, str) or not kind:
        raise WebhookVerificationError("the event has no 'type' text")
    if not isinstance(data, dict):
        raise WebhookVerificationError("the event's 'data' is not an object")
    try:
        timestamp = parse_time(stamp) if isinstance(stamp, str) else None
    except ValueError:
        timestamp = None
    if timestamp is None:
        raise WebhookVerificationError("the event's 'timestamp' is not an ISO 8601 time")
    return {
        "webhook_id": webhook_id,
        "type": kind,
        "timestamp": timestamp,
        "data": data,
        "received_at": datetime.now(UTC),
    }

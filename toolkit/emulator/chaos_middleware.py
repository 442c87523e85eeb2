"""The chaos rules at work on `/api/v1` requests: answers replaced, delayed, lost, cut,
trickled, or connections reset (docs/emulator.md, "Chaos").

Losing, cutting and resetting need the connection itself, which ASGI does not hand an
app: `ConnectionHandle`, wrapped around the whole app when the emulator serves it,
puts uvicorn's request cycle (it holds the transport) in the scope. Served any other
way (an in-process ASGI transport), those kinds end the request without an answer.
"""

from __future__ import annotations

import asyncio
import socket
import struct
from typing import Any

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from toolkit.emulator.core.chaos import ChaosRule, Target, route_of
from toolkit.emulator.core.services import Services
from toolkit.emulator.routes.errors import error

__all__ = ["ChaosInjection", "ConnectionHandle"]

_PREFIX = "/api/v1"
_CONNECTION = "cts.connection"


class ConnectionHandle:
    """Outermost: hands the server's request cycle to `ChaosInjection` in the scope."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        cycle = getattr(send, "__self__", None)
        if scope["type"] == "http" and getattr(cycle, "transport", None) is not None:
            scope[_CONNECTION] = cycle
        await self.app(scope, receive, send)


def _hang_up(scope: Scope, *, reset: bool) -> None:
    cycle: Any = scope.get(_CONNECTION)
    if cycle is None:
        return
    transport = cycle.transport
    if reset:
        # Linger 0: closing then sends a TCP reset, not an orderly end.
        sock = transport.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        transport.abort()
    else:
        transport.close()
    # uvicorn hears of the closed connection on the loop's next turn; told now, it does
    # not log the unanswered request as the app's error (the answer is lost on purpose).
    cycle.disconnected = True


async def _answer_of(app: ASGIApp, scope: Scope, receive: Receive) -> tuple[Message, bytes]:
    """Run the request to the end (the action is committed) and keep its answer."""
    start: Message = {}
    body = bytearray()

    async def keep(message: Message) -> None:
        nonlocal start
        if message["type"] == "http.response.start":
            start = message
        elif message["type"] == "http.response.body":
            body.extend(message.get("body", b""))

    await app(scope, receive, keep)
    return start, bytes(body)


class ChaosInjection:
    """Middleware: a request a chaos rule matches gets the rule's failure instead."""

    def __init__(self, app: ASGIApp, *, services: Services) -> None:
        self.app = app
        self.services = services

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        chaos = self.services.chaos
        if scope["type"] != "http" or not chaos.active or not scope["path"].startswith(_PREFIX):
            await self.app(scope, receive, send)
            return
        rule = self._fired(scope)
        if rule is None:
            await self.app(scope, receive, send)
        elif rule.kind == "status":
            await _status(rule)(scope, receive, send)
        elif rule.kind == "latency":
            await asyncio.sleep(rule.latency_ms / 1000)  # real time: the client's clock
            await self.app(scope, receive, send)
        elif rule.kind == "reset":
            _hang_up(scope, reset=True)  # before anything is done
        else:
            start, body = await _answer_of(self.app, scope, receive)
            if rule.kind == "drop":
                _hang_up(scope, reset=False)
            elif rule.kind == "cut":
                await send(start)
                await send(
                    {
                        "type": "http.response.body",
                        "body": body[: rule.after_bytes],
                        "more_body": True,
                    }
                )
                _hang_up(scope, reset=False)
            else:
                await _trickle(send, receive, start, body, rule)

    def _fired(self, scope: Scope) -> ChaosRule | None:
        found = route_of(scope["path"][len(_PREFIX) :])
        if found is None:
            return None
        route, ident = found
        project_id = ident if route.startswith("/projects/") else None
        chapter_id = ident if route.startswith("/chapters/") else None
        chaos = self.services.chaos
        if chapter_id is not None and chaos.by_project:
            chapter = self.services.state.chapter_any(chapter_id)
            project_id = chapter["project_id"] if chapter is not None else None
        return chaos.draw(Target(scope["method"], route, project_id, chapter_id))


def _status(rule: ChaosRule) -> JSONResponse:
    assert rule.status is not None
    headers = {"Retry-After": str(rule.retry_after)} if rule.retry_after is not None else None
    if rule.body is None:
        response = error(rule.status, f"injected by chaos rule {rule.id}")
        if headers:
            response.headers.update(headers)
        return response
    return JSONResponse(rule.body, status_code=rule.status, headers=headers)


async def _trickle(
    send: Send, receive: Receive, start: Message, body: bytes, rule: ChaosRule
) -> None:
    """Send the answer a chunk every `interval_ms`, until it is whole or the client hangs up.

    A client that gave up (its read timed out) has closed the connection: a server
    stops writing to it then, and a trickle that went on would hold the server's
    shutdown for its graceful 5 s.
    """
    hung_up = asyncio.ensure_future(_hang_up_of(receive))
    try:
        await send(start)
        step = rule.chunk_bytes
        for offset in range(0, len(body), step):
            await asyncio.wait([hung_up], timeout=rule.interval_ms / 1000)
            if hung_up.done():
                return
            last = offset + step >= len(body)
            await send(
                {
                    "type": "http.response.body",
                    "body": body[offset : offset + step],
                    "more_body": not last,
                }
            )
        if not body:
            await send({"type": "http.response.body", "body": b"", "more_body": False})
    finally:
        hung_up.cancel()


async def _hang_up_of(receive: Receive) -> None:
    """Return when the client has gone (the request's body was read already)."""
    while (await receive())["type"] != "http.disconnect":
        pass

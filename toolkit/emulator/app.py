"""The emulator's ASGI app: routes, the admin-token guard, faults, and the clock's Date.

Middleware is plain ASGI; its order and the error body are in docs/emulator.md.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
from email.utils import format_datetime

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from toolkit.emulator.chaos_middleware import ChaosInjection
from toolkit.emulator.core.services import Services
from toolkit.emulator.routes import admin, api, chaos, control, openapi
from toolkit.emulator.routes.errors import EmulatorError, error
from toolkit.emulator.routes.webhooks import webhook_routes

__all__ = ["AdminGuard", "ClockDate", "FaultInjection", "build_app"]

log = logging.getLogger(__name__)


class ClockDate:
    """Middleware: every response's `Date` header is the emulator clock's time."""

    def __init__(self, app: ASGIApp, *, services: Services) -> None:
        self.app = app
        self.services = services

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_date(message: Message) -> None:
            if message["type"] == "http.response.start":
                stamp = format_datetime(self.services.clock.now(), usegmt=True)
                headers = [(k, v) for k, v in message.get("headers", []) if k.lower() != b"date"]
                message["headers"] = [*headers, (b"date", stamp.encode())]
            await send(message)

        await self.app(scope, receive, send_with_date)


class FaultInjection:
    """Middleware: the service routes answer with the injected faults (503s, latency)."""

    def __init__(self, app: ASGIApp, *, services: Services) -> None:
        self.app = app
        self.services = services

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not scope["path"].startswith(api.PREFIX):
            await self.app(scope, receive, send)
            return
        faults = self.services.faults
        if faults.answer_503():
            response = error(503, "the service is unavailable for a moment (injected); retry")
            await response(scope, receive, send)
            return
        if faults.settings.latency_ms:
            await asyncio.sleep(faults.settings.latency_ms / 1000)
        await self.app(scope, receive, send)


class AdminGuard:
    """Middleware: the `/_emulator` routes answer only the admin token."""

    def __init__(self, app: ASGIApp, *, services: Services) -> None:
        self.app = app
        self.token = services.admin_token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"].startswith("/_emulator"):
            header = dict(scope.get("headers", [])).get(b"authorization", b"").decode("latin-1")
            scheme, _, token = header.partition(" ")
            if scheme.lower() != "bearer" or not hmac.compare_digest(
                token.strip().encode(), self.token.encode()
            ):
                response = error(
                    401, "admin routes need `Authorization: Bearer <admin token>` (see start-up)"
                )
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


async def _emulator_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, EmulatorError)
    return error(exc.status, exc.message)


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    if exc.status_code == 404:
        message = f"no route {request.method} {request.url.path}"
    elif exc.status_code == 405:
        message = f"{request.method} is not allowed on {request.url.path}"
    else:
        message = str(exc.detail)
    response = error(exc.status_code, message)
    response.headers.update(exc.headers or {})
    if exc.status_code == 405:
        # RFC 9110 requires a 405 to name the methods the path takes. Starlette's names
        # those of the first route of that path alone (GET and HEAD where a POST route
        # of the same path comes after it).
        allowed = _methods(request.app.routes, request.scope)
        response.headers["Allow"] = ", ".join(sorted(allowed))
    return response


def _methods(routes: list[BaseRoute], scope: Scope) -> set[str]:
    """Every method some route of `routes` takes at the request's path."""
    found: set[str] = set()
    for route in routes:
        if route.matches(scope)[0] is not Match.NONE:
            found |= getattr(route, "methods", None) or set()
    return found


async def _disconnected(request: Request, exc: Exception) -> Response:
    # Nothing of the call was kept (a page is kept only once its call succeeds), and no
    # one is left to answer: one line in the log, not a traceback.
    log.warning(
        "the client disconnected before its request was read: %s %s (nothing was done)",
        request.method,
        request.url.path,
    )
    return Response(status_code=400)


async def _unexpected(request: Request, exc: Exception) -> Response:
    log.error("emulator error on %s %s", request.method, request.url.path, exc_info=exc)
    return error(500, f"the emulator failed: {type(exc).__name__}: {exc}")


def build_app(services: Services) -> Starlette:
    """The app; the webhook admin routes sit behind the admin guard too."""
    app = Starlette(
        routes=[
            *api.routes,
            *admin.routes,
            *chaos.routes,
            *control.routes,
            *openapi.routes,
            *webhook_routes(services.deliveries),
        ],
        middleware=[
            Middleware(ClockDate, services=services),
            Middleware(ChaosInjection, services=services),
            Middleware(FaultInjection, services=services),
            Middleware(AdminGuard, services=services),
        ],
        exception_handlers={
            EmulatorError: _emulator_error,
            HTTPException: _http_error,
            ClientDisconnect: _disconnected,
            Exception: _unexpected,
        },
    )
    app.state.services = services
    return app

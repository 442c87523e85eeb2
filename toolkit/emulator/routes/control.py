"""The state-control admin routes: hold a chapter at a phase and release it, set how its
run ends, and see what is set (docs/emulator.md, "State control"). A review at a given
time is the review route's `at` (`admin`)."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from toolkit.emulator.core.services import services_of
from toolkit.emulator.routes.admin import read_json

__all__ = ["routes"]


async def hold(request: Request) -> JSONResponse:
    services = services_of(request)
    body = await read_json(request)
    return JSONResponse(services.control.hold(request.path_params["id"], body))


def release(request: Request) -> JSONResponse:
    services = services_of(request)
    answer = services.control.release(request.path_params["id"], at_ms=services.now_ms())
    services.scheduler.wake()  # a realtime clock takes the released step at once
    return JSONResponse(answer)


async def set_fate(request: Request) -> JSONResponse:
    services = services_of(request)
    body = await read_json(request)
    return JSONResponse(services.control.set_fate(request.path_params["id"], body))


def described(request: Request) -> JSONResponse:
    services = services_of(request)
    return JSONResponse(services.control.settings(request.path_params["id"]))


routes = [
    Route("/_emulator/chapters/{id}/hold", hold, methods=["POST"]),
    Route("/_emulator/chapters/{id}/release", release, methods=["POST"]),
    Route("/_emulator/chapters/{id}/fate", set_fate, methods=["POST"]),
    Route("/_emulator/chapters/{id}/control", described, methods=["GET"]),
]

"""The chaos admin routes: add a rule, list the rules (with what each did), remove one
or all (docs/emulator.md, "Chaos")."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from toolkit.emulator.core.services import services_of
from toolkit.emulator.routes.admin import read_json

__all__ = ["routes"]


async def add_rule(request: Request) -> JSONResponse:
    rule = services_of(request).chaos.add(await read_json(request))
    return JSONResponse(rule.to_json(), status_code=201)


def list_rules(request: Request) -> JSONResponse:
    return JSONResponse(services_of(request).chaos.rules())


def clear_rules(request: Request) -> JSONResponse:
    services_of(request).chaos.clear()
    return JSONResponse({})


def remove_rule(request: Request) -> JSONResponse:
    services_of(request).chaos.remove(request.path_params["id"])
    return JSONResponse({})


routes = [
    Route("/_emulator/chaos", add_rule, methods=["POST"]),
    Route("/_emulator/chaos", list_rules, methods=["GET"]),
    Route("/_emulator/chaos", clear_rules, methods=["DELETE"]),
    Route("/_emulator/chaos/{id}", remove_rule, methods=["DELETE"]),
]

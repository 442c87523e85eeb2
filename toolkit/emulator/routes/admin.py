"""The `/_emulator` admin routes (DESIGN.md's table); the app checks the admin token.

Errors: 400 for a bad body, 404 for an unknown id, 409 when asked to review a chapter
that is processing or has nothing translated, and 409 when a realtime clock is asked
to advance (it moves by itself).
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from toolkit.emulator.core import workspaces as dashboard
from toolkit.emulator.core.clock import iso
from toolkit.emulator.core.faults import FaultSettings
from toolkit.emulator.core.seed import seed_demo
from toolkit.emulator.core.services import Services, services_of
from toolkit.emulator.core.state import Row, from_ms
from toolkit.emulator.routes import shapes
from toolkit.emulator.routes.api import read_chapter_detail
from toolkit.emulator.routes.errors import EmulatorError

__all__ = ["read_json", "routes"]

_MAX_ADVANCE = 366 * 24 * 3600


async def read_json(request: Request) -> Any:
    """A request's JSON body (`{}` when empty); a 400 when it is not JSON."""
    raw = await request.body()
    if not raw.strip():
        return {}
    try:
        return json.loads(raw)
    except ValueError as exc:
        raise EmulatorError(400, "the body must be JSON") from exc


def _workspace_json(row: Row) -> dict[str, Any]:
    return {"id": row["id"], "name": row["name"], "credits": row["credits"]}


def _workspace(services: Services, workspace_id: str) -> Row:
    workspace = services.state.workspace(workspace_id)
    if workspace is None:
        raise EmulatorError(404, f"workspace {workspace_id!r} not found")
    return workspace


async def create_workspace(request: Request) -> JSONResponse:
    services = services_of(request)
    body = await read_json(request)
    if not isinstance(body, dict):
        raise EmulatorError(400, "the body must be a JSON object {name, credits}")
    name = dashboard.text_field(body, "name")
    credits = dashboard.credits_field(body)
    row = dashboard.create_workspace(
        services.state, name=name, credits=credits, at=services.now_ms()
    )
    return JSONResponse({**_workspace_json(row), "apiKey": row["api_key"]}, status_code=201)


def get_workspace(request: Request) -> JSONResponse:
    services = services_of(request)
    return JSONResponse(_workspace_json(_workspace(services, request.path_params["id"])))


async def put_credits(request: Request) -> JSONResponse:
    services = services_of(request)
    credits = dashboard.credits_field(await read_json(request))
    row = dashboard.set_credits(services.state, request.path_params["id"], credits)
    return JSONResponse(_workspace_json(row))


def get_ledger(request: Request) -> JSONResponse:
    services = services_of(request)
    workspace = _workspace(services, request.path_params["id"])
    charges = [
        {
            "at": iso(from_ms(row["at_ms"])),
            "chapterId": row["chapter_id"],
            "projectId": row["project_id"],
            "credits": row["credits"],
            "pages": row["pages"],
            "languages": json.loads(row["languages"]),
            "reason": row["reason"],
            "rework": bool(row["rework"]),
        }
        for row in services.state.charges(workspace["id"])
    ]
    lines = [
        {
            "at": iso(from_ms(row["at_ms"])),
            "chapterId": row["chapter_id"],
            "projectId": row["project_id"],
            "languageCode": row["language_code"],
            "lines": row["lines"],
        }
        for row in services.state.line_entries(workspace["id"])
    ]
    return JSONResponse({"balance": workspace["credits"], "charges": charges, "lines": lines})


async def create_project(request: Request) -> JSONResponse:
    services = services_of(request)
    body = await read_json(request)
    row = dashboard.create_project(services.state, body, at=services.now_ms())
    languages = services.state.target_languages([row["id"]])[row["id"]]
    return JSONResponse(shapes.project_list_item(row, languages), status_code=201)


def trash_project(request: Request) -> JSONResponse:
    services = services_of(request)
    services.operations.trash_project(request.path_params["id"], at=services.now_ms())
    return JSONResponse({})


def trash_chapter(request: Request) -> JSONResponse:
    services = services_of(request)
    services.operations.trash_chapter(request.path_params["id"], at=services.now_ms())
    return JSONResponse({})


async def review_chapter(request: Request) -> JSONResponse:
    services = services_of(request)
    body = await read_json(request)
    if isinstance(body, dict) and body.get("at") is not None:
        at = _later_instant(services, body["at"])
        return JSONResponse(
            services.control.schedule_review(request.path_params["id"], at), status_code=202
        )
    services.operations.review(request.path_params["id"], at=services.now_ms())
    return JSONResponse(read_chapter_detail(services, request.path_params["id"]))


def _later_instant(services: Services, value: Any) -> datetime:
    try:
        at = datetime.fromisoformat(value) if isinstance(value, str) else None
    except ValueError:
        at = None
    if at is None or at.tzinfo is None:
        raise EmulatorError(400, f"at must be an ISO 8601 time with its zone, not {value!r}")
    now = services.clock.now()
    if at <= now:
        raise EmulatorError(
            400,
            f"at must be later than the emulator's clock ({iso(now)}); "
            "leave it out to review at once",
        )
    return at


def get_clock(request: Request) -> JSONResponse:
    return JSONResponse({"now": iso(services_of(request).clock.now())})


async def post_clock(request: Request) -> JSONResponse:
    services = services_of(request)
    body = await read_json(request)
    seconds = body.get("advance") if isinstance(body, dict) else None
    if (
        not isinstance(seconds, int | float)
        or isinstance(seconds, bool)
        or not 0 <= seconds <= _MAX_ADVANCE
    ):
        raise EmulatorError(
            400, f"advance must be a number of seconds from 0 to {_MAX_ADVANCE}, not {seconds!r}"
        )
    if services.clock.mode != "manual":
        raise EmulatorError(409, "the clock is realtime and moves by itself; it cannot advance")
    now = await run_in_threadpool(services.scheduler.advance, float(seconds))
    return JSONResponse({"now": iso(now)})


async def put_faults(request: Request) -> JSONResponse:
    services = services_of(request)
    settings = FaultSettings.from_json(await read_json(request))
    return JSONResponse(services.faults.put(settings).to_json())


async def post_seed_demo(request: Request) -> JSONResponse:
    services = services_of(request)
    return JSONResponse(await run_in_threadpool(seed_demo, services))


routes = [
    Route("/_emulator/workspaces", create_workspace, methods=["POST"]),
    Route("/_emulator/workspaces/{id}", get_workspace, methods=["GET"]),
    Route("/_emulator/workspaces/{id}/credits", put_credits, methods=["PUT"]),
    Route("/_emulator/workspaces/{id}/ledger", get_ledger, methods=["GET"]),
    Route("/_emulator/projects", create_project, methods=["POST"]),
    Route("/_emulator/projects/{id}/trash", trash_project, methods=["POST"]),
    Route("/_emulator/chapters/{id}/trash", trash_chapter, methods=["POST"]),
    Route("/_emulator/chapters/{id}/review", review_chapter, methods=["POST"]),
    Route("/_emulator/clock", get_clock, methods=["GET"]),
    Route("/_emulator/clock", post_clock, methods=["POST"]),
    Route("/_emulator/faults", put_faults, methods=["PUT"]),
    Route("/_emulator/seed/demo", post_seed_demo, methods=["POST"]),
]

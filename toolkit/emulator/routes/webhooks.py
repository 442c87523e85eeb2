"""The webhook admin routes (`/_emulator/webhooks`, `/_emulator/deliveries`).

Mounted by the app behind its admin-token check; each route hands over to `Deliveries`.
"""

from __future__ import annotations

from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import BaseRoute, Route

from toolkit.emulator.delivery.deliveries import EVENT_TYPES, Deliveries
from toolkit.emulator.routes.errors import EmulatorError

__all__ = ["webhook_routes"]


def webhook_routes(deliveries: Deliveries) -> list[BaseRoute]:
    """The routes over one `Deliveries`."""

    async def add(request: Request) -> JSONResponse:
        payload = await _json_object(request)
        workspace_id, url = payload.get("workspaceId"), payload.get("url")
        events, allow_private = payload.get("events"), payload.get("allowPrivate", False)
        if not isinstance(workspace_id, str) or not isinstance(url, str):
            raise EmulatorError(400, "send workspaceId and url as strings")
        if not isinstance(allow_private, bool):
            raise EmulatorError(400, "allowPrivate must be true or false")
        if (
            not isinstance(events, list)
            or not events
            or not all(isinstance(e, str) and e in EVENT_TYPES for e in events)
        ):
            raise EmulatorError(
                400, f"events must be a non-empty list drawn from {', '.join(EVENT_TYPES)}"
            )
        created = await run_in_threadpool(
            deliveries.add_endpoint,
            workspace_id,
            url,
            list(dict.fromkeys(events)),
            allow_private=allow_private,
        )
        return JSONResponse(created)

    async def delete(request: Request) -> JSONResponse:
        await run_in_threadpool(deliveries.delete_endpoint, request.path_params["id"])
        return JSONResponse({})

    async def test(request: Request) -> JSONResponse:
        return JSONResponse(await deliveries.test_endpoint(request.path_params["id"]))

    async def log(request: Request) -> JSONResponse:
        workspace_id = request.query_params.get("workspaceId") or None
        return JSONResponse(await run_in_threadpool(deliveries.log, workspace_id))

    return [
        Route("/_emulator/webhooks", add, methods=["POST"]),
        Route("/_emulator/webhooks/{id}", delete, methods=["DELETE"]),
        Route("/_emulator/webhooks/{id}/test", test, methods=["POST"]),
        Route("/_emulator/deliveries", log, methods=["GET"]),
    ]


async def _json_object(request: Request) -> dict[str, Any]:
    try:
        payload = await request.json()
    except ValueError as exc:
        raise EmulatorError(400, "the body must be a JSON object") from exc
    if not isinstance(payload, dict):
        raise EmulatorError(400, "the body must be a JSON object")
    return payload

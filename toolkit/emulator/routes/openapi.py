"""`GET /openapi.json`: the OpenAPI 3.1 description of `/api/v1` and the webhook events.

The description is a JSON file in this package (`openapi.json`, also readable with
`description()` without starting an emulator). It is written from the spec; what the
emulator decides where the spec is silent is marked `x-emulator-decision`. The served
copy names the emulator's own address as its server, so a tool pointed at
`{base_url}/openapi.json` (schemathesis, a client generator) calls this emulator. No
key is needed: the document holds nothing secret.
"""

from __future__ import annotations

import copy
import json
from functools import cache
from importlib import resources
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route


@cache
def _stored() -> dict[str, Any]:
    text = resources.files(__package__).joinpath("openapi.json").read_text("utf-8")
    loaded: dict[str, Any] = json.loads(text)
    return loaded


def description(base_url: str | None = None) -> dict[str, Any]:
    """The OpenAPI document; with `base_url`, its server is `{base_url}/api/v1`."""
    document = copy.deepcopy(_stored())
    if base_url is not None:
        server = document["servers"][0]
        server["variables"]["baseUrl"]["default"] = base_url.rstrip("/")
    return document


def openapi_json(request: Request) -> JSONResponse:
    return JSONResponse(description(str(request.base_url)))


routes = [Route("/openapi.json", openapi_json, methods=["GET"])]

"""`GET /openapi.json`: the OpenAPI 3.1 description of `/api/v1` and the webhook events.

The description is a JSON file in this package (`openapi.json`, also readable with
`description()` without starting an emulator). It is written from the spec; what the
emulator decides where the spec is silent is marked `x-emulator-decision`. Its server is
relative (`/api/v1`), so the document served at `{base_url}/openapi.json` is the same
for every emulator and a tool that reads it there (schemathesis, a client generator)
calls that emulator. No key is needed: the document holds nothing secret.
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

__all__ = ["description", "openapi_json", "routes"]


@cache
def _stored() -> dict[str, Any]:
    text = resources.files(__package__).joinpath("openapi.json").read_text("utf-8")
    loaded: dict[str, Any] = json.loads(text)
    return loaded


def description() -> dict[str, Any]:
    """The OpenAPI document, a fresh copy each call (callers may edit it)."""
    return copy.deepcopy(_stored())


def openapi_json(request: Request) -> JSONResponse:
    """The route of the emulator's OpenAPI document."""
    return JSONResponse(_stored())


routes = [Route("/openapi.json", openapi_json, methods=["GET"])]

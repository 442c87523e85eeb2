"""Check real answers against the OpenAPI description, with jsonschema.

`AnswerChecker.hook` goes into an httpx client's response hooks: every answer the
client gets is matched to its operation (method and path template), its status must be
one the operation documents, and its JSON body must match that status's schema.
"""

from __future__ import annotations

import re
from typing import Any

import httpx
from jsonschema import Draft202012Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

BASE = "urn:cts:openapi"


class AnswerChecker:
    def __init__(self, document: dict[str, Any], *, prefix: str = "/api/v1") -> None:
        self.document = document
        self.prefix = prefix
        resource = Resource(contents=document, specification=DRAFT202012)
        self.registry = Registry().with_resource(BASE, resource)
        self.operations = [
            (method.upper(), _template(path), path)
            for path, item in document["paths"].items()
            for method in item
        ]
        self.seen: list[tuple[str, str, int]] = []  # (method, path template, status)

    def hook(self, response: httpx.Response) -> None:
        response.read()
        self.check(response)

    def check(self, response: httpx.Response) -> None:
        method, path = response.request.method, response.request.url.path
        assert path.startswith(self.prefix), path
        template = self._operation(method, path[len(self.prefix) :])
        answers = self.document["paths"][template][method.lower()]["responses"]
        status = str(response.status_code)
        assert status in answers, f"{method} {template} answered {status}, not documented"
        self.seen.append((method, template, response.status_code))
        answer = self._resolve(answers[status])
        media = answer.get("content", {}).get("application/json")
        if media is not None:
            assert response.headers["content-type"].startswith("application/json")
            self.validate(response.json(), media["schema"])

    def validate(self, value: Any, schema: dict[str, Any]) -> None:
        """Raise `jsonschema.ValidationError` when `value` does not match `schema`."""
        Draft202012Validator(
            _rebase(schema),
            registry=self.registry,
            format_checker=Draft202012Validator.FORMAT_CHECKER,
        ).validate(value)

    def validate_component(self, value: Any, name: str) -> None:
        self.validate(value, {"$ref": f"#/components/schemas/{name}"})

    def _operation(self, method: str, path: str) -> str:
        for candidate, pattern, template in self.operations:
            if candidate == method and pattern.fullmatch(path):
                return template
        raise AssertionError(f"{method} {path} is not in the description")

    def _resolve(self, item: dict[str, Any]) -> dict[str, Any]:
        while "$ref" in item:
            node: Any = self.document
            for part in item["$ref"].removeprefix("#/").split("/"):
                node = node[part]
            item = node
        return item


def _template(path: str) -> re.Pattern[str]:
    return re.compile(re.sub(r"\\\{[^/]+?\\\}", "[^/]+", re.escape(path)))


def _rebase(node: Any) -> Any:
    """`node` with its local `#/...` references made absolute, into the whole document."""
    if isinstance(node, dict):
        return {
            key: (BASE + value if key == "$ref" and value.startswith("#") else _rebase(value))
            for key, value in node.items()
        }
    if isinstance(node, list):
        return [_rebase(item) for item in node]
    return node

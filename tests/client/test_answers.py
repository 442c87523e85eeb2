"""Answers that are not what the spec describes: each is either a clear `UnexpectedAnswer`
naming the route, the field and the value, or the value kept exactly as sent. One row per
mutation of a well-formed answer, played through a scripted transport."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from datafakes import chapter_json, project_json
from scripted import Script, scripted_client

import toolkit as tk

DETAIL = {
    "id": "c1",
    "projectId": "p1",
    "position": 1,
    "title": None,
    "summary": None,
    "createdAt": "2026-03-02T09:00:00.000Z",
    "pageCount": 4,
    "processing": True,
    "detecting": False,
    "failed": False,
    "failureReason": None,
    "status": "translating",
    "languages": [{"languageCode": "en", "status": "translating", "untranslated": 3}],
    "project": project_json("p1"),
    "assignee": None,
}
ROUTES: dict[str, tuple[str, Any, Callable[[tk.Client], Any]]] = {
    "projects": ("GET /projects", [project_json("p1")], lambda c: c.list_projects()),
    "chapters": (
        "GET /projects/p1/chapters",
        [chapter_json("c1", "p1")],
        lambda c: c.list_chapters("p1"),
    ),
    "detail": ("GET /chapters/c1", DETAIL, lambda c: c.get_chapter("c1")),
    "rescan": (
        "POST /chapters/c1/rescan",
        {"queued": True, "clearedRegions": 3},
        lambda c: c.rescan_chapter("c1"),
    ),
}


@dataclass(frozen=True)
class Row:
    route: str  # a key of ROUTES
    path: str  # where to change the answer: "[0].languages[0].status"; "" for the body
    value: Any  # what to put there (DELETE removes the field)
    kept: Callable[[Any], Any] | None = None  # for a value kept: read it from the result
    body: str | None = None  # the whole body as text instead, when JSON cannot say it
    field: str | None = None  # the field the error names, when not `path`
    named: Any = None  # the value the error names, when not `value` (with `field`)


DELETE = object()
ERRORS = [
    Row("projects", "", None, body="<!doctype html><html><body>Sign in</body></html>"),
    Row("projects", "", None, body='[{"id": "p1", "name": "Proj'),
    Row("chapters", "", {"chapters": []}, field="body"),
    Row("chapters", "[0]", "c1"),
    Row("chapters", "[0].creditsSpent", True),
    Row("chapters", "[0].processing", 0),
    Row("chapters", "[0].started", "true"),
    Row("chapters", "[0].createdAt", "yesterday"),
    Row("chapters", "[0].lastActivityAt", 1767323045000),
    Row("chapters", "[0].id", None),
    Row("chapters", "[0].title", 5),
    Row("chapters", "[0].pageCount", 2**64),
    Row("chapters", "[0].pageCount", 2.5),
    Row("chapters", "[0].creditsSpent", 1e308),  # finite, but past any Int64 column
    Row("chapters", "[0].id", DELETE),
    Row("chapters", "[0].id", "", field="[0].id", named=""),
    Row("chapters", "[0].languages[0].covered", 2**70),
    Row("chapters", "[0].languages[0].covered", False),
    Row("chapters", "[0].languages[0].models", ["m", 3]),
    Row("chapters", "[0].languages", DELETE),
    Row("chapters", "[0].languages", None),
    Row("chapters", "[0].languages", [{}, "fr"], field="[0].languages[1]", named="fr"),
    Row("chapters", "[0].languages[0].failed", 1),
    Row(
        "chapters",
        "[0].preparedExports",
        [{"byteSize": "12 kB"}],
        field="[0].preparedExports[0].byteSize",
        named="12 kB",
    ),
    Row(
        "chapters",
        "",
        None,
        body='[{"id": "c1", "position": 1, "creditsSpent": 1e400, "languages": []}]',
        field="[0].creditsSpent",
        named=float("inf"),  # what Python's JSON reader makes of 1e400
    ),
    Row("projects", "[0].targetLanguages", None),
    Row(
        "projects",
        "[0].targetLanguages",
        [{"languageCode": 7}],
        field="[0].targetLanguages[0].languageCode",
        named=7,
    ),
    Row("projects", "[0].lastChapterAt", True),
    Row("projects", "[0].chapterCount", 3.5),
    Row("projects", "[0].createdAt", "2026-13-45"),
    Row("detail", "detecting", "no"),
    Row("detail", "languages[0].untranslated", "3"),
    Row("detail", "project", "p1"),
    Row("detail", "project.kind", 1),
    Row("rescan", "queued", 1),
    Row("rescan", "clearedRegions", True),
]
KEPT = [
    # A status the toolkit does not know is kept as its text (the frames warn of it).
    Row("chapters", "[0].status", "teleporting", kept=lambda r: r[0].status),
    Row(
        "chapters",
        "[0].languages[0].status",
        "teleporting",
        kept=lambda r: r[0].languages[0].status,
    ),
    Row("detail", "status", "teleporting", kept=lambda r: r.status),
    Row("detail", "languages[0].status", "teleporting", kept=lambda r: r.languages[0].status),
    Row("projects", "[0].kind", "webtoon", kept=lambda r: r[0].kind),
    Row("projects", "[0].somethingNew", {"x": 1}, kept=lambda r: r[0].raw["somethingNew"]),
    Row("projects", "[0].translationModel", None, kept=lambda r: r[0].translation_model),
    Row("chapters", "[0].failed", None, kept=lambda r: r[0].failed),
    Row("chapters", "[0].creditsSpent", 2.5, kept=lambda r: r[0].credits_spent),
    Row("chapters", "[0].creditsSpent", 2**63 - 1, kept=lambda r: r[0].credits_spent),
    Row("chapters", "[0].pageCount", 3.0, kept=lambda r: r[0].page_count),
    Row("chapters", "[0].languages", [], kept=lambda r: r[0].languages),
    Row("chapters", "[0].title", "第一章", kept=lambda r: r[0].title),
    Row(
        "chapters",
        "[0].createdAt",
        "2026-03-02T11:00:00+02:00",
        kept=lambda r: r[0].created_at,
    ),
    Row("detail", "project", None, kept=lambda r: r.project),
    Row("detail", "assignee", {"id": "u1"}, kept=lambda r: r.assignee),
]
KEPT_AS = {
    "[0].pageCount": 3,
    "[0].createdAt": datetime(2026, 3, 2, 9, 0, tzinfo=UTC),
}


def _steps(path: str) -> list[str | int]:
    steps: list[str | int] = []
    for part in path.replace("[", ".[").split("."):
        if part.startswith("["):
            steps.append(int(part[1:-1]))
        elif part:
            steps.append(part)
    return steps


def mutated(body: Any, path: str, value: Any) -> Any:
    if not path:
        return value
    body = copy.deepcopy(body)
    *parents, last = _steps(path)
    target = body
    for step in parents:
        target = target[step]
    if value is DELETE:
        del target[last]
    else:
        target[last] = value
    return body


def play(row: Row) -> tuple[tk.Client, Callable[[tk.Client], Any]]:
    _, base, call = ROUTES[row.route]
    if row.body is not None:
        answer = httpx.Response(200, text=row.body, headers={"Content-Type": "text/html"})
    else:
        answer = httpx.Response(200, json=mutated(base, row.path, row.value))
    client, _ = scripted_client(Script(answer))
    return client, call


def row_id(row: Row) -> str:
    if row.value is DELETE:
        shown = "(missing)"
    else:
        shown = row.body[:20] if row.body is not None else json.dumps(row.value, default=str)[:30]
    return f"{row.route}:{row.path or 'body'}={shown}"


@pytest.mark.parametrize("row", ERRORS, ids=row_id)
def test_an_answer_the_spec_does_not_describe_is_an_unexpected_answer(row):
    route = ROUTES[row.route][0]
    client, call = play(row)
    with client, pytest.raises(tk.UnexpectedAnswer) as caught:
        call(client)
    error = caught.value
    field = row.field or row.path or "body"
    assert isinstance(error, tk.ApiError) and error.status == 200
    assert (error.route, error.field) == (route, field)
    message = str(error)
    assert route in message and field in message
    if row.body is not None and field == "body":
        assert error.value == row.body and json.dumps(row.body)[:20] in message
    elif row.value is DELETE:
        assert f"{field} is missing" in message
    else:
        named = row.named if row.field and row.field != "body" else row.value
        assert error.value == named
        assert f"{field} is {json.dumps(named, ensure_ascii=False)[:40]}" in message
    assert "base URL" in error.advice


@pytest.mark.parametrize("row", KEPT, ids=row_id)
def test_an_answer_within_the_spec_is_kept_exactly_as_sent(row):
    client, call = play(row)
    with client:
        result = call(client)
    assert row.kept is not None
    expected = KEPT_AS.get(row.path, row.value)
    kept = row.kept(result)
    assert kept == expected and type(kept) is type(expected)


def test_a_flag_is_never_a_number_nor_a_number_a_flag():
    # bool is an int in Python: the checks look at the JSON type, not at isinstance.
    for row in (Row("chapters", "[0].processing", 1), Row("chapters", "[0].creditsSpent", False)):
        client, call = play(row)
        with client, pytest.raises(tk.UnexpectedAnswer):
            call(client)

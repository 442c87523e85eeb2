"""The OpenAPI 3.1 description: valid, served, complete, and true to the emulator's answers."""

from __future__ import annotations

import json
from urllib.parse import urljoin

import httpx
import pytest
from emulator_helpers import page_parts, plain_client, settle
from jsonschema import Draft202012Validator
from openapi_answers import AnswerChecker
from openapi_spec_validator import validate
from starlette.requests import Request
from starlette.responses import JSONResponse

from toolkit.emulator.routes import api as api_routes
from toolkit.emulator.routes.openapi import description
from toolkit.webhooks import verify

SVG = b"<svg xmlns='http://www.w3.org/2000/svg'/>"


@pytest.fixture
def checker() -> AnswerChecker:
    return AnswerChecker(description())


@pytest.fixture
def checked(emulator, workspace, checker):
    """An httpx client whose every answer is checked against the description."""
    client = plain_client(f"{emulator.url}/api/v1", workspace["apiKey"])
    client.event_hooks["response"] = [checker.hook]
    with client:
        yield client


def test_the_description_is_valid_openapi_3_1():
    document = description()
    assert document["openapi"].startswith("3.1")
    validate(document)


def test_it_is_served_without_a_key_with_a_server_relative_to_where_it_is_read(emulator, raw):
    answer = raw.get("/openapi.json")
    assert answer.status_code == 200
    served = answer.json()
    assert served == description()  # the same for every emulator: no address in it
    validate(served)
    api = urljoin(str(answer.url), served["servers"][0]["url"])
    assert api == f"{emulator.url}/api/v1"
    assert raw.get(f"{api}/projects").status_code == 401  # the routes are there


def _form_errors(fields: dict[str, object]) -> list[str]:
    form = description()["components"]["schemas"]["NewChapterForm"]
    return [error.message for error in Draft202012Validator(form).iter_errors(fields)]


@pytest.mark.parametrize("form", [{"pages": ["p1"]}, {"staged": "1"}, {"text": "A line."}])
def test_the_create_form_takes_each_of_its_three_forms(form):
    assert _form_errors({**form, "position": 3}) == []


@pytest.mark.parametrize(
    "fields",
    [{"pages": ["p1"], "text": "A line."}, {"pages": ["p1"], "staged": "1"}, {"position": 3}, {}],
)
def test_the_create_form_refuses_two_forms_at_once_or_none(fields):
    assert _form_errors(fields) != []


def test_the_storage_key_is_any_vendor_word_and_last_chapter_at_says_milliseconds():
    schemas = description()["components"]["schemas"]
    added = schemas["AddedPage"]["allOf"][1]
    assert "required" not in added
    assert set(added["patternProperties"]) == {"^sourceImage.+Key$"}
    last = schemas["ProjectListItem"]["allOf"][1]["properties"]["lastChapterAt"]
    assert last["format"] == "unix-ms"


def test_every_api_route_is_described_and_nothing_else():
    routes = {
        (method, route.path.removeprefix(api_routes.PREFIX).replace("_id}", "Id}"))
        for route in api_routes.routes
        for method in route.methods - {"HEAD"}
    }
    described = {
        (method.upper(), path) for path, item in description()["paths"].items() for method in item
    }
    assert described == routes


def test_decisions_are_marked_where_the_spec_is_silent():
    text = json.dumps(description())
    for silent in ("Error", "ChapterFailedEvent", "ExportReadyEvent", "PingEvent"):
        assert "x-emulator-decision" in json.dumps(description()["components"]["schemas"][silent])
    assert text.count("x-emulator-decision") >= 30


def test_a_scripted_session_matches_the_description(
    emulator, workspace, comic_project, novel_project, checked, checker, raw, pages, make_page
):
    comic, novel = comic_project["id"], novel_project["id"]
    checked.get("/projects")
    checked.get(f"/projects/{comic}")
    checked.get("/projects/nope")
    staged = checked.post(f"/projects/{comic}/chapters", data={"staged": "1"}).json()
    checked.post(f"/chapters/{staged['id']}/start")  # 400: no page yet
    held = checked.post(
        f"/chapters/{staged['id']}/pages", data={"hold": "1"}, files=page_parts(pages[:2])
    ).json()
    assert held["pages"][0]["sourceImageS3Key"]
    checked.post(f"/chapters/{staged['id']}/start")
    checked.get(f"/chapters/{staged['id']}")  # processing, detecting
    checked.post(f"/chapters/{staged['id']}/pages", files=page_parts(pages[2:]))  # 409
    checked.post(f"/chapters/{staged['id']}/rescan")  # 409
    settle(emulator, checked, staged["id"])
    checked.post(f"/chapters/{staged['id']}/start", json={})  # 400: no pageIds
    later = checked.post(
        f"/chapters/{staged['id']}/pages", data={"hold": "1"}, files=page_parts(pages[2:])
    ).json()
    checked.post(f"/chapters/{staged['id']}/start", json={"pageIds": [later["pages"][0]["id"]]})
    settle(emulator, checked, staged["id"])
    checked.post(f"/chapters/{staged['id']}/rescan")
    checked.post(f"/chapters/{staged['id']}/start", content=b"not json")  # 409 or 400

    checked.post(f"/projects/{comic}/chapters", files=page_parts(pages))
    checked.post(f"/projects/{comic}/chapters", data={"position": "1"}, files=page_parts(pages))
    checked.post(f"/projects/{comic}/chapters", data={"position": "0", "staged": "1"})
    checked.post(f"/projects/{comic}/chapters")  # 400: nothing sent
    checked.post(f"/projects/{comic}/chapters", files=page_parts([SVG]))  # 415
    checked.post(f"/projects/{comic}/chapters", files=page_parts([pages[0][:40]]))  # 422
    story = checked.post(f"/projects/{novel}/chapters", data={"text": "A line.\nAnother."}).json()
    checked.post(f"/projects/{novel}/chapters", data={"text": "x" * 200_001})  # 413
    checked.post(f"/chapters/{story['id']}/rescan")  # 400 (novel)
    settle(emulator, checked, story["id"])
    emulator.set_credits(workspace["id"], 0)
    checked.post(f"/projects/{comic}/chapters", files=page_parts(pages[:1]))  # 402
    emulator.set_faults(error_rate=1.0)
    checked.get("/projects")  # 503
    emulator.set_faults()
    for item in checked.get(f"/projects/{comic}/chapters").json():
        checked.get(f"/chapters/{item['id']}")
    assert raw.get("/api/v1/projects").status_code == 401
    checker.check(raw.get("/api/v1/projects"))

    statuses = {status for _, _, status in checker.seen}
    assert statuses >= {200, 201, 202, 400, 402, 404, 409, 413, 415, 401, 422, 503}
    assert {template for _, template, _ in checker.seen} == set(description()["paths"])
    listed = checked.get(f"/projects/{comic}/chapters").json()
    assert any(item["preparedExports"] for item in listed), "prepared files were checked too"


class Deliveries:
    """A receiver that keeps every delivery as sent: headers and raw body."""

    def __init__(self) -> None:
        self.seen: list[tuple[dict[str, str], bytes]] = []

    async def __call__(self, scope, receive, send) -> None:
        request = Request(scope, receive)
        self.seen.append((dict(request.headers), await request.body()))
        await JSONResponse({})(scope, receive, send)


def test_webhook_deliveries_match_the_described_events(
    emulator, workspace, comic_project, api, asgi_server, checker, pages
):
    sink = Deliveries()
    endpoint = emulator.add_webhook(
        workspace["id"],
        asgi_server(sink) + "/hook",
        ["chapter.finished", "chapter.failed", "export.ready"],
    )
    emulator.test_webhook(endpoint["id"])
    emulator.set_faults(failure_rate=1.0, seed=3)
    failing = api.post(
        f"/projects/{comic_project['id']}/chapters", files=page_parts(pages[:1])
    ).json()
    settle(emulator, api, failing["id"])
    emulator.set_faults()
    api.post(f"/chapters/{failing['id']}/rescan")
    settle(emulator, api, failing["id"])

    webhooks = description()["webhooks"]
    kinds = []
    for headers, body in sink.seen:
        event = json.loads(body)
        kinds.append(event["type"])
        operation = webhooks[event["type"]]["post"]
        checker.validate(event, operation["requestBody"]["content"]["application/json"]["schema"])
        for parameter in operation["parameters"]:
            checker.validate(headers[parameter["name"].lower()], parameter["schema"])
        assert verify(body, headers, endpoint["secret"])["type"] == event["type"]
    assert set(kinds) == {"ping", "chapter.failed", "export.ready", "chapter.finished"}


def test_the_checker_catches_an_answer_off_the_description(checker):
    request = httpx.Request("GET", "http://x/api/v1/projects")
    wrong = httpx.Response(200, json=[{"id": "p1"}], request=request)
    with pytest.raises(Exception, match="is a required property"):
        checker.check(wrong)
    undocumented = httpx.Response(418, json={}, request=request)
    with pytest.raises(AssertionError, match="not documented"):
        checker.check(undocumented)

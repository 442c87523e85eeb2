"""The sync client: configuration, requests it builds, errors it raises; then every route
against the emulator over loopback."""

from __future__ import annotations

import asyncio
import io
import json
import traceback

import httpx
import pytest
from conftest import make_page
from scripted import BASE_URL, KEY, Script, scripted_client

import toolkit as tk

# -- configuration and the key ---------------------------------------------------------


def test_settings_come_from_the_environment(monkeypatch):
    monkeypatch.setenv("CTS_BASE_URL", "https://cts.example.com/api/v1")
    monkeypatch.setenv("CTS_API_KEY", KEY)
    with tk.Client() as client:
        assert client.base_url == "https://cts.example.com"
        assert client.timeout == 30.0 and client.max_retries == 4


@pytest.mark.parametrize("missing", ["CTS_BASE_URL", "CTS_API_KEY"])
def test_a_missing_setting_is_a_config_error_naming_it(monkeypatch, missing):
    monkeypatch.setenv("CTS_BASE_URL", BASE_URL)
    monkeypatch.setenv("CTS_API_KEY", KEY)
    monkeypatch.delenv(missing)
    with pytest.raises(tk.ConfigError, match=missing):
        tk.Client()


def test_plain_http_to_another_host_is_refused_with_the_reason():
    with pytest.raises(tk.ConfigError, match="in clear") as caught:
        tk.AsyncClient("http://cts.example.com", KEY)
    assert KEY not in str(caught.value)


def test_the_key_is_sent_as_a_bearer_token_and_shown_nowhere():
    script = Script(httpx.Response(200, json=[]))
    client, _ = scripted_client(script)
    with client:
        client.list_projects()
        assert KEY not in repr(client) and KEY not in str(client)
        assert KEY not in repr(vars(client))
    assert script.requests[0].headers["Authorization"] == f"Bearer {KEY}"
    assert KEY not in repr(script.requests[0].headers)


def chain(exc: BaseException) -> list[BaseException]:
    seen = []
    while exc is not None:
        seen.append(exc)
        exc = exc.__cause__ or exc.__context__
    return seen


@pytest.mark.parametrize(
    "answer",
    [httpx.Response(401, json={"error": {"status": 401, "message": "unknown key"}}),
     httpx.ReadError("connection reset by peer")],
)  # fmt: skip
def test_no_error_message_or_cause_carries_the_key(answer):
    client, _ = scripted_client(Script(answer), max_retries=0)
    with client, pytest.raises(tk.ToolkitError) as caught:
        client.rescan_chapter("c1")
    for exc in chain(caught.value):
        assert KEY not in str(exc) and KEY not in repr(exc)
        assert all(KEY not in repr(arg) for arg in exc.args)
    # Even a traceback that prints every frame's locals (httpx requests included).
    report = traceback.TracebackException.from_exception(caught.value, capture_locals=True)
    assert KEY not in "".join(report.format())


# -- errors ----------------------------------------------------------------------------

ERRORS = [
    (400, tk.BadRequest),
    (401, tk.AuthenticationError),
    (403, tk.AuthenticationError),
    (402, tk.InsufficientCredits),
    (404, tk.NotFound),
    (409, tk.Conflict),
    (413, tk.PayloadTooLarge),
    (415, tk.UnsupportedMediaType),
    (422, tk.Unprocessable),
    (429, tk.RateLimited),
    (500, tk.ServerError),
    (503, tk.ServerError),
]


@pytest.mark.parametrize(("status", "cls"), ERRORS)
def test_each_error_status_raises_its_class_with_status_message_and_response(status, cls):
    body = {"error": {"status": status, "message": f"the service's words for {status}"}}
    client, _ = scripted_client(Script(httpx.Response(status, json=body)), max_retries=0)
    with client, pytest.raises(cls) as caught:
        client.get_chapter("c1")
    error = caught.value
    assert isinstance(error, tk.ApiError)
    assert error.status == status
    assert error.message == f"the service's words for {status}"
    assert error.response is not None and error.response.status_code == status
    assert f"({status})" in str(error) and error.message in str(error)


def test_a_clash_on_create_names_the_chapter_number_and_what_to_do():
    script = Script(
        httpx.Response(200, json={"id": "p1", "kind": "comic"}),
        httpx.Response(409, json={"error": {"status": 409, "message": "taken"}}),
    )
    client, sleeps = scripted_client(script)
    with client, pytest.raises(tk.Conflict, match=r"already has a chapter 12 \(409\); pick"):
        client.create_chapter("p1", staged=True, position=12)
    assert script.methods == ["GET /projects/p1", "POST /projects/p1/chapters"]
    assert sleeps == [], "a 409 on a first attempt is a real clash: no retry, no reconcile"


def test_a_busy_chapter_says_to_wait_for_it():
    script = Script(httpx.Response(409, json={"error": {"message": "chapter already processing"}}))
    client, _ = scripted_client(script)
    with client, pytest.raises(tk.Conflict) as caught:
        client.start_chapter("c9")
    assert str(caught.value).startswith(
        "chapter 'c9' is still processing (409); wait for it with client.wait_for_chapter('c9')"
    )


def test_an_answer_that_is_not_json_is_an_api_error_with_a_hint():
    client, _ = scripted_client(Script(httpx.Response(200, text="<html>login</html>")))
    with client, pytest.raises(tk.ApiError, match="not JSON; is the base URL"):
        client.list_projects()


def test_a_plain_text_error_body_is_kept_as_the_message():
    client, _ = scripted_client(Script(httpx.Response(404, text="no such thing")))
    with client, pytest.raises(tk.NotFound, match="no such thing") as caught:
        client.get_project("p404")
    assert "project 'p404' not found (404)" in str(caught.value)


def test_an_id_that_is_not_a_string_is_refused_with_a_hint():
    client, _ = scripted_client(Script())
    chapter = tk.ChapterListItem.from_json({"id": "c1"})
    with client, pytest.raises(TypeError, match=r"pass chapter\.id"):
        client.get_chapter(chapter)  # type: ignore[arg-type]


# -- the requests it builds ------------------------------------------------------------


def form(request: httpx.Request) -> dict[str, list[str]]:
    """Field name -> values (file parts as their file names) of a multipart body."""
    boundary = request.headers["content-type"].split("boundary=")[1].encode()
    fields: dict[str, list[str]] = {}
    for part in request.content.split(b"--" + boundary)[1:-1]:
        head, _, body = part.partition(b"\r\n\r\n")
        disposition = head.decode().split("Content-Disposition: form-data; ")[1].split("\r\n")[0]
        params = dict(p.split("=", 1) for p in disposition.split("; "))
        value = params["filename"] if "filename" in params else body[:-2].decode()
        fields.setdefault(params["name"].strip('"'), []).append(value.strip('"'))
    return fields


NEW_CHAPTER = {"id": "c1", "projectId": "p1", "position": 3, "pages": [], "futureField": 1}


def test_create_with_pages_streams_every_page_and_the_position(tmp_path):
    path = tmp_path / "one.png"
    path.write_bytes(make_page(1))
    script = Script(
        httpx.Response(200, json={"id": "p1", "kind": "comic"}),
        httpx.Response(200, json=NEW_CHAPTER),
    )
    client, _ = scripted_client(script)
    with client:
        chapter = client.create_chapter(
            "p1", [path, make_page(2), io.BytesIO(make_page(3))], position=3
        )
    assert chapter.position == 3 and chapter.raw["futureField"] == 1
    sent = form(script.requests[1])
    assert sent == {"pages": ["one.png", "page-002.png", "page-003.png"], "position": ["3"]}
    assert script.requests[1].headers["content-type"].startswith("multipart/form-data")


def test_staged_and_text_creates_are_multipart_too():
    script = Script(
        httpx.Response(200, json={"id": "p1", "kind": "comic"}),
        httpx.Response(200, json=NEW_CHAPTER),
        httpx.Response(200, json={"id": "p2", "kind": "novel"}),
        httpx.Response(200, json=NEW_CHAPTER),
    )
    client, _ = scripted_client(script)
    with client:
        client.create_chapter("p1", staged=True)
        client.create_chapter("p2", text="第一章\n河流")
    assert form(script.requests[1]) == {"staged": ["1"]}
    assert form(script.requests[3]) == {"text": ["第一章\n河流"]}


def test_the_project_kind_is_read_once_per_client():
    script = Script(
        httpx.Response(200, json={"id": "p1", "kind": "comic"}),
        httpx.Response(200, json=NEW_CHAPTER),
        httpx.Response(200, json=NEW_CHAPTER),
    )
    client, _ = scripted_client(script)
    with client:
        client.create_chapter("p1", staged=True)
        client.create_chapter("p1", staged=True)
    assert script.methods == ["GET /projects/p1"] + ["POST /projects/p1/chapters"] * 2


def test_add_pages_start_and_rescan_send_what_the_spec_says():
    added = {"chapterId": "c1", "pages": [{"id": "g1", "position": 4, "sourceImageR2Key": "k/4"}]}
    script = Script(
        httpx.Response(200, json={"id": "c1", "project": {"id": "p1", "kind": "comic"}}),
        httpx.Response(200, json=added),
        httpx.Response(200, json={"chapterId": "c1", "pageCount": 1}),
        httpx.Response(200, json={"chapterId": "c1", "pageCount": 4}),
        httpx.Response(200, json={"queued": True, "clearedRegions": 12}),
    )
    client, _ = scripted_client(script)
    with client:
        result = client.add_pages("c1", [make_page(4)], hold=True, position=4)
        assert result.pages[0].source_image_key == "k/4"
        assert client.start_chapter("c1", page_ids=["g1"]).page_count == 1
        assert client.start_chapter("c1").page_count == 4
        assert client.rescan_chapter("c1").cleared_regions == 12
    assert form(script.requests[1]) == {"pages": ["page-001.png"], "hold": ["1"], "position": ["4"]}
    assert json.loads(script.requests[2].content) == {"pageIds": ["g1"]}
    assert script.requests[3].content == b"" and script.requests[4].content == b""


@pytest.mark.parametrize(
    ("call", "reason"),
    [
        (lambda c: c.create_chapter("p1", [b"<svg xmlns='x'></svg>"]), "SVG"),
        (lambda c: c.create_chapter("p1", [b"not an image"]), "cannot be opened"),
        (lambda c: c.create_chapter("p1", text=""), "empty"),
        (lambda c: c.create_chapter("p1", text="x" * 200_001), "200,001"),
        (lambda c: c.create_chapter("p1", staged=True, position=0), "below 1"),
        (lambda c: c.create_chapter("p1", staged=True, position=1.5), "not a whole number"),
        (lambda c: c.add_pages("c1", [make_page(1), make_page(2)], position=2), "with 2 pages"),
        (lambda c: c.create_chapter("p1", staged=True, text="both"), "exactly one of"),
    ],
)
def test_refused_uploads_send_nothing(call, reason):
    script = Script()
    client, _ = scripted_client(script)
    with client, pytest.raises((tk.InvalidUpload, TypeError), match=reason):
        call(client)
    assert script.requests == []


def test_pages_for_a_novel_are_refused_before_any_page_is_sent():
    script = Script(httpx.Response(200, json={"id": "c1", "project": {"id": "p", "kind": "novel"}}))
    client, _ = scripted_client(script)
    with (
        client,
        pytest.raises(
            tk.InvalidUpload, match=r"novel: it takes text.*first page: page 1 \(bytes\)"
        ),
    ):
        client.add_pages("c1", [make_page(1)])
    assert script.methods == ["GET /chapters/c1"]


# -- Jupyter ---------------------------------------------------------------------------


def test_the_sync_client_works_inside_a_running_event_loop():
    script = Script(httpx.Response(200, json=[{"id": "p1"}]))
    client, _ = scripted_client(script)

    async def notebook_cell() -> list[tk.Project]:
        assert asyncio.get_running_loop().is_running()
        return client.list_projects()

    with client:
        assert asyncio.run(notebook_cell())[0].id == "p1"


def test_leaving_the_with_block_closes_the_connection_pool():
    client, _ = scripted_client(Script())
    with client:
        assert not client._http.is_closed
    assert client._http.is_closed

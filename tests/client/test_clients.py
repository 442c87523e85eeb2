"""The sync client: configuration, requests it builds, errors it raises; then every route
against the emulator over loopback."""

from __future__ import annotations

import asyncio
import io
import json
import traceback

import httpx
import pytest
from page_images import make_page
from scripted import BASE_URL, KEY, Script, scripted_client

import toolkit as tk
from toolkit.errors import in_plain_words

NO_WAIT = tk.RetryPolicy(sleep=lambda _: None)  # retries at once: tests do not sleep

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
        "chapter 'c9' is still processing (409); wait for it to finish, then try again "
        "(client.wait_for_chapter('c9') waits for it)"
    )
    # The same, in plain words for a panel that names the chapter its own way.
    assert caught.value.reason == "the chapter is still processing"
    assert caught.value.advice == "wait for it to finish, then try again"


def test_an_answer_that_is_not_json_is_an_api_error_with_a_hint():
    client, _ = scripted_client(Script(httpx.Response(200, text="<html>login</html>")))
    with client, pytest.raises(tk.UnexpectedAnswer, match="not JSON; check that the base URL"):
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


# -- against the emulator, over loopback -----------------------------------------------


def run_to_end(client: tk.Client, emulator, chapter_id: str) -> tk.ChapterDetail:
    """Wait for a chapter while moving the emulator's manual clock a minute per poll."""
    return client.wait_for_chapter(
        chapter_id, timeout=60, poll_interval=0.001, on_poll=lambda _: emulator.advance(60)
    )


def test_projects_are_listed_and_read(client, comic_project, novel_project):
    projects = {p.id: p for p in client.list_projects()}
    assert set(projects) == {comic_project["id"], novel_project["id"]}
    listed = projects[comic_project["id"]]
    assert listed.language_codes == ["en", "fr"] and listed.chapter_count == 0
    project = client.get_project(comic_project["id"])
    assert (project.name, project.kind, project.source_language) == (
        "Moonlit Harbor",
        "comic",
        "ja",
    )
    assert project.reading_direction == "rtl" and project.process_steps == "full"
    assert project.created_at is not None and project.raw["id"] == project.id


def test_a_comic_chapter_runs_from_create_to_needs_review(client, emulator, comic_project, pages):
    chapter = client.create_chapter(comic_project["id"], pages=pages, position=1)
    assert chapter.position == 1 and [p.position for p in chapter.pages] == [1, 2, 3]
    assert client.get_chapter(chapter.id).processing is True
    done = run_to_end(client, emulator, chapter.id)
    assert done.processing is False and done.failed is False
    assert done.status == "needs_review" and done.untranslated == 0
    assert done.project is not None and done.project.id == comic_project["id"]
    [item] = client.list_chapters(comic_project["id"])
    assert item.id == chapter.id and item.page_count == 3 and item.started is True
    assert item.credits_spent == 6  # 3 pages in 2 languages
    assert {(e.language_code, e.format) for e in item.prepared_exports} >= {
        ("en", "cbz"),
        ("fr", "txt"),
    }


def test_a_staged_chapter_takes_pages_then_starts_then_runs_held_pages(
    client, emulator, comic_project, pages
):
    staged = client.create_chapter(comic_project["id"], staged=True)
    assert staged.pages == [] and staged.position == 1
    added = client.add_pages(staged.id, pages[:2], hold=True)
    assert [p.position for p in added.pages] == [1, 2]
    assert all(p.source_image_key for p in added.pages), "storage key matched by its shape"
    client.add_pages(staged.id, [pages[2]], hold=True, position=5)
    started = client.start_chapter(staged.id)
    assert started.chapter_id == staged.id and started.page_count == 3
    run_to_end(client, emulator, staged.id)

    held = client.add_pages(staged.id, [make_page(9)], hold=True)
    assert client.start_chapter(staged.id, page_ids=[held.pages[0].id]).page_count == 1
    done = run_to_end(client, emulator, staged.id)
    assert done.page_count == 4 and done.untranslated == 0


def test_a_novel_chapter_runs_from_its_text(client, emulator, novel_project):
    text = "\n".join(f"第{n}行：河流在星空下流淌。" for n in range(1, 41))
    chapter = client.create_chapter(novel_project["id"], text=text)
    assert chapter.position == 1 and chapter.pages == []
    done = run_to_end(client, emulator, chapter.id)
    assert done.status == "needs_review"
    [item] = client.list_chapters(novel_project["id"])
    assert {e.format for e in item.prepared_exports} == {"txt", "docx"}


def test_a_failed_run_is_rescanned_and_then_finishes(client, emulator, comic_project, pages):
    emulator.set_faults(failure_rate=1.0, seed=7)
    chapter = client.create_chapter(comic_project["id"], pages=pages)
    failed = run_to_end(client, emulator, chapter.id)
    assert failed.failed is True and failed.failure_reason
    emulator.set_faults(failure_rate=0.0)
    rescan = client.rescan_chapter(chapter.id)
    assert rescan.queued is True and rescan.cleared_regions is not None
    done = run_to_end(client, emulator, chapter.id)
    assert done.failed is False and done.status == "needs_review"


# Every error status the emulator produces, each with its class.


def test_an_unknown_key_is_an_authentication_error(emulator, workspace):
    with (
        tk.Client(emulator.url, "not-a-key") as stranger,
        pytest.raises(tk.AuthenticationError, match=r"API key was refused \(401\)"),
    ):
        stranger.list_projects()


def test_unknown_and_trashed_things_are_not_found(client, emulator, comic_project):
    with pytest.raises(tk.NotFound, match=r"chapter 'missing' not found \(404\)"):
        client.get_chapter("missing")
    emulator.trash_project(comic_project["id"])
    with pytest.raises(tk.NotFound) as caught:
        client.list_chapters(comic_project["id"])
    assert caught.value.message == "project not found"


def test_bad_requests_say_what_was_wrong(client, emulator, comic_project, novel_project):
    empty = client.create_chapter(comic_project["id"], staged=True)
    with pytest.raises(tk.BadRequest, match="upload pages before starting") as caught:
        client.start_chapter(empty.id)
    assert caught.value.status == 400 and "at least one page" in caught.value.message
    novel = client.create_chapter(novel_project["id"], text="一行。")
    run_to_end(client, emulator, novel.id)  # a busy chapter would be a 409 first
    with pytest.raises(tk.BadRequest, match="only a comic chapter with pages can be re-scanned"):
        client.rescan_chapter(novel.id)


def test_too_few_credits_is_insufficient_credits(client, emulator, workspace, comic_project, pages):
    emulator.set_credits(workspace["id"], 2)
    with pytest.raises(tk.InsufficientCredits, match=r"\(402\); add credits") as caught:
        client.create_chapter(comic_project["id"], pages=pages)
    assert client.list_chapters(comic_project["id"]) == []
    # In plain words for a person: no id, no method name, the advice once.
    assert in_plain_words(caught.value) == (
        "Not enough credits. Add credits to the workspace, or send fewer pages."
    )


def test_a_general_refusal_in_plain_words_quotes_the_service():
    script = Script(
        httpx.Response(400, json={"error": {"message": "pageIds must name held pages"}})
    )
    client, _ = scripted_client(script)
    with client, pytest.raises(tk.BadRequest) as caught:
        client.start_chapter("c1", page_ids=["x"])
    assert in_plain_words(caught.value) == (
        "The service refused the request (pageIds must name held pages). Upload pages before "
        "starting; on a chapter that has run, start only the pages added to it held since."
    )
    assert "page_ids=" in str(caught.value)  # the developer's message keeps the code hint


def test_a_taken_number_and_a_busy_chapter_are_conflicts(client, comic_project, pages):
    first = client.create_chapter(comic_project["id"], pages=pages[:1], position=3)
    with pytest.raises(tk.Conflict, match=r"already has a chapter 3 \(409\)"):
        client.create_chapter(comic_project["id"], pages=pages[1:2], position=3)
    with pytest.raises(tk.Conflict, match=r"still processing \(409\); wait for it"):
        client.rescan_chapter(first.id)
    assert [c.id for c in client.list_chapters(comic_project["id"])] == [first.id]


def test_pages_the_client_passes_but_the_service_refuses(client, comic_project):
    from PIL import Image

    huge = io.BytesIO()
    Image.new("1", (7000, 6000), 1).save(huge, "PNG")  # 42 million pixels, a small file
    ppm = io.BytesIO()
    Image.new("RGB", (20, 30), "white").save(ppm, "PPM")  # Pillow opens it; not a page type
    cut_jpeg = make_page(3, fmt="JPEG")[:700]  # its header reads; its pixels do not
    project = comic_project["id"]
    with pytest.raises(tk.PayloadTooLarge):
        client.create_chapter(project, pages=[huge.getvalue()])
    with pytest.raises(tk.UnsupportedMediaType):
        client.create_chapter(project, pages=[ppm.getvalue()])
    with pytest.raises(tk.Unprocessable):
        client.create_chapter(project, pages=[cut_jpeg])
    assert client.list_chapters(project) == []


# Faults: busy service, slow service, answers lost after the service acted.


class LoseFirstPostAnswer(httpx.BaseTransport):
    """Forwards to the real emulator; the first POST's answer is then lost on the way back."""

    def __init__(self) -> None:
        self.inner = httpx.HTTPTransport()
        self.lost = 0

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = self.inner.handle_request(request)
        if request.method == "POST" and not self.lost:
            self.lost += 1
            response.read()
            response.close()
            raise httpx.ReadError("connection reset after the service answered", request=request)
        return response

    def close(self) -> None:
        self.inner.close()


def test_a_create_whose_answer_was_lost_makes_exactly_one_chapter(
    emulator, workspace, comic_project, pages
):
    transport = LoseFirstPostAnswer()
    with tk.Client(emulator.url, workspace["apiKey"], transport=transport, retry=NO_WAIT) as lossy:
        # Never adopted (nothing the service gives back excludes another writer): named.
        with pytest.raises(tk.UnconfirmedCreate) as caught:
            lossy.create_chapter(comic_project["id"], pages=pages, position=4)
        chapters = lossy.list_chapters(comic_project["id"])
    assert transport.lost == 1
    assert [(c.id, c.position) for c in chapters] == [(caught.value.chapter_id, 4)]
    charges = emulator.ledger(workspace["id"])["charges"]
    assert [c["reason"] for c in charges] == ["create"], "charged once"


def test_without_a_position_a_lost_create_is_not_repeated(
    emulator, workspace, comic_project, pages
):
    with tk.Client(emulator.url, workspace["apiKey"], transport=LoseFirstPostAnswer()) as lossy:
        with pytest.raises(tk.TransportError, match=r"may have acted.*with position="):
            lossy.create_chapter(comic_project["id"], pages=pages)
        assert len(lossy.list_chapters(comic_project["id"])) == 1


def test_gets_ride_out_a_busy_service_and_posts_do_not_retry(emulator, workspace, comic_project):
    with tk.Client(emulator.url, workspace["apiKey"], max_retries=30, retry=NO_WAIT) as patient:
        emulator.set_faults(error_rate=0.5, seed=11)
        for _ in range(5):
            assert patient.get_project(comic_project["id"]).id == comic_project["id"]
        emulator.set_faults(error_rate=1.0, seed=11)
        with pytest.raises(tk.ServerError, match=r"\(503\); it may have acted"):
            patient.create_chapter(comic_project["id"], staged=True)
        with pytest.raises(tk.ServerError, match="gave up after 31 attempts"):
            patient.list_projects()


def test_a_slow_service_times_out_per_client_setting(emulator, workspace):
    emulator.set_faults(latency_ms=400)
    hasty = tk.Client(emulator.url, workspace["apiKey"], timeout=0.05, max_retries=1, retry=NO_WAIT)
    with hasty, pytest.raises(tk.TransportError, match=r"ReadTimeout.*after 2 attempts"):
        hasty.list_projects()


def test_the_latest_answer_tells_the_service_clock(client, emulator):
    assert client.last_response_date is None
    emulator.advance(3 * 3600)  # the emulator's clock now differs from the wall clock
    client.list_projects()
    assert client.last_response_date == emulator.now().replace(microsecond=0)

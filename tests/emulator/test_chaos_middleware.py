"""Each chaos kind, as a user's code meets it through the toolkit's client: retries after
a 429 with `Retry-After`, a lost create reconciled, a cut body and a reset retried, a slow
answer outlasting the upload's timeout. No timing is asserted: latency and trickles are
real time, kept small, and only their effects are checked."""

from __future__ import annotations

import logging

import httpx
import pytest
from emulator_helpers import plain_client

import toolkit as tk

CREATE = "/projects/{project_id}/chapters"


@pytest.fixture
def patient_client(emulator, workspace):
    """A client whose retries wait on the emulator's clock (as the plugin's does)."""
    policy = tk.RetryPolicy(
        jitter=lambda: 0.5,
        sleep=emulator.advance,
        monotonic=lambda: emulator.clock.now().timestamp(),
    )
    with tk.Client(base_url=emulator.url, api_key=workspace["apiKey"], retry=policy) as client:
        yield client


def _chapters(emulator, workspace) -> list[dict]:
    return emulator.ledger(workspace["id"])["charges"]


def test_a_429_with_retry_after_is_waited_out_and_the_create_then_succeeds(
    emulator, workspace, comic_project, pages, patient_client
):
    emulator.add_chaos("POST", CREATE, "status", status=429, retry_after=30, count=2)
    before = emulator.now()
    chapter = patient_client.create_chapter(comic_project["id"], pages)
    assert (emulator.now() - before).total_seconds() == 60  # two Retry-After waits
    assert [c["chapterId"] for c in _chapters(emulator, workspace)] == [chapter.id]
    (rule,) = emulator.chaos_rules()
    assert (rule["applied"], rule["count"]) == (2, 0)


def test_a_status_rule_answers_its_own_body_and_does_nothing(
    emulator, workspace, comic_project, pages, patient_client
):
    body = {"error": {"status": 500, "message": "the translation backend is down"}}
    emulator.add_chaos("POST", CREATE, "status", status=500, body=body, count=1)
    with pytest.raises(tk.ServerError, match="the translation backend is down"):
        patient_client.create_chapter(comic_project["id"], pages)  # no position: not retried
    assert _chapters(emulator, workspace) == []
    assert patient_client.list_chapters(comic_project["id"]) == []


def test_a_create_whose_answer_is_dropped_is_named_not_adopted(
    emulator, workspace, comic_project, pages, patient_client
):
    emulator.add_chaos("POST", CREATE, "drop", count=1)
    with pytest.raises(tk.UnconfirmedCreate) as lost:  # the service shows nothing to tell by
        patient_client.create_chapter(comic_project["id"], pages, position=4)
    assert lost.value.position == 4
    listed = patient_client.list_chapters(comic_project["id"])
    assert [c.id for c in listed] == [lost.value.chapter_id]  # made once, by the first attempt
    assert len(_chapters(emulator, workspace)) == 1  # charged once


def test_a_dropped_create_without_a_position_says_it_may_have_acted(
    emulator, workspace, comic_project, pages, patient_client
):
    emulator.add_chaos("POST", CREATE, "drop", count=1)
    with pytest.raises(tk.TransportError) as caught:
        patient_client.create_chapter(comic_project["id"], pages)
    assert "position" in str(caught.value)  # the advice: send a position next time
    assert len(patient_client.list_chapters(comic_project["id"])) == 1  # it did act


def test_a_body_cut_short_is_read_again(emulator, comic_project, pages, patient_client):
    chapter = patient_client.create_chapter(comic_project["id"], pages)
    emulator.add_chaos("GET", "/chapters/{id}", "cut", after_bytes=20, count=1)
    assert patient_client.get_chapter(chapter.id).id == chapter.id
    assert emulator.chaos_rules()[0]["applied"] == 1


def test_a_reset_connection_is_retried_for_a_read(emulator, comic_project, patient_client):
    emulator.add_chaos("GET", "/projects", "reset", count=2)
    assert [p.name for p in patient_client.list_projects()] == ["Moonlit Harbor"]
    assert emulator.chaos_rules()[0]["applied"] == 2


def test_a_reset_on_a_write_happens_before_anything_is_done(
    emulator, workspace, comic_project, pages, patient_client
):
    emulator.add_chaos("POST", CREATE, "reset", count=1)
    try:
        chapter = patient_client.create_chapter(comic_project["id"], pages)
    except tk.TransportError:
        # The body was written whole before the reset: the client cannot know that the
        # service did nothing, so it says so rather than send again; nothing was made.
        assert patient_client.list_chapters(comic_project["id"]) == []
    else:
        # The reset came while the body was still being written: not sent, so sent again
        # (docs/client.md, "What was sent"); made once, by the second attempt.
        listed = patient_client.list_chapters(comic_project["id"])
        assert [c.id for c in listed] == [chapter.id]
    assert emulator.chaos_rules()[0]["applied"] == 1


def test_latency_delays_the_answer_but_changes_nothing(emulator, comic_project, patient_client):
    emulator.add_chaos("GET", "/projects/{id}", "latency", latency_ms=30)
    assert patient_client.get_project(comic_project["id"]).name == "Moonlit Harbor"
    assert emulator.chaos_rules()[0]["applied"] == 1


def test_a_trickled_answer_outlasting_the_uploads_timeout_fails_after_acting(
    emulator, workspace, comic_project, pages
):
    # The answer comes a byte every 2 s; the client waits 0.3 s for each read.
    emulator.add_chaos("POST", CREATE, "trickle", chunk_bytes=1, interval_ms=2_000, count=1)
    with tk.Client(
        base_url=emulator.url, api_key=workspace["apiKey"], timeout=0.3, max_retries=0
    ) as client:
        with pytest.raises(tk.TransportError):
            client.create_chapter(comic_project["id"], pages)
        assert len(client.list_chapters(comic_project["id"])) == 1  # the service acted
    # The client hung up, so the trickle stopped: the server stops with nothing in
    # flight to cancel (else it waits its 5 s grace and cancels the trickle, and says so
    # on uvicorn's logger, which does not propagate to pytest's).
    said = _Kept()
    logging.getLogger("uvicorn.error").addHandler(said)
    try:
        emulator.stop()
    finally:
        logging.getLogger("uvicorn.error").removeHandler(said)
    assert not [text for text in said.texts if "graceful shutdown" in text]


class _Kept(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.texts: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.texts.append(record.getMessage())


def test_a_trickled_answer_arrives_whole_when_the_client_waits(emulator, api, comic_project):
    emulator.add_chaos("GET", "/projects/{id}", "trickle", chunk_bytes=64, interval_ms=1)
    assert api.get(f"/projects/{comic_project['id']}").json()["name"] == "Moonlit Harbor"


def test_a_rule_for_one_chapter_leaves_the_others_alone(
    emulator, api, comic_project, pages, patient_client
):
    first = patient_client.create_chapter(comic_project["id"], pages[:1])
    second = patient_client.create_chapter(comic_project["id"], pages[1:2])
    emulator.add_chaos("GET", "/chapters/{id}", "status", status=503, chapter_id=first.id)
    assert api.get(f"/chapters/{first.id}").status_code == 503
    assert api.get(f"/chapters/{second.id}").status_code == 200


def test_a_rule_for_a_project_reaches_its_chapters(
    emulator, api, workspace, comic_project, pages, patient_client
):
    other = emulator.create_project(
        workspace["id"], name="Other", kind="comic", source_language="ja",
        reading_direction="rtl", process_steps="full", target_languages=["en"],
    )  # fmt: skip
    ours = patient_client.create_chapter(comic_project["id"], pages[:1])
    theirs = patient_client.create_chapter(other["id"], pages[1:2])
    emulator.add_chaos("*", "*", "status", status=503, project_id=comic_project["id"])
    assert api.get(f"/chapters/{ours.id}").status_code == 503
    assert api.get(f"/projects/{comic_project['id']}/chapters").status_code == 503
    assert api.get(f"/chapters/{theirs.id}").status_code == 200


def test_a_status_answer_carries_retry_after_and_the_emulators_date(emulator, api):
    emulator.add_chaos("GET", "/projects", "status", status=429, retry_after=7)
    answer = api.get("/projects")
    assert answer.status_code == 429
    assert answer.headers["retry-after"] == "7"
    assert httpx.Headers(answer.headers)["date"].endswith("2026 09:00:00 GMT")


def test_admin_routes_are_never_touched_by_chaos(emulator, workspace):
    emulator.add_chaos("*", "*", "reset")
    assert emulator.get_workspace(workspace["id"])["id"] == workspace["id"]
    with plain_client(emulator.url) as raw:
        assert raw.get("/openapi.json").status_code == 200

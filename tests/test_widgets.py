"""The notebook panels, driven headless against the emulator over loopback HTTP.

Each test sets widget values, feeds `FileUpload.set_state`, clicks buttons, and checks
what the emulator received (its ledger, its chapters, the multipart bodies sent) and
what the panel shows.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from toolkit.client import Client
from toolkit.widgets import Dashboard, RescanPanel, UploadPanel

SVG = b'<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"/>'


def file_state(files: dict[str, bytes], mime: str = "image/png") -> dict[str, Any]:
    """The state a browser sends when files are picked in a FileUpload."""
    return {
        "value": [
            {
                "name": name,
                "type": mime,
                "size": len(content),
                "last_modified": 1_700_000_000_000,
                "content": memoryview(content),
            }
            for name, content in files.items()
        ]
    }


class Recorder(httpx.BaseTransport):
    """Forwards to the emulator and keeps every request, body included."""

    def __init__(self) -> None:
        self.inner = httpx.HTTPTransport()
        self.requests: list[httpx.Request] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        request.read()
        self.requests.append(request)
        return self.inner.handle_request(request)

    def posts(self) -> list[httpx.Request]:
        return [r for r in self.requests if r.method == "POST"]

    def close(self) -> None:
        self.inner.close()


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()


@pytest.fixture
def recorded_client(emulator, workspace, recorder) -> Iterator[Client]:
    with Client(base_url=emulator.url, api_key=workspace["apiKey"], transport=recorder) as c:
        yield c


def charges(emulator, workspace, reason: str | None = None) -> list[dict[str, Any]]:
    found = emulator.ledger(workspace["id"])["charges"]
    return [c for c in found if reason is None or c["reason"] == reason]


def settle(emulator, client: Client, project_id: str, *, hours: float = 3) -> None:
    """Advance the clock until no chapter of the project is processing."""
    for _ in range(int(hours * 6)):
        if not any(c.processing for c in client.list_chapters(project_id)):
            return
        emulator.advance(600)
    raise AssertionError("chapters still processing after the clock was advanced")


def failed_chapter(emulator, client: Client, project_id: str, pages: list[bytes]) -> str:
    """A comic chapter whose run failed."""
    emulator.set_faults(failure_rate=1.0, seed=1)
    chapter = client.create_chapter(project_id, pages=pages)
    settle(emulator, client, project_id)
    emulator.set_faults(failure_rate=0.0)
    assert client.get_chapter(chapter.id).failed
    return chapter.id


# -- UploadPanel: new comic chapter -------------------------------------------------------


def test_comic_pages_sent_in_the_order_shown_after_editing(
    emulator, workspace, comic_project, recorded_client, recorder, make_page
):
    panel = UploadPanel(recorded_client)
    form = panel.comic
    assert form.project.value == comic_project["id"]
    form.files.upload.set_state(
        file_state(
            {"page-10.png": make_page(10), "page-2.png": make_page(2), "page-1.png": make_page(1)}
        )
    )
    assert form.files.names == ["page-1.png", "page-2.png", "page-10.png"]
    assert "3 pages x 2 languages" in form.cost.value and "6 credits" in form.cost.value
    assert recorder.posts() == []  # showing the price sent nothing

    form.files.order.value = 2  # page-10, moved up one place
    form.files.up.click()
    assert form.files.names == ["page-1.png", "page-10.png", "page-2.png"]
    form.create.click()

    (post,) = recorder.posts()
    sent = re.findall(rb'filename="([^"]+)"', post.content)
    assert sent == [b"page-1.png", b"page-10.png", b"page-2.png"]
    assert panel.message.tone == "success", panel.message.text
    assert "Created chapter 1" in panel.message.text
    (charge,) = charges(emulator, workspace)
    assert (charge["reason"], charge["pages"], charge["credits"]) == ("create", 3, 6)
    assert form.files.uploads == []  # ready for the next chapter


def test_taken_chapter_number_is_a_readable_conflict(
    emulator, workspace, comic_project, client, pages
):
    client.create_chapter(comic_project["id"], pages=pages[:1], position=4)
    panel = UploadPanel(client)
    panel.comic.files.upload.set_state(file_state({"a.png": pages[1]}))
    panel.comic.number.value = "4"
    panel.comic.create.click()
    assert panel.message.tone == "error"
    assert "Conflict (409)" in panel.message.text
    assert "Traceback" not in panel.message.value
    assert len(client.list_chapters(comic_project["id"])) == 1
    assert len(charges(emulator, workspace)) == 1


def test_not_enough_credits_is_shown_and_nothing_created(
    emulator, workspace, comic_project, client, pages
):
    emulator.set_credits(workspace["id"], 3)
    panel = UploadPanel(client)
    panel.comic.files.upload.set_state(file_state({f"p{i}.png": p for i, p in enumerate(pages)}))
    assert "6 credits" in panel.comic.cost.value
    panel.comic.create.click()
    assert panel.message.tone == "error"
    assert panel.message.text.startswith("Not enough credits (402)")
    assert client.list_chapters(comic_project["id"]) == []
    assert emulator.get_workspace(workspace["id"])["credits"] == 3


def test_bad_files_refused_with_the_clients_message_before_sending(
    comic_project, recorded_client, recorder, pages
):
    panel = UploadPanel(recorded_client)
    panel.comic.files.upload.set_state(file_state({"cover.png": SVG, "p1.png": pages[0]}))
    assert panel.message.tone == "error"
    assert "cover.png" in panel.message.text and "SVG" in panel.message.text
    panel.comic.create.click()
    assert "cover.png" in panel.message.text
    assert recorder.posts() == []

    panel.comic.files.upload.set_state(file_state({"p1.png": pages[0]}))
    assert panel.message.tone is None  # the refusal goes once the file is replaced


def test_bad_chapter_number_refused_before_sending(comic_project, recorded_client, recorder, pages):
    panel = UploadPanel(recorded_client)
    panel.comic.files.upload.set_state(file_state({"p1.png": pages[0]}))
    panel.comic.number.value = "two"
    panel.comic.create.click()
    assert "'two' is not a whole number" in panel.message.text
    assert recorder.posts() == []


# -- UploadPanel: staged chapters, held pages, start --------------------------------------


def test_staged_chapter_pages_held_then_started(emulator, workspace, comic_project, client, pages):
    panel = UploadPanel(client)
    panel.comic.staged.value = True
    assert "costs nothing" in panel.comic.cost.value
    panel.comic.create.click()
    assert "Created staged chapter 1" in panel.message.text
    (chapter,) = client.list_chapters(comic_project["id"])
    assert chapter.started is False and charges(emulator, workspace) == []

    form = panel.pages
    assert form.chapter.value == chapter.id
    form.files.upload.set_state(file_state({"b.png": pages[1], "a.png": pages[0]}))
    form.hold.value = True
    assert "cost nothing until they are started" in form.cost.value
    form.add.click()
    assert panel.message.tone == "success", panel.message.text
    assert client.list_chapters(comic_project["id"])[0].page_count == 2
    assert charges(emulator, workspace) == []
    assert "2 held pages" in form.held_info.value and "4 credits" in form.held_info.value

    form.start.click()
    assert "Started Chapter 1: 2 pages running" in panel.message.text
    (charge,) = charges(emulator, workspace)
    assert (charge["reason"], charge["pages"], charge["credits"]) == ("start", 2, 4)
    assert client.get_chapter(chapter.id).processing


def test_pages_held_on_a_chapter_that_ran_are_started_by_id(
    emulator, workspace, comic_project, client, pages
):
    chapter = client.create_chapter(comic_project["id"], pages=pages[:2])
    settle(emulator, client, comic_project["id"])
    panel = UploadPanel(client)
    form = panel.pages
    form.chapter.value = chapter.id
    form.start.click()  # nothing held yet: a readable refusal, nothing sent
    assert "no held pages recorded" in panel.message.text
    assert len(charges(emulator, workspace)) == 1

    form.files.upload.set_state(file_state({"extra.png": pages[2]}))
    form.hold.value = True
    form.add.click()
    form.start.click()
    assert panel.message.tone == "success", panel.message.text
    start = charges(emulator, workspace, "start")
    assert [(c["pages"], c["credits"]) for c in start] == [(1, 2)]
    assert client.list_chapters(comic_project["id"])[0].page_count == 3


def test_page_number_with_several_pages_refused(comic_project, client, pages):
    chapter = client.create_chapter(comic_project["id"], staged=True)
    panel = UploadPanel(client)
    panel.pages.chapter.value = chapter.id
    panel.pages.files.upload.set_state(file_state({"a.png": pages[0], "b.png": pages[1]}))
    panel.pages.number.value = "1"
    panel.pages.hold.value = True
    panel.pages.add.click()
    assert panel.message.tone == "error"
    assert client.list_chapters(comic_project["id"])[0].page_count == 0


def test_adding_pages_to_a_running_chapter_shows_the_409(comic_project, client, pages):
    chapter = client.create_chapter(comic_project["id"], pages=pages[:1])
    panel = UploadPanel(client)
    panel.pages.chapter.value = chapter.id
    panel.pages.files.upload.set_state(file_state({"a.png": pages[1]}))
    panel.pages.add.click()
    assert "Conflict (409)" in panel.message.text


# -- UploadPanel: novel chapters -----------------------------------------------------------


def test_novel_chapter_from_a_txt_upload(emulator, workspace, novel_project, client):
    text = "The ferry left late.\n\nNobody was surprised.\n" * 100  # 4,300 characters
    panel = UploadPanel(client)
    form = panel.novel
    assert form.project.value == novel_project["id"]
    form.file.set_state(file_state({"ch1.txt": text.encode()}, mime="text/plain"))
    assert form.text.value == text
    assert "3 started 2,000 characters x 2 languages" in form.cost.value
    form.create.click()
    assert panel.message.tone == "success", panel.message.text
    (chapter,) = client.list_chapters(novel_project["id"])
    assert chapter.position == 1
    (charge,) = charges(emulator, workspace)
    assert charge["credits"] == 6


def test_novel_text_that_is_not_utf8_is_refused(novel_project, client):
    panel = UploadPanel(client)
    panel.novel.file.set_state(file_state({"ch1.txt": b"\xff\xfe\x00bad"}, mime="text/plain"))
    assert "ch1.txt is not UTF-8 text" in panel.message.text
    assert panel.novel.text.value == ""


def test_empty_novel_text_is_refused(novel_project, client):
    panel = UploadPanel(client)
    panel.novel.create.click()
    assert panel.message.tone == "error"
    assert client.list_chapters(novel_project["id"]) == []


# -- RescanPanel ---------------------------------------------------------------------------


def test_rescan_runs_only_after_confirmation(emulator, workspace, comic_project, client, pages):
    chapter_id = failed_chapter(emulator, client, comic_project["id"], pages[:2])
    panel = RescanPanel(client)
    assert "discards every translation, every edit and every prepared file" in panel.warning.value
    assert [value for _, value in panel.choice.options] == [chapter_id]
    panel.choice.value = (chapter_id,)
    assert "4 credits" in panel.cost.value

    panel.rescan.click()
    assert panel.confirm_box.layout.display == ""
    assert "Re-scan 1 chapter(s)" in panel.question.value and "4 credits" in panel.question.value
    assert charges(emulator, workspace, "rescan") == []  # asking sends nothing

    panel.confirm.click()
    assert panel.message.tone == "success", panel.message.text
    assert "re-scan queued" in panel.message.text
    assert [c["credits"] for c in charges(emulator, workspace, "rescan")] == [4]
    assert client.get_chapter(chapter_id).failed is False
    assert panel.choice.options == ()  # no longer failed


def test_rescan_cancel_and_changed_choice_send_nothing(
    emulator, workspace, comic_project, client, pages
):
    first = failed_chapter(emulator, client, comic_project["id"], pages[:1])
    second = failed_chapter(emulator, client, comic_project["id"], pages[1:2])
    panel = RescanPanel(client)
    panel.choice.value = (first,)
    panel.rescan.click()
    panel.cancel.click()
    assert panel.confirm_box.layout.display == "none"
    panel.confirm.click()  # a stale confirm button does nothing
    assert "Nothing to confirm" in panel.message.text

    panel.rescan.click()
    panel.choice.value = (first, second)  # the question named only the first
    assert panel.confirm_box.layout.display == "none"
    assert "choice changed" in panel.message.text
    assert charges(emulator, workspace, "rescan") == []


def test_rescan_several_reports_each_refusal(emulator, workspace, comic_project, client, pages):
    first = failed_chapter(emulator, client, comic_project["id"], pages[:1])
    second = failed_chapter(emulator, client, comic_project["id"], pages[1:2])
    emulator.set_credits(workspace["id"], 2)  # enough for one re-scan in two languages
    panel = RescanPanel(client)
    panel.choice.value = (first, second)
    panel.rescan.click()
    panel.confirm.click()
    assert panel.message.tone == "warning"
    lines = panel.message.text.splitlines()
    assert "re-scan queued" in lines[0]
    assert "not re-scanned" in lines[1] and "Not enough credits (402)" in lines[1]
    assert len(charges(emulator, workspace, "rescan")) == 1


def test_rescan_lists_any_chapter_on_request_and_sets_novels_apart(
    emulator, comic_project, novel_project, client, pages
):
    ok = client.create_chapter(comic_project["id"], pages=pages[:1])
    client.create_chapter(novel_project["id"], text="One line.\nTwo lines.\n")
    panel = RescanPanel(client)
    assert panel.choice.options == ()
    assert "No failed chapters" in panel.notes.value
    panel.show_all.value = True
    assert [value for _, value in panel.choice.options] == [ok.id]
    assert "1 novel chapter(s) not listed" in panel.notes.value

    panel.choice.value = (ok.id,)  # still running: the service refuses with 409
    panel.rescan.click()
    panel.confirm.click()
    assert panel.message.tone == "error"
    assert "Conflict (409)" in panel.message.text


# -- Dashboard -----------------------------------------------------------------------------


def test_dashboard_table_shows_status_coverage_failures_and_totals(
    emulator, comic_project, client, pages
):
    failed_id = failed_chapter(emulator, client, comic_project["id"], pages[:1])
    client.create_chapter(comic_project["id"], pages=pages[1:3])
    settle(emulator, client, comic_project["id"])
    dash = Dashboard(client)
    assert dash.picker.value == comic_project["id"]
    table = dash.table.value
    assert table.count('class="tk-chapter"') == 2
    assert "needs_review" in table and "100%" in table
    reason = client.get_chapter(failed_id).failure_reason
    assert "failed" in table and reason in table
    spent = sum(c.credits_spent for c in client.list_chapters(comic_project["id"]))
    assert f"<b>{spent:g}</b> credits spent" in dash.summary.value
    assert "<b>1</b> failed" in dash.summary.value


def test_dashboard_shows_live_progress_of_a_running_chapter(emulator, comic_project, client, pages):
    chapter = client.create_chapter(comic_project["id"], pages=pages)
    dash = Dashboard(client)
    assert "reading pages" in dash.table.value  # a run starts by reading the pages
    for _ in range(60):
        emulator.advance(20)
        detail = client.get_chapter(chapter.id)
        done = [lang for lang in detail.languages if lang.untranslated]
        if detail.processing and not detail.detecting and done:
            break
    dash.refresh()
    shares = [int(s) for s in re.findall(r"(\d+)% <small>", dash.table.value)]
    assert shares and any(share < 100 for share in shares)
    assert "<b>1</b> running" in dash.summary.value


def test_dashboard_auto_refresh_runs_in_the_background(emulator, comic_project, client, pages):
    dash = Dashboard(client, interval=0.05)
    assert "No chapters" in dash.table.value
    dash.auto.value = True
    try:
        client.create_chapter(comic_project["id"], pages=pages[:1])  # the kernel is free
        deadline = time.monotonic() + 10
        while 'class="tk-chapter"' not in dash.table.value:
            assert time.monotonic() < deadline, "the background refresh never showed the chapter"
            time.sleep(0.02)
    finally:
        dash.auto.value = False
    stopped_at = dash.refreshes
    time.sleep(0.2)
    assert dash.refreshes <= stopped_at + 1  # at most the refresh already under way
    dash.close()


def test_dashboard_network_failure_is_a_message_not_a_traceback():
    with Client(base_url="http://127.0.0.1:9", api_key="k", max_retries=0, timeout=2) as c:
        dash = Dashboard(c)
    assert dash.message.tone == "error"
    assert dash.message.text.startswith("Could not reach the service")


# -- With a snapshot store -----------------------------------------------------------------


def test_upload_price_learned_from_the_store(
    emulator, comic_project, client, pages, tmp_path, make_page
):
    from toolkit.store import SnapshotStore

    store = SnapshotStore(str(tmp_path / "snapshots"))
    panel = UploadPanel(client, store=store)
    panel.comic.files.upload.set_state(file_state({"a.png": pages[0]}))
    assert "at 1 credit each" in panel.comic.cost.value  # no history yet: the plain rule

    store.take(client, at=emulator.now())
    client.create_chapter(comic_project["id"], pages=pages)
    emulator.advance(60)
    store.take(client, at=emulator.now())
    panel.comic.files.upload.set_state(
        file_state({f"p{i}.png": make_page(20 + i) for i in range(5)})
    )
    assert "price learned from the store's history" in panel.comic.cost.value
    assert "about 10 credits" in panel.comic.cost.value  # 5 pages x 2 languages x 1 credit


def test_dashboard_takes_a_snapshot_on_request(emulator, comic_project, client, pages, tmp_path):
    from toolkit.store import SnapshotStore

    store = SnapshotStore(str(tmp_path / "snapshots"))
    client.create_chapter(comic_project["id"], pages=pages[:1])
    dash = Dashboard(client, store)
    assert dash.snapshot_button.layout.display == ""
    dash.snapshot_button.click()
    assert dash.message.tone == "success", dash.message.text
    assert len(store.snapshots()) == 1
    assert store.latest("chapters")["chapter_id"].tolist() == [dash.chapters[0].id]
    assert Dashboard(client).snapshot_button.layout.display == "none"  # no store, no button


def test_dashboard_marks_stalled_chapters_from_the_store(
    emulator, comic_project, client, pages, tmp_path
):
    from toolkit.store import SnapshotStore

    store = SnapshotStore(str(tmp_path / "snapshots"))
    emulator.set_faults(stall_rate=1.0, seed=5)
    client.create_chapter(comic_project["id"], pages=pages[:1])
    for minutes in (0, 10, 40, 40):
        emulator.advance(minutes * 60)
        store.take(client, at=emulator.now())
    dash = Dashboard(client, store)
    assert client.list_chapters(comic_project["id"])[0].processing
    assert "no progress since the last snapshots" in dash.table.value


def test_novel_text_over_the_limit_is_refused_as_typed(novel_project, client):
    panel = UploadPanel(client)
    panel.novel.text.value = "x" * 200_001
    assert panel.message.tone == "error"
    assert "200,001 characters, over the service's limit" in panel.message.text
    assert panel.novel.cost.value == ""
    panel.novel.create.click()
    assert client.list_chapters(novel_project["id"]) == []
    panel.novel.text.value = "short enough"
    assert panel.message.tone is None and "1 started 2,000 characters" in panel.novel.cost.value


def test_a_held_page_placed_at_a_page_number(comic_project, recorded_client, recorder, pages):
    chapter = recorded_client.create_chapter(comic_project["id"], staged=True)
    panel = UploadPanel(recorded_client)
    form = panel.pages
    form.chapter.value = chapter.id
    form.files.upload.set_state(file_state({"cover.png": pages[0]}))
    form.number.value = "3"
    form.hold.value = True
    form.add.click()
    assert (
        panel.message.text == "Added 1 page to Chapter 1: held; start them with 'Start held pages'."
    )
    body = recorder.posts()[-1].content
    assert re.search(rb'name="position"\r\n\r\n3\r\n', body)
    assert re.search(rb'name="hold"\r\n\r\n1\r\n', body)
    assert "1 held page." in form.held_info.value


def test_dashboard_recovers_once_the_service_answers_again(emulator, workspace, comic_project):
    # No retries: the client's backoff is its own business, tested with the client.
    client = Client(base_url=emulator.url, api_key=workspace["apiKey"], max_retries=0)
    dash = Dashboard(client)
    emulator.set_faults(error_rate=1.0, seed=2)
    dash.refresh()
    assert dash.message.text.startswith("The service failed (503)")
    emulator.set_faults(error_rate=0.0)
    dash.refresh()
    assert dash.message.tone is None
    client.close()


def test_a_new_chapter_is_chosen_in_the_pages_tab(comic_project, client, pages):
    client.create_chapter(comic_project["id"], staged=True, position=5)
    panel = UploadPanel(client)
    panel.comic.staged.value = True
    panel.comic.number.value = "2"
    panel.comic.create.click()
    (new,) = [c for c in client.list_chapters(comic_project["id"]) if c.position == 2]
    assert panel.pages.chapter.value == new.id

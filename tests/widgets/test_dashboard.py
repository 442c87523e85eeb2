"""The Dashboard, driven headless against the emulator over loopback."""

from __future__ import annotations

import re
import threading
import time
from datetime import UTC, datetime

import httpx
import pandas as pd
import pytest
from widget_helpers import charges, failed_chapter, file_state, settle

from toolkit.client import Client
from toolkit.formatting import show
from toolkit.store import SnapshotStore
from toolkit.widgets import Dashboard, UploadPanel

DETAIL = re.compile(r"/api/v1/chapters/[^/]+$")


def rows(dash: Dashboard) -> list[str]:
    """The chapter numbers in the table, in the order shown."""
    return re.findall(r'<tr class="tk-chapter"><td[^>]*>(\d+)</td>', dash.table.value)


def test_table_names_states_coverage_failures_and_totals(emulator, comic_project, client, pages):
    failed_id = failed_chapter(emulator, client, comic_project["id"], pages[:1])
    client.create_chapter(comic_project["id"], pages=pages[1:3])
    settle(emulator, client, comic_project["id"])
    client.create_chapter(comic_project["id"], staged=True)
    dash = Dashboard(client)
    assert dash.picker.value == comic_project["id"]
    table = dash.table.value
    assert table.count('class="tk-chapter"') == 3
    assert ">needs review<" in table and "100%" in table
    assert ">failed<" in table and ">staged<" in table
    assert ">translating<" not in table and "&#9203;" not in table and "&#9888;" not in table
    reason = client.get_chapter(failed_id).failure_reason
    assert f'title="{reason}"' in table and f">{reason}</div>" in table  # in full, wrapped
    spent = sum(c.credits_spent for c in client.list_chapters(comic_project["id"]))
    assert dash.summary.value == (
        '<p class="tk-totals"><b>3 chapters</b>, 3 pages, <b>0</b> running, <b>1</b> failed, '
        f"<b>1</b> needing review, <b>1</b> staged, <b>{spent:g}</b> credits spent</p>"
    )
    assert "<NA>" not in table and "None" not in table


def test_a_running_chapter_shows_its_phase_and_an_estimated_finish(
    emulator, comic_project, client, pages
):
    chapter = client.create_chapter(comic_project["id"], pages=pages)
    dash = Dashboard(client)
    seen = []
    for _ in range(400):
        phase = re.search(
            r'tk-(reading|translating|finishing)"[^>]*>\w+</span> <small>([^<]+)</small>',
            dash.table.value,
        )
        if phase is None:
            break
        if not seen or seen[-1] != phase.groups():
            seen.append(phase.groups())
        emulator.advance(5)
        dash.refresh()
    assert seen == [  # the state (toolkit.frames.STATES) and the phase in words
        ("reading", "reading pages"),
        ("translating", "translating en"),
        ("translating", "translating fr"),
        ("finishing", "cleaning and lettering"),
        ("finishing", "packaging en"),
        ("finishing", "packaging fr"),
    ]
    assert not client.get_chapter(chapter.id).processing


def test_the_finish_is_estimated_from_the_pace_seen(emulator, comic_project, client, pages):
    client.create_chapter(comic_project["id"], pages=pages)
    dash = Dashboard(client)
    assert ">in " not in dash.table.value  # no pace seen yet
    for _ in range(60):
        emulator.advance(10)
        dash.refresh()
        if dash.finish:
            break
    (finish,) = dash.finish.values()
    now = emulator.now()
    assert finish > now
    minutes = round((finish - now).total_seconds() / 60)
    assert f">in ~{minutes} min<" in dash.table.value
    assert f"about {finish:%H:%M} UTC at the pace seen" in dash.table.value


def test_filters_count_and_keep_their_chapters(emulator, comic_project, client, pages):
    failed_chapter(emulator, client, comic_project["id"], pages[:1])  # 1
    client.create_chapter(comic_project["id"], pages=pages[1:2])  # 2
    settle(emulator, client, comic_project["id"])
    client.create_chapter(comic_project["id"], staged=True)  # 3
    client.create_chapter(comic_project["id"], pages=pages[2:3])  # 4, running
    dash = Dashboard(client)
    assert [label for label, _ in dash.filter.options] == [
        "All (4)", "Running (1)", "Failed (1)", "Needs review (1)", "Staged (1)",
        "Needs a person (2)", "Held pages (0)",
    ]  # fmt: skip
    assert rows(dash) == ["4", "1", "2", "3"]  # running first, then failed, then by number
    for key, expected in [("failed", ["1"]), ("staged", ["3"]), ("running", ["4"])]:
        dash.filter.value = key
        assert rows(dash) == expected
    dash.filter.value = "needs_review"
    assert rows(dash) == ["2"]
    dash.refresh()  # a refresh recounts the filters and keeps the choice
    assert dash.filter.value == "needs_review" and rows(dash) == ["2"]
    dash.filter.value = "all"
    dash.sort.value = "number"
    assert rows(dash) == ["1", "2", "3", "4"]


def test_a_long_project_is_shown_a_page_at_a_time(emulator, comic_project, client):
    for number in range(1, 24):
        client.create_chapter(comic_project["id"], staged=True, position=number)
    dash = Dashboard(client, page_size=10)
    dash.sort.value = "number"
    assert rows(dash) == [str(n) for n in range(1, 11)]
    assert "Chapters 1-10 of 23" in dash.page_label.value and dash.previous.disabled
    dash.next.click()
    dash.next.click()
    assert rows(dash) == ["21", "22", "23"] and dash.next.disabled
    dash.previous.click()
    assert rows(dash)[0] == "11"
    dash.filter.value = "staged"  # a new filter starts at its first page
    assert rows(dash)[0] == "1"


class _Meeting(httpx.BaseTransport):
    """Holds the first two chapter details until both are in flight: fails the test (by
    timing out) if the dashboard fetched them one after another. Records what the panel
    showed while the chapter list was read."""

    def __init__(self, dash_ref: list[Dashboard]) -> None:
        self.inner = httpx.HTTPTransport()
        self.barrier = threading.Barrier(2, timeout=10)
        self.details = 0
        self.lock = threading.Lock()
        self.dash_ref = dash_ref
        self.while_listing: list[tuple[str, str]] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if DETAIL.search(request.url.path):
            with self.lock:
                self.details += 1
                first_two = self.details <= 2
            if first_two:
                self.barrier.wait()
        elif request.url.path.endswith("/chapters") and self.dash_ref:
            dash = self.dash_ref[0]
            labels = [label for label, _ in dash.filter.options]
            self.while_listing.append((dash.status.value, dash.table.value, labels))
        return self.inner.handle_request(request)


def test_switching_project_says_it_is_loading_and_fetches_details_concurrently(
    emulator, workspace, comic_project, client
):
    other = emulator.create_project(
        workspace["id"], name="Small Steps", kind="comic", source_language="ja",
        reading_direction="rtl", process_steps="text", target_languages=["en"],
    )  # fmt: skip
    client.create_chapter(other["id"], staged=True)
    emulator.advance(60)
    for _ in range(12):  # the project with the newest chapter is listed, and shown, first
        client.create_chapter(comic_project["id"], staged=True)
    shown: list[Dashboard] = []
    transport = _Meeting(shown)
    with Client(base_url=emulator.url, api_key=workspace["apiKey"], transport=transport) as c:
        dash = Dashboard(c)
        assert dash.picker.value == comic_project["id"] and len(rows(dash)) == 12
        shown.append(dash)
        dash.picker.value = other["id"]
        status, table, labels = transport.while_listing[-1]
        assert status == "<small>Loading Small Steps…</small>"
        assert table == "<p class='tk-loading'><i>Loading the chapters of Small Steps…</i></p>"
        assert 'class="tk-chapter"' not in table  # never the previous project's rows
        assert labels == [
            "All", "Running", "Failed", "Needs review", "Staged", "Needs a person", "Held pages",
        ]  # nor counts  # fmt: skip
    assert transport.barrier.broken is False


def test_auto_refresh_runs_in_the_background_and_stops(emulator, comic_project, client, pages):
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


def test_running_the_cell_again_stops_the_old_dashboards_refresh(comic_project, client):
    old = Dashboard(client, interval=30, auto_refresh=True)
    assert old.auto_refreshing
    new = Dashboard(client, interval=30, auto_refresh=True)  # the same cell, run again
    assert not old.auto_refreshing and old.auto.value is False
    assert "A newer dashboard replaced this one" in old.message.text
    assert new.auto_refreshing
    assert new.message.text.startswith("The dashboard this cell showed before was refreshing")
    new.close()
    assert not new.auto_refreshing


def test_a_network_failure_is_a_message_not_a_traceback():
    with Client(base_url="http://127.0.0.1:9", api_key="k", max_retries=0, timeout=2) as c:
        dash = Dashboard(c)
    assert dash.message.tone == "error"
    assert dash.message.text == (
        "The dashboard could not refresh: could not reach the service. Check the base URL "
        "(CTS_BASE_URL), that the service runs, and the network."
    )
    assert "no projects" not in dash.table.value


def test_the_dashboard_recovers_once_the_service_answers_again(emulator, workspace, comic_project):
    # No retries: the client's backoff is its own business, tested with the client.
    client = Client(base_url=emulator.url, api_key=workspace["apiKey"], max_retries=0)
    dash = Dashboard(client)
    emulator.set_faults(error_rate=1.0, seed=2)
    dash.refresh()
    assert dash.message.text.startswith("The dashboard could not refresh: the service failed")
    emulator.set_faults(error_rate=0.0)
    dash.refresh()
    assert dash.message.tone is None
    client.close()


# -- with a snapshot store ---------------------------------------------------------------


def test_spend_today_and_this_week_from_the_store(emulator, comic_project, client, pages, tmp_path):
    store = SnapshotStore(str(tmp_path / "snapshots"))
    assert "given the workspace's snapshot history" in Dashboard(client).spend.value
    dash = Dashboard(client, store=store)
    assert "once the store has a snapshot to count from" in dash.spend.value
    store.take(client, at=emulator.now())
    client.create_chapter(comic_project["id"], pages=pages)  # 3 pages x 2 languages
    emulator.advance(60)
    dash.snapshot_button.click()
    assert dash.message.tone == "success", dash.message.text
    assert "Spent today: <b>6</b> credits; this week: <b>6</b> credits, as of " in dash.spend.value
    assert "0 of it since the latest snapshot, Wed 18 Nov 09:01 UTC; counted from the first" in (
        dash.spend.value
    )
    # The next day, before any snapshot of it: nothing spent since, so today is 0 (the
    # chapters were read now: that is data) and the week keeps yesterday's 6.
    emulator.advance(24 * 3600)
    dash.refresh()
    assert "Spent today: <b>0</b> credits; this week: <b>6</b> credits" in dash.spend.value


def _charged_after(emulator, workspace, moment) -> float:
    found = emulator.ledger(workspace["id"])["charges"]
    return sum(c["credits"] for c in found if datetime.fromisoformat(c["at"]) > moment)


def test_spend_today_adds_what_the_chapters_show_since_the_latest_snapshot(
    emulator, workspace, comic_project, novel_project, client, pages, tmp_path
):
    store = SnapshotStore(str(tmp_path / "snapshots"))
    first = client.create_chapter(comic_project["id"], pages=pages[:1])
    store.take(client, at=emulator.now())  # the baseline
    client.create_chapter(comic_project["id"], pages=pages)  # 6 credits, in the store
    emulator.advance(600)
    taken = store.take(client).snapshot_at
    dash = Dashboard(client, store=store)
    assert "Spent today: <b>6</b> credits; this week: <b>6</b> credits" in dash.spend.value
    # After the snapshot: a novel chapter in the project the dashboard does not show,
    # pages added to a chapter of the one it shows.
    emulator.advance(60)
    client.create_chapter(novel_project["id"], text="Line one.\nLine two.\n" * 50)
    client.add_pages(first.id, pages=pages[1:])
    now = emulator.advance(25 * 60)
    dash.refresh()
    live = _charged_after(emulator, workspace, taken)
    assert live > 0 and dash.picker.value == comic_project["id"]
    assert (
        f"Spent today: <b>{6 + live:,.0f}</b> credits; this week: <b>{6 + live:,.0f}</b> "
        f"credits, as of {now:%H:%M} UTC" in dash.spend.value
    )
    assert f"{live:,.0f} of it since the latest snapshot, {taken:%a %d %b %H:%M} UTC" in (
        dash.spend.value
    )
    assert f"updated {now:%H:%M}" in dash.status.value  # the same clock as the "as of"
    # A snapshot moves the live part into the store: the total stays.
    dash.snapshot_button.click()
    assert f"Spent today: <b>{6 + live:,.0f}</b> credits" in dash.spend.value
    assert "0 of it since the latest snapshot" in dash.spend.value


def test_the_dashboard_takes_a_snapshot_on_request(
    emulator, comic_project, client, pages, tmp_path
):
    store = SnapshotStore(str(tmp_path / "snapshots"))
    client.create_chapter(comic_project["id"], pages=pages[:1])
    dash = Dashboard(client, store=store)
    assert dash.snapshot_button.layout.display == ""
    dash.snapshot_button.click()
    assert dash.message.tone == "success", dash.message.text
    assert len(store.snapshots()) == 1
    assert store.latest("chapters")["chapter_id"].tolist() == [dash.chapters[0].id]
    assert Dashboard(client).snapshot_button.layout.display == "none"  # no store, no button


def test_stalled_chapters_are_marked_from_the_store(
    emulator, comic_project, client, pages, tmp_path
):
    store = SnapshotStore(str(tmp_path / "snapshots"))
    emulator.set_faults(stall_rate=1.0, seed=5)
    client.create_chapter(comic_project["id"], pages=pages[:1])
    # Past the one default (tk.analysis.STALL_AFTER, 90 minutes), short of the 2 hours
    # after which the service abandons the run.
    for minutes in (0, 10, 40, 50):
        emulator.advance(minutes * 60)
        store.take(client, at=emulator.now())
    dash = Dashboard(client, store=store)
    assert client.list_chapters(comic_project["id"])[0].processing
    assert "no progress in the last snapshots" in dash.table.value


def test_options_are_keyword_only(client):
    with pytest.raises(TypeError):
        Dashboard(client, None)  # type: ignore[misc]


# -- notebook 04 -------------------------------------------------------------------------


def _notebook_cell(name: str, starts: str) -> str:
    import json
    from pathlib import Path

    notebook = Path(__file__).resolve().parents[2] / "notebooks" / name
    cells = json.loads(notebook.read_text())["cells"]
    sources = ["".join(cell["source"]) for cell in cells]
    (index,) = [i for i, source in enumerate(sources) if source.startswith(starts)]
    return sources[index + 1]  # the code cell under that heading


@pytest.mark.parametrize("shown", ["comic_project", "novel_project"])
def test_notebook_04_lets_time_pass_in_the_project_the_dashboard_shows(
    request, emulator, comic_project, novel_project, client, shown, capsys
):
    from toolkit.widgets import RescanPanel

    project = request.getfixturevalue(shown)
    dashboard = Dashboard(client)
    dashboard.picker.value = project["id"]
    cell = _notebook_cell("04-operations.ipynb", "## Let time pass")
    exec(cell, {"emulator": emulator, "client": client, "dashboard": dashboard,
                "rescan": RescanPanel(client)})  # fmt: skip
    (chapter,) = client.list_chapters(project["id"])
    assert chapter.processing
    assert capsys.readouterr().out == (
        f"Chapter 1 of {project['name']} is running: watch it in the dashboard.\n"
    )
    assert rows(dashboard) == ["1"]


def test_the_review_line_is_the_projects_review_backlog(emulator, workspace, client, tmp_path):
    from page_images import make_page

    from toolkit import analysis

    project = emulator.create_project(
        workspace["id"], name="Reviewed", kind="comic", source_language="ja",
        reading_direction="rtl", process_steps="translate", target_languages=["en"],
    )  # fmt: skip
    store = SnapshotStore(tmp_path / "store")
    store.take(client)
    chapters = [client.create_chapter(project["id"], pages=[make_page(n)]).id for n in range(3)]
    emulator.advance(900)  # all three at needs_review
    store.take(client)
    emulator.advance(1800)
    emulator.review_chapter(chapters[0])
    emulator.advance(3600)
    store.take(client)
    dash = Dashboard(client, store=store)
    dash.picker.value = project["id"]
    dash.refresh()
    row = analysis.review_backlog(store).set_index("project_id").loc[project["id"]]
    # One review over the 1.75 hours the store has seen (issue 40: not over 7 days).
    seen = (row["as_of"] - store.snapshots()["snapshot_at"].iloc[0]) / pd.Timedelta(days=1)
    assert row["waiting"] == 2 and row["reviews_per_day"] == pytest.approx(1 / seen)
    # One count, live, as the "Needs review" filter beside it counts: the service's now.
    waiting = [c for c in client.list_chapters(project["id"]) if c.status == "needs_review"]
    oldest = min(c.last_activity_at for c in waiting)
    assert dash.review.value == (
        f"<small>Review: 2 chapters waiting now, the oldest since "
        f"{oldest.astimezone(UTC):%a %d %b %H:%M} UTC; "
        f"{show('reviews_per_day', row['reviews_per_day'])} reviews a day (from the snapshots of "
        "the last 7 "
        "days).</small>"
    )
    assert "Needs review (2)" in [label for label, _ in dash.filter.options]
    assert Dashboard(client).review.value == ""  # no store, no line


def test_held_pages_and_staged_chapters_show_what_they_wait_a_person_for(
    emulator, comic_project, client, pages, tmp_path
):
    store = SnapshotStore(str(tmp_path / "snapshots"))
    store.take(client)
    held = client.create_chapter(comic_project["id"], pages=pages[:1])
    settle(emulator, client, comic_project["id"])
    store.take(client)  # its run, and the page it paid for
    added = client.add_pages(held.id, pages=pages[1:3], hold=True)  # held, never started
    client.create_chapter(comic_project["id"], staged=True)  # staged, no pages yet
    store.take(client)
    dash = Dashboard(client, store=store)
    labels = [label for label, _ in dash.filter.options]
    assert "Needs a person (2)" in labels and "Held pages (1)" in labels
    dash.filter.value = "held"
    assert rows(dash) == ["1"]
    assert "needs a person: held pages never started, waiting since " in dash.table.value
    assert "start its held pages or remove them" in dash.table.value
    dash.filter.value = "needs_person"
    assert rows(dash) == ["1", "2"]
    assert "needs a person: staged with no pages" in dash.table.value
    assert "add its pages, then start it" in dash.table.value
    # The held pages started: their mark goes at once (the chapter runs again).
    client.start_chapter(held.id, page_ids=[page.id for page in added.pages])
    dash.refresh()
    assert "held pages never started" not in dash.table.value
    assert "Needs a person (1)" in [label for label, _ in dash.filter.options]


def test_a_staged_chapter_with_pages_is_started_from_the_dashboard(
    emulator, comic_project, client, pages
):
    staged = client.create_chapter(comic_project["id"], staged=True)
    client.add_pages(staged.id, pages=pages[:2], hold=True)  # pages, never started
    dash = Dashboard(client)
    assert dash.start_row.layout.display == ""
    assert [value for _, value in dash.start_picker.options] == [staged.id]
    assert "needs a person: staged, never started" in dash.table.value
    dash.start_button.click()
    assert "not started" not in dash.message.value, dash.message.value
    (listed,) = client.list_chapters(comic_project["id"])
    assert listed.started and listed.processing
    assert "Started Chapter 1: 2 pages running." in dash.message.value
    assert dash.start_row.layout.display == "none"  # nothing left to start


def test_held_pages_the_toolkit_held_are_started_from_a_dashboard_opened_later(
    emulator, workspace, comic_project, client, pages, tmp_path
):
    store = SnapshotStore(str(tmp_path / "snapshots"))
    ours = client.create_chapter(comic_project["id"], pages=pages[:1])
    theirs = client.create_chapter(comic_project["id"], pages=pages[1:2])
    settle(emulator, client, comic_project["id"])
    store.take(client)  # both ran, and paid for their page
    # Pages held in the service's own dashboard: the toolkit never sees their ids.
    client.add_pages(theirs.id, pages=pages[2:3], hold=True)
    store.take(client)
    # Pages held from an UploadPanel with the store: their ids go to the journal beside it.
    panel = UploadPanel(client, store=store)
    panel.pages.chapter.value = ours.id
    panel.pages.files.upload.set_state(file_state({"a.png": pages[1], "b.png": pages[2]}))
    panel.pages.hold.value = True
    panel.pages.add.click()
    assert panel.message.tone == "success", panel.message.text
    panel.close()

    dash = Dashboard(client, store=store)  # opened later: it knows the ids from the journal
    assert "Held pages (2)" in [label for label, _ in dash.filter.options]
    assert dash.start_row.layout.display == ""
    assert dash.start_picker.options == (("Chapter 1 (2 held pages)", ours.id),)
    dash.filter.value = "held"
    assert rows(dash) == ["1", "2"]
    table = dash.table.value
    ours_row, theirs_row = table.split('<tr class="tk-chapter">')[1:3]
    assert "needs a person: held pages never started, waiting since " in ours_row
    assert "held outside the toolkit" not in ours_row
    assert "start them in the service&#x27;s own dashboard" in theirs_row

    dash.start_button.click()
    assert dash.message.tone == "success", dash.message.value
    assert "Started Chapter 1: 2 pages running." in dash.message.value
    start = charges(emulator, workspace, "start")
    assert [(c["pages"], c["credits"]) for c in start] == [(2, 4)]
    assert client.get_chapter(ours.id).processing
    assert dash.start_picker.options == ()  # theirs cannot be started here, only said
    assert "Held pages (1)" in [label for label, _ in dash.filter.options]
    settle(emulator, client, comic_project["id"])
    dash.refresh()  # finished, before any new snapshot: not held again
    assert rows(dash) == ["2"]
    assert Dashboard(client, store=store).start_row.layout.display == "none"

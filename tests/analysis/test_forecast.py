"""Forecasts against the emulator: the scenario runs on to the end, and the true finish
time of each project is then known from the chapters' last activity."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd
import pytest
from datafakes import T0, FakeService
from epochs import SUITE_START
from page_images import make_page

import toolkit as tk
from toolkit import analysis, plots
from toolkit.client import Client
from toolkit.emulator import Emulator
from toolkit.store import SnapshotStore

# (pages per chapter, target languages): two chapters each, steady while they translate.
STEADY = [(40, ["en", "fr"]), (50, ["en", "fr"]), (60, ["en", "fr"]), (80, ["en"]), (100, ["en"])]
EVERY = 180  # seconds between snapshots
COMMON = {"kind": "comic", "source_language": "ja", "reading_direction": "rtl",
          "process_steps": "translate"}  # fmt: skip


@pytest.fixture
def backlog(emulator, workspace, client, tmp_path):
    """`simulate_backlog` on the test's emulator (the test runs it on afterwards)."""
    return simulate_backlog(emulator, workspace, client, tmp_path / "store")


@pytest.fixture(scope="module")
def backlog_seen(tmp_path_factory):
    """`simulate_backlog` once for the tests that only read its store (never write to
    it, nor move its emulator on)."""
    with Emulator(clock="manual", start=SUITE_START) as emulator:
        workspace = emulator.create_workspace(name="Test workspace", credits=10_000)
        with Client(base_url=emulator.url, api_key=workspace["apiKey"]) as client:
            root = tmp_path_factory.mktemp("backlog") / "store"
            yield simulate_backlog(emulator, workspace, client, root)


def simulate_backlog(emulator, workspace, client, root):
    """Five projects translating steadily, and one whose open work all waits for a
    person; snapshots every 3 minutes for 24 minutes. Returns the store, the steady
    projects' ids and the chapters that need action, by reason."""
    ws = workspace["id"]
    emulator.set_credits(ws, 100_000)
    stuck = emulator.create_project(ws, name="Waiting", target_languages=["en"], **COMMON)
    store = SnapshotStore(root)
    store.take(client)
    held = client.create_chapter(stuck["id"], pages=[make_page(9000 + i) for i in range(2)])
    emulator.advance(600)  # finished
    store.take(client)
    client.add_pages(held.id, pages=[make_page(9100)], hold=True)
    staged = client.create_chapter(stuck["id"], staged=True)
    emulator.set_faults(failure_rate=1.0, seed=1)
    failed = client.create_chapter(stuck["id"], pages=[make_page(9200 + i) for i in range(4)])
    emulator.set_faults(stall_rate=1.0, seed=2)
    stalled = client.create_chapter(stuck["id"], pages=[make_page(9300 + i) for i in range(4)])
    emulator.set_faults()

    steady, seed = [], 0
    for number, (pages, languages) in enumerate(STEADY):
        project = emulator.create_project(ws, name=f"Steady {number}", target_languages=languages,
                                          **COMMON)  # fmt: skip
        steady.append(project["id"])
        for _ in range(2):
            client.create_chapter(project["id"], pages=[make_page(seed + i) for i in range(pages)])
            seed += pages
    store.take(client)
    for _ in range(8):
        emulator.advance(EVERY)
        store.take(client)
    flagged = {failed.id: "failed, waiting for a re-scan", stalled.id: "running with no progress",
               held.id: "held pages never started", staged.id: "staged with no pages"}  # fmt: skip
    return store, steady, stuck["id"], flagged


def _true_finishes(emulator, client, project_ids) -> dict[str, pd.Timestamp]:
    """Run the emulator on until every steady chapter is done; each project's finish."""
    for _ in range(40):
        emulator.advance(600)
        chapters = {p: client.list_chapters(p) for p in project_ids}
        if all(not c.processing for listed in chapters.values() for c in listed):
            break
    finishes = {}
    for project, listed in chapters.items():
        assert all(c.status == "needs_review" and not c.failed for c in listed)
        finishes[project] = max(pd.Timestamp(c.last_activity_at) for c in listed)
    return finishes


@pytest.mark.epochs
@pytest.mark.slow
def test_steady_work_finishes_inside_the_band_and_near_the_median(backlog, emulator, client):
    store, steady, _, _ = backlog
    # Throughput over the last 18 minutes (after the pages were read), in 3-minute bins.
    seen = analysis.forecast(store, window="18min", freq="3min", stall_after="10min")
    seen = seen.set_index("project_id")
    as_of = store.snapshots()["snapshot_at"].iloc[-1]
    truth = _true_finishes(emulator, client, steady)

    inside, close = 0, 0
    for project in steady:
        row = seen.loc[project]
        assert row["status"] == "on track" and row["needs_action"] == 0
        # No run finished between two snapshots that showed it translating, so nothing
        # bounds the work after the last line: the p90 is open, and says so.
        assert pd.isna(row["finish_p90"]) and row["band"].startswith("open")
        assert row["finish_p10"] <= row["finish_p50"]
        true_left = (truth[project] - as_of).total_seconds()
        guessed = (row["finish_p50"] - as_of).total_seconds()
        inside += row["finish_p10"] <= truth[project]
        close += abs(guessed - true_left) <= 0.2 * true_left
    assert inside >= 0.8 * len(steady)
    assert close == len(steady)


@pytest.mark.slow
def test_work_that_needs_action_never_gets_an_eta(backlog_seen):
    store, _, waiting, flagged = backlog_seen
    by_project = analysis.forecast(store, window="18min", freq="3min", stall_after="10min")
    row = by_project.set_index("project_id").loc[waiting]
    assert row["project"] == "Waiting"
    assert row["open_chapters"] == 0 and row["needs_action"] == 4
    assert row["status"] == "needs action"
    assert pd.isna(row["finish_p50"]) and pd.isna(row["finish_p10"]) and pd.isna(row["finish_p90"])

    by_chapter = analysis.forecast(
        store, by="chapter_id", window="18min", freq="3min", stall_after="10min"
    ).set_index("chapter_id")
    for chapter, reason in flagged.items():
        assert by_chapter.loc[chapter, "needs_action_reason"] == f"1 {reason}"
        assert pd.isna(by_chapter.loc[chapter, "finish_p50"])
    going = by_chapter[by_chapter["needs_action"] == 0]
    assert len(going) == 2 * len(STEADY)
    assert going["finish_p50"].notna().all()

    by_language = analysis.forecast(store, by="language_code", window="18min", freq="3min",
                                    stall_after="10min")  # fmt: skip
    assert set(by_language["language_code"]) == {"en", "fr"}
    assert by_language.set_index("language_code").loc["en", "needs_action"] == 4


def test_work_that_waits_for_a_person_has_a_date_if_unblocked_and_credits_to_finish(backlog_seen):
    store, steady, waiting, flagged = backlog_seen
    frame = analysis.forecast(store, window="18min", freq="3min", stall_after="10min")
    row = frame.set_index("project_id").loc[waiting]
    chapters = store.latest("chapters").set_index("chapter_id")
    # Waiting since the longest-waiting chapter last moved (or was created).
    since = chapters.loc[list(flagged), "last_activity_at"].fillna(
        chapters.loc[list(flagged), "created_at"]
    )
    assert row["waiting_since"] == since.min()
    # Unblocked now, the four chapters run from their first page: a finish after now.
    assert row["as_of"] < row["unblocked_p10"] <= row["unblocked_p50"]
    # Credits at 1 a page in one language: the held page (1), the failed and the
    # stalled chapter re-scanned (4 + 4), the staged chapter with no pages at the
    # project's page counts (3, 4, 4: 3.2 / 4 / 4 at p10 / p50 / p90).
    assert (row["credits_to_finish_p10"], row["credits_to_finish"],
            row["credits_to_finish_p90"]) == (pytest.approx(12.2), 13, 13)  # fmt: skip
    # Running work has paid: nothing to finish it; nothing waits, so no unblocked date.
    others = frame.set_index("project_id").loc[steady]
    assert (others["credits_to_finish"] == 0).all()
    assert others["unblocked_p50"].isna().all() and others["waiting_since"].isna().all()


def test_a_forecast_as_of_an_earlier_time_and_an_empty_store(backlog_seen, tmp_path):
    store, steady, waiting, _ = backlog_seen
    times = store.snapshots()["snapshot_at"]
    earlier = analysis.forecast(store, window="9min", freq="3min", until=times.iloc[5])
    assert set(earlier["as_of"]) == {times.iloc[5]}
    later = analysis.forecast(store, window="9min", freq="3min").set_index("project_id")
    earlier = earlier.set_index("project_id")
    for project in steady:  # the work left shrinks as time passes
        assert later.loc[project, "remaining_lines"] < earlier.loc[project, "remaining_lines"]

    left = analysis.burn_down(store).set_index(["snapshot_at", "project_id"])["open_work_lines"]
    for project in steady:
        assert left.loc[(times.iloc[-1], project)] == later.loc[project, "remaining_lines"]
    # Every project, flagged work included: the burn-down ends at the forecast's open
    # lines plus the lines waiting for a person (issue 26).
    flagged = analysis.forecast(store, window="9min", freq="3min", stall_after="10min")
    assert flagged.set_index("project_id").loc[waiting, "needs_action_lines"] > 0
    for row in flagged.itertuples(index=False):
        ends = left.loc[(times.iloc[-1], row.project_id)]
        assert ends == row.remaining_lines + row.needs_action_lines, row.project

    part = analysis.burn_down(store, since=times.iloc[2], until=times.iloc[4], tz="Asia/Tokyo")
    assert sorted(part["snapshot_at"].unique()) == list(times.iloc[2:4])
    assert str(part["snapshot_at"].dt.tz) == "Asia/Tokyo"

    ax = plots.burn_down(store, window="9min", freq="3min")
    bands = [patch for patch in ax.patches if patch.get_alpha()]
    assert len(bands) == len(steady)  # one band per project on track, none for "Waiting"
    labels = ax.get_legend_handles_labels()[1]
    assert any(label.startswith("Waiting") and "need a person" in label for label in labels)
    apart = [line for line in ax.get_lines() if line.get_linestyle() == ":"]
    assert apart, "the work waiting for a person is drawn apart"
    plt.close(ax.figure)

    empty = analysis.forecast(SnapshotStore(tmp_path / "empty"))
    assert empty.empty and list(empty.columns)[:2] == ["project_id", "project"]
    with pytest.raises(ValueError, match="by must be"):
        analysis.forecast(store, by="model")  # type: ignore[arg-type]


def test_work_whose_lines_were_never_fetched_is_remaining_unknown(
    emulator, workspace, client, tmp_path
):
    # A store taken without details (the year benchmark's) knows no `untranslated`.
    project = emulator.create_project(workspace["id"], name="Unfetched", target_languages=["en"],
                                      **COMMON)  # fmt: skip
    store = SnapshotStore(tmp_path / "store")
    store.take(client, details="none")
    for number in range(3):
        client.create_chapter(project["id"], pages=[make_page(number * 9 + i) for i in range(9)])
        emulator.advance(120)
        store.take(client, details="none")
    for by in ("project_id", "chapter_id", "language_code"):
        found = analysis.forecast(store, by=by, window="1h", freq="2min")
        going = found[found["open_chapters"] > 0]
        assert len(going) > 0, by
        assert going["remaining_lines"].isna().all(), by
        assert (going["status"] == "remaining unknown").all(), by
        assert going["finish_p50"].isna().all(), by


def test_a_group_whose_only_work_needs_a_person_without_details(tmp_path):
    # Taken without details, no language left to translate and nothing going: the
    # group's remaining lines are an empty sum, 0, not an unreadable text.
    service = FakeService()
    service.add_project("p1", name="Stopped", languages=("en", "fr"))
    service.add_chapter("c1", "p1", processing=False, status="needs_review", credits=8,
                        failed=True, reason="The run failed.")  # fmt: skip
    store = SnapshotStore(tmp_path / "store")
    for hour in range(2):
        store.write(tk.pull(service, details="none"), at=T0 + pd.Timedelta(hours=hour))
    for by in ("project_id", "language_code"):
        found = analysis.forecast(store, by=by)
        assert (found["status"] == "needs action").all(), by
        assert found["remaining_lines"].dtype == "Int64" and (found["remaining_lines"] == 0).all()
        assert (found["needs_action"] == 1).all(), by  # c1, waiting for a re-scan


def test_every_project_of_a_demo_day_has_a_date(demo_day):
    """A shortened demo day (seeded projects, uploads, re-scans, failures and held
    pages): each project has a finish for its running work, or says it waits for a
    person, since when, and when it would be done if unblocked now."""
    store = demo_day
    frame = analysis.forecast(store)
    assert len(frame) == len(store.latest("projects"))
    for row in frame.itertuples():
        if row.needs_action:
            assert pd.notna(row.waiting_since) and pd.notna(row.unblocked_p50), row
            assert row.credits_to_finish > 0, row
        else:
            assert pd.notna(row.finish_p50), row

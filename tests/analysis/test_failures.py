"""Failures, failure rates, stalls and stuck work against what the emulator did."""

from __future__ import annotations

import pandas as pd
import pytest
from ledger import check_runs, events, true_runs
from page_images import make_page

from toolkit import analysis
from toolkit.store import SnapshotStore


@pytest.fixture
def store(tmp_path):
    return SnapshotStore(tmp_path / "store")


@pytest.fixture
def watched(emulator, workspace, comic_project, webhook_url):
    emulator.add_webhook(workspace["id"], webhook_url, ["chapter.finished", "chapter.failed"],
                         allow_private=True)  # fmt: skip
    return comic_project


def test_a_stall_counts_from_the_last_progress_and_ends_as_a_stalled_run(
    emulator, workspace, watched, client, store
):
    emulator.set_faults(stall_rate=1.0, seed=3)
    chapter = client.create_chapter(watched["id"], pages=[make_page(1)])
    store.take(client)
    emulator.advance(600)  # the run has stopped progressing by now
    (listed,) = client.list_chapters(watched["id"])
    stopped = listed.last_activity_at
    emulator.advance(100 * 60 - 600)
    store.take(client)  # 100 minutes after the start: stalled for about 1.6 h
    slow = analysis.stalled(store, threshold="90min")
    assert slow["chapter_id"].tolist() == [chapter.id]
    assert slow.loc[0, "last_progress_at"] == pd.Timestamp(stopped)
    now = store.snapshots()["snapshot_at"].iloc[-1]
    assert slow.loc[0, "stalled_hours"] == (now - pd.Timestamp(stopped)).total_seconds() / 3600
    assert analysis.stuck(store)["reason"].tolist() == ["stalled"]
    emulator.advance(3600)  # the service abandons it 2 h after its last progress
    store.take(client)
    assert analysis.stalled(store, threshold="90min").empty
    (failure,) = analysis.failures(store).itertuples(index=False)
    assert failure.kind == "stalled"
    assert failure.seen_at == pd.Timestamp(stopped) + pd.Timedelta(hours=2)
    assert analysis.stuck(store)["reason"].tolist() == ["failed"]
    store.record_events(events(emulator))
    check_runs(store, emulator, workspace["id"])


@pytest.mark.parametrize("with_events", [False, True])
def test_failure_rates_count_failed_and_stalled_runs_over_runs(
    emulator, workspace, watched, client, store, with_events
):
    emulator.set_faults(failure_rate=0.3, stall_rate=0.2, seed=5)
    store.take(client)
    chapters = [
        client.create_chapter(watched["id"], pages=[make_page(i * 3 + k) for k in range(2)])
        for i in range(12)
    ]
    for _ in range(4):
        emulator.advance(3600)
        store.take(client)
        for chapter in chapters:
            detail = client.get_chapter(chapter.id)
            if detail.failed and not detail.processing and _retries(emulator, workspace) < 6:
                client.rescan_chapter(chapter.id)
    emulator.advance(3 * 3600)
    store.take(client)
    if with_events:
        store.record_events(events(emulator))
    runs = check_runs(store, emulator, workspace["id"])
    truth = [r for rs in true_runs(emulator, workspace["id"]).values() for r in rs]
    outcomes = pd.Series([r.outcome for r in truth]).value_counts()
    rates = analysis.failure_rates(store, by="project_id")
    (row,) = rates.itertuples(index=False)
    assert (row.project, row.runs) == ("Moonlit Harbor", len(truth))
    assert (row.failed, row.stalled) == (outcomes.get("failed", 0), outcomes.get("stalled", 0))
    assert row.failure_rate == (row.failed + row.stalled) / len(truth)
    assert len(analysis.failures(store)) == row.failed + row.stalled
    assert analysis.failure_rates(store, by=None)["runs"].tolist() == [len(truth)]
    by_kind = analysis.failure_rates(store, by="kind").set_index("kind")["runs"]
    assert by_kind.sum() == len(runs)


def _retries(emulator, workspace) -> int:
    return sum(c["reason"] == "rescan" for c in emulator.ledger(workspace["id"])["charges"])


# -- the one reason vocabulary: words and advice per kind of chapter -----------------

KINDS = ("comic", "novel")


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("reason", sorted(analysis.REASONS))
def test_every_reason_has_words_and_advice_for_every_kind(reason: str, kind: str):
    words, advice = analysis.reason_words(reason, kind), analysis.advice(reason, kind)
    assert words and advice and "_" not in words + advice  # words, never codes
    assert words.lower() not in advice.lower()  # said once: the advice adds what to do
    if kind == "novel":
        assert "re-scan it" not in advice and "then re-scan" not in advice


def test_a_failed_novel_is_told_to_upload_its_text_and_a_comic_to_rescan():
    assert analysis.advice("failed", "comic") == "re-scan it to retry"
    assert analysis.advice("failed", "novel").startswith("upload its text again")
    assert "re-scan" not in analysis.reason_words("failed", "novel")


def test_a_failure_reason_loses_the_services_own_retry_advice():
    from toolkit.analysis.trouble import _without_advice

    told = ("The run failed while translating page 3 into fr: the translation model "
            "returned no usable text, so re-scan the chapter to retry.")  # fmt: skip
    assert _without_advice(told) == (
        "The run failed while translating page 3 into fr: the translation model "
        "returned no usable text."
    )
    assert _without_advice("The run stalled; it should be retried with a re-scan.") == (
        "The run stalled."
    )
    assert _without_advice("Out of memory") == "Out of memory."


def test_a_failed_novel_needs_a_person_in_a_novels_words(
    emulator, novel_project, comic_project, client, store
):
    """A novel cannot be re-scanned: its failure says to upload the text again."""
    store.take(client)
    emulator.set_faults(failure_rate=1.0, seed=7)
    novel = client.create_chapter(novel_project["id"], text="第一章。" * 200)
    comic = client.create_chapter(comic_project["id"], pages=[make_page(1)])
    emulator.advance(3 * 3600)  # both runs have failed
    store.take(client)
    stuck = analysis.stuck(store).set_index("chapter_id")
    assert stuck.loc[novel.id, "reason"] == "failed"
    assert stuck.loc[novel.id, "advice"].startswith("upload its text again as a new chapter")
    assert "re-scan" not in stuck.loc[novel.id, "detail"]
    assert stuck.loc[comic.id, "advice"] == "re-scan it to retry"
    forecast = analysis.forecast(store, by="project_id").set_index("project")
    said = forecast.loc["River of Stars", "needs_action_reason"]
    assert analysis.reason_words("failed", "novel") in said  # the table's words

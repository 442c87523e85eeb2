"""The one rule of who needs a person: the trouble table, the forecast and the replays
read it, so they never disagree on which chapters wait nor why."""

from __future__ import annotations

from collections import Counter

import pandas as pd
import pytest
from page_images import make_page
from report_stores import needing_people

from toolkit import analysis
from toolkit.analysis.needs_person import ORDER, needs_person, pages_at_last_run
from toolkit.analysis.observed import observe
from toolkit.store import SnapshotStore


@pytest.fixture
def waiting(emulator, workspace, comic_project, novel_project, client, tmp_path):
    """A comic with a chapter of held pages, one staged with no pages, one failed, one
    stalled and one running well; a novel with a failed chapter. Returns the store and
    the chapters that wait, by reason code."""
    return needing_people(
        emulator, client, comic_project["id"], novel_project["id"], tmp_path / "store"
    )


def test_the_rule_names_each_chapter_that_waits_and_why(waiting):
    store, expected = waiting
    obs = observe(store)
    found = needs_person(obs, as_of=obs.times[-1], stall_after=pd.Timedelta("10min"))
    assert dict(zip(found["chapter_id"], found["reason"], strict=True)) == expected
    held = found.set_index("chapter_id").loc[next(iter(expected)), "held"]
    assert held == 1  # the one page sent with hold


def test_stuck_lists_exactly_the_rules_chapters_and_reasons(waiting):
    store, expected = waiting
    stuck = analysis.stuck(store, threshold="10min")
    assert sorted(zip(stuck["chapter_id"], stuck["reason"], strict=True)) == sorted(
        expected.items()
    )


def test_the_forecast_says_the_rules_first_reason_in_the_chapters_words(waiting):
    store, expected = waiting
    by_chapter = analysis.forecast(
        store, by="chapter_id", window="18min", freq="3min", stall_after="10min"
    ).set_index("chapter_id")
    kinds = analysis.stuck(store, threshold="10min").set_index("chapter_id")["project"]
    for chapter, reason in expected.items():
        kind = "novel" if kinds[chapter] == "River of Stars" else "comic"
        assert by_chapter.loc[chapter, "needs_action_reason"] == (
            f"1 {analysis.reason_words(reason, kind)}"
        )
    going = by_chapter[by_chapter["needs_action"] == 0]
    assert going.index.intersection(list(expected)).empty


def test_the_rules_reasons_are_the_vocabularys():
    assert sorted(ORDER) == sorted(analysis.REASONS)


def test_the_rule_on_chapters_as_they_stand_one_case_per_reason_and_kind():
    at = pd.Timestamp("2026-11-18 12:00", tz="UTC")
    quiet, busy = at - pd.Timedelta("2h"), at - pd.Timedelta("5min")
    rows = [  # chapter, project, pages, failed, processing, started, last activity
        ("failed", "comic", 4, True, False, True, quiet),
        ("rescanning", "comic", 4, True, True, True, busy),  # running again: not failed
        ("stalled", "comic", 4, False, True, True, quiet),
        ("running", "comic", 4, False, True, True, busy),
        ("empty", "comic", 0, False, False, False, pd.NaT),
        ("staged", "comic", 3, False, False, False, pd.NaT),
        ("staged novel", "novel", 0, False, False, False, pd.NaT),  # never "no pages"
        ("held", "comic", 5, False, False, True, quiet),
        ("failed and held", "comic", 5, True, False, True, quiet),
        ("done", "comic", 4, False, False, True, quiet),
    ]
    chapters = pd.DataFrame(
        rows,
        columns=[
            "chapter_id",
            "project_id",
            "page_count",
            "failed",
            "processing",
            "started",
            "last_activity_at",
        ],
    )
    kinds = pd.Series({"comic": "comic", "novel": "novel"})
    paid = pd.Series([4, 4, 4, 4, 0, 0, 0, 3, 3, 4], index=chapters.index)
    found = analysis.needing_person(
        chapters, kinds=kinds, as_of=at, stall_after=pd.Timedelta("90min"), paid=paid
    )
    assert sorted(zip(found["chapter_id"], found["reason"], strict=True)) == sorted([
        ("failed", "failed"), ("stalled", "stalled"), ("empty", "no_pages"),
        ("staged", "not_started"), ("staged novel", "not_started"), ("held", "held_pages"),
        ("failed and held", "failed"), ("failed and held", "held_pages"),
    ])  # fmt: skip
    assert found.set_index(["chapter_id", "reason"]).loc[("held", "held_pages"), "held"] == 2
    stall = pd.Timedelta("90min")
    first = analysis.needing_person(
        chapters, kinds=kinds, as_of=at, stall_after=stall, paid=paid, first=True
    )
    assert first.set_index("chapter_id").loc["failed and held", "reason"] == "failed"
    # Without a moment and a threshold no stall is told (the Dashboard reads stalls from
    # the store); without paid pages nothing is held.
    live = analysis.needing_person(chapters, kinds=kinds)
    assert "stalled" not in set(live["reason"]) and "held_pages" not in set(live["reason"])


def test_the_pages_paid_by_each_snapshot_are_the_ledgers_work_before_the_store_included(
    emulator, workspace, comic_project, client, tmp_path
):
    # A store begun on a busy account: a chapter ran before its first snapshot, then
    # had a page added and run, one held, a failed run and a re-scan (which pays for no
    # new page). At every snapshot, not only the last, the pages paid are the ledger's
    # by then, and only the held page waits for a person.
    comic, store = comic_project["id"], SnapshotStore(tmp_path / "store")
    early = client.create_chapter(comic, pages=[make_page(i) for i in range(1, 4)])
    charged = []  # the ledger's charges at each snapshot

    def step(seconds: int = 600) -> None:
        emulator.advance(seconds)
        store.take(client)
        charged.append(len(emulator.ledger(workspace["id"])["charges"]))

    step()
    client.add_pages(early.id, pages=[make_page(4)])
    step()
    emulator.set_faults(failure_rate=1.0, seed=3)
    later = client.create_chapter(comic, pages=[make_page(5), make_page(6)])
    emulator.set_faults()
    step()
    client.add_pages(early.id, pages=[make_page(7)], hold=True)
    client.rescan_chapter(later.id)
    step()
    step()
    obs = observe(store)
    charges = emulator.ledger(workspace["id"])["charges"]
    held = []
    for as_of, count in zip(obs.times, charged, strict=True):
        paid: Counter[str] = Counter()
        for charge in charges[:count]:
            if charge["reason"] != "rescan":
                paid[charge["chapterId"]] += charge["pages"]
        found = pages_at_last_run(obs, as_of, pd.Index(list(paid), dtype=object))
        assert {chapter: int(found[chapter]) for chapter in paid} == dict(paid), as_of
        waiting = needs_person(obs, as_of=as_of, stall_after=pd.Timedelta("1h"))
        held.append(dict(zip(waiting["chapter_id"], waiting["held"], strict=True)))
    assert held[:3] == [{}, {}, {later.id: 0}]  # `later` failed, then was re-scanned
    assert held[3:] == [{early.id: 1}, {early.id: 1}]

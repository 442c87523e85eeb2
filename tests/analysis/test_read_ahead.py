"""A view's reads ahead (`toolkit.analysis.read_ahead`, the weekly page's): what a later question
takes is what it would have read itself, and a read that failed fails the question that
takes it, in the store's words."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pyarrow as pa
import pytest
from datafakes import FakeService, hours
from deltalake import DeltaTable

from toolkit.analysis.observed import Observed
from toolkit.analysis.read_ahead import read_ahead, remembered, tables_ahead
from toolkit.errors import DamagedStore
from toolkit.store import SnapshotStore

TABLES = ("chapters", "languages", "projects")


@pytest.fixture
def store(tmp_path) -> SnapshotStore:
    """Four hourly snapshots: chapters added, moved on, one deleted, a project renamed."""
    service = FakeService()
    service.add_project("p1", languages=("en", "fr"))
    service.add_project("p2", languages=("en",))
    store = SnapshotStore(tmp_path / "store")
    service.add_chapter("c1", "p1", covered=5)
    store.take(service, at=hours(0))
    service.add_chapter("c2", "p2", covered=4, languages=("en",))
    service.update("c1", covered={"en": 12, "fr": 9})
    store.take(service, at=hours(1))
    service.chapters.pop("c2")
    service.projects["p1"]["name"] = "Renamed"
    store.take(service, at=hours(2))
    service.add_chapter("c3", "p1", covered=1)
    store.take(service, at=hours(3))
    return store


def test_tables_read_ahead_are_each_snapshots_tables_as_the_store_reads_them(store):
    times = list(store.snapshots()["snapshot_at"])
    obs = Observed(store)
    for moment in times[:-1]:
        tables_ahead(obs, TABLES, moment)
    for moment in times[:-1]:
        for table in TABLES:
            pd.testing.assert_frame_equal(obs.at(table, moment), store.as_of(table, moment))
    # The snapshot before c2 was deleted has it; the one after does not.
    assert "c2" in set(obs.at("chapters", times[1])["chapter_id"])
    assert "c2" not in set(obs.at("chapters", times[2])["chapter_id"])


def test_the_latest_snapshot_is_the_views_own_read_not_read_again(store):
    obs = Observed(store)
    last = obs.times[-1]
    tables_ahead(obs, TABLES, last)
    assert not obs.memo  # nothing started: the view reads the latest rows itself
    assert obs.at("chapters", last) is obs.latest_chapters


def test_a_read_ahead_that_failed_fails_the_question_that_takes_it(store):
    obs = Observed(store)

    def fails() -> object:
        raise ValueError("the read went wrong")

    read_ahead(obs, "answer", fails)
    with pytest.raises(ValueError, match="the read went wrong"):
        remembered(obs, "answer")
    assert remembered(obs, "never asked") is None


def test_a_damaged_store_read_ahead_is_refused_where_its_table_is_taken(store):
    # A data file of the chapters' second snapshot gone: the read ahead fails on its
    # thread, and the question that takes its answer says what the store says.
    root = Path(store.root)
    actions = pa.table(DeltaTable(str(root / "chapters")).get_add_actions(flatten=True))
    (path,) = [a["path"] for a in actions.to_pylist() if a["min.snapshot_at"] == hours(1)]
    (root / "chapters" / path).unlink()
    damaged = SnapshotStore(root)
    obs = Observed(damaged)
    tables_ahead(obs, ["chapters"], obs.times[1])
    with pytest.raises(DamagedStore, match="store check"):
        obs.at("chapters", obs.times[1])

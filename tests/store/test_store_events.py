"""The events table under a writer that appends all day (a webhook receiver): it is
checkpointed every `CHECKPOINT_EVERY` commits and opened afresh from the checkpoint, so an
open store does not keep state for every commit since it was opened; nothing is lost.
Its commits are witnessed by the snapshots' manifest rows and marked as the toolkit's:
a deleted or replaced commit a snapshot saw, and another engine's commit, are found."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pytest
from datafakes import FakeService, hours
from deltalake import DeltaTable, write_deltalake

from toolkit.cli import main
from toolkit.frames import schema
from toolkit.store import SnapshotStore, events
from toolkit.store.check import check
from toolkit.store.events import _event_row


def test_a_long_run_of_event_commits_is_checkpointed_and_reads_every_event(tmp_path, monkeypatch):
    monkeypatch.setattr(events, "CHECKPOINT_EVERY", 5)
    store = SnapshotStore(tmp_path)
    for n in range(12):
        store.record_events([{"webhook_id": f"msg_{n}", "type": "chapter.finished",
                              "timestamp": datetime(2026, 11, 18, 9, n, tzinfo=UTC),
                              "data": {"chapterId": f"c{n}", "projectId": "p1"}}])  # fmt: skip
    checkpoints = sorted(p.name for p in (tmp_path / "events" / "_delta_log").glob("*.checkpoint*"))
    assert checkpoints == [
        "00000000000000000005.checkpoint.parquet",
        "00000000000000000010.checkpoint.parquet",
    ]
    assert SnapshotStore(tmp_path).history("events")["webhook_id"].tolist() == [
        f"msg_{n}" for n in range(12)
    ]


# -- the events table's commits witnessed by the manifest (issue 38 item 5) -------------------


def _event(n: int) -> dict[str, object]:
    return {"webhook_id": f"msg_{n}", "type": "chapter.finished",
            "timestamp": datetime(2026, 11, 18, 9, n, tzinfo=UTC),
            "data": {"chapterId": f"c{n}", "projectId": "p1"}}  # fmt: skip


def _store_with_events(root: Path) -> SnapshotStore:
    """Three events commits, then a snapshot that saw the newest of them."""
    service = FakeService()
    service.add_project("p1")
    service.add_chapter("c1", "p1", position=1, covered=1, credits=2)
    store = SnapshotStore(root)
    for n in range(3):
        store.record_events([_event(n)])
    store.take(service, at=hours(0))
    return store


def _newest_commit(root: Path) -> Path:
    return sorted((root / "events" / "_delta_log").glob("*.json"))[-1]


def test_a_deleted_newest_events_commit_is_found_and_its_loss_recorded(tmp_path):
    _store_with_events(tmp_path)
    assert check(str(tmp_path)) == []
    _newest_commit(tmp_path).unlink()
    (finding,) = check(str(tmp_path))
    assert finding.kind == "missing" and finding.table == "events"
    assert "events commit 2 is missing" in finding.what
    assert "no snapshot is touched" in finding.repair
    (repaired,) = check(str(tmp_path), repair=True)
    assert repaired.done == "recorded"
    assert check(str(tmp_path)) == []
    store = SnapshotStore(tmp_path)
    assert len(store.snapshots()) == 1, "no snapshot removed for lost events"
    assert store.history("events")["webhook_id"].tolist() == ["msg_0", "msg_1"]


def test_an_events_commit_replaced_after_a_deletion_is_found(tmp_path):
    store = _store_with_events(tmp_path)
    _newest_commit(tmp_path).unlink()
    SnapshotStore(tmp_path).record_events([_event(7), _event(8)])  # takes the number again
    (finding,) = check(str(tmp_path))
    assert finding.kind == "commit" and finding.table == "events"
    assert "adds 2 events" in finding.what and "saw it add 1" in finding.what
    del store


@pytest.mark.parametrize("kind", ["DELETE", "UPDATE"])
def test_a_foreign_commit_to_the_events_table_is_undone_like_the_others(tmp_path, capsys, kind):
    _store_with_events(tmp_path)
    table = DeltaTable(str(tmp_path / "events"))
    if kind == "DELETE":
        table.delete("webhook_id = 'msg_1'")
    else:
        table.update({"type": "'chapter.failed'"})
    (finding,) = check(str(tmp_path))
    assert finding.kind == "foreign" and finding.table == "events" and f"({kind})" in finding.what
    (repaired,) = check(str(tmp_path), repair=True)
    assert repaired.done is not None and "restored to version" in repaired.done
    assert check(str(tmp_path)) == []
    read = SnapshotStore(tmp_path).history("events")
    assert read["webhook_id"].tolist() == ["msg_0", "msg_1", "msg_2"]
    assert set(read["type"]) == {"chapter.finished"}


def test_the_printed_advice_for_the_events_table_works_when_followed(tmp_path, capsys):
    _store_with_events(tmp_path)
    DeltaTable(str(tmp_path / "events")).delete("webhook_id = 'msg_0'")
    assert main(["store", "check", "--store", str(tmp_path)]) != 0
    (advice,) = re.findall(r"`(DeltaTable\('[^']+'\)\.restore\(\d+\))`", capsys.readouterr().out)
    eval(advice, {"DeltaTable": DeltaTable})  # what the user types, as printed
    assert main(["store", "check", "--store", str(tmp_path)]) == 0
    assert len(SnapshotStore(tmp_path).history("events")) == 3


def test_events_commits_of_an_earlier_toolkit_are_not_foreign(tmp_path):
    """Earlier toolkits appended events without the toolkit's mark."""
    rows = pa.Table.from_pylist(
        [_event_row(_event(n), datetime(2026, 11, 18, 10, tzinfo=UTC)) for n in range(2)],
        schema.EVENTS,
    )
    for n in range(2):
        write_deltalake(str(tmp_path / "events"), rows.slice(n, 1), mode="append")
    SnapshotStore(tmp_path).record_events([_event(5)])
    assert check(str(tmp_path)) == []

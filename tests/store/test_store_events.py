"""The events table under a writer that appends all day (a webhook receiver): it is
checkpointed every `CHECKPOINT_EVERY` commits and opened afresh from the checkpoint, so an
open store does not keep state for every commit since it was opened; nothing is lost."""

from __future__ import annotations

from datetime import UTC, datetime

from toolkit.store import SnapshotStore, events


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

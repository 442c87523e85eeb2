"""`toolkit store migrate`: a store in the first layout (hive-partitioned Parquet and a
manifest folder) becomes a Delta store with every snapshot, event and figure unchanged."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from pandas.testing import assert_frame_equal

from toolkit import analysis
from toolkit.cli import main
from toolkit.errors import OldStoreLayout
from toolkit.frames import schema
from toolkit.store import SnapshotStore
from toolkit.store import migrate as store_migrate
from toolkit.store.columns import MANIFEST_STORED, stored_schema
from toolkit.store.snapshot_store import StoreUpgraded

# The first layout's manifest had no workspace label, nor the mark of kept `_previous`.
OLD_MANIFEST = pa.schema(
    [field for field in MANIFEST_STORED if field.name not in ("workspace", "keeps_previous")]
)


def write_first_layout(store: SnapshotStore, root: Path) -> None:
    """Write `store`'s rows as the first layout's writer did: a file per snapshot and
    table under `snapshot_date=`, a one-row manifest file per snapshot, events by day
    received; then merge two manifest files into a compact file that covers them (both
    left on disk, as a compaction lingering would) and add an uncommitted snapshot."""
    manifest = schema.conform(store._manifest(), OLD_MANIFEST)
    for row in manifest.to_pylist():
        _write(root / "manifest" / f"{row['snapshot_id']}.parquet",
               pa.Table.from_pylist([row], OLD_MANIFEST))  # fmt: skip
    first_two = manifest.slice(0, 2)
    covers = json.dumps(first_two.column("snapshot_id").to_pylist()).encode()
    merged = first_two.replace_schema_metadata({b"toolkit.covers": covers})
    _write(root / "manifest" / "compact-0000.parquet", merged)
    for name in schema.SNAPSHOT_TABLES:
        rows = store._tables.dataset(name, stored_schema(name)).to_table()
        rows = schema.conform(rows, stored_schema(name))
        for snapshot_id in pc.unique(rows.column("snapshot_id")).to_pylist():
            part = rows.filter(pc.equal(rows.column("snapshot_id"), snapshot_id))
            day = f"{part.column('snapshot_at')[0].as_py():%Y-%m-%d}"
            _write(root / name / f"snapshot_date={day}" / f"{snapshot_id}.parquet", part)
    events = schema.conform(
        store._tables.dataset("events", schema.EVENTS).to_table(), schema.EVENTS
    )
    for n, row in enumerate(events.to_pylist()):
        day = f"{row['received_at']:%Y-%m-%d}"
        _write(root / "events" / f"received_date={day}" / f"batch-{n:05d}.parquet",
               pa.Table.from_pylist([row], schema.EVENTS))  # fmt: skip
    # A take that stopped before its manifest row: its rows must not come along.
    chapters = schema.conform(store._tables.dataset("chapters", stored_schema("chapters"))
                              .to_table(), stored_schema("chapters")).slice(0, 3)  # fmt: skip
    stray = chapters.set_column(0, "snapshot_id", pa.array(["uncommitted"] * 3, pa.string()))
    _write(root / "chapters" / "snapshot_date=2099-01-01" / "uncommitted.parquet", stray)


def _write(path: Path, table: pa.Table) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path, compression="zstd")


FIGURES = {
    "credit_spend": lambda s: analysis.credit_spend(s, freq="1h"),
    "credit_spend_by_language": lambda s: analysis.credit_spend(s, by="language_code"),
    "throughput": lambda s: analysis.throughput(s, freq="1h"),
    "cycle_times": analysis.cycle_times,
    "failures": analysis.failures,
    "stalled": analysis.stalled,
}


@pytest.mark.slow
def test_migrating_the_demo_store_keeps_every_snapshot_event_and_figure(tmp_path, capsys, demo_day):
    original = demo_day
    old, new = tmp_path / "first-layout", tmp_path / "migrated"
    write_first_layout(original, old)

    with pytest.raises(OldStoreLayout, match="toolkit store migrate"):
        SnapshotStore(old).snapshots()
    assert main(["store", "migrate", str(old), str(new)]) == 0
    assert "migrated" in capsys.readouterr().out

    migrated = SnapshotStore(new)
    # `commits` records each table's own commits: the migration wrote new ones.
    assert_frame_equal(migrated.snapshots().drop(columns="commits"),
                       original.snapshots().drop(columns="commits"))  # fmt: skip
    for table in schema.SNAPSHOT_TABLES:
        assert_frame_equal(migrated.history(table), original.history(table))
        assert_frame_equal(migrated.changes(table), original.changes(table))
    assert_frame_equal(migrated.history("events"), original.history("events"))
    assert len(migrated.history("events")) > 0
    for name, figure in FIGURES.items():
        assert_frame_equal(figure(migrated), figure(original), obj=name)
    # The migrated store takes snapshots like any other.
    assert os.path.isdir(new / "manifest" / "_delta_log")


def test_migrate_refuses_what_it_cannot_convert(tmp_path, capsys):
    assert main(["store", "migrate", str(tmp_path / "nothing"), str(tmp_path / "new")]) == 1
    assert "not a store in the first layout" in capsys.readouterr().err
    old = tmp_path / "old"
    _write(old / "manifest" / "x.parquet", OLD_MANIFEST.empty_table())
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "something").write_text("x")
    assert main(["store", "migrate", str(old), str(busy)]) == 1
    assert "not an empty folder" in capsys.readouterr().err


@pytest.mark.slow
def test_a_first_layout_store_is_converted_in_place_by_migrate_or_by_the_next_write(
    tmp_path, capsys, monkeypatch, demo_day
):
    original = demo_day
    by_command, by_write = tmp_path / "by-command", tmp_path / "by-write"
    write_first_layout(original, by_command)
    write_first_layout(original, by_write)

    # A conversion stopped before its manifest leaves a store still refused and still
    # converted by the next attempt.
    def stop(tables, name, rows):
        raise OSError("killed")

    with monkeypatch.context() as patched:
        patched.setattr(store_migrate, "_append_by_week", stop)
        assert main(["store", "migrate", str(by_command)]) == 2  # a one-line error, exit 2
    stopped = capsys.readouterr().err
    assert "killed" in stopped and f"the store {by_command} " in stopped  # the PATH given
    with pytest.raises(OldStoreLayout, match=f"toolkit store migrate {by_command}"):
        SnapshotStore(by_command).snapshots()
    assert main(["store", "migrate", str(by_command)]) == 0
    out = capsys.readouterr().out
    assert "converted from the first layout" in out and "_first_layout" in out
    assert (by_command / "_first_layout" / "manifest").is_dir()  # the old files, kept

    with pytest.warns(StoreUpgraded, match="converted from the first layout"):
        SnapshotStore(by_write).write(original.workspace(), at=original.snapshots()
                                      ["snapshot_at"].iloc[-1] + pd.Timedelta(hours=1))  # fmt: skip
    for converted in (SnapshotStore(by_command), SnapshotStore(by_write)):
        expected = original.snapshots().drop(columns="commits")
        converted_rows = converted.snapshots().drop(columns="commits").iloc[: len(expected)]
        assert_frame_equal(converted_rows, expected)
        for table in schema.SNAPSHOT_TABLES:
            last = expected["snapshot_at"].iloc[-1]
            assert_frame_equal(converted.history(table, until=last), original.history(table))
    for name, figure in FIGURES.items():
        assert_frame_equal(figure(SnapshotStore(by_command)), figure(original), obj=name)

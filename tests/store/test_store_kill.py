"""kill -9 of a process taking snapshots, at the moment its data files appear, and of a
process maintaining the store, in a merge, a checkpoint or a vacuum: the store stays
readable, every committed snapshot reads as it was taken, and the check finds nothing."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from datafakes import T0, FakeService

from toolkit.store import SnapshotStore

TESTS = Path(__file__).parents[1]  # datafakes.py
WRITER = """
import sys
from datetime import timedelta
sys.path.insert(0, sys.argv[1])
from datafakes import T0, FakeService
from toolkit.store import SnapshotStore

root, first = sys.argv[2], int(sys.argv[3])
service = FakeService()
service.add_project("p1", languages=("en", "fr"))
store = SnapshotStore(root)
for step in range(first, first + 200):
    service.add_chapter(f"c{step}", "p1", position=step + 1, covered=step % 5)
    store.take(service, details="all", at=T0 + timedelta(hours=step))
"""


def data_files(root: Path) -> set[Path]:
    """The tables' data files (not the folders the toolkit keeps beside them, `_latest`
    and `_runs`, whose temporary folders a running write renames and deletes)."""
    tables = [p for p in root.iterdir() if p.is_dir() and not p.name.startswith("_")]
    return {p for t in tables for p in t.rglob("*.parquet") if "_delta_log" not in p.parts}


def first_snapshot_files(folder: Path) -> int:
    """How many data files the writer's first snapshot makes (a file per table it
    fills), counted on a store of its own: a table added to the store moves the kills."""
    service = FakeService()
    service.add_project("p1", languages=("en", "fr"))
    service.add_chapter("c0", "p1", position=1, covered=0)
    SnapshotStore(folder).take(service, details="all", at=T0)
    return len(data_files(folder))


@pytest.mark.slow
def test_kill_9_while_taking_snapshots_leaves_every_committed_snapshot_whole(tmp_path):
    root = tmp_path / "store"
    first = first_snapshot_files(tmp_path / "probe")
    for round_ in range(6):
        seen = data_files(root) if root.exists() else set()
        writer = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(TESTS), str(root), str(round_ * 1000)]
        )
        # Kill it once the round's second snapshot has written one, two or three data
        # files (the first snapshot of a round writes at most `first`).
        deadline = time.monotonic() + 120
        while len(data_files(root) - seen if root.exists() else ()) < first + 1 + round_ % 3:
            assert writer.poll() is None and time.monotonic() < deadline
            time.sleep(0.005)  # watching the folder, not waiting for time to pass
        os.kill(writer.pid, signal.SIGKILL)
        writer.wait()

        store = SnapshotStore(root)
        manifest = store.snapshots()
        chapters = store.history("chapters").groupby("snapshot_id").size()
        languages = store.history("languages").groupby("snapshot_id").size()
        for row in manifest.itertuples():
            assert chapters[row.snapshot_id] == row.rows_chapters
            assert languages[row.snapshot_id] == row.rows_languages
    assert len(manifest) >= 1
    # A fresh take after all the kills commits and reads as usual.
    latest = store.latest("chapters")
    assert len(latest) == manifest["rows_chapters"].iloc[-1]


# kill -9 in the middle of the daily maintenance: the compacting process marks each
# step (a merge's write, a checkpoint, a vacuum) as it starts it, and is killed there.
COMPACTOR = """
import os, sys
from datetime import timedelta
import deltalake
from toolkit.store import SnapshotStore, maintenance

root, phase, marker = sys.argv[1], sys.argv[2], sys.argv[3]


def marking(step, call):
    def marked(*args, **kwargs):
        if step == phase:
            open(marker, "w").close()
        return call(*args, **kwargs)
    return marked


maintenance.write_deltalake = marking("merge", maintenance.write_deltalake)
for step in ("create_checkpoint", "vacuum"):
    call = getattr(deltalake.DeltaTable, step)
    setattr(deltalake.DeltaTable, step, marking(step.removeprefix("create_"), call))
# Retention 0: vacuum removes the files the merge replaced, now.
SnapshotStore(root, retention=timedelta(0)).compact()
"""
KILLS = ["merge", "checkpoint", "vacuum", "merge", "checkpoint", "vacuum", "merge", "merge",
         "checkpoint", "vacuum"]  # fmt: skip


def every_snapshot(root: Path) -> dict[str, dict[str, object]]:
    store = SnapshotStore(root)
    return {
        table: store.history(table).reset_index(drop=True) for table in ("chapters", "languages")
    } | {"manifest": store.snapshots()[["snapshot_id", "snapshot_at"]]}


@pytest.mark.slow
def test_kill_9_during_merges_checkpoints_and_vacuums_loses_no_snapshot(tmp_path, capsys):
    from datafakes import FakeService, hours
    from pandas.testing import assert_frame_equal

    from toolkit.cli import main

    root = tmp_path / "store"
    service = FakeService()
    service.add_project("p1", languages=("en", "fr"))
    store = SnapshotStore(root, auto_compact=False)
    killed = []
    for round_, phase in enumerate(KILLS):
        for step in range(3):  # a new day's snapshots: something to merge
            service.add_chapter(f"c{round_}-{step}", "p1", position=round_ * 3 + step + 1)
            service.update("c0-0", covered=round_ + step)
            store.take(service, details="all", at=hours(24 * round_ + step))
        taken = every_snapshot(root)
        marker = tmp_path / f"marker-{round_}"
        compactor = subprocess.Popen(
            [sys.executable, "-c", COMPACTOR, str(root), phase, str(marker)],
            env={**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS.parent), str(TESTS)])},
        )
        deadline = time.monotonic() + 120
        while not marker.exists() and compactor.poll() is None:
            assert time.monotonic() < deadline
            time.sleep(0.002)  # watching for the marker, not waiting for time to pass
        if compactor.poll() is None:
            os.kill(compactor.pid, signal.SIGKILL)
            killed.append(phase)
        compactor.wait()

        after = every_snapshot(root)  # nothing lost: every snapshot reads as taken
        for name, frame in taken.items():
            assert_frame_equal(after[name], frame, obj=f"{name} after a kill during {phase}")
    assert len(killed) == 10 and set(killed) == {"merge", "checkpoint", "vacuum"}
    assert main(["store", "check", "--store", str(root)]) == 0, capsys.readouterr().out

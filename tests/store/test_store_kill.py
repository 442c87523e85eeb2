"""kill -9 of a process taking snapshots, at the moment its data files appear: the
store stays readable, and every committed snapshot reads with the row counts its
manifest row gives."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

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
    return {p for p in root.rglob("*.parquet") if "_delta_log" not in p.parts}


def test_kill_9_while_taking_snapshots_leaves_every_committed_snapshot_whole(tmp_path):
    root = tmp_path / "store"
    for round_ in range(6):
        seen = data_files(root) if root.exists() else set()
        writer = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(TESTS), str(root), str(round_ * 1000)]
        )
        # Kill it when the round's second snapshot starts writing data files.
        deadline = time.monotonic() + 120
        while len(data_files(root) - seen if root.exists() else ()) < 2 + round_ % 3:
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

"""kill -9 of `toolkit snapshot` as it writes its first file, ten times over: the store
stays whole. Every snapshot it lists reads back with the row counts its manifest gives,
and after a plain `take`, `latest()` equals a fresh pull."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from pandas.testing import assert_frame_equal

import toolkit as tk
from toolkit.frames import schema
from toolkit.store import SnapshotStore

KILLS = 10


def files_under(root: Path) -> set[Path]:
    return {path for path in root.rglob("*") if path.is_file()} if root.exists() else set()


def snapshot_killed_at_first_write(root: Path, env: dict[str, str]) -> bool:
    """Run `toolkit snapshot`; SIGKILL it when its first file appears in the store.

    True when the kill landed (the command had not finished by itself).
    """
    before = files_under(root)
    command = [sys.executable, "-m", "toolkit.cli", "snapshot", "--details", "all"]
    process = subprocess.Popen(
        command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        while process.poll() is None:  # watching another process, not simulated time
            if files_under(root) - before:
                os.kill(process.pid, signal.SIGKILL)
                break
            time.sleep(0.001)
        return process.wait(timeout=60) == -signal.SIGKILL
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def without_stamp(frame, table: str):
    frame = frame.drop(columns=[c for c in ("snapshot_id", "snapshot_at") if c in frame.columns])
    return frame.sort_values(list(schema.KEYS[table]), ignore_index=True)


@pytest.mark.slow
def test_sigkill_at_the_first_file_leaves_every_snapshot_whole(
    tmp_path, emulator, workspace, comic_project, client, pages
):
    root = tmp_path / "store"
    env = {
        **os.environ,
        "CTS_BASE_URL": emulator.url,
        "CTS_API_KEY": workspace["apiKey"],
        "CTS_STORE": str(root),
    }
    assert (
        subprocess.run([sys.executable, "-m", "toolkit.cli", "snapshot"], env=env).returncode == 0
    )
    landed = 0
    for number in range(KILLS):
        client.create_chapter(comic_project["id"], pages=pages[: 1 + number % 3])
        emulator.advance(600)
        landed += snapshot_killed_at_first_write(root, env)
    assert landed >= KILLS // 2, "most kills must land before the command finished"

    store = SnapshotStore(str(root))
    manifest = store.snapshots()
    assert len(manifest) >= 1
    for row in manifest.itertuples():
        taken = store.workspace(row.snapshot_id)
        for table in schema.SNAPSHOT_TABLES:
            if f"rows_{table}" in manifest:  # the manifest counts the service's four
                assert len(taken.table(table)) == getattr(row, f"rows_{table}"), (table, row)
        # Each project's translation group landed with it (the emulator gives each one).
        assert len(taken.table("project_groups")) == row.rows_projects, row

    # The leftovers do not spoil the next snapshot, which holds what a pull sees.
    fresh = tk.pull(client, details="all")
    store.take(client, details="all")
    for table in schema.SNAPSHOT_TABLES:
        assert_frame_equal(
            without_stamp(store.latest(table), table), without_stamp(fresh.table(table), table)
        )

"""A damaged store is named, checked and repaired; a store path that is a file, a full
disk or a write that fails give a `StoreError` naming the path, never a traceback."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pyarrow as pa
import pytest
from datafakes import FakeService, hours

from toolkit.cli import main
from toolkit.errors import DamagedStore, StoreError, ToolkitError
from toolkit.store import SnapshotStore


@pytest.fixture
def service() -> FakeService:
    fake = FakeService()
    fake.add_project("p1", languages=("en", "fr"))
    fake.add_chapter("c1", "p1", position=1, covered=1, credits=2)
    return fake


def three_snapshots(root: Path, service: FakeService) -> SnapshotStore:
    store = SnapshotStore(root, auto_compact=False)
    for step in range(3):
        service.update("c1", covered=step + 1)
        store.take(service, at=hours(step))
    return store


def data_file_of(root: Path, table: str, snapshot: int) -> Path:
    """The data file holding a table's rows of the `snapshot`-th snapshot."""
    store = SnapshotStore(root)
    dt = store._tables.get(table)
    actions = pa.table(dt.get_add_actions(flatten=True)).to_pylist()
    wanted = hours(snapshot)
    return root / table / next(a["path"] for a in actions if a["min.snapshot_at"] == wanted)


def test_a_store_path_that_is_a_file_is_refused_not_read_as_empty(
    tmp_path, service, capsys, monkeypatch
):
    path = tmp_path / "notes.txt"
    path.write_text("not a store")
    with pytest.raises(StoreError, match="is a file, not a folder") as caught:
        SnapshotStore(path).snapshots()
    assert str(path) in str(caught.value) and isinstance(caught.value, ToolkitError)
    with pytest.raises(StoreError, match="lies under"):
        SnapshotStore(path / "store").take(service)
    monkeypatch.setenv("CTS_BASE_URL", "http://127.0.0.1:9")  # never reached
    monkeypatch.setenv("CTS_API_KEY", "cts_test")
    assert main(["snapshot", "--store", str(path / "store")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("toolkit snapshot: the store") and err.count("\n") == 1
    assert "Traceback" not in err


def test_a_full_disk_names_the_store_and_leaves_no_file_behind(tmp_path, service):
    disk = tmp_path / "small-disk"
    disk.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=400k", "tmpfs", str(disk)], capture_output=True
    )
    if mounted.returncode != 0:
        pytest.skip("needs a small tmpfs (mount as root) to fill the disk for real")
    try:
        store = SnapshotStore(disk / "store", auto_compact=False)
        store.take(service, at=hours(0))
        before = sorted(p.relative_to(disk) for p in disk.rglob("*"))
        free = os.statvfs(disk).f_bavail * os.statvfs(disk).f_frsize
        (disk / "filler").write_bytes(b"\0" * max(free - 2048, 0))
        for n in range(200):
            service.add_chapter(f"n{n}", "p1", position=n + 2, covered=n, credits=n)
        with pytest.raises(StoreError, match="disk is full") as caught:
            store.take(service, at=hours(1))
        assert str(disk / "store") in str(caught.value)
        (disk / "filler").unlink()
        after = sorted(p.relative_to(disk) for p in disk.rglob("*"))
        assert [p for p in after if p not in before] == []  # nothing left over
        assert len(SnapshotStore(disk / "store").snapshots()) == 1
    finally:
        subprocess.run(["umount", str(disk)], check=False)


def test_a_truncated_data_file_is_named_checked_and_repaired(tmp_path, service, capsys):
    root = tmp_path / "store"
    three_snapshots(root, service)
    damaged = data_file_of(root, "languages", 1)
    damaged.write_bytes(damaged.read_bytes()[:40])  # cut off mid-file

    with pytest.raises(DamagedStore) as caught:
        SnapshotStore(root).history("languages")
    message = str(caught.value)
    assert damaged.name in message and "toolkit store check" in message and "--repair" in message

    assert main(["store", "check", "--store", str(root)]) == 1
    report = capsys.readouterr().out
    assert f"damaged: {damaged}" in report and "--repair" in report
    assert main(["store", "check", "--store", str(root), "--repair"]) == 0
    assert "moved to" in capsys.readouterr().out
    assert not damaged.exists()
    assert list((root / "_quarantine").rglob(damaged.name))  # set aside, not deleted
    store = SnapshotStore(root)
    # The snapshot before the damaged one reads as before.
    as_of = store.as_of("languages", hours(0))
    assert as_of["covered"].tolist() == [1, 1]
    assert main(["store", "check", "--store", str(root)]) == 0
    assert "every file is sound" in capsys.readouterr().out


def test_a_garbage_newest_manifest_commit_is_dropped_by_repair(tmp_path, service, capsys):
    root = tmp_path / "store"
    three_snapshots(root, service)
    log = root / "manifest" / "_delta_log"
    newest = sorted(p for p in log.glob("*.json"))[-1]
    newest.write_bytes(b"\x00garbage{")
    with pytest.raises(DamagedStore, match="manifest") as caught:
        SnapshotStore(root).snapshots()
    assert "toolkit store check" in str(caught.value)
    assert main(["store", "check", "--store", str(root)]) == 1
    assert f"log: {newest}" in capsys.readouterr().out
    assert main(["store", "check", "--store", str(root), "--repair"]) == 0
    capsys.readouterr()
    store = SnapshotStore(root)
    assert len(store.snapshots()) == 2  # the third snapshot's commit was the damaged one
    assert store.latest("languages")["covered"].tolist() == [2, 2]


def test_an_empty_manifest_commit_and_a_stray_parquet_file_are_found(tmp_path, service, capsys):
    root = tmp_path / "store"
    three_snapshots(root, service)
    stray = root / "chapters" / "part-00000-stray.parquet"
    stray.write_bytes(data_file_of(root, "chapters", 0).read_bytes())
    os.utime(stray, (0, 0))  # older than the grace period
    newest = sorted((root / "manifest" / "_delta_log").glob("*.json"))[-1]
    newest.write_bytes(b"")
    assert main(["store", "check", "--store", str(root)]) == 1
    report = capsys.readouterr().out
    assert f"orphaned: {stray}" in report and f"log: {newest}" in report
    assert main(["store", "check", "--store", str(root), "--repair"]) == 0
    capsys.readouterr()
    assert not stray.exists()
    assert len(SnapshotStore(root).history("chapters")) == 2

"""A damaged store is named, checked and repaired; a store path that is a file, a full
disk or a write that fails give a `StoreError` naming the path, never a traceback."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pyarrow as pa
import pytest
from datafakes import FakeService, hours
from deltalake import DeltaTable
from pandas.testing import assert_frame_equal

from toolkit.cli import main
from toolkit.errors import DamagedStore, StoreError, ToolkitError
from toolkit.frames import schema
from toolkit.store import SnapshotStore
from toolkit.store import snapshot_store as store_module


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


# The damage matrix: each kind of damage on a small store of ten hourly snapshots, a
# full one every four. After `check` and `--repair`, every snapshot left reads exactly
# as it was taken, and every one gone is named lost by a finding.


def ten_snapshots(root: Path, service: FakeService, monkeypatch) -> dict[str, dict]:
    """The store, and what each snapshot read when taken: its rows per table."""
    monkeypatch.setattr(store_module, "FULL_EVERY", 4)
    store = SnapshotStore(root, auto_compact=False)
    for step in range(10):
        service.update("c1", covered=step + 1, credits=step * 2)
        if step == 5:
            service.add_chapter("c2", "p1", position=2, covered=0, credits=1)
        store.take(service, at=hours(step))
    return reading(root)


def reading(root: Path) -> dict[str, dict]:
    store = SnapshotStore(root)
    read: dict[str, dict] = {}
    for table in schema.SNAPSHOT_TABLES:
        for snapshot_id, rows in store.history(table).groupby("snapshot_id"):
            read.setdefault(str(snapshot_id), {})[table] = rows.reset_index(drop=True)
    for snapshot_id in store.snapshots()["snapshot_id"]:
        read.setdefault(snapshot_id, {})
    return read


def newest_commit(root: Path, table: str) -> Path:
    return sorted((root / table / "_delta_log").glob("*.json"))[-1]


def truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: len(path.read_bytes()) // 2])


def checkpoint(root: Path, table: str) -> None:
    DeltaTable(str(root / table)).create_checkpoint()
    (checkpoint,) = (root / table / "_delta_log").glob("*.checkpoint.parquet")
    truncate(checkpoint)


def foreign_delete(root: Path, table: str) -> None:
    DeltaTable(str(root / table)).delete("chapter_id = 'c2'")


DAMAGE = {
    "a data file truncated": lambda root: truncate(data_file_of(root, "languages", 6)),
    "a data file deleted": lambda root: data_file_of(root, "chapters", 2).unlink(),
    "a manifest file truncated": lambda root: truncate(data_file_of(root, "manifest", 5)),
    "the newest commit of a table truncated": lambda root: truncate(
        newest_commit(root, "chapters")
    ),
    "the newest manifest commit garbage": lambda root: newest_commit(root, "manifest").write_bytes(
        b"\x00garbage{"
    ),
    "a checkpoint truncated": lambda root: checkpoint(root, "languages"),
    "a DELETE by another engine": lambda root: foreign_delete(root, "chapters"),
}


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_damage_is_named_and_repair_leaves_no_snapshot_reading_wrong(
    tmp_path, service, monkeypatch, capsys, damage
):
    root = tmp_path / "store"
    taken = ten_snapshots(root, service, monkeypatch)
    DAMAGE[damage](root)

    assert main(["store", "check", "--store", str(root)]) == 1
    report = capsys.readouterr().out
    assert report.count("--repair") >= 2  # each finding says what repair does
    assert main(["store", "check", "--store", str(root), "--repair"]) == 0
    repaired = capsys.readouterr().out
    assert "repaired: " in repaired
    assert main(["store", "check", "--store", str(root)]) == 0
    capsys.readouterr()

    now = reading(root)
    for snapshot_id, rows in now.items():
        for table, frame in rows.items():
            assert_frame_equal(frame, taken[snapshot_id][table], obj=f"{snapshot_id} {table}")
    lost = set(taken) - set(now)
    for snapshot_id in lost:  # every snapshot gone is named
        named = snapshot_id in repaired or "snapshots from" in repaired
        assert named or "is lost (take it again)" in repaired
    if damage == "a checkpoint truncated":
        assert not lost  # rebuilt from the JSON log: every snapshot back
    if damage == "the newest manifest commit garbage":
        assert len(lost) == 1


def test_a_healthy_store_after_its_daily_merge_checks_clean(tmp_path, service, capsys):
    root = tmp_path / "store"
    store = SnapshotStore(root)
    for step in range(0, 60, 6):  # ten snapshots over two and a half days: merges
        service.update("c1", covered=step + 1)
        store.take(service, at=hours(step))
    store.compact()
    for path in root.rglob("*.parquet"):
        os.utime(path, (0, 0))  # older than the grace period, not yet vacuumed
    assert main(["store", "check", "--store", str(root)]) == 0
    out = capsys.readouterr().out
    assert "every snapshot reads as it was taken" in out
    assert main(["store", "check", "--store", str(root), "--repair"]) == 0
    assert not (root / "_quarantine").exists()  # nothing set aside


def test_an_older_damaged_commit_is_named_once_and_not_silently_read(tmp_path, service, capsys):
    root = tmp_path / "store"
    three_snapshots(root, service)
    older = sorted((root / "languages" / "_delta_log").glob("*.json"))[0]
    older.write_bytes(b"{not json")
    with pytest.raises(DamagedStore, match="toolkit store check"):
        SnapshotStore(root).history("languages")
    assert main(["store", "check", "--store", str(root), "--repair"]) == 1
    out = capsys.readouterr().out
    assert out.count(str(older)) == 1 and "restore this file from a backup" in out


def test_repair_empties_a_quarantine_older_than_it_keeps(tmp_path, service, capsys):
    root = tmp_path / "store"
    three_snapshots(root, service)
    old = root / "_quarantine" / "20200101T000000Z"
    old.mkdir(parents=True)
    os.utime(old, (0, 0))
    assert main(["store", "check", "--store", str(root), "--repair"]) == 0
    assert "quarantine kept 7 days: 1 older folder(s) deleted" in capsys.readouterr().out
    assert not old.exists()

"""A damaged store is named, checked and repaired; a store path that is a file, a full
disk or a write that fails give a `StoreError` naming the path, never a traceback."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pyarrow as pa
import pytest
from datafakes import FakeService, hours
from deltalake import DeltaTable
from pandas.testing import assert_frame_equal

from toolkit.analysis import credit_spend
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


def ten_snapshots(
    root: Path, service: FakeService, monkeypatch, *, merged: bool = False
) -> dict[str, dict]:
    """The store, and what each snapshot read when taken: its rows per table. `merged`:
    six hours apart over three days, each day's files merged by the next day's take."""
    monkeypatch.setattr(store_module, "FULL_EVERY", 4)
    store = SnapshotStore(root, auto_compact=merged)
    for step in range(10):
        service.update("c1", covered=step + 1, credits=step * 2)
        if step == 5:
            service.add_chapter("c2", "p1", position=2, covered=0, credits=1)
        store.take(service, at=hours(step * 6 if merged else step))
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


def first_line_only(path: Path) -> None:
    """Truncated at a line's end: the commit still parses, but adds nothing."""
    path.write_text(path.read_text().splitlines()[0] + "\n")


def checkpoint(root: Path, table: str, *, pointer: bool = False) -> None:
    DeltaTable(str(root / table)).create_checkpoint()
    (checkpoint,) = (root / table / "_delta_log").glob("*.checkpoint.parquet")
    truncate(checkpoint)
    if pointer:
        truncate(root / table / "_delta_log" / "_last_checkpoint")


def merged_file_lost(root: Path) -> None:
    """The chapters file the daily merge made of the first day, deleted."""
    actions = pa.table(DeltaTable(str(root / "chapters")).get_add_actions(flatten=True))
    (path,) = [a["path"] for a in actions.to_pylist() if a["max.snapshot_at"] == hours(12)]
    (root / "chapters" / path).unlink()


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
    "a checkpoint and _last_checkpoint truncated": lambda root: checkpoint(
        root, "chapters", pointer=True
    ),
    "a DELETE by another engine": lambda root: foreign_delete(root, "chapters"),
    "the newest chapters commit deleted": lambda root: newest_commit(root, "chapters").unlink(),
    "the newest chapters commit truncated to its first line": lambda root: first_line_only(
        newest_commit(root, "chapters")
    ),
    "the newest manifest commit deleted": lambda root: newest_commit(root, "manifest").unlink(),
    "a merged data file lost": merged_file_lost,
}
# Each damage is one finding, of this kind.
KIND = {
    "a data file truncated": "lost",
    "a data file deleted": "lost",
    "a manifest file truncated": "lost",
    "the newest commit of a table truncated": "log",
    "the newest manifest commit garbage": "log",
    "a checkpoint truncated": "checkpoint",
    "a checkpoint and _last_checkpoint truncated": "checkpoint",
    "a DELETE by another engine": "foreign",
    "the newest chapters commit deleted": "missing",
    "the newest chapters commit truncated to its first line": "commit",
    "the newest manifest commit deleted": "uncommitted",
    "a merged data file lost": "lost",
}
# Damages after which every snapshot is back, and those after which exactly one is lost.
NONE_LOST = {"a checkpoint truncated", "a checkpoint and _last_checkpoint truncated"}
ONE_LOST = {
    "the newest manifest commit garbage",
    "the newest manifest commit deleted",
    "the newest chapters commit deleted",
    "the newest chapters commit truncated to its first line",
}


def findings_in(report: str) -> list[str]:
    return [line for line in report.splitlines() if line.split(":")[0] in KIND.values()]


def named(snapshot_id: str, at: object, report: str) -> bool:
    """Whether the check's report names a snapshot: by id, or within a range it gives."""
    if snapshot_id in report:
        return True
    for line in findings_in(report):
        found = re.search(r"(\d+) snapshots from (\S+ \S+) UTC to (\S+ \S+) UTC", line)
        if found and found.group(2) <= f"{at:%Y-%m-%d %H:%M:%S}" <= found.group(3):
            return True
    return False


def assert_reads_as_taken_or_refuses(root: Path, taken: dict[str, dict], report: str) -> None:
    """Before repair a read raises, or every snapshot it shows reads as taken and every
    one it does not show is named by the check."""
    try:
        now = reading(root)
    except StoreError:
        return
    for snapshot_id, rows in now.items():
        for table, frame in rows.items():
            assert_frame_equal(frame, taken[snapshot_id][table], obj=f"{snapshot_id} {table}")
    for snapshot_id in set(taken) - set(now):
        assert named(snapshot_id, taken_at(taken, snapshot_id), report), snapshot_id


def taken_at(taken: dict[str, dict], snapshot_id: str) -> object:
    return taken[snapshot_id]["projects"]["snapshot_at"].iloc[0]


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_damage_is_named_once_and_no_snapshot_reads_other_than_taken(
    tmp_path, service, monkeypatch, capsys, damage
):
    root = tmp_path / "store"
    taken = ten_snapshots(root, service, monkeypatch, merged=damage == "a merged data file lost")
    DAMAGE[damage](root)

    assert main(["store", "check", "--store", str(root)]) == 1
    report = capsys.readouterr().out
    (finding,) = findings_in(report)  # one finding, not one per symptom
    assert finding.startswith(KIND[damage] + ": ") and "--repair" in finding
    assert_reads_as_taken_or_refuses(root, taken, report)

    assert main(["store", "check", "--store", str(root), "--repair"]) == 0
    repaired = capsys.readouterr().out
    assert len(findings_in(repaired)) == 1 and "repaired: " in repaired
    assert main(["store", "check", "--store", str(root)]) == 0
    capsys.readouterr()

    now = reading(root)
    for snapshot_id, rows in now.items():
        for table, frame in rows.items():
            assert_frame_equal(frame, taken[snapshot_id][table], obj=f"{snapshot_id} {table}")
    lost = set(taken) - set(now)
    for snapshot_id in lost:  # every snapshot gone is named
        assert named(snapshot_id, taken_at(taken, snapshot_id), report + repaired), snapshot_id
    if damage in NONE_LOST:
        assert not lost  # rebuilt from the JSON log: every snapshot back
    if damage in ONE_LOST:
        assert len(lost) == 1
    if damage == "a merged data file lost":
        # The first day and the snapshot built on it are lost; the later ones, c2
        # included, read as taken, and no credit is counted under no project.
        assert len(lost) == 4 and len(now) == 6
        spend = credit_spend(SnapshotStore(root), freq="1D")
        assert spend["project_id"].notna().all() and set(spend["project_id"]) == {"p1"}
    # A new snapshot after the repair commits and reads as usual.
    service.update("c1", credits=99)
    store = SnapshotStore(root, auto_compact=False)
    store.take(service, at=hours(100))
    assert store.latest("chapters").set_index("chapter_id").loc["c1", "credits_spent"] == 99


def test_a_damaged_newest_commit_is_refused_at_read_not_read_with_old_values(
    tmp_path, service, monkeypatch
):
    root = tmp_path / "store"
    ten_snapshots(root, service, monkeypatch)
    newest_commit(root, "chapters").unlink()
    store = SnapshotStore(root)
    with pytest.raises(DamagedStore, match=r"toolkit store check --store .* --repair") as caught:
        store.latest("chapters")
    newest = store.snapshots()["snapshot_id"].iloc[-1]
    assert newest in str(caught.value) and "missing" in str(caught.value)


def test_a_delete_by_another_engine_is_refused_at_read(tmp_path, service, monkeypatch):
    root = tmp_path / "store"
    ten_snapshots(root, service, monkeypatch)
    foreign_delete(root, "chapters")
    with pytest.raises(DamagedStore, match=r"\(DELETE\) was not made by the toolkit"):
        SnapshotStore(root).history("chapters")


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

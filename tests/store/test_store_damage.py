"""A damaged store is named, checked and repaired; a store path that is a file, a full
disk or a write that fails give a `StoreError` naming the path, never a traceback."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from datafakes import FakeService, hours, iso
from deltalake import DeltaTable
from pandas.testing import assert_frame_equal

from toolkit.analysis import credit_spend
from toolkit.cli import main
from toolkit.errors import DamagedStore, StoreError, ToolkitError
from toolkit.frames import schema
from toolkit.store import SnapshotStore
from toolkit.store import writing as store_module


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


def test_a_full_disk_names_the_store_and_leaves_no_file_behind(
    tmp_path, service, capfd, monkeypatch
):
    # As a notebook runs it: in the process, its descriptor 2 shown (a kernel shows it in
    # the cell). delta-rs' threads panic on the way, which Rust prints there, with a
    # backtrace under RUST_BACKTRACE: kept off, the one-line StoreError is all there is.
    monkeypatch.setenv("RUST_BACKTRACE", "1")
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
        capfd.readouterr()
        with pytest.raises(StoreError, match="disk is full") as caught:
            store.take(service, at=hours(1))
        assert str(disk / "store") in str(caught.value)
        assert "\n" not in str(caught.value)
        assert "panicked" not in capfd.readouterr().err
        (disk / "filler").unlink()
        after = sorted(p.relative_to(disk) for p in disk.rglob("*"))
        assert [p for p in after if p not in before] == []  # nothing left over
        assert len(SnapshotStore(disk / "store").snapshots()) == 1
    finally:
        subprocess.run(["umount", str(disk)], check=False)


# The damage matrix: each kind of damage on a small store of ten hourly snapshots, a
# full one every four. After `check` and `--repair`, every snapshot left reads exactly
# as it was taken, and every one gone is named lost by a finding. The store is written
# once per module and copied for each kind.


def ten_snapshots(root: Path, service: FakeService, *, merged: bool = False) -> dict[str, dict]:
    """The store, and what each snapshot read when taken: its rows per table. `merged`:
    six hours apart over three days, each day's files merged by the next day's take.
    Chapter c1 has an export from the fourth snapshot on, prepared again at the eighth;
    two webhook events are recorded."""
    prepared: list[dict[str, object]] = []
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(store_module, "_FULL_EVERY", 4)
        store = SnapshotStore(root, auto_compact=merged)
        for step in range(10):
            when = hours(step * 6 if merged else step)
            if step in (3, 7):
                prepared = [export(step, when)]
            service.update("c1", covered=step + 1, credits=step * 2, exports=prepared)
            if step == 5:
                service.add_chapter("c2", "p1", position=2, covered=0, credits=1)
            store.take(service, at=when)
            if step in (2, 7):
                store.record_events([event(step, when)])
    return reading(root)


def export(step: int, when: datetime) -> dict[str, object]:
    return {"languageCode": "fr", "format": "pdf", "filename": "c1-fr.pdf",
            "byteSize": 1000 + step, "pageCount": 4, "preparedAt": iso(when)}  # fmt: skip


def event(step: int, when: datetime) -> dict[str, object]:
    return {"webhook_id": f"msg_{step}", "type": "chapter.updated", "timestamp": when,
            "received_at": when, "data": {"chapterId": "c1", "projectId": "p1"}}  # fmt: skip


@pytest.fixture(scope="module")
def stores(tmp_path_factory) -> Callable[[bool], tuple[Path, dict[str, dict]]]:
    """The module's two small stores (plain, merged), each written once, when first
    asked for, with what its snapshots read when taken."""
    written: dict[bool, tuple[Path, dict[str, dict]]] = {}

    def store(merged: bool) -> tuple[Path, dict[str, dict]]:
        if merged not in written:
            root = tmp_path_factory.mktemp("merged" if merged else "plain") / "store"
            service = FakeService()
            service.add_project("p1", languages=("en", "fr"))
            service.add_chapter("c1", "p1", position=1, covered=1, credits=2)
            written[merged] = root, ten_snapshots(root, service, merged=merged)
        return written[merged]

    return store


def copy_of(stores, tmp_path: Path, *, merged: bool = False) -> tuple[Path, dict[str, dict]]:
    """A copy of a module store to damage, and what its snapshots read when taken."""
    original, taken = stores(merged)
    root = tmp_path / "store"
    shutil.copytree(original, root)
    return root, taken


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


def checkpoint_gone(root: Path, table: str) -> None:
    """`_last_checkpoint` names a checkpoint that is not there (deleted by hand)."""
    DeltaTable(str(root / table)).create_checkpoint()
    (checkpoint,) = (root / table / "_delta_log").glob("*.checkpoint.parquet")
    checkpoint.unlink()


def pointer_garbled(root: Path, table: str) -> None:
    DeltaTable(str(root / table)).create_checkpoint()
    (root / table / "_delta_log" / "_last_checkpoint").write_bytes(b'{"version":\x00\x17')


def pages_flipped(path: Path, column: str) -> None:
    """Bytes in the middle of a column's pages inverted, the file's size and footer
    intact: what a bad sector does."""
    start, size = column_chunk(path, column)
    middle = start + size // 2
    data = bytearray(path.read_bytes())
    data[middle : middle + 4] = bytes(b ^ 0xFF for b in data[middle : middle + 4])
    path.write_bytes(bytes(data))


def column_chunk(path: Path, column: str) -> tuple[int, int]:
    """Where a column's pages start in a one-row-group file, and their size."""
    group = pq.read_metadata(path).row_group(0)
    chunk = next(
        chunk
        for chunk in (group.column(k) for k in range(group.num_columns))
        if chunk.path_in_schema == column
    )
    return chunk.dictionary_page_offset or chunk.data_page_offset, chunk.total_compressed_size


def swapped(root: Path, table: str, snapshot: int) -> None:
    """A data file replaced by another valid Parquet file of the table (a sibling)."""
    shutil.copyfile(data_file_of(root, table, snapshot - 1), data_file_of(root, table, snapshot))


def commit_of(root: Path, table: str, snapshot: int) -> Path:
    """The commit a snapshot's rows of `table` were committed as (version 0 creates)."""
    return sorted((root / table / "_delta_log").glob("*.json"))[snapshot]


def stray_files(root: Path) -> None:
    """Files a person or a desktop leaves in a table's folder: not damage."""
    (root / "chapters" / "notes.txt").write_text("ask Ana about c2")
    (root / "chapters" / ".DS_Store").write_bytes(b"\0\0\0\1Bud1")
    os.utime(root / "chapters" / "notes.txt", (0, 0))


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
    "_last_checkpoint naming a missing checkpoint": lambda root: checkpoint_gone(root, "chapters"),
    "_last_checkpoint garbled": lambda root: pointer_garbled(root, "projects"),
    "the newest languages commit empty": lambda root: newest_commit(root, "languages").write_bytes(
        b""
    ),
    "a data file's pages flipped": lambda root: pages_flipped(
        data_file_of(root, "chapters", 5), "credits_spent"
    ),
    "a data file swapped with a sibling": lambda root: swapped(root, "languages", 6),
    "a table's whole _delta_log deleted": lambda root: shutil.rmtree(
        root / "languages" / "_delta_log"
    ),
    "the newest exports commit deleted": lambda root: newest_commit(root, "exports").unlink(),
    "a manifest data file deleted": lambda root: data_file_of(root, "manifest", 3).unlink(),
    "an older manifest commit truncated": lambda root: truncate(commit_of(root, "manifest", 4)),
    "stray files in a table folder": stray_files,
    "a data file this user may not read": lambda root: data_file_of(root, "chapters", 3).chmod(0),
}
# Each damage is one finding, of this kind.
KIND: dict[str, str | None] = {
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
    "_last_checkpoint naming a missing checkpoint": "checkpoint",
    "_last_checkpoint garbled": "checkpoint",
    "the newest languages commit empty": "log",
    "a data file's pages flipped": "lost",
    "a data file swapped with a sibling": "lost",
    "a table's whole _delta_log deleted": "log",
    "the newest exports commit deleted": "missing",
    "a manifest data file deleted": "lost",
    "an older manifest commit truncated": "log",
    "stray files in a table folder": None,
    "a data file this user may not read": "unreadable",
}
# Damages after which every snapshot is back, and those after which exactly one is lost.
NONE_LOST = {
    "a checkpoint truncated",
    "a checkpoint and _last_checkpoint truncated",
    "_last_checkpoint naming a missing checkpoint",
    "_last_checkpoint garbled",
}
# Damages repair cannot undo: it says what to do instead (restore from a backup).
LEFT = {"a table's whole _delta_log deleted", "a data file this user may not read"}
ONE_LOST = {
    "the newest manifest commit garbage",
    "the newest manifest commit deleted",
    "the newest chapters commit deleted",
    "the newest chapters commit truncated to its first line",
    "the newest languages commit empty",
}


FINDINGS = {"checkpoint", "log", "lost", "unreadable", "foreign", "missing", "commit", "unbased",
            "uncommitted"}  # fmt: skip


def findings_in(report: str) -> list[str]:
    return [line for line in report.splitlines() if line.split(":")[0] in FINDINGS]


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
    assert_as_taken(now, taken)
    for snapshot_id in set(taken) - set(now):
        assert named(snapshot_id, taken_at(taken, snapshot_id), report), snapshot_id


def assert_as_taken(now: dict[str, dict], taken: dict[str, dict]) -> None:
    """Every snapshot read has the tables it had when taken, with the same rows."""
    for snapshot_id, rows in now.items():
        assert set(rows) == set(taken[snapshot_id]), snapshot_id  # no table gone empty
        for table, frame in rows.items():
            assert_frame_equal(frame, taken[snapshot_id][table], obj=f"{snapshot_id} {table}")


def taken_at(taken: dict[str, dict], snapshot_id: str) -> object:
    return taken[snapshot_id]["projects"]["snapshot_at"].iloc[0]


@pytest.mark.parametrize("damage", list(DAMAGE))
@pytest.mark.slow
def test_damage_is_named_once_and_no_snapshot_reads_other_than_taken(
    tmp_path, stores, service, capsys, damage
):
    root, taken = copy_of(stores, tmp_path, merged=damage == "a merged data file lost")
    if damage == "a data file this user may not read" and os.geteuid() == 0:
        pytest.skip("root reads a file whatever its permissions")
    DAMAGE[damage](root)
    kind = KIND[damage]

    assert main(["store", "check", "--store", str(root)]) == (0 if kind is None else 1)
    report = capsys.readouterr().out
    if kind is None:  # not damage: no finding, every snapshot reads as taken
        assert findings_in(report) == [] and "every snapshot reads as it was taken" in report
    else:
        (finding,) = findings_in(report)  # one finding, not one per symptom
        assert finding.startswith(kind + ": ") and "--repair" in finding
    assert_reads_as_taken_or_refuses(root, taken, report)
    if damage in LEFT:  # repair says so and does nothing; reads refuse until then
        assert main(["store", "check", "--store", str(root), "--repair"]) == 1
        assert "--repair cannot " in capsys.readouterr().out
        with pytest.raises(DamagedStore, match="toolkit store check"):
            reading(root)
        return

    assert main(["store", "check", "--store", str(root), "--repair"]) == 0
    repaired = capsys.readouterr().out
    assert len(findings_in(repaired)) == (kind is not None)
    assert ("repaired: " in repaired) == (kind is not None)
    assert main(["store", "check", "--store", str(root)]) == 0
    capsys.readouterr()

    now = reading(root)
    assert_as_taken(now, taken)
    lost = set(taken) - set(now)
    for snapshot_id in lost:  # every snapshot gone is named
        assert named(snapshot_id, taken_at(taken, snapshot_id), report + repaired), snapshot_id
    if damage in NONE_LOST or kind is None:
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


def test_a_damaged_newest_commit_is_refused_at_read_not_read_with_old_values(tmp_path, stores):
    root, _ = copy_of(stores, tmp_path)
    newest_commit(root, "chapters").unlink()
    store = SnapshotStore(root)
    with pytest.raises(DamagedStore, match=r"toolkit store check --store .* --repair") as caught:
        store.latest("chapters")
    newest = store.snapshots()["snapshot_id"].iloc[-1]
    assert newest in str(caught.value) and "missing" in str(caught.value)


def test_a_delete_by_another_engine_is_refused_at_read(tmp_path, stores):
    root, _ = copy_of(stores, tmp_path)
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


def test_a_damaged_events_file_is_refused_naming_the_store_and_the_check(tmp_path, stores):
    root, _ = copy_of(stores, tmp_path)
    (first, *_) = sorted((root / "events").glob("*.parquet"))
    truncate(first)
    with pytest.raises(DamagedStore) as caught:
        SnapshotStore(root).history("events")
    message = str(caught.value)
    assert str(root) in message and f"toolkit store check --store {root}" in message
    assert "lost: " in message and "(events)" in message  # the check's finding, named


def test_a_flipped_value_that_still_decodes_is_found_by_the_check(tmp_path, stores, capsys):
    """Without page checksums (delta-rs writes none) a flipped byte can decode to another
    value; a read cannot tell, but the check compares each file with the statistics its
    log keeps, and repair removes it with the snapshots that read it."""
    root, taken = copy_of(stores, tmp_path)
    path = data_file_of(root, "chapters", 1)  # one row: its credits are min and max
    original = path.read_bytes()
    start, size = column_chunk(path, "credits_spent")
    for offset in range(start, start + size - 4):
        data = bytearray(original)
        data[offset : offset + 4] = bytes(b ^ 0xFF for b in data[offset : offset + 4])
        path.write_bytes(bytes(data))
        with contextlib.suppress(Exception):
            if pq.read_table(path).column("credits_spent").to_pylist() != [2]:
                break  # decodes, to another value
    else:
        pytest.fail("no flip decoded to another value")

    assert main(["store", "check", "--store", str(root)]) == 1
    (finding,) = findings_in(capsys.readouterr().out)
    assert finding.startswith("lost: ") and "its credits_spent values are not" in finding
    assert main(["store", "check", "--store", str(root), "--repair"]) == 0
    capsys.readouterr()
    now = reading(root)
    assert_as_taken(now, taken)
    assert len(set(taken) - set(now)) == 3  # it, and the two built on it

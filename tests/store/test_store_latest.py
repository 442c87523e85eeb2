"""The state a write leaves, kept for the next process's write (`toolkit.store.latest`):
a fresh store object writes the same rows as the object that wrote the snapshot before,
and reads the latest snapshot's rows, without working them out from the change log, and
never uses rows kept for another state, or rows that do not read whole."""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pytest
from datafakes import FakeService, hours
from deltalake import DeltaTable
from pandas.testing import assert_frame_equal

import toolkit as tk
from toolkit.cli import main
from toolkit.errors import DamagedStore
from toolkit.frames import schema
from toolkit.store import SnapshotStore, latest
from toolkit.store.engine import StoreEngine


@pytest.fixture(autouse=True)
def kept_from_the_first(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every write keeps its rows (a store keeps them from its 24th snapshot on)."""
    monkeypatch.setattr(latest, "KEEP_FROM_SNAPSHOTS", 1)


def _steps(service: FakeService) -> list[tk.Workspace]:
    """Four pulls with a change between each: rows changed, added and removed."""
    pulls = [tk.pull(service, details="all")]
    service.update("c1", covered=7, untranslated=3, credits=11)
    pulls.append(tk.pull(service, details="all"))
    service.add_chapter("c3", "p2", position=2, covered=1, untranslated=5, languages=("en",))
    pulls.append(tk.pull(service, details="all"))
    service.update("c2", covered=3, untranslated=0, credits=4)
    service.update("c3", covered=6, untranslated=0, credits=6)
    pulls.append(tk.pull(service, details="all"))
    return pulls


def _history(root: Path) -> dict[str, pd.DataFrame]:
    store = SnapshotStore(str(root))
    return {name: store.history(name) for name in schema.SNAPSHOT_TABLES}


def _assert_same_rows(root: Path, reference: Path) -> None:
    """Every snapshot table holds the same rows in both stores (their snapshot ids
    apart: each write names its own)."""
    ours, theirs = _history(root), _history(reference)
    for name in schema.SNAPSHOT_TABLES:
        assert_frame_equal(
            ours[name].drop(columns="snapshot_id"),
            theirs[name].drop(columns="snapshot_id"),
            obj=name,
        )


def _no_log_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    def refused(*args: object, **kwargs: object) -> None:
        raise AssertionError("the base was worked out from the change log")

    monkeypatch.setattr(StoreEngine, "with_logs", refused)


def test_a_fresh_store_object_writes_from_the_kept_state_the_same_rows(
    tmp_path: Path, service: FakeService, monkeypatch: pytest.MonkeyPatch
) -> None:
    pulls = _steps(service)
    one = SnapshotStore(str(tmp_path / "one"))  # one object: the base from memory
    for k, ws in enumerate(pulls):
        one.write(ws, at=hours(k))
    SnapshotStore(str(tmp_path / "fresh")).write(pulls[0], at=hours(0))
    with monkeypatch.context() as patched:
        _no_log_reads(patched)
        for k, ws in enumerate(pulls[1:], start=1):  # each a new process's store object
            SnapshotStore(str(tmp_path / "fresh")).write(ws, at=hours(k))
    _assert_same_rows(tmp_path / "fresh", tmp_path / "one")
    # Only the newest state is kept.
    assert len(list((tmp_path / "fresh" / latest.FOLDER).iterdir())) == 1


def test_rows_kept_for_another_state_are_not_used(
    tmp_path: Path, service: FakeService, monkeypatch: pytest.MonkeyPatch
) -> None:
    pulls = _steps(service)
    root = tmp_path / "store"
    SnapshotStore(str(root)).write(pulls[0], at=hours(0))
    # A commit the write did not make (another engine's delete of a chapter's rows):
    # the kept rows name the versions before it, so the base is read from the log.
    DeltaTable(str(root / "chapters")).delete("chapter_id = 'c2'")
    with monkeypatch.context() as patched:
        _no_log_reads(patched)
        with pytest.raises(AssertionError, match="worked out from the change log"):
            SnapshotStore(str(root)).write(pulls[1], at=hours(1))


def test_a_fresh_store_object_reads_the_latest_rows_from_the_kept_state(
    tmp_path: Path, service: FakeService, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The watch's checks, the Dashboard and a report read the latest snapshot's rows in
    # a process that did not write it: the kept rows, the same as the log's.
    pulls = _steps(service)
    root, logged = tmp_path / "store", tmp_path / "logged"
    for k, ws in enumerate(pulls):
        SnapshotStore(str(root)).write(ws, at=hours(k))
    shutil.copytree(root, logged)
    shutil.rmtree(logged / latest.FOLDER)  # it reads its log
    with monkeypatch.context() as patched:
        _no_log_reads(patched)
        kept = {name: SnapshotStore(str(root)).latest(name) for name in schema.SNAPSHOT_TABLES}
    for name, frame in kept.items():
        assert_frame_equal(frame, SnapshotStore(str(logged)).latest(name), obj=name)
    # A data file gone, the tables' versions as they were: the read is refused as a
    # read of the log is, not answered from the kept rows.
    for path in (root / "chapters").glob("*.parquet"):
        path.unlink()
    with pytest.raises(DamagedStore):
        SnapshotStore(str(root)).latest("chapters")


def test_the_kept_rows_are_still_read_after_a_compact_that_changed_no_row(
    tmp_path: Path, service: FakeService, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `store.compact()` after the last write (a day's files merged, old ones vacuumed)
    # moves every table's version but changes no row: the next write and the readers
    # of the latest snapshot still read the rows kept, and they are the log's. A commit
    # that may change rows still makes them another state's (the test above).
    pulls = _steps(service)
    root, logged = tmp_path / "store", tmp_path / "logged"
    for k, ws in enumerate(pulls[:3]):
        SnapshotStore(str(root)).write(ws, at=hours(24 * k))  # a day apart: days to merge
    merged = SnapshotStore(str(root), retention=pd.Timedelta(0)).compact()
    assert sum(merged.values()), "the premise: compact merged files"
    shutil.copytree(root, logged)
    shutil.rmtree(logged / latest.FOLDER)  # it reads its log
    with monkeypatch.context() as patched:
        _no_log_reads(patched)
        kept = {name: SnapshotStore(str(root)).latest(name) for name in schema.SNAPSHOT_TABLES}
        SnapshotStore(str(root)).write(pulls[3], at=hours(72))
    for name, frame in kept.items():
        assert_frame_equal(frame, SnapshotStore(str(logged)).latest(name), obj=name)
    SnapshotStore(str(logged)).write(pulls[3], at=hours(72))
    _assert_same_rows(root, logged)
    assert main(["store", "check", "--store", str(root)]) == 0


@pytest.mark.parametrize("damage", ["garbled", "record gone", "a table gone"])
def test_kept_rows_that_do_not_read_whole_are_worked_out_again(
    tmp_path: Path, service: FakeService, damage: str
) -> None:
    pulls = _steps(service)
    root, reference = tmp_path / "store", tmp_path / "reference"
    for where in (root, reference):
        SnapshotStore(str(where)).write(pulls[0], at=hours(0))
    (state,) = (root / latest.FOLDER).iterdir()
    if damage == "garbled":
        path = state / "chapters.arrow"
        data = bytearray(path.read_bytes())
        data[len(data) // 2] ^= 0xFF
        path.write_bytes(bytes(data))
    elif damage == "record gone":
        (state / "kept.json").unlink()
    else:
        (state / "languages.arrow").unlink()
    shutil.rmtree(reference / latest.FOLDER)  # the reference reads its log
    for where in (root, reference):
        SnapshotStore(str(where)).write(pulls[1], at=hours(1))
    _assert_same_rows(root, reference)


def test_a_store_that_cannot_keep_its_state_still_writes(
    tmp_path: Path, service: FakeService
) -> None:
    pulls = _steps(service)
    root = tmp_path / "store"
    (root / latest.FOLDER).parent.mkdir()
    (root / latest.FOLDER).write_text("a file where the folder would be")
    for k, ws in enumerate(pulls):
        SnapshotStore(str(root)).write(ws, at=hours(k))
    assert len(SnapshotStore(str(root)).snapshots()) == len(pulls)


def _rewrite_kept(state: Path, name: str, change: Callable[[pa.Table], pa.Table]) -> None:
    """A kept table replaced by `change` of it, its digest made to match (as a faulty
    toolkit would have written it)."""
    path = state / f"{name}.arrow"
    with pa.OSFile(str(path)) as source:
        table = pa.ipc.open_file(source).read_all()
    table = change(table)
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)
    record = json.loads((state / "kept.json").read_text())
    record["digests"][name] = hashlib.sha256(path.read_bytes()).hexdigest()
    (state / "kept.json").write_text(json.dumps(record))


def test_store_check_names_kept_rows_that_differ_and_repair_deletes_them(
    tmp_path: Path, service: FakeService, capsys: pytest.CaptureFixture[str]
) -> None:
    pulls = _steps(service)
    root = tmp_path / "store"
    for k, ws in enumerate(pulls[:2]):
        SnapshotStore(str(root)).write(ws, at=hours(k))
    assert main(["store", "check", "--store", str(root)]) == 0
    assert "every snapshot reads as it was taken" in capsys.readouterr().out

    (state,) = (root / latest.FOLDER).iterdir()
    _rewrite_kept(state, "chapters", lambda table: table.slice(1))  # a chapter missing
    assert main(["store", "check", "--store", str(root)]) == 1
    report = capsys.readouterr().out
    assert "latest: " in report and "rows kept for the next snapshot's write differ" in report
    assert main(["store", "check", "--store", str(root), "--repair"]) == 0
    assert not (root / latest.FOLDER).exists()
    # The next write works its base out from the snapshots: the rows of one object's.
    SnapshotStore(str(root)).write(pulls[2], at=hours(2))
    one = SnapshotStore(str(tmp_path / "one"))
    for k, ws in enumerate(pulls[:3]):
        one.write(ws, at=hours(k))
    _assert_same_rows(root, tmp_path / "one")


def test_a_short_history_keeps_nothing_until_its_first_day_is_written(
    tmp_path: Path, service: FakeService, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(latest, "KEEP_FROM_SNAPSHOTS", 24)
    root, store = tmp_path / "store", SnapshotStore(str(tmp_path / "store"))
    for k in range(23):
        service.update("c1", covered=k % 5)
        store.write(tk.pull(service, details="all"), at=hours(k))
    assert not (root / latest.FOLDER).exists()
    store.write(tk.pull(service, details="all"), at=hours(23))
    assert len(list((root / latest.FOLDER).iterdir())) == 1

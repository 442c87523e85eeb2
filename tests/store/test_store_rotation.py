"""The watch's bounded store check (`toolkit.store.rotation`): a file written over is
named at the next check, one damaged in place with its size and time kept within the
rotation's cycles, and a damaged file at every check after until it is repaired."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pyarrow as pa
import pytest
from datafakes import FakeService, hours
from deltalake import DeltaTable

from toolkit.store import SnapshotStore, check_report
from toolkit.store.maintenance import layout
from toolkit.store.rotation import FILE, CheckRotation


@pytest.fixture
def root(tmp_path: Path) -> Path:
    service = FakeService()
    service.add_project("p1", languages=("en", "fr"))
    service.add_chapter("c1", "p1", position=1, covered=1, credits=2)
    store = SnapshotStore(tmp_path / "store", auto_compact=False)
    for step in range(3):
        service.update("c1", covered=step + 1, credits=step * 2)
        store.take(service, at=hours(step))
    return tmp_path / "store"


def data_files(root: Path) -> list[Path]:
    return [
        root / name / action["path"]
        for name in layout()
        if (root / name / "_delta_log").is_dir()
        for action in pa.table(
            DeltaTable(str(root / name)).get_add_actions(flatten=True)
        ).to_pylist()
    ]


def zeroed(path: Path, *, keep_time: bool) -> None:
    """The file's pages overwritten with zeros, its size and footer kept: it no longer
    reads. With `keep_time`, its modification time is put back (a disk's corruption)."""
    before = path.stat()
    data = bytearray(path.read_bytes())
    footer = int.from_bytes(data[-8:-4], "little")
    data[4 : len(data) - 8 - footer] = bytes(len(data) - 12 - footer)
    path.write_bytes(bytes(data))
    if keep_time:
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))


def bounded(root: Path, cycles: int) -> list[str]:
    report = check_report(str(root), rotation=CheckRotation(str(root), cycles=cycles))
    return [f"{f.kind}: {f.path}" for f in report.findings]


def test_a_file_written_over_is_named_at_the_next_check_and_every_one_after(root):
    assert bounded(root, 1000) == []  # reads every file whole once: none known yet
    assert len(json.loads((root / FILE).read_text())) == len(data_files(root))
    damaged = next(path for path in data_files(root) if path.parent.name == "chapters")
    zeroed(damaged, keep_time=False)
    for _ in range(3):  # never recorded as sound: named until repaired
        assert bounded(root, 1000) == [f"lost: {damaged}"]
    assert [f"{f.kind}: {f.path}" for f in check_report(str(root)).findings] == [
        f"lost: {damaged}"
    ]  # `toolkit store check`, whole, says the same


def test_damage_that_keeps_the_size_and_time_is_named_within_the_cycles(root):
    files = data_files(root)
    cycles = len(files)  # one file read whole a check
    assert bounded(root, cycles) == []
    damaged = next(path for path in files if path.parent.name == "chapters")
    zeroed(damaged, keep_time=True)  # not the manifest's: its reads name that at once
    found = [bounded(root, cycles) for _ in range(cycles)]
    named = [n for n, findings in enumerate(found) if findings]
    assert named and all(found[n] == [f"lost: {damaged}"] for n in named)
    assert named == list(range(named[0], cycles))  # from its turn on, every check
    assert check_report(str(root)).findings  # the whole check names it at once


def test_a_record_that_does_not_read_makes_a_whole_check(root):
    (root / FILE).write_text("{not json")
    assert bounded(root, 1000) == []
    assert len(json.loads((root / FILE).read_text())) == len(data_files(root))

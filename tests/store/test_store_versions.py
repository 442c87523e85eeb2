"""The store's layout version: recorded on the manifest, refused in one line when newer
than this toolkit reads, and reached from an earlier layout one named step at a time.
(The earlier layouts' stores themselves are written and migrated, figures compared, in
test_store_migrate.py and test_snapshot_store.py; here, what is recorded and refused.)"""

from __future__ import annotations

import pytest
from datafakes import FakeService, hours
from deltalake import DeltaTable

from toolkit.cli import main
from toolkit.errors import StoreError
from toolkit.store import SnapshotStore, versions
from toolkit.store.tables import Tables


@pytest.fixture
def service() -> FakeService:
    fake = FakeService()
    fake.add_project("p1", languages=("en", "fr"))
    fake.add_chapter("c1", "p1", position=1, covered=1, credits=2)
    return fake


def test_a_new_store_records_its_layout_with_its_first_snapshot(tmp_path, service):
    SnapshotStore(tmp_path).take(service, at=hours(0))
    manifest = DeltaTable(str(tmp_path / "manifest"))
    assert manifest.metadata().configuration[versions._LAYOUT_KEY] == str(versions.LAYOUT)
    SnapshotStore(tmp_path).take(service, at=hours(1))  # recorded once, not per take
    assert DeltaTable(str(tmp_path / "manifest")).version() == manifest.version() + 1
    assert SnapshotStore(tmp_path).history("chapters")["snapshot_at"].nunique() == 2


def test_a_store_of_a_newer_layout_is_refused_in_one_line_by_reads_and_writes(
    tmp_path, service, capsys
):
    SnapshotStore(tmp_path).take(service, at=hours(0))
    versions.record_layout(Tables(str(tmp_path)), versions.LAYOUT + 1)
    newer = f"layout {versions.LAYOUT + 1}, written by a newer toolkit"
    for read in (
        lambda store: store.snapshots(),
        lambda store: store.history("chapters"),
        lambda store: store.take(service, at=hours(1)),
        lambda store: store.upgrade(),
    ):
        with pytest.raises(StoreError, match=newer):
            read(SnapshotStore(tmp_path))
    assert main(["report", "--store", str(tmp_path), "--json", "--out", str(tmp_path / "o")]) != 0
    err = capsys.readouterr().err
    assert newer in err and err.count("\n") == 1 and "upgrade the toolkit" in err
    assert len(DeltaTable(str(tmp_path / "manifest")).history()) >= 2  # nothing written


def test_a_store_from_before_the_version_is_placed_by_the_detectors_and_recorded(
    tmp_path, service, monkeypatch
):
    with monkeypatch.context() as patched:
        patched.setattr(versions, "record_layout", lambda tables, version: None)
        SnapshotStore(tmp_path).take(service, at=hours(0))
    tables = Tables(str(tmp_path))
    assert versions.recorded(tables) is None
    assert SnapshotStore(tmp_path).upgrade() == []  # layout 3 already: no step to run
    assert versions.recorded(Tables(str(tmp_path))) == versions.LAYOUT


def test_each_step_runs_once_in_order_and_records_the_version_it_reaches(tmp_path, service):
    SnapshotStore(tmp_path).take(service, at=hours(0))
    tables = Tables(str(tmp_path))
    versions.record_layout(tables, 1)
    ran: list[tuple[int, int | None]] = []

    def step(start: int):
        def run(tables: Tables) -> list[str]:
            ran.append((start, versions.recorded(tables)))
            return [f"did {start}"]

        return versions.Step(start, f"layout {start} to {start + 1}", run)

    done = versions.upgrade_in_steps(tables, str(tmp_path), [step(1), step(2)], lambda t: True)
    assert ran == [(1, 1), (2, 2)]
    assert done == ["layout 1 to 2: did 1", "layout 2 to 3: did 2"]
    assert versions.recorded(Tables(str(tmp_path))) == 3
    assert versions.upgrade_in_steps(Tables(str(tmp_path)), str(tmp_path), [step(1), step(2)],
                            lambda t: True) == []  # fmt: skip

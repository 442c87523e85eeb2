"""Another engine's commit to a store table (a DELETE, an UPDATE, an OPTIMIZE) is undone,
not paid for with history: `check` names it and prints a restore that works when
followed; `check --repair` restores the table to the toolkit's last commit, keeps every
snapshot, and records what it undid; a RESTORE made by hand is taken as the undo it is.
One case per kind and table, each on a copy of one store written once."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from datafakes import FakeService, hours
from deltalake import DeltaTable

from toolkit.cli import main
from toolkit.errors import DamagedStore
from toolkit.frames import schema
from toolkit.store import SnapshotStore
from toolkit.store.check import check
from toolkit.store.ledger import SETTLED_KEY, Ledger
from toolkit.store.undo import _UNDID_KEY

TABLES = (*schema.SNAPSHOT_TABLES, "manifest")
EXPORT = {
    "languageCode": "en",
    "format": "cbz",
    "filename": "c1-en.cbz",
    "byteSize": 10,
    "pageCount": 4,
    "preparedAt": "2026-03-02T09:00:00.000Z",
}


KINDS: dict[str, Callable[[DeltaTable, str], None]] = {
    "DELETE": lambda table, ident: table.delete(f"{ident} IS NOT NULL"),
    "UPDATE": lambda table, ident: table.update({ident: f"concat({ident}, '-x')"}),
    "OPTIMIZE": lambda table, ident: table.optimize.compact(),
}
IDENT = {name: "snapshot_id" for name in TABLES}


@pytest.fixture(scope="module")
def written(tmp_path_factory) -> tuple[Path, dict[str, int]]:
    """A store of six snapshots, each table in several files, and what each table's
    history holds."""
    root = tmp_path_factory.mktemp("foreign") / "store"
    service = FakeService()
    service.add_project("p1", languages=("en", "fr"))
    service.add_chapter("c1", "p1", position=1, covered=1, credits=2, exports=[EXPORT])
    service.add_chapter("c2", "p1", position=2, covered=1, credits=2)
    store = SnapshotStore(root, auto_compact=False)
    for step in range(6):
        export = dict(EXPORT, byteSize=10 + step)  # a change each time: a file each time
        service.update("c1", covered=step + 1, credits=step + 2, exports=[export])
        service.update("c2", covered=step + 2)
        service.projects["p1"]["name"] = f"Project {step}"
        service.projects["p1"]["translationGroupId"] = f"g{step}"
        store.take(service, at=hours(step))
    return root, reading(root)


def reading(root: Path) -> dict[str, int]:
    store = SnapshotStore(root)
    read = {name: len(store.history(name)) for name in schema.SNAPSHOT_TABLES}
    read["snapshots"] = len(store.snapshots())
    return read


def damaged(written, tmp_path: Path, table: str, kind: str) -> Path:
    original, _ = written
    root = tmp_path / "store"
    shutil.copytree(original, root)
    before = DeltaTable(str(root / table)).version()
    KINDS[kind](DeltaTable(str(root / table)), IDENT[table])
    assert DeltaTable(str(root / table)).version() > before, "the foreign commit was made"
    return root


CASES = [(table, kind) for table in TABLES for kind in KINDS]


@pytest.mark.parametrize(("table", "kind"), CASES, ids=[f"{t}-{k}" for t, k in CASES])
@pytest.mark.slow
def test_a_foreign_commit_is_undone_by_repair_keeping_every_snapshot(
    written, tmp_path, table, kind
):
    root = damaged(written, tmp_path, table, kind)
    found = check(str(root))
    assert len(found) == 1, [str(f) for f in found]
    (finding,) = found
    assert finding.kind == "foreign" and finding.table == table and f"({kind})" in finding.what
    with pytest.raises(DamagedStore, match="undoes another engine's commits"):
        SnapshotStore(root).history(table if table != "manifest" else "chapters")
    if table == "manifest":
        with pytest.raises(DamagedStore, match=f"({kind})"):
            SnapshotStore(root).snapshots()  # the list of snapshots is not read short

    repaired = check(str(root), repair=True)
    assert [f.kind for f in repaired] == ["foreign"]
    assert repaired[0].done is not None and "restored to version" in repaired[0].done
    assert check(str(root)) == []
    assert reading(root) == written[1], "every snapshot kept, reading as taken"
    # What was undone is recorded, on the restore and in the manifest.
    infos = [
        json.loads(path.read_text().splitlines()[0])["commitInfo"]
        for path in sorted((root / table / "_delta_log").glob("*.json"))
    ]
    (restore,) = [info for info in infos if info["operation"] == "RESTORE"]
    assert json.loads(restore[_UNDID_KEY])
    settled = [
        json.loads(line)["commitInfo"].get(SETTLED_KEY)
        for path in (root / "manifest" / "_delta_log").glob("*.json")
        for line in path.read_text().splitlines()[:1]
    ]
    assert any(s and f"{table}:" in s for s in settled)


@pytest.mark.parametrize(("table", "kind"), CASES, ids=[f"{t}-{k}" for t, k in CASES])
def test_the_printed_advice_works_when_followed(written, tmp_path, capsys, table, kind):
    root = damaged(written, tmp_path, table, kind)
    assert main(["store", "check", "--store", str(root)]) != 0
    out = capsys.readouterr().out
    (advice,) = re.findall(r"`(DeltaTable\('[^']+'\)\.restore\(\d+\))`", out)
    eval(advice, {"DeltaTable": DeltaTable})  # what the user types, as printed
    assert main(["store", "check", "--store", str(root)]) == 0
    assert reading(root) == written[1]


def test_a_restore_that_drops_a_snapshot_is_still_foreign(written, tmp_path):
    original, _ = written
    root = tmp_path / "store"
    shutil.copytree(original, root)
    chapters = DeltaTable(str(root / "chapters"))
    chapters.restore(chapters.version() - 1)  # back past the toolkit's newest commit
    findings = check(str(root))
    assert findings and all(f.kind in ("foreign", "commit", "missing") for f in findings)


@pytest.fixture
def writer(written, tmp_path) -> tuple[SnapshotStore, FakeService]:
    """A copy of the store, read once by the store object that writes next, and a
    service with a change to take."""
    original, _ = written
    root = tmp_path / "store"
    shutil.copytree(original, root)
    store = SnapshotStore(root, auto_compact=False)
    store.history("chapters")  # read: its logs verified at these versions
    service = FakeService()
    service.add_project("p1", languages=("en", "fr"))
    service.add_chapter("c1", "p1", position=1, covered=3, credits=9)
    return store, service


def test_a_store_object_reads_what_it_wrote_without_reading_its_logs_again(writer, monkeypatch):
    store, service = writer
    store.take(service, at=hours(7))
    asked = []
    monkeypatch.setattr(Ledger, "verify", lambda self, *a: asked.append(a) or [])
    mine = store.history("chapters")
    assert asked == [], "its own commits since its last read are trusted as written"
    monkeypatch.undo()
    fresh = SnapshotStore(store.root).history("chapters")
    assert mine.equals(fresh) and len(mine) == len(fresh)


@pytest.mark.parametrize("between", [False, True], ids=["after", "between-two-writes"])
def test_another_engines_commit_after_a_write_is_refused_by_the_same_store_object(writer, between):
    """The store object's own commits are trusted; another engine's among them is not,
    whether it landed after its write or between two of them."""
    store, service = writer
    store.take(service, at=hours(7))
    KINDS["DELETE"](DeltaTable(str(Path(store.root) / "chapters")), "snapshot_id")
    if between:
        service.update("c1", covered=4)
        store.take(service, at=hours(8))  # its base is the rows it wrote: no read
    with pytest.raises(DamagedStore, match="undoes another engine's commits"):
        store.history("chapters")

"""The state a snapshot's write leaves, kept on disk for the next write (issue 43).

A write diffs the workspace against its base snapshot's rows. A store object that wrote
the base keeps them in memory; any other (the next `toolkit pull` of a cron job, a new
notebook) worked them out from the whole change log: 1.5-6 s at 100,000 chapters x a
quarter, growing with the history, where the rest of the write takes a fraction of a
second. So each write keeps the rows it wrote in `<root>/_latest/<key>/`, one Arrow file
per snapshot table, and a write whose base is that snapshot reads them instead. So does
a reader of that snapshot's rows (`store.latest`, `store.as_of` at it: the watch's
checks, the Dashboard, a report), table by table (`load_table`): 0.1 s where the log's
state took 0.8 s at 100,000 chapters x a quarter.

The key is the snapshot and every snapshot table's Delta version at the write's end (the
manifest's included). A later commit that may change rows (another snapshot, an undo, a
repair, another engine's) makes the folder another state's, and the rows are worked out
from the log as before; one that changes none (a merge of files, a vacuum: what
`store.compact()` does after a write) leaves it the store's (`StoreEngine`'s
`kept_state`). The year's growth store is left so by its last `compact()`: the rows
were worked out from the log there, 0.55 s more of a weekly page at 100,000 chapters.
Each file's SHA-256 is kept beside it and checked on reading; a folder that
is missing, partial, garbled or for another state is never an error, only not used.
`toolkit store check` compares the rows kept for the present state with the log's
(`latest_check`). Object stores keep nothing (a write there reads the log, as before).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import secrets
import shutil
import time
from concurrent.futures import Future, ThreadPoolExecutor
from functools import partial
from pathlib import Path

import pyarrow as pa

from toolkit.files import write_arrow
from toolkit.frames import schema

__all__ = [
    "FOLDER",
    "KEEP_FROM_SNAPSHOTS",
    "KEPT_TABLES",
    "RECORD",
    "Keeping",
    "kept_versions",
    "load",
    "load_table",
    "read_folder",
    "same_rows",
]

FOLDER = "_latest"
# The tables whose versions name the state: what a snapshot holds, and its commit.
KEPT_TABLES: tuple[str, ...] = (*schema.SNAPSHOT_TABLES, "manifest")
# What a folder holds: its snapshot, the versions naming its state, each file's SHA-256.
RECORD = "kept.json"
# Kept from this many snapshots on: before, the log is short and reading the base from
# it costs less than keeping the rows (about 12 ms a write on a small store).
KEEP_FROM_SNAPSHOTS = 24
# A temporary folder another write may still be filling: deleted once this old.
_STALE_SECONDS = 600.0


def _key(snapshot_id: str, versions: tuple[int | None, ...]) -> str:
    text = json.dumps([snapshot_id, list(versions)])
    return hashlib.sha256(text.encode()).hexdigest()[:32]


class Keeping:
    """A state's rows being kept: their files are written on two threads from the write's
    start (`StoreEngine.keeping`), while it commits its snapshot; `done` names them by the versions
    the commits reached. A state's rows do not depend on them, so a write's commits and
    its files are no longer one after the other (0.06 s of a 0.3 s write at 100,000
    chapters)."""

    def __init__(self, root: str, tables: dict[str, pa.Table]) -> None:
        self._folder = Path(root) / FOLDER
        self._temporary = self._folder / f".{os.getpid()}.{secrets.token_hex(4)}.tmp"
        self._digests: dict[str, Future[str]] = {}
        try:
            self._temporary.mkdir(parents=True)
        except OSError:
            return  # a read-only store, a full disk: nothing kept

        def kept(name: str) -> str:
            path = self._temporary / f"{name}.arrow"
            write_arrow(path, tables[name])
            return _sha256(path)

        # Side by side: Arrow's compression and the digests let go of the interpreter,
        # and the tables are written in about half the time (0.12 to 0.06 s).
        pool = _pool()
        for name in sorted(tables, key=lambda name: -tables[name].nbytes):
            self._digests[name] = pool.submit(kept, name)
        pool.shutdown(wait=False)

    def done(self, snapshot_id: str, versions: tuple[int | None, ...]) -> bool:
        """Keep the rows for `snapshot_id` in the state `versions` names, once written;
        whether they were. Every other state's folder is deleted then."""
        final = self._folder / _key(snapshot_id, versions)
        try:
            if not self._digests:
                return False
            digests = {name: found.result() for name, found in self._digests.items()}
            record = {"snapshot_id": snapshot_id, "versions": list(versions), "digests": digests}
            (self._temporary / RECORD).write_text(json.dumps(record), encoding="utf-8")
            if final.exists():
                shutil.rmtree(self._temporary)
            else:
                os.rename(self._temporary, final)  # whole or not at all
        except OSError:
            shutil.rmtree(self._temporary, ignore_errors=True)
            return False
        _delete_others(self._folder, keep=final.name)
        return True

    def abandon(self) -> None:
        """Keep nothing (the write failed): its files are deleted once written."""
        for found in self._digests.values():
            with contextlib.suppress(Exception):
                found.result()
        shutil.rmtree(self._temporary, ignore_errors=True)


def kept_versions(root: str, snapshot_id: str) -> list[tuple[int | None, ...]]:
    """The versions each folder kept for `snapshot_id` was written at (one, but for a
    moment while a write replaces it)."""
    found = []
    with contextlib.suppress(OSError):
        for entry in (Path(root) / FOLDER).iterdir():
            try:
                record = json.loads((entry / RECORD).read_text(encoding="utf-8"))
                if record["snapshot_id"] == snapshot_id:
                    found.append(tuple(record["versions"]))
            except (OSError, ValueError, KeyError, TypeError):
                continue  # a write's unfinished folder, or not a kept one: never read
    return found


def load(
    root: str, snapshot_id: str, versions: tuple[int | None, ...]
) -> dict[str, pa.Table] | None:
    """The rows kept for `snapshot_id` in the state `versions` names, each snapshot
    table conformed to its schema; None when none are kept, or they do not read whole."""
    return read_folder(Path(root) / FOLDER / _key(snapshot_id, versions), snapshot_id, versions)


def load_table(
    root: str, snapshot_id: str, versions: tuple[int | None, ...], name: str
) -> pa.Table | None:
    """One snapshot table's rows as `load` gives them, its file alone read (a reader of
    the latest snapshot asks for a table, not the workspace); None as for `load`."""
    folder = Path(root) / FOLDER / _key(snapshot_id, versions)
    try:
        return _read_table(folder, _record(folder, snapshot_id, versions), name)
    except Exception:  # any folder that does not read is worked out again, never an error
        return None


def read_folder(
    folder: Path, snapshot_id: str, versions: tuple[int | None, ...]
) -> dict[str, pa.Table] | None:
    """A kept folder's rows, when its record names this snapshot and state and every
    file matches its digest; None otherwise."""
    try:
        record = _record(folder, snapshot_id, versions)
        with _pool() as pool:  # side by side, as `Keeping` writes them
            read = pool.map(partial(_read_table, folder, record), schema.SNAPSHOT_TABLES)
            return dict(zip(schema.SNAPSHOT_TABLES, read, strict=True))
    except Exception:  # any folder that does not read is worked out again, never an error
        return None


def _record(folder: Path, snapshot_id: str, versions: tuple[int | None, ...]) -> dict[str, str]:
    """The folder's digests by table, when its record names this snapshot and state and
    every snapshot table; raises otherwise."""
    record = json.loads((folder / RECORD).read_text(encoding="utf-8"))
    digests: dict[str, str] = record["digests"]
    if (
        record["snapshot_id"] != snapshot_id
        or tuple(record["versions"]) != versions
        or set(digests) != set(schema.SNAPSHOT_TABLES)
    ):
        raise ValueError(f"{folder} keeps another state")
    return digests


def _read_table(folder: Path, digests: dict[str, str], name: str) -> pa.Table:
    """A kept table, conformed to its schema; raises when its file is not the one its
    digest names."""
    path = folder / f"{name}.arrow"
    if _sha256(path) != digests[name]:
        raise ValueError(f"{path} is not the file kept")
    with pa.OSFile(str(path)) as source:
        table = pa.ipc.open_file(source).read_all()
    return schema.conform(table, schema.SNAPSHOT_TABLES[name])


def same_rows(kept: dict[str, pa.Table], logged: dict[str, pa.Table]) -> bool:
    """Whether each table holds the same rows, in any order."""
    for name, table in kept.items():
        order = [(key, "ascending") for key in schema.KEYS[name]]
        if not table.sort_by(order).equals(logged[name].sort_by(order)):
            return False
    return True


def _pool() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=2, thread_name_prefix="toolkit-latest")


def _sha256(path: Path) -> str:
    with open(path, "rb") as file:
        return hashlib.file_digest(file, "sha256").hexdigest()


def _delete_others(folder: Path, *, keep: str) -> None:
    """Every other state's folder, and a temporary one a crash left: a state is read
    only while it is the store's, never again once the store moved on (a reader that
    finds its folder gone works the rows out from the log)."""
    now = time.time()
    with contextlib.suppress(OSError):
        for entry in folder.iterdir():
            if entry.name == keep:
                continue
            with contextlib.suppress(OSError):
                filling = entry.name.endswith(".tmp")
                if not filling or now - entry.stat().st_mtime > _STALE_SECONDS:
                    shutil.rmtree(entry, ignore_errors=True)

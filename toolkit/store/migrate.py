"""`toolkit store migrate PATH [NEW]`: a store in the first layout into Delta Lake tables.

The first layout kept hive-partitioned Parquet files (`<table>/snapshot_date=D/<id>.parquet`,
`events/received_date=D/<batch>.parquet`) and a `manifest/` folder of one-row files, with
`compact-<id>.parquet` files whose footer lists the files they replace (`toolkit.covers`).
The change log's rows mean the same in both layouts, so migrating copies them: the rows
of committed snapshots (those with a manifest row), each table a week at a time (one
file a week, as maintenance would leave it), the events, and the manifest last, so a
migration stopped half way leaves a store with no snapshot rather than a wrong one.

In place (`migrate_in_place`, which a take runs by itself on such a store): the old
folders move under `<root>/_first_layout/` (a rename each), the tables are written
where they were, the manifest last. Stopped half way, the store is still seen as in the
first layout (its manifest is no Delta table), and the next attempt moves what was not
moved yet, drops the Delta tables the stopped one began and copies again.

Not `deltalake.convert_to_deltalake`: it would register every Parquet file it finds,
merged-away and uncommitted ones included, and read `snapshot_date` as a string.
"""

from __future__ import annotations

import json
import os
import shutil

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from toolkit.errors import StoreError
from toolkit.frames import schema
from toolkit.store.columns import MANIFEST_STORED, stored_schema
from toolkit.store.ledger import COMMITS, COMMITS_TYPE
from toolkit.store.maintenance import in_layout_order, layout, spans
from toolkit.store.tables import Tables
from toolkit.store.upgrade import upgrade

__all__ = ["FIRST_LAYOUT", "is_old_store", "migrate", "migrate_in_place"]

_COVERS_KEY = b"toolkit.covers"
FIRST_LAYOUT = "_first_layout"  # where a migration in place keeps the old folders
_FOLDERS = (*schema.SNAPSHOT_TABLES, "events", "manifest")  # the manifest moves last


def _old_files(root: str, table: str) -> list[str]:
    """A table's visible files in the first layout: committed names, not temporary ones,
    and not those a compacted file in the same folder covers."""
    found: list[str] = []
    for folder, _, names in os.walk(os.path.join(root, table)):
        found.extend(
            os.path.join(folder, name)
            for name in names
            if name.endswith(".parquet") and not name.startswith((".", "_"))
        )
    covered: set[tuple[str, str]] = set()
    for path in found:
        if os.path.basename(path).startswith("compact-"):
            metadata = pq.read_metadata(path).metadata or {}
            for stem in json.loads(metadata.get(_COVERS_KEY, b"[]")):
                covered.add((os.path.dirname(path), stem))
    return sorted(
        p
        for p in found
        if (os.path.dirname(p), os.path.basename(p)[: -len(".parquet")]) not in covered
    )


def is_old_store(root: str) -> bool:
    """A local store in the first layout: a `manifest/` folder without `_delta_log/`,
    holding the first layout's files, or a migration in place that has not committed its
    manifest yet. Not Delta's `part-` files: a store another process is creating has its
    manifest's first data file a moment before its log."""
    manifest = os.path.join(root, "manifest")
    if _is_delta(manifest):
        return False
    if os.path.isdir(os.path.join(root, FIRST_LAYOUT, "manifest")):
        return True
    return os.path.isdir(manifest) and any(
        name.endswith(".parquet") and not name.startswith("part-") for name in os.listdir(manifest)
    )


def _is_delta(folder: str) -> bool:
    return os.path.isdir(os.path.join(folder, "_delta_log"))


def migrate_in_place(root: str) -> dict[str, int]:
    """Convert the first-layout store at `root` where it is, keeping its old folders
    under `<root>/_first_layout/`; returns the rows copied per table."""
    kept = os.path.join(root, FIRST_LAYOUT)
    os.makedirs(kept, exist_ok=True)
    for name in _FOLDERS:
        folder = os.path.join(root, name)
        if _is_delta(folder):
            shutil.rmtree(folder)  # begun by a migration that stopped before its manifest
        elif os.path.isdir(folder) and not os.path.exists(os.path.join(kept, name)):
            os.rename(folder, os.path.join(kept, name))
    return migrate(kept, root)


def migrate(old: str, new: str) -> dict[str, int]:
    """Copy a store of the first layout (Parquet folders) into a new Delta store.

    Args:
        old: The folder of the first-layout store; it is left as it is.
        new: An empty or absent folder for the Delta store.

    Returns:
        The rows copied, per table.

    Raises:
        StoreError: `old` is not a first-layout store, or `new` is not an empty folder.
    """
    if not is_old_store(old):
        raise StoreError(
            f"{old!r} is not a store in the first layout (no manifest/ folder of Parquet files)"
        )
    # Empty, or the store a migration in place converts (its old folders set aside).
    if os.path.exists(new) and (not os.path.isdir(new) or set(os.listdir(new)) - {FIRST_LAYOUT}):
        raise StoreError(f"{new!r} exists and is not an empty folder; give a new folder")
    tables = Tables(new)
    manifest = _read(old, "manifest", MANIFEST_STORED)
    manifest = _first_per_key(manifest, ["snapshot_id"])
    # The rows are copied into new commits: what the snapshots committed in the old
    # store says nothing of them (`ledger`).
    at = manifest.schema.get_field_index(COMMITS)
    manifest = manifest.set_column(at, COMMITS, pa.nulls(manifest.num_rows, COMMITS_TYPE))
    committed = manifest.column("snapshot_id")
    copied: dict[str, int] = {}
    for name in schema.SNAPSHOT_TABLES:
        rows = _read(old, name, stored_schema(name))
        rows = rows.filter(pc.is_in(rows.column("snapshot_id"), value_set=committed))
        # A compaction interrupted in the first layout could leave a row in two files.
        rows = _first_per_key(rows, [*schema.KEYS[name], "snapshot_id"])
        copied[name] = _append_by_week(tables, name, rows)
    events = _read(old, "events", schema.EVENTS)
    copied["events"] = _append_by_week(tables, "events", events)
    copied["manifest"] = _append_by_week(tables, "manifest", manifest)
    upgrade(tables)  # rows from before `_changed` and `_previous` gain them
    return copied


def _read(root: str, table: str, file_schema: pa.Schema) -> pa.Table:
    parts = [schema.conform(pq.read_table(path), file_schema) for path in _old_files(root, table)]
    return pa.concat_tables(parts) if parts else file_schema.empty_table()


def _first_per_key(rows: pa.Table, keys: list[str]) -> pa.Table:
    if rows.num_rows == 0:
        return rows
    numbered = rows.append_column("_row", pa.array(range(rows.num_rows), pa.int64()))
    first = numbered.group_by(keys, use_threads=False).aggregate([("_row", "min")])
    positions = first.column("_row_min")
    return rows.take(pc.take(positions, pc.sort_indices(positions)))


def _append_by_week(tables: Tables, name: str, rows: pa.Table) -> int:
    for _, _, week in spans(rows, layout()[name].time, monthly=False):
        tables.append(name, in_layout_order(week, name), metadata={"toolkit.operation": "migrate"})
    return int(rows.num_rows)

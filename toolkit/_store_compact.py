"""`SnapshotStore.compact`: many small files into few large ones, without a moment in
which a reader could see a row twice or miss one.

Per folder (a table's day partition, or the manifest), the committed files are read,
merged, sorted (by key then snapshot, so a chapter's history sits together and
compresses well) and written as one `compact-<id>.parquet` whose footer lists the stems
it replaces; only then are the small files deleted. Until they are, the covering rule
of `_store_files` hides them. Files of snapshots that are not committed are left alone,
since a `take` may be writing them right now, unless older than `grace`: then they were
left by a crash and are deleted, like stale temporary files.

Run it from one process at a time (a nightly job, say): two compactions of one folder at
once would each keep their merged file.
"""

from __future__ import annotations

import time

import pyarrow as pa

from toolkit import schema
from toolkit._store_files import Files, StoredFile, new_id
from toolkit._store_log import MANIFEST_STORED, stored_schema


def _layout() -> dict[str, tuple[pa.Schema, list[str]]]:
    """Each folder's file schema and sort columns."""
    layout = {
        name: (stored_schema(name), [*schema.KEYS[name], "snapshot_id"])
        for name in schema.SNAPSHOT_TABLES
    }
    layout["events"] = (schema.EVENTS, ["received_at", "webhook_id"])
    layout["manifest"] = (MANIFEST_STORED, ["snapshot_id"])
    return layout


def compact(files: Files, committed: set[str], *, grace: float) -> dict[str, int]:
    """Merge every folder of the store; returns the number of files merged per table."""
    from datetime import UTC, datetime

    merged: dict[str, int] = {}
    for table, (file_schema, order) in _layout().items():
        listed = files.list(table)
        # Only snapshot tables have files that count once their manifest row exists.
        gated = table in schema.SNAPSHOT_TABLES
        stale = [
            f.path
            for f in listed
            if gated and not f.compacted and f.stem not in committed and _older(f, grace)
        ]
        folders: dict[str, list[StoredFile]] = {}
        for f in listed:
            if not gated or f.compacted or f.stem in committed:
                folders.setdefault(f.folder, []).append(f)
        count = 0
        for folder, members in folders.items():
            if len(members) < 2:
                continue
            table_data = pa.concat_tables(files.read(f.path, file_schema) for f in members)
            stem = "compact-" + new_id(datetime.now(UTC))
            files.write(
                table_data,
                folder,
                stem,
                covers=[f.stem for f in members],
                sort_by=[(column, "ascending") for column in order],
            )
            files.delete([f.path for f in members])
            count += len(members)
        files.delete(stale + files.leftovers(table, grace))
        merged[table] = count
    return merged


def _older(f: StoredFile, grace: float) -> bool:
    return f.mtime is not None and f.mtime < time.time() - grace

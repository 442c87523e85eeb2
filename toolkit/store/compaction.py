"""`SnapshotStore.compact`: many small files into few large ones, without a moment in
which a reader could see a row twice or miss one.

Per folder (a table's day partition, or the manifest), the committed files are read,
merged, sorted (by key then snapshot, so a chapter's history sits together and
compresses well) and written as one `compact-<id>.parquet` whose footer lists the stems
it replaces; the covering rule of `_store_files` hides them from then on. They are
deleted by a later compaction, once the merged file is `linger` seconds old: a reader
in another process may have listed them a moment before and be reading them now.

Files of snapshots that are not committed are left alone, since a `take` may be writing
them right now, unless older than `grace`: then they were left by a crash and are
deleted, like stale temporary files.

On a local disk a lock file (`<root>/.compact.lock`) keeps compactions one at a time,
whichever process runs them; on an object store, run `compact()` from one process only:
two compactions of one folder at once would each keep their merged file.
"""

from __future__ import annotations

import time

import pyarrow as pa

from toolkit.frames import schema
from toolkit.store.files import Files, StoredFile, new_id
from toolkit.store.log import MANIFEST_STORED, stored_schema


def _layout() -> dict[str, tuple[pa.Schema, list[str]]]:
    """Each folder's file schema and sort columns."""
    layout = {
        name: (stored_schema(name), [*schema.KEYS[name], "snapshot_id"])
        for name in schema.SNAPSHOT_TABLES
    }
    layout["events"] = (schema.EVENTS, ["received_at", "webhook_id"])
    layout["manifest"] = (MANIFEST_STORED, ["snapshot_id"])
    return layout


def compact(
    files: Files,
    committed: set[str],
    *,
    grace: float | None,
    linger: float = 300.0,
    tables: list[str] | None = None,
    before: str | None = None,
) -> dict[str, int]:
    """Merge the folders of the store; returns the number of files merged per table.

    tables: only these folders; before: only day partitions older than this date
    (`YYYY-MM-DD`); grace: delete stale files older than this (None: delete none);
    linger: delete files merged away once what covers them is this many seconds old.
    """
    from datetime import UTC, datetime

    merged: dict[str, int] = {}
    for table, (file_schema, order) in _layout().items():
        if tables is not None and table not in tables:
            continue
        visible, covered = files.scan(table)
        listed = [
            f for f in visible if before is None or f.partition is None or f.partition < before
        ]
        expired = [f.path for f, since in covered if since < time.time() - linger]
        # Only snapshot tables have files that count once their manifest row exists.
        gated = table in schema.SNAPSHOT_TABLES
        stale = [
            f.path
            for f in listed
            if gated and grace is not None
            and not f.compacted and f.stem not in committed and _older(f, grace)
        ]  # fmt: skip
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
            # What merged files had replaced stays replaced, so that deleting them in any
            # order never brings an older file back into view.
            stems = {f.stem for f in members}
            stems.update(stem for f in members if f.compacted for stem in files.covers(f.path))
            files.write(
                table_data,
                folder,
                stem,
                covers=sorted(stems),
                sort_by=[(column, "ascending") for column in order],
            )
            if linger <= 0:
                expired.extend(f.path for f in members)
            count += len(members)
        files.delete(expired + stale + (files.leftovers(table, grace) if grace is not None else []))
        merged[table] = count
    return merged


def _older(f: StoredFile, grace: float) -> bool:
    return f.mtime is not None and f.mtime < time.time() - grace

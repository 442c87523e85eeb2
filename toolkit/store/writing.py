"""Writing a snapshot: what changed since its base, and finishing a stopped write.

`write` (what `SnapshotStore.take` and `.write` run) works out each table's change
against the snapshot before (`_base_of`, `_changes_of`), stamps the rows with the snapshot
(`stamp`), and appends them; `_resume` tells whether the same snapshot was being written
when a crash or a full disk stopped it, so the rerun finishes it instead of leaving its
rows orphaned.
"""

from __future__ import annotations

import contextlib
import json
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from deltalake.exceptions import CommitFailedError

from toolkit.frames import Workspace, schema
from toolkit.native_stderr import panics_kept_off_stderr
from toolkit.store import latest, versions
from toolkit.store.columns import (
    CHANGED,
    DELETED,
    MANIFEST_STORED,
    PREVIOUS,
    TRACKED,
    stored_schema,
)
from toolkit.store.connection import connect
from toolkit.store.diff import diff
from toolkit.store.ids import new_id
from toolkit.store.info import SnapshotInfo
from toolkit.store.ledger import COMMITS, EVENTS, newest_witness, witness_of
from toolkit.store.tables import (
    BASE_ID_KEY,
    SNAPSHOT_AT_KEY,
    SNAPSHOT_ID_KEY,
    Tables,
    app_id,
    version_of,
)
from toolkit.timestamps import When, utc

if TYPE_CHECKING:
    from toolkit.store.engine import StoreEngine

__all__ = ["stamp", "write"]

_FULL_EVERY = 168  # a week of hourly snapshots: every 168th snapshot is stored whole


def _base_of(manifest: pa.Table, snapshot_id: str) -> tuple[str | None, datetime | None, int]:
    """The snapshot a new one is based on (the newest earlier one), its time, and how many
    snapshots were taken since the last full one. Arrow, not Python rows: a year of hourly
    snapshots makes the manifest 8,760 rows long, and every write reads it."""
    ids = manifest.column("snapshot_id")
    # The manifest is in id order, so the earlier snapshots are its first `count` rows.
    count = pc.sum(pc.less(ids, pa.scalar(snapshot_id, ids.type))).as_py() or 0
    if not count:
        return None, None, 0
    fulls = pc.fill_null(manifest.column("full").slice(0, count), False)
    marked = np.flatnonzero(fulls.to_numpy(zero_copy_only=False))
    since_full = count - 1 - int(marked[-1]) if len(marked) else count
    return ids[count - 1].as_py(), manifest.column("snapshot_at")[count - 1].as_py(), since_full


def _changes_of(
    tables: dict[str, pa.Table], before: dict[str, pa.Table] | None, full: bool
) -> dict[str, pa.Table]:
    """Each table's rows to store for a snapshot of `tables` based on `before`, sorted by
    key: the change, or with `full` every row plus the deletions."""
    changes = {}
    con = connect()
    try:
        for name, table in tables.items():
            old = before[name] if before is not None else table.schema.empty_table()
            change = diff(con, name, table, old)
            if full:
                target = stored_schema(name).remove(0).remove(0)
                gone = change.filter(change.column(DELETED))
                kept = table.append_column(DELETED, pa.array([False] * table.num_rows, pa.bool_()))
                if name in TRACKED:
                    changed, previous = _changed_in(table, change, name)
                    kept = kept.append_column(CHANGED, changed).append_column(PREVIOUS, previous)
                change = pa.concat_tables(
                    [schema.conform(kept, target), schema.conform(gone, target)]
                )
            changes[name] = change.sort_by(
                [*((k, "ascending") for k in schema.KEYS[name]), ("_deleted", "ascending")]
            )
    finally:
        con.close()
    return changes


def _changed_in(table: pa.Table, change: pa.Table, name: str) -> tuple[pa.Array, pa.Array]:
    """For each row of `table`, its `_changed` and `_previous` as `change` (its diff)
    has them: false and null for rows the diff does not flag."""
    keys = list(schema.KEYS[name])
    flagged = change.filter(pc.and_(pc.invert(change.column(DELETED)), change.column(CHANGED)))
    numbered = table.select(keys).append_column(
        "_row", pa.array(np.arange(table.num_rows), pa.int64())
    )
    changed = flagged.select(keys).append_column(
        "_flagged", pa.array(np.arange(flagged.num_rows), pa.int64())
    )
    hits = numbered.join(changed, keys=keys, join_type="inner")  # no struct in a join
    # Each row of `table`: its flagged row in `change`, -1 where none.
    where = np.full(table.num_rows, -1, dtype="int64")
    where[hits.column("_row").to_numpy()] = hits.column("_flagged").to_numpy()
    previous = flagged.column(PREVIOUS).combine_chunks().take(pa.array(where, mask=where < 0))
    return pa.array(where >= 0), previous


def stamp(rows: pa.Table, snapshot_id: str, when: datetime, target: pa.Schema) -> pa.Table:
    """Rows with their snapshot's id and time added, in the table's schema."""
    # Repeated by Arrow: a list of a Python object per row was 0.1 s for each read of
    # 300,000 languages.
    n = rows.num_rows
    stamped = rows.append_column("snapshot_id", pa.repeat(pa.scalar(snapshot_id, schema.TEXT), n))
    stamped = stamped.append_column("snapshot_at", pa.repeat(pa.scalar(when, schema.TIME), n))
    return schema.conform(stamped, target)


def _resume(
    tables: Tables,
    when: datetime,
    manifest: pa.Table,
    base: str | None,
    changes: dict[str, pa.Table],
) -> tuple[str, set[str]] | None:
    """The snapshot this write finishes, and the tables already holding it, when a
    write of the very same rows at `when` stopped before its manifest row (a crash, a
    full disk): each such table's newest commit is that snapshot, as its application
    transaction confirms, based on the same snapshot and holding exactly these rows.
    None otherwise (then the write starts afresh; the rows of the stopped one stay
    invisible, having no manifest row)."""
    committed = set(manifest.column("snapshot_id").to_pylist())
    found: dict[str, str] = {}
    for name in schema.SNAPSHOT_TABLES:
        meta = tables.last_commit(name)
        snapshot_id = meta.get(SNAPSHOT_ID_KEY)
        if (
            snapshot_id
            and snapshot_id not in committed
            and meta.get(SNAPSHOT_AT_KEY) == when.isoformat()
            and meta.get(BASE_ID_KEY) == (base or "")
            and tables.transaction_version(name, app_id(snapshot_id)) == version_of(when)
        ):
            found[name] = snapshot_id
    if len(set(found.values())) != 1:
        return None
    snapshot_id = next(iter(found.values()))
    for name in found:
        stored = tables.dataset(name, stored_schema(name)).to_table(
            filter=pc.field("snapshot_id") == snapshot_id
        )
        ours = stamp(changes[name], snapshot_id, when, stored_schema(name))
        if not schema.conform(stored, stored_schema(name)).equals(ours):
            return None  # another writer's snapshot at the same time, in progress
    return snapshot_id, set(found)


def write(
    engine: StoreEngine, workspace: Workspace, at: When | None, label: str | None, *, compact: bool
) -> SnapshotInfo:
    """Write a pulled workspace as one snapshot: each table's change since its base
    (whole every `_FULL_EVERY`-th), committed side by side, then the manifest row that
    commits them all; the layout recorded on a store's first write. With `compact`, the
    first write of a day merges and tidies the tables. The rows are kept for the next
    write's base meanwhile (`latest`), past the first snapshots."""
    when = utc(at if at is not None else workspace.pulled_at or datetime.now(UTC))
    # A deep copy: Arrow may share the frames' buffers, and the caller may edit the
    # frames after this returns, while the store keeps these tables as its last state.
    tables = {
        name: schema.from_pandas(workspace.table(name).copy(deep=True), table_schema)
        for name, table_schema in schema.SNAPSHOT_TABLES.items()
    }
    manifest = engine.manifest(writing=True)
    keeps = manifest.num_rows + 1 >= latest.KEEP_FROM_SNAPSHOTS
    keeping = engine.keeping(tables) if keeps else None
    try:
        info = _committed(engine, workspace, tables, manifest, when, label, compact=compact)
    except BaseException:
        if keeping is not None:
            keeping.abandon()
        raise
    if keeping is not None:
        engine.keep_state(info.snapshot_id, keeping)
    return info


def _committed(
    engine: StoreEngine,
    workspace: Workspace,
    tables: dict[str, pa.Table],
    manifest: pa.Table,
    when: datetime,
    label: str | None,
    *,
    compact: bool,
) -> SnapshotInfo:
    """`tables` committed as one snapshot at `when`, then merged and tidied with
    `compact` on a day's first write (`write`)."""
    snapshot_id = new_id(when)
    base, base_at, since_full = _base_of(manifest, snapshot_id)
    full = base is None or since_full + 1 >= _FULL_EVERY
    previous = engine.state(base, manifest) if base is not None else None
    changes = _changes_of(tables, previous, full)
    # Only a store object that has not yet written, or whose last write failed, can be
    # finishing a stopped write: asking the tables costs a read of each one's log.
    resumed = _resume(engine.tables, when, manifest, base, changes) if not engine.wrote else None
    snapshot_id, held = resumed or (snapshot_id, set())
    engine.wrote = False
    commits = _commit_tables(engine.tables, _metadata(snapshot_id, when, base), when, changes, held)
    info = SnapshotInfo(
        snapshot_id=snapshot_id,
        snapshot_at=when,
        details=workspace.details,
        requests=workspace.requests,
        seconds=float(workspace.seconds),
        **{
            f"rows_{name}": table.num_rows
            for name, table in tables.items()
            if f"rows_{name}" in schema.MANIFEST.names  # the service's four, not the groups
        },
        workspace=label,
    )
    row = {
        **info.__dict__,
        "base_id": base,
        "full": full,
        "keeps_previous": PREVIOUS in stored_schema("chapters").names,
        COMMITS: json.dumps(
            {
                **{name: commits.get(name) for name in schema.SNAPSHOT_TABLES},
                EVENTS: newest_witness(engine.tables, EVENTS),
            }
        ),
    }
    engine.tables.append(
        "manifest",
        schema.from_rows([row], MANIFEST_STORED),
        metadata=_metadata(snapshot_id, when, base),
        transaction=(app_id(snapshot_id), version_of(when)),
    )
    if not engine.wrote and versions.recorded(engine.tables) is None:
        # A new store, or one from before the version: recorded once. The snapshot is
        # committed already; if other writers keep the record from landing, the next
        # take records it.
        with contextlib.suppress(CommitFailedError):
            versions.record_layout(engine.tables, versions.LAYOUT)
    with engine.lock:
        engine.last = (snapshot_id, tables)
    engine.wrote = True
    if compact and base_at is not None and base_at.date() < when.date():
        engine.maintain(when)
    return info


def _metadata(snapshot_id: str, when: datetime, base: str | None) -> dict[str, str]:
    return {
        SNAPSHOT_ID_KEY: snapshot_id,
        SNAPSHOT_AT_KEY: when.isoformat(),
        BASE_ID_KEY: base or "",
    }


def _commit_tables(
    tables: Tables,
    metadata: dict[str, str],
    when: datetime,
    changes: dict[str, pa.Table],
    held: set[str],
) -> dict[str, dict[str, Any]]:
    """Each table's change appended with the snapshot's `metadata` (those `held` since a
    stopped write: their newest commit), and what each commit added, by table."""
    snapshot_id = metadata[SNAPSHOT_ID_KEY]
    transaction = (app_id(snapshot_id), version_of(when))
    pending = {
        name: stamp(change, snapshot_id, when, stored_schema(name))
        for name, change in changes.items()
        if change.num_rows and name not in held
    }

    # The tables are independent until the manifest row: commit them side by side
    # (delta-rs works outside the interpreter lock), which halves a write's time.
    def commit(name: str) -> dict[str, Any]:
        if name in pending:
            version = tables.append(name, pending[name], metadata=metadata, transaction=transaction)
        else:  # held since the stopped write: its newest commit
            version = tables.last_commit(name)["version"]
        return witness_of(tables, name, version, snapshot_id, changes[name].num_rows)

    written = [*pending, *held]
    # One route of descriptor 2 for the side-by-side appends, not one each (`append`).
    with ThreadPoolExecutor(max_workers=len(written) or 1) as pool, panics_kept_off_stderr():
        return dict(zip(written, pool.map(commit, written), strict=True))

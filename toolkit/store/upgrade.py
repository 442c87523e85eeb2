"""Bringing a Delta store written by an earlier toolkit to the one layout readers know.

Earlier toolkits wrote `chapters` and `languages` without `_changed` (the row changed in
a column the runs are read from) or without `_previous` (what it changed from), and
their manifest rows without `keeps_previous`. Readers used to carry a second path for
such rows; now a store is upgraded once, and readers refuse a store that is not:

- automatically by the first write of the current toolkit (`SnapshotStore.take`), before
  it writes its snapshot, or by `toolkit store migrate PATH`;
- each tracked table's rows are given `_changed` and `_previous` as the writer would
  have stored them: compared with the row of the same key in the snapshot before
  (for a snapshot based on another one, with that base's state), then rewritten a week
  at a time (one Delta commit per week, replacing exactly that week's rows, in the
  layout maintenance keeps);
- last, the manifest's rows are marked `keeps_previous`, a month at a time: that mark
  on every row is what says "current layout". An upgrade stopped half way leaves the
  mark missing, and the next write or `migrate` does it again (it works the flags out
  afresh each time, so doing it twice gives the same rows).

Rows of snapshots without a manifest row (a take that stopped) are kept as they are:
nothing reads them. A write of another process that lands in a week being rewritten
makes that commit fail; the upgrade stops there with a `StoreError` (the take that ran
it writes nothing) and the next take or `migrate` finishes it.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from deltalake import CommitProperties, Field, write_deltalake
from deltalake.exceptions import CommitFailedError, DeltaError

from toolkit.errors import StoreError
from toolkit.frames import schema
from toolkit.store.columns import (
    CHANGED,
    DELETED,
    EXISTED,
    MANIFEST_STORED,
    PREVIOUS,
    TRACKED,
    previous_type,
    stored_schema,
)
from toolkit.store.connection import arrow, column_list, connect, q
from toolkit.store.log import Log
from toolkit.store.maintenance import in_layout_order, layout, spans
from toolkit.store.manifest import order_manifest
from toolkit.store.tables import WRITER, Tables

__all__ = ["is_current", "is_current_store", "upgrade", "upgrade_message"]

_MARK = "keeps_previous"


def is_current(manifest: pa.Table) -> bool:
    """Whether every snapshot of the manifest is in the current layout."""
    marks = pc.fill_null(manifest.column(_MARK), False)
    return bool(pc.all(marks).as_py()) if manifest.num_rows else True


def is_current_store(tables: Tables) -> bool:
    """Whether the store's manifest (if any) is all in the current layout: the detector
    of layout 2 for a store that records no version (`versions`)."""
    tables.begin()
    return tables.get("manifest") is None or is_current(_manifest(tables))


def upgrade_message(root: str) -> str:
    """What a reader of a store not yet upgraded is told."""
    return (
        f"the store {root!r} was written by an earlier toolkit and is read only once "
        f"upgraded: run `toolkit store migrate {root}` (or take a snapshot into it, which "
        "upgrades it first)"
    )


def upgrade(tables: Tables) -> list[str]:
    """Upgrade the store's tables in place; returns what was done, a line per table
    (nothing when the store was current already)."""
    tables.begin()
    if tables.get("manifest") is None:
        return []
    manifest = order_manifest(_manifest(tables))
    if is_current(manifest):
        return []
    done = []
    for name in TRACKED:
        table = tables.get(name)
        if table is None:
            continue
        rows = _flagged(tables, name, manifest)
        missing = [f for f in stored_schema(name) if f.name not in _rows_columns(tables, name)]
        if missing:
            table.alter.add_columns([Field.from_arrow(f) for f in missing])
        weeks = _rewrite(tables, name, rows)
        flagged = int(pc.sum(pc.fill_null(rows.column(CHANGED), False)).as_py() or 0)
        done.append(
            f"{name}: {rows.num_rows:,} rows in {weeks} week(s) given `_changed` and "
            f"`_previous` ({flagged:,} flagged)"
        )
    stored = schema.conform(_manifest(tables), MANIFEST_STORED)
    marked = stored.set_column(
        stored.schema.get_field_index(_MARK), _MARK, pa.array([True] * stored.num_rows, pa.bool_())
    )
    months = _rewrite(tables, "manifest", marked)
    done.append(f"manifest: {marked.num_rows:,} snapshots marked current in {months} month(s)")
    return done


def _rows_columns(tables: Tables, name: str) -> set[str]:
    table = tables.get(name)
    return {f.name for f in table.schema().fields} if table is not None else set()


def _manifest(tables: Tables) -> pa.Table:
    return schema.conform(tables.dataset("manifest", MANIFEST_STORED).to_table(), MANIFEST_STORED)


def _flagged(tables: Tables, name: str, manifest: pa.Table) -> pa.Table:
    """Every stored row of a tracked table with `_changed` and `_previous` worked out."""
    target = stored_schema(name)
    rows = schema.conform(tables.dataset(name, target).to_table(), target)
    rows = rows.append_column("_row", pa.array(np.arange(rows.num_rows), pa.int64()))
    con = connect()
    try:
        con.register("manifest", manifest)
        con.register("stored", rows)
        log = Log(con, name, "stored", manifest)
        keys, followed = schema.KEYS[name], TRACKED[name]
        # Each stored row of a linear snapshot, with the row of its key just before it
        # in the log (the snapshot before's, unless the key went away or was unchanged).
        window = f"WINDOW w AS (PARTITION BY {column_list(keys)} ORDER BY idx)"
        linear = f"""
            SELECT _row, {DELETED}, {column_list(followed)},
                   lag(idx) OVER w IS NOT NULL AND NOT lag({DELETED}) OVER w AS existed,
                   {", ".join(f"lag({q(c)}) OVER w AS {q('_was_' + c)}" for c in followed)}
            FROM {log.name} {window}
            QUALIFY _row IS NOT NULL
        """
        con.register("_bases", _base_states(log, manifest))
        on = " AND ".join(f"s.{q(k)} IS NOT DISTINCT FROM b.{q(k)}" for k in keys)
        # A snapshot based on another one stored its change from that base's state.
        based = f"""
            SELECT s._row, s.{DELETED}, {column_list(followed, "s")},
                   b._for IS NOT NULL AS existed,
                   {", ".join(f"b.{q(c)} AS {q('_was_' + c)}" for c in followed)}
            FROM stored s JOIN manifest m USING (snapshot_id)
            LEFT JOIN _bases b ON b._for = s.snapshot_id AND {on}
            WHERE NOT m.linear
        """
        differs = " OR ".join(f"{q(c)} IS DISTINCT FROM {q('_was_' + c)}" for c in followed)
        was = ", ".join(f"{q(c)} := CASE WHEN existed THEN {q('_was_' + c)} END" for c in followed)
        flags = arrow(
            con,
            f"""
            WITH compared AS ({linear} UNION ALL {based}),
                 flagged AS (SELECT *, NOT existed OR {DELETED} OR {differs} AS changed
                             FROM compared)
            SELECT _row, changed AS {CHANGED},
                   CASE WHEN changed THEN struct_pack({EXISTED} := existed, {was}) END
                       AS {PREVIOUS}
            FROM flagged ORDER BY _row
            """,
        )
    finally:
        con.close()
    return _set_flags(rows, flags, name)


def _base_states(log: Log, manifest: pa.Table) -> pa.Table:
    """The state of the base of every snapshot not based on the one before it, each row
    with the id of the snapshot it is the base of (`_for`)."""
    states = []
    columns = schema.SNAPSHOT_TABLES[log.table]
    for snapshot_id, base in zip(
        manifest.filter(pc.invert(manifest.column("linear"))).column("snapshot_id").to_pylist(),
        manifest.filter(pc.invert(manifest.column("linear"))).column("base_id").to_pylist(),
        strict=True,
    ):
        if base is None:
            continue
        state = schema.conform(log.chain_state(base), columns)
        states.append(state.append_column("_for", pa.array([snapshot_id] * state.num_rows)))
    if states:
        return pa.concat_tables(states)
    return columns.empty_table().append_column("_for", pa.array([], pa.string()))


def _set_flags(rows: pa.Table, flags: pa.Table, name: str) -> pa.Table:
    """`rows` with the worked-out flags in place; rows without any (of snapshots that
    were never committed) keep theirs."""
    where = np.full(rows.num_rows, -1, dtype="int64")
    where[flags.column("_row").to_numpy()] = np.arange(flags.num_rows)
    positions = pa.array(where, mask=where < 0)
    changed = flags.column(CHANGED).combine_chunks().take(positions)
    previous = flags.column(PREVIOUS).combine_chunks().cast(previous_type(name)).take(positions)
    kept = pc.is_valid(positions)
    rows = rows.drop_columns(["_row"])
    for column, worked_out in ((CHANGED, changed), (PREVIOUS, previous)):
        index = rows.schema.get_field_index(column)
        merged = pc.if_else(kept, worked_out, rows.column(index).combine_chunks())
        rows = rows.set_column(index, column, merged)
    return schema.conform(rows, stored_schema(name))


def _rewrite(tables: Tables, name: str, rows: pa.Table) -> int:
    """Replace the table's rows with `rows`, a period (week, or month for the manifest)
    at a time, each one commit; returns the number of periods."""
    table = tables.get(name)
    assert table is not None
    kept = layout()[name]
    periods = 0
    for start, end, part in spans(rows, kept.time, monthly=name == "manifest"):
        predicate = f"{kept.time} >= '{start.isoformat()}' AND {kept.time} < '{end.isoformat()}'"
        try:
            write_deltalake(
                table,
                in_layout_order(part, name),
                mode="overwrite",
                predicate=predicate,
                commit_properties=CommitProperties(
                    custom_metadata={"toolkit.operation": "upgrade"}
                ),
                writer_properties=WRITER,
            )
        except (CommitFailedError, DeltaError) as error:
            raise StoreError(
                f"the upgrade of {tables.uri(name)} met another process's write ({error}); "
                "it is finished by the next snapshot or `toolkit store migrate`"
            ) from error
        periods += 1
    return periods

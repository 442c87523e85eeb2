"""The change log behind the snapshot store, in DuckDB.

A snapshot's files hold only what changed since its *base* (the snapshot before it when
it was taken): rows that are new or differ, and, for rows that went away, the old row
flagged `_deleted`. A *full* snapshot holds every row (and the deletions since its
base); the first snapshot is always full, and `take` writes a full one every
`FULL_EVERY` snapshots so that reading a state never has to start further back.

Ordered by id (which sorts by snapshot time), snapshot `i` is *linear* when its base is
snapshot `i - 1`: its rows are exactly the change from the snapshot before. Two
processes taking snapshots at once, or a snapshot taken with an earlier `at`, leave a
snapshot whose base is not its predecessor; for those the change is worked out again
from the exact states (each snapshot's chain of bases leads to a full one) and used in
place of what was stored. The *log* of a table is then one row per change, indexed by
snapshot position `idx`, and everything else is read from it:

- the state at snapshot `k`: the newest log row per key from the last full, linear
  snapshot up to `k`, deletions dropped;
- the history of snapshots `a..b`: each log row is valid until the next one of its key,
  so it is repeated for every snapshot in that interval (a range join).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TypeAlias

import duckdb
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from toolkit.frames import schema
from toolkit.store.ledger import COMMITS_TYPE

DELETED = "_deleted"
CHANGED = "_changed"
PREVIOUS = "_previous"
EXISTED = "existed"
FULL_EVERY = 168  # a week of hourly snapshots
# The columns `_changed` follows, by table: what runs and lines are read from. Most
# changes of a chapter or a language are progress alone (`last_activity_at`, a count
# of lines being translated); `_changed` is false on those (and on a full snapshot's
# unchanged rows), so a query that follows these columns reads a few rows in eight.
TRACKED: dict[str, tuple[str, ...]] = {
    "chapters": (
        "credits_spent", "page_count", "started", "processing", "failed", "failure_reason",
        "status",
    ),
    "languages": ("covered", "failed"),
}  # fmt: skip
When: TypeAlias = datetime | pd.Timestamp | str


def previous_type(table: str) -> pa.StructType:
    """`_previous`: whether the row's key existed at the snapshot before (`existed`),
    and its followed columns there."""
    columns = schema.SNAPSHOT_TABLES[table]
    return pa.struct(
        [
            pa.field(EXISTED, pa.bool_()),
            *(pa.field(c, columns.field(c).type) for c in TRACKED[table]),
        ]
    )


# `keeps_previous`: the snapshot's rows carry `_changed` and `_previous`; true on every
# row of a current store (an earlier toolkit's store is upgraded before it is read).
MANIFEST_STORED = pa.schema(
    [
        *schema.MANIFEST,
        pa.field("base_id", schema.TEXT),
        pa.field("full", schema.FLAG),
        pa.field("keeps_previous", schema.FLAG),
        # Per table, the version of the snapshot's commit and what it added (`ledger`).
        pa.field("commits", COMMITS_TYPE),
    ]
)


def stored_schema(table: str) -> pa.Schema:
    """A snapshot table's file schema: snapshot columns, the table's, `_deleted`, and for
    the tables in `TRACKED` `_changed` (the row is new or gone, or differs from the
    snapshot before in a tracked column) and `_previous` (on a `_changed` row, whether
    the key existed at the snapshot before and its tracked columns there; null on other
    rows). Stores written before these existed are upgraded before they are read
    (`upgrade`)."""
    base = schema.with_snapshot(schema.SNAPSHOT_TABLES[table])
    base = base.append(pa.field(DELETED, schema.FLAG))
    if table not in TRACKED:
        return base
    return base.append(pa.field(CHANGED, schema.FLAG)).append(
        pa.field(PREVIOUS, previous_type(table))
    )


def q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _cols(names: Sequence[str], alias: str | None = None) -> str:
    prefix = f"{alias}." if alias else ""
    return ", ".join(prefix + q(n) for n in names)


_database: duckdb.DuckDBPyConnection | None = None
_database_lock = threading.Lock()


def connect() -> duckdb.DuckDBPyConnection:
    """A fresh DuckDB connection (a cursor on one shared in-memory database: opening a
    database costs some 20 ms, a cursor almost nothing). Names registered on it are its
    own; close it when done."""
    global _database
    with _database_lock:
        if _database is None:
            _database = duckdb.connect()
        con = _database.cursor()
    # Times come back as UTC whatever the machine's zone.
    con.execute("SET TimeZone = 'UTC'")
    return con


def arrow(con: duckdb.DuckDBPyConnection, sql: str, params: Sequence[object] = ()) -> pa.Table:
    return con.sql(sql, params=list(params) or None).to_arrow_table()


def diff(con: duckdb.DuckDBPyConnection, table: str, new: pa.Table, old: pa.Table) -> pa.Table:
    """Rows of `new` that `old` lacks or holds differently, and `old`'s rows `new` lacks
    (flagged deleted). Both hold the table's columns; the result adds `_deleted` (and
    `_changed` and `_previous` for a tracked table)."""
    aligned = _aligned_diff(table, new, old)
    if aligned is not None:
        return aligned
    columns = schema.SNAPSHOT_TABLES[table].names
    keys = schema.KEYS[table]
    values = [c for c in columns if c not in keys]
    on = " AND ".join(f"n.{q(k)} IS NOT DISTINCT FROM o.{q(k)}" for k in keys)
    changed = " OR ".join(f"n.{q(c)} IS DISTINCT FROM o.{q(c)}" for c in values) or "false"
    followed = TRACKED.get(table, ())
    tracked = " OR ".join(f"n.{q(c)} IS DISTINCT FROM o.{q(c)}" for c in followed)
    fields = ", ".join(f"{q(c)} := o.{q(c)}" for c in followed)
    flags = (
        (
            f", o._present IS NULL OR {tracked} AS {CHANGED}, CASE WHEN o._present IS NULL "
            f"OR {tracked} THEN struct_pack({EXISTED} := o._present IS NOT NULL, {fields}) "
            f"END AS {PREVIOUS}",
            f", true AS {CHANGED}, struct_pack({EXISTED} := true, {fields}) AS {PREVIOUS}",
        )
        if table in TRACKED
        else ("", "")
    )
    con.register("_new", new)
    con.register("_old", old)
    try:
        result = arrow(
            con,
            f"""
            SELECT {_cols(columns, "n")}, false AS {DELETED}{flags[0]}
            FROM _new n LEFT JOIN (SELECT *, true AS _present FROM _old) o ON {on}
            WHERE o._present IS NULL OR ({changed})
            UNION ALL
            SELECT {_cols(columns, "o")}, true AS {DELETED}{flags[1]}
            FROM _old o ANTI JOIN _new n ON {on}
            """,
        )
    finally:
        con.unregister("_new")
        con.unregister("_old")
    if table in TRACKED:
        index = result.schema.get_field_index(PREVIOUS)
        result = result.set_column(
            index, PREVIOUS, result.column(PREVIOUS).cast(previous_type(table))
        )
    return result


def _aligned_diff(table: str, new: pa.Table, old: pa.Table) -> pa.Table | None:
    """`diff` without a join, when both tables list the same keys in the same order (a
    pull an hour after the last one usually does); None otherwise.

    Compares column by column in Arrow, nulls equal to nulls as `IS DISTINCT FROM` has
    it: some 20 times faster than the join on a 10,000-chapter workspace, which matters
    to a store written every hour for a year.
    """
    keys = schema.KEYS[table]
    if new.num_rows != old.num_rows or new.schema.types != old.schema.types:
        return None
    for key in keys:
        if new.column(key).null_count or not new.column(key).equals(old.column(key)):
            return None
    changed = np.zeros(new.num_rows, dtype=bool)
    tracked = np.zeros(new.num_rows, dtype=bool)
    for name in schema.SNAPSHOT_TABLES[table].names:
        if name not in keys:
            differs = _differs(new.column(name).combine_chunks(), old.column(name).combine_chunks())
            changed |= differs
            if name in TRACKED.get(table, ()):
                tracked |= differs
    rows = new.select(schema.SNAPSHOT_TABLES[table].names).filter(pa.array(changed))
    rows = rows.append_column(DELETED, pa.array(np.zeros(rows.num_rows, dtype=bool)))
    if table in TRACKED:
        rows = rows.append_column(CHANGED, pa.array(tracked[changed]))
        rows = rows.append_column(PREVIOUS, _previous(old, tracked, changed, table))
    return rows


def _previous(old: pa.Table, tracked: np.ndarray, kept: np.ndarray, table: str) -> pa.Array:
    """`_previous` of the kept rows of an aligned diff: the old row's tracked columns
    where they changed (every key existed before), else null."""
    values = old.select(list(TRACKED[table])).filter(pa.array(kept))
    existed = pa.array(np.ones(values.num_rows, dtype=bool))  # the keys line up
    return pa.StructArray.from_arrays(
        [existed, *(column.combine_chunks() for column in values.columns)],
        fields=list(previous_type(table)),
        mask=pa.array(~tracked[kept]),
    )


def _differs(a: pa.Array, b: pa.Array) -> np.ndarray:
    """Row by row, whether two aligned arrays differ (a null equals only a null)."""
    if pa.types.is_list(a.type):
        differ = _lists_differ(a, b)
    else:
        differ = pc.fill_null(pc.not_equal(a, b), False).to_numpy(zero_copy_only=False)
    one_null = pc.xor(a.is_null(), b.is_null()).to_numpy(zero_copy_only=False)
    return np.asarray(differ | one_null, dtype=bool)


def _lists_differ(a: pa.Array, b: pa.Array) -> np.ndarray:
    lengths = pc.not_equal(pc.list_value_length(a), pc.list_value_length(b))
    differ = np.array(pc.fill_null(lengths, False).to_numpy(zero_copy_only=False), dtype=bool)
    both = pc.and_(a.is_valid(), b.is_valid()).to_numpy(zero_copy_only=False)
    same_shape = np.flatnonzero(both & ~differ)
    if len(same_shape):
        # Equal lengths: the flattened items line up, and each names its row.
        inner_a, inner_b = a.take(same_shape), b.take(same_shape)
        items = _differs(pc.list_flatten(inner_a), pc.list_flatten(inner_b))
        rows = pc.list_parent_indices(inner_a).to_numpy(zero_copy_only=False)
        differ[same_shape[np.unique(rows[items])]] = True
    return differ


def order_manifest(manifest: pa.Table) -> pa.Table:
    """The manifest in snapshot order, one row per id, with `idx` and `linear` added.

    In Arrow rather than DuckDB: every read and every write orders the manifest, and a
    year of hourly snapshots makes it 8,760 rows long.
    """
    ordered = manifest.take(pc.sort_indices(manifest, [("snapshot_id", "ascending")]))
    ids = ordered.column("snapshot_id").to_numpy(zero_copy_only=False)
    # One row per id: a compaction can briefly leave a manifest row in two files.
    first = np.ones(len(ids), dtype=bool)
    first[1:] = ids[1:] != ids[:-1]
    ordered, ids = ordered.filter(pa.array(first)), ids[first]
    bases = ordered.column("base_id")
    # Linear: based on the snapshot just before it (the first: based on none).
    previous = pa.concat_arrays([pa.nulls(1, pa.string()), pa.array(ids[:-1], pa.string())])
    same = pc.equal(bases.cast(pa.string()), previous[: len(ids)])
    linear = np.array(pc.fill_null(same, False).to_numpy(zero_copy_only=False), dtype=bool)
    if len(ids):
        linear[0] = not bases[0].is_valid
    ordered = ordered.append_column("idx", pa.array(np.arange(len(ids)), pa.int64()))
    return ordered.append_column("linear", pa.array(linear, pa.bool_()))


class Snapshots:
    """The ordered manifest's columns as arrays, made once per manifest: every table's
    log needs them, and a year of hourly snapshots is 8,760 rows (Python rows of it
    cost more than a small query)."""

    _last: tuple[pa.Table, Snapshots] | None = None

    def __init__(self, manifest: pa.Table) -> None:
        self._times = manifest.column("snapshot_at")
        self.ids: list[str] = manifest.column("snapshot_id").to_pylist()
        self.bases: list[str | None] = manifest.column("base_id").to_pylist()
        self.full = np.array(
            pc.fill_null(manifest.column("full"), False).to_numpy(zero_copy_only=False), bool
        )
        self.linear = np.array(manifest.column("linear").to_numpy(zero_copy_only=False), bool)
        self.position = {snapshot_id: i for i, snapshot_id in enumerate(self.ids)}

    @classmethod
    def of(cls, manifest: pa.Table) -> Snapshots:
        last = cls._last
        if last is None or last[0] is not manifest:
            last = (manifest, cls(manifest))
            cls._last = last
        return last[1]

    def time(self, i: int) -> datetime:
        when: datetime = self._times[i].as_py()
        return when


class Log:
    """The linear change log of one table, over the stored rows registered as `source`.

    `manifest` is what `order_manifest` returns; it must be registered in `con` as
    `manifest` too.
    """

    def __init__(
        self,
        con: duckdb.DuckDBPyConnection,
        table: str,
        source: str,
        manifest: pa.Table,
        *,
        cache: dict[tuple[str, str, str | None], pa.Table] | None = None,
    ):
        self.con = con
        # Worked-out changes, by (table, snapshot, snapshot before): committed snapshots
        # never change, so neither does the change between two of them.
        self._cache = cache if cache is not None else {}
        self.table = table
        self.source = source
        self.keys = schema.KEYS[table]
        self.columns = schema.SNAPSHOT_TABLES[table].names
        self._snapshots = Snapshots.of(manifest)
        self.name = f"log_{table}"
        self._build()

    def _build(self) -> None:
        fixups = [self._fixup(int(i)) for i in np.flatnonzero(~self._snapshots.linear)]
        fixed = pa.concat_tables(fixups) if fixups else self._empty_fixup()
        self.con.register(f"_fixup_{self.table}", fixed)
        self.con.execute(
            f"""
            CREATE OR REPLACE TEMP VIEW {self.name} AS
            SELECT m.idx, s.* FROM {self.source} s JOIN manifest m USING (snapshot_id)
            WHERE m.linear
            UNION ALL BY NAME
            SELECT * FROM _fixup_{self.table}
            """
        )

    def _empty_fixup(self) -> pa.Table:
        stored = stored_schema(self.table)
        return pa.schema([pa.field("idx", pa.int64()), *stored]).empty_table()

    def _chain(self, snapshot_id: str) -> list[str]:
        snapshots = self._snapshots
        chain: list[str] = []
        current: str | None = snapshot_id
        while current is not None and current in snapshots.position and current not in chain:
            chain.append(current)
            i = snapshots.position[current]
            if snapshots.full[i]:
                break
            current = snapshots.bases[i]
        return chain

    def chain_state(self, snapshot_id: str) -> pa.Table:
        """The exact rows of a snapshot, from its own chain of bases."""
        chain = pa.table({"snapshot_id": self._chain(snapshot_id)})
        chain = chain.append_column("depth", pa.array(range(chain.num_rows), pa.int64()))
        self.con.register("_chain", chain)
        try:
            return arrow(
                self.con,
                f"""
                SELECT {_cols(self.columns)} FROM (
                    SELECT s.*, c.depth FROM {self.source} s JOIN _chain c USING (snapshot_id)
                    QUALIFY row_number() OVER (PARTITION BY {_cols(self.keys)}
                                               ORDER BY c.depth) = 1
                ) WHERE NOT {DELETED}
                """,
            )
        finally:
            self.con.unregister("_chain")

    def _fixup(self, position: int) -> pa.Table:
        ids = self._snapshots.ids
        previous_id = ids[position - 1] if position else None
        key = (self.table, ids[position], previous_id)
        if key not in self._cache:
            self._cache[key] = self._work_out(position)
        change = self._cache[key]
        # The position is stamped afresh: a snapshot committed since may have moved it.
        positions = pa.array([position] * change.num_rows, pa.int64())
        return change.set_column(0, "idx", positions)

    def _work_out(self, position: int) -> pa.Table:
        ids = self._snapshots.ids
        state = schema.conform(self.chain_state(ids[position]), schema.SNAPSHOT_TABLES[self.table])
        if position == 0:
            previous = schema.SNAPSHOT_TABLES[self.table].empty_table()
        else:
            previous = schema.conform(
                self.chain_state(ids[position - 1]),
                schema.SNAPSHOT_TABLES[self.table],
            )
        change = diff(self.con, self.table, state, previous)
        n = change.num_rows
        stamped = pa.table(
            {
                "idx": pa.array([position] * n, pa.int64()),
                "snapshot_id": pa.array([ids[position]] * n, pa.string()),
                "snapshot_at": pa.array([self._snapshots.time(position)] * n, schema.TIME),
            }
        )
        for name in change.column_names:
            stamped = stamped.append_column(name, change.column(name))
        return schema.conform(
            stamped, pa.schema([pa.field("idx", pa.int64()), *stored_schema(self.table)])
        )

    def anchor(self, k: int) -> int:
        """The last full, linear snapshot at or before position `k`."""
        snapshots = self._snapshots
        anchors = np.flatnonzero(snapshots.full[: k + 1] & snapshots.linear[: k + 1])
        return int(anchors[-1]) if len(anchors) else 0

    def _window(self, first: int, last: int) -> str:
        """The times of snapshots `first` to `last`, as a condition on `snapshot_at`.

        Redundant with the positions (ids, and so positions, sort by time), but a filter
        on a stored column reaches the Parquet scan, which then skips every day's file
        outside the window instead of reading a year of them.
        """
        low, high = (self._snapshots.time(i) for i in (first, last))
        return (
            f"snapshot_at BETWEEN '{low.isoformat()}'::TIMESTAMPTZ "
            f"AND '{high.isoformat()}'::TIMESTAMPTZ"
        )

    def state_sql(self, k: int, where: str = "true") -> str:
        """SQL for the rows at snapshot position `k`, without the snapshot columns."""
        first = self.anchor(k)
        return f"""
            SELECT {_cols(self.columns)} FROM (
                SELECT * FROM {self.name}
                WHERE idx BETWEEN {first} AND {k} AND {self._window(first, k)} AND ({where})
                QUALIFY row_number() OVER (PARTITION BY {_cols(self.keys)} ORDER BY idx DESC) = 1
            ) WHERE NOT {DELETED}
        """

    def history_sql(self, first: int, last: int, where: str = "true") -> str:
        """SQL for every snapshot's rows from position `first` to `last`, snapshot first."""
        start = self.anchor(first)
        return f"""
            WITH spans AS (
                SELECT *, lead(idx, 1, {last + 1}) OVER (
                    PARTITION BY {_cols(self.keys)} ORDER BY idx) AS until_idx
                FROM {self.name}
                WHERE idx BETWEEN {start} AND {last} AND {self._window(start, last)}
                  AND ({where})
            )
            SELECT m.snapshot_id, m.snapshot_at, {_cols(self.columns, "l")}
            FROM spans l JOIN manifest m
              ON m.idx >= greatest(l.idx, {first}) AND m.idx < l.until_idx
             AND m.idx <= {last}
            WHERE NOT l.{DELETED}
            ORDER BY m.idx, {_cols(self.keys, "l")}
        """

    def changes_sql(self, where: str = "true") -> str:
        """SQL for the log itself: one row per change, deletions included and flagged."""
        return f"SELECT * FROM {self.name} WHERE {where} ORDER BY idx, {_cols(self.keys)}"


def utc(when: When) -> datetime:
    """A time as an aware UTC datetime, to the microsecond.

    Args:
        when: A datetime, a pandas Timestamp or ISO 8601 text; a naive one is taken as
            UTC.

    Returns:
        The same instant in UTC.
    """
    stamp = pd.Timestamp(when)
    stamp = stamp.tz_localize(UTC) if stamp.tzinfo is None else stamp.tz_convert(UTC)
    return stamp.floor("us").to_pydatetime()

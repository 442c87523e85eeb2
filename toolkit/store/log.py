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

import duckdb
import numpy as np
import pyarrow as pa

from toolkit.frames import schema
from toolkit.store.columns import CHANGED, DELETED, PREVIOUS, stored_schema
from toolkit.store.connection import arrow, column_list
from toolkit.store.diff import diff
from toolkit.store.manifest import Snapshots

__all__ = ["Log"]


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
        first: int = 0,
    ):
        self.con = con
        # The first snapshot whose rows the log holds (`Recent`: a source of only the
        # files since, over which a change before could not be worked out).
        self._first = first
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
        fixups = [self._fixup(int(i)) for i in np.flatnonzero(~self._snapshots.linear)
                  if i >= self._first]  # fmt: skip
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
                SELECT {column_list(self.columns)} FROM (
                    SELECT s.*, c.depth FROM {self.source} s JOIN _chain c USING (snapshot_id)
                    QUALIFY row_number() OVER (PARTITION BY {column_list(self.keys)}
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
            SELECT {column_list(self.columns)} FROM (
                SELECT * FROM {self.name}
                WHERE idx BETWEEN {first} AND {k} AND {self._window(first, k)} AND ({where})
                QUALIFY row_number() OVER (
                    PARTITION BY {column_list(self.keys)} ORDER BY idx DESC) = 1
            ) WHERE NOT {DELETED}
        """

    def history_sql(self, first: int, last: int, where: str = "true") -> str:
        """SQL for every snapshot's rows from position `first` to `last`, snapshot first."""
        start = self.anchor(first)
        return f"""
            WITH spans AS (
                SELECT *, lead(idx, 1, {last + 1}) OVER (
                    PARTITION BY {column_list(self.keys)} ORDER BY idx) AS until_idx
                FROM {self.name}
                WHERE idx BETWEEN {start} AND {last} AND {self._window(start, last)}
                  AND ({where})
            )
            SELECT m.snapshot_id, m.snapshot_at, {column_list(self.columns, "l")}
            FROM spans l JOIN manifest m
              ON m.idx >= greatest(l.idx, {first}) AND m.idx < l.until_idx
             AND m.idx <= {last}
            WHERE NOT l.{DELETED}
            ORDER BY m.idx, {column_list(self.keys, "l")}
        """

    def window_sql(self, first: int, last: int) -> str:
        """SQL for the log of snapshots `first` to `last` alone, each key's row in force
        at `first - 1` before it (its state there: stamped with that snapshot, position
        and time, `_changed` and `_previous` null, so a query that follows the flagged
        rows reads it as the row before the window's first change). What the log holds
        from `first` on is then read from the window's files and the state's (from the
        last full snapshot before it), never the whole history's."""
        rows = f"""
            SELECT * FROM {self.name}
            WHERE idx BETWEEN {first} AND {last} AND {self._window(first, last)}
        """
        if first == 0:
            return rows
        k = first - 1
        start = self.anchor(k)
        stamped = [
            f"{k}::BIGINT AS idx",
            f"'{self._snapshots.ids[k]}' AS snapshot_id",
            f"'{self._snapshots.time(k).isoformat()}'::TIMESTAMPTZ AS snapshot_at",
        ]
        if CHANGED in stored_schema(self.table).names:
            stamped += [f"NULL::BOOLEAN AS {CHANGED}", f"NULL AS {PREVIOUS}"]
        return f"""
            SELECT * REPLACE ({", ".join(stamped)}) FROM (
                SELECT * FROM {self.name}
                WHERE idx BETWEEN {start} AND {k} AND {self._window(start, k)}
                QUALIFY row_number() OVER (
                    PARTITION BY {column_list(self.keys)} ORDER BY idx DESC) = 1
            ) WHERE NOT {DELETED}
            UNION ALL BY NAME
            {rows}
        """

    def changes_sql(self, where: str = "true") -> str:
        """SQL for the log itself: one row per change, deletions included and flagged."""
        return f"SELECT * FROM {self.name} WHERE {where} ORDER BY idx, {column_list(self.keys)}"

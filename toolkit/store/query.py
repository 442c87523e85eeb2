"""Reading the store: a table's history, its change log, its rows at a snapshot, a
snapshot as a `Workspace`, and SQL over views of all of it (`SnapshotStore`'s reading
methods delegate here; their docstrings are the contract).

Every read goes through the engine's manifest and its verified change logs (`engine`,
`verify`), so a read never returns values the snapshots did not hold.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime

import duckdb
import numpy as np
import pandas as pd
import pyarrow as pa

from toolkit.errors import QueryError
from toolkit.formatting import first_line
from toolkit.frames import Workspace, schema
from toolkit.frames.pull import project_id_list
from toolkit.store import events as store_events
from toolkit.store.columns import MANIFEST_STORED, stored_schema
from toolkit.store.connection import arrow
from toolkit.store.engine import StoreEngine
from toolkit.store.log import Log
from toolkit.store.views import Recent
from toolkit.store.writing import stamp
from toolkit.timestamps import When, utc

__all__ = ["Asking", "asking", "at", "changes", "query_arrow", "read_history", "workspace"]

_QUERY_VIEWS = (
    "snapshots",
    *schema.SNAPSHOT_TABLES,
    *(f"{name}_changes" for name in schema.SNAPSHOT_TABLES),
    "events",
)


def read_history(
    engine: StoreEngine,
    table: str,
    since: When | None = None,
    until: When | None = None,
    project_ids: Sequence[str] | None = None,
) -> pd.DataFrame:
    """`SnapshotStore.history`."""
    if table == "events":
        return _events(engine, since, until, project_ids)
    result_schema = schema.with_snapshot(schema.table_schema(table))
    manifest = engine.manifest()
    times = _times(manifest)
    inside = np.ones(len(times), bool)
    if since is not None:
        inside &= times >= _micros(since)
    if until is not None:
        inside &= times <= _micros(until)
    positions = np.flatnonzero(inside).tolist()
    if not positions:
        return schema.empty_frame(result_schema)

    def read(log: Log) -> pa.Table:
        sql = log.history_sql(positions[0], positions[-1], _project_filter(log, project_ids))
        return arrow(log.con, sql)

    return schema.to_pandas(engine.read(table, manifest, read), result_schema)


def _events(
    engine: StoreEngine, since: When | None, until: When | None, project_ids: Sequence[str] | None
) -> pd.DataFrame:
    engine.tables.begin()
    with engine.read_as_damage():
        if engine.tables.unlike_listed("events"):
            raise OSError("a data file of events is not the file its log lists")
        return store_events.history(
            engine.tables, since=since, until=until, project_ids=project_ids
        )


def changes(
    engine: StoreEngine, table: str, project_ids: Sequence[str] | None = None
) -> pd.DataFrame:
    """`SnapshotStore.changes`."""
    if table not in schema.SNAPSHOT_TABLES:
        raise ValueError(f"changes are kept for {', '.join(schema.SNAPSHOT_TABLES)}, not {table!r}")
    log_schema = pa.schema([pa.field("idx", schema.COUNT), *stored_schema(table)])
    manifest = engine.manifest()
    if manifest.num_rows == 0:
        return schema.empty_frame(log_schema)

    def read(log: Log) -> pa.Table:
        return arrow(log.con, log.changes_sql(_project_filter(log, project_ids)))

    return schema.to_pandas(engine.read(table, manifest, read), log_schema)


def at(engine: StoreEngine, table: str, when: datetime | None) -> pd.DataFrame:
    """The rows of a table at the newest snapshot taken at or before `when` (None: the
    newest), ordered by the table's key; events up to `when`."""
    if table == "events":
        return read_history(engine, "events", until=when)
    manifest = engine.manifest()
    result_schema = schema.with_snapshot(schema.table_schema(table))
    times = _times(manifest)
    chosen = np.flatnonzero(times <= _micros(when)) if when is not None else np.arange(len(times))
    if not len(chosen):
        return schema.empty_frame(result_schema)
    k = int(chosen[-1])
    snapshot_id = manifest.column("snapshot_id")[k].as_py()
    with engine.lock:
        last = engine.last
        cached = last[1][table] if last and last[0] == snapshot_id else None
    if cached is None:
        cached = engine.kept_rows(table, snapshot_id, manifest)
    if cached is None:
        cached = engine.read(table, manifest, lambda log: arrow(log.con, log.state_sql(k)))
    taken = manifest.column("snapshot_at")[k].as_py()
    rows = stamp(
        schema.conform(cached, schema.SNAPSHOT_TABLES[table]), snapshot_id, taken, result_schema
    )
    # By key: the files' order depends on which snapshot last changed each row.
    rows = rows.sort_by([(key, "ascending") for key in schema.KEYS[table]])
    return schema.to_pandas(rows, result_schema)


def _times(manifest: pa.Table) -> np.ndarray:
    """The snapshots' times as int64 microseconds (UTC), in manifest order: compared as
    numbers, not as a year of Python datetimes (8,760 of them made at each read)."""
    return np.asarray(manifest.column("snapshot_at").to_numpy(), "datetime64[us]").view("int64")


def _micros(when: When) -> int:
    """A moment as `_times` gives the snapshots' (a naive one is UTC, as `utc` reads it)."""
    return int(np.datetime64(utc(when).replace(tzinfo=None), "us").view("int64"))


def workspace(engine: StoreEngine, snapshot_id: str | None, store: str) -> Workspace | None:
    """`SnapshotStore.workspace`; `store` names the store in the refusal."""
    manifest = engine.manifest()
    ids = manifest.column("snapshot_id").to_pylist()
    if not ids:
        return None
    chosen = ids[-1] if snapshot_id is None else snapshot_id
    if chosen not in ids:
        raise ValueError(f"no snapshot {chosen!r} in {store}; see store.snapshots()")
    row = manifest.slice(ids.index(chosen), 1).to_pylist()[0]
    state = engine.state(chosen, manifest)
    frames = {name: schema.to_pandas(t, schema.SNAPSHOT_TABLES[name]) for name, t in state.items()}
    return Workspace(
        **frames,
        pulled_at=row["snapshot_at"],
        requests=row["requests"] or 0,
        seconds=row["seconds"] or 0.0,
        details=row["details"] or "none",
    )


def _refuse_outside(window: tuple[int, int] | None, snapshots: int) -> None:
    """A window must be positions of the store's snapshots, first before last."""
    if window is not None and not 0 <= window[0] <= window[1] < snapshots:
        raise ValueError(
            f"the window {window} is not snapshots of this store (positions 0 to "
            f"{snapshots - 1}, first before last); see store.snapshots()"
        )


def query_arrow(
    engine: StoreEngine,
    sql: str,
    frames: Mapping[str, pd.DataFrame | pa.Table] | None = None,
    window: tuple[int, int] | None = None,
) -> pa.Table:
    """`SnapshotStore.query_arrow`: only the views the SQL names are made (making one
    costs DuckDB a look at every file under it, some 5 ms each on a year). `window`:
    the snapshots' positions the table views hold (`Log.window_sql`, `history_sql`)."""
    manifest = engine.manifest()
    _refuse_outside(window, manifest.num_rows)
    # Only the tables the SQL names (opening each costs a read of its log), and always
    # one, whose connection runs the query.
    lowered = _without_comments(sql).lower()
    named = [
        name
        for name in schema.SNAPSHOT_TABLES
        if _mentions(lowered, name) or _mentions(lowered, f"{name}_changes")
    ] or ["projects"]
    return engine.with_logs(
        named, manifest, lambda logs: _answer(engine, manifest, logs, sql, frames, window)
    )


class Asking:
    """Several queries over one connection to the same change logs (`asking`): the
    tables verified and their views made once, not once a query."""

    def __init__(self, engine: StoreEngine, manifest: pa.Table, logs: dict[str, Log]) -> None:
        self._engine, self._manifest, self._logs = engine, manifest, logs

    def arrow(
        self, sql: str, frames: Mapping[str, pd.DataFrame | pa.Table] | None = None
    ) -> pa.Table:
        """`SnapshotStore.query_arrow`'s answer to `sql`, over the tables this was
        opened with."""
        with self._engine.read_as_damage():
            return _answer(self._engine, self._manifest, self._logs, sql, frames, None)


@contextmanager
def asking(
    engine: StoreEngine, tables: Sequence[str], recent: Recent | None = None
) -> Iterator[Asking]:
    """`SnapshotStore.asking`: the tables' logs open for several queries, closed on
    leaving."""
    manifest = engine.manifest()
    with engine.logs_open(list(tables), manifest, recent) as logs:
        yield Asking(engine, manifest, logs)


def _mentions(lowered: str, view: str) -> bool:
    return re.search(rf"\b{view}\b", lowered) is not None


def _answer(
    engine: StoreEngine,
    manifest: pa.Table,
    logs: dict[str, Log],
    sql: str,
    frames: Mapping[str, pd.DataFrame | pa.Table] | None,
    window: tuple[int, int] | None,
) -> pa.Table:
    """`sql` on the connection of `logs`, with the views it names made over them."""
    lowered = _without_comments(sql).lower()
    con = next(iter(logs.values())).con
    for name, frame in (frames or {}).items():
        con.register(name, frame)
    first, last = window if window is not None else (0, manifest.num_rows - 1)
    for name, log in logs.items():
        if _mentions(lowered, name):
            body = (
                log.history_sql(first, last)
                if last >= 0
                else f"SELECT * FROM {log.name} WHERE false"
            )
            con.execute(f"CREATE OR REPLACE TEMP VIEW {name} AS {body}")
        if _mentions(lowered, f"{name}_changes"):
            # Unordered, like any SQL view: sorting millions of change rows first
            # would cost a query that only aggregates them a second or more.
            body = (
                log.window_sql(first, last) if window is not None else f"SELECT * FROM {log.name}"
            )
            con.execute(f"CREATE OR REPLACE TEMP VIEW {name}_changes AS {body}")
    con.execute(
        "CREATE OR REPLACE TEMP VIEW snapshots AS SELECT "
        + ", ".join(f'"{name}"' for name in MANIFEST_STORED.names)
        + " FROM manifest ORDER BY snapshot_id"
    )
    if _mentions(lowered, "events"):
        events = read_history(engine, "events")
        con.register("events", schema.from_pandas(events, schema.EVENTS))
    try:
        return arrow(con, sql)
    except duckdb.ProgrammingError as error:
        # The SQL's fault (syntax, a view or column that does not exist), not the
        # store's: say so, not "damaged".
        views = ", ".join([*_QUERY_VIEWS, *(frames or {})])
        raise QueryError(
            f"the SQL could not run: {first_line(error)}. The views are {views}"
        ) from error


def _project_filter(log: Log, project_ids: Sequence[str] | None) -> str:
    if project_ids is None:
        return "true"
    log.con.register(
        "_project_ids",
        pa.table({"project_id": pa.array(project_id_list(project_ids), pa.string())}),
    )
    return "project_id IN (SELECT project_id FROM _project_ids)"


# A quoted text or name (kept), or a `--` comment (dropped).
_QUOTED_OR_COMMENT = re.compile(r"""('(?:[^']|'')*'|"(?:[^"]|"")*")|--[^\n]*""")


def _without_comments(sql: str) -> str:
    """The SQL without its `--` comments, which name no view."""
    return _QUOTED_OR_COMMENT.sub(lambda found: found.group(1) or "", sql)

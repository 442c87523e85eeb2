"""The run figures' SQL over the store's Delta tables, for an engine that reads the store
without the toolkit: the views the queries of `runs.py` read, defined on the tables
themselves, the whole script to paste into DuckDB, and DuckDB running it here.

The queries read seven names (`runs.py`): `projects_changes`, `chapters_changes`,
`languages_changes`, `exports_changes` (each table's change rows of committed snapshots,
with `idx`, the snapshot's position in the history), `snapshots`, `snapshot_times` and
`terminal_events`. The toolkit
makes them from its verified change logs (`store.query`); here they are views over the
tables `manifest`, `projects`, `chapters`, `languages`, `exports` and `events` (docs/store.md,
"Reading it without the toolkit"). The two agree on a store whose every snapshot is based
on the one before (what one scheduled `toolkit snapshot` writes): the toolkit also
reconciles snapshots taken concurrently or backfilled, which SQL over the files does not
(docs/store.md says how to find them).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import duckdb
import pandas as pd
from deltalake import DeltaTable

from toolkit.analysis.sql.runs import REFERENCES, figure_frame, figure_sql
from toolkit.errors import QueryError, ToolkitError
from toolkit.store import SnapshotStore
from toolkit.store.columns import stored_schema

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = [
    "FIGURES",
    "figure_known",
    "has_events",
    "has_exports",
    "read_first",
    "run_figure",
    "script",
    "script_tables",
    "views_sql",
]

FIGURES = tuple(REFERENCES)
"""The figures the SQL defines, each the toolkit function of the same name."""

SNAPSHOT_TABLES = ("projects", "chapters", "languages", "exports")
TERMINAL = ("chapter.finished", "chapter.failed")

# Each committed snapshot's position in the history: ids sort by snapshot time.
_POSITIONS = "SELECT snapshot_id, row_number() OVER (ORDER BY snapshot_id) - 1 AS idx FROM manifest"


def views_sql(*, events: bool) -> list[str]:
    """The statements that define the names the queries read over the store's tables
    (`manifest`, the four snapshot tables and, with `events`, `events`), in order."""
    views = [
        f"CREATE OR REPLACE TEMP VIEW snapshot_positions AS {_POSITIONS}",
        # The committed snapshots, as the toolkit's `store.query` names them.
        "CREATE OR REPLACE TEMP VIEW snapshots AS SELECT * FROM manifest",
        "CREATE OR REPLACE TEMP VIEW snapshot_times AS\n"
        "SELECT row_number() OVER (ORDER BY snapshot_id) - 1 AS idx,\n"
        "       epoch_us(snapshot_at) AS at_us\nFROM manifest",
    ]
    views += [
        f"CREATE OR REPLACE TEMP VIEW {table}_changes AS\n"
        f"SELECT p.idx, t.* FROM {table} t JOIN snapshot_positions p USING (snapshot_id)"
        for table in SNAPSHOT_TABLES
    ]
    if events:
        kinds = ", ".join(f"'{kind}'" for kind in TERMINAL)
        # The first copy of each delivery, in the order the store reads them
        # (`store.history("events")`), and the reason a failure gave.
        views.append(
            f"""CREATE OR REPLACE TEMP VIEW terminal_events AS
SELECT chapter_id, type, epoch_us("timestamp") AS at_us,
       json_extract_string(data, '$.failureReason') AS reason,
       row_number() OVER (ORDER BY "timestamp", received_at, webhook_id) - 1 AS ord
FROM (SELECT * FROM events
      QUALIFY row_number() OVER (PARTITION BY webhook_id ORDER BY received_at, "timestamp") = 1)
WHERE type IN ({kinds}) AND chapter_id IS NOT NULL"""
        )
    return views


# A store where no file was ever prepared has no exports table yet (the first file
# writes it): the columns the queries read, no rows.
_NO_EXPORTS = (
    "CREATE OR REPLACE VIEW exports AS SELECT NULL::VARCHAR AS chapter_id, "
    "NULL::BIGINT AS page_count, NULL::TIMESTAMPTZ AS prepared_at, "
    "NULL::VARCHAR AS snapshot_id, NULL::BOOLEAN AS _deleted WHERE false;"
)


def script_tables(*, events: bool, exports: bool) -> list[str]:
    """The tables a printed script reads from the store: the manifest, the service's
    snapshot tables (exports only once a file was prepared) and, when they count, the
    events."""
    tables = ["manifest", *SNAPSHOT_TABLES, *(["events"] if events else [])]
    return tables if exports else [name for name in tables if name != "exports"]


def script(figure: str, root: str, *, events: bool, exports: bool = True) -> str:
    """The whole DuckDB script for `figure` over the store at `root` (a folder or an
    `s3://` URI), read with DuckDB's `delta` extension (and `httpfs` for S3): for
    `duckdb < figure.sql`. `events`: the store holds terminal webhook events;
    `exports`: it holds an exports table (a prepared file was seen).
    Times in the result are microseconds since the epoch, as the queries count them
    (`make_timestamp(started_at)` reads one)."""
    figure_known(figure)
    lines = [f"-- {figure}, as toolkit.analysis.sql defines it, over the store {root}",
             "INSTALL delta; LOAD delta;"]  # fmt: skip
    if "://" in root:
        lines += [
            "INSTALL httpfs; LOAD httpfs;",
            "CREATE SECRET (TYPE s3, PROVIDER credential_chain);  -- or KEY_ID / SECRET / REGION",
        ]
    lines.append("SET TimeZone = 'UTC';")
    base = root.rstrip("/").replace("'", "''")
    tables = script_tables(events=events, exports=exports)
    if not exports:
        lines.append(_NO_EXPORTS)
    lines += [
        f"CREATE OR REPLACE VIEW {name} AS SELECT * FROM delta_scan('{base}/{name}');"
        for name in tables
    ]
    statements = [*views_sql(events=events), figure_sql(figure, events=events).strip()]
    return "\n".join(lines) + "\n\n" + ";\n\n".join(statements) + ";\n"


def has_exports(root: str, storage_options: Mapping[str, str] | None = None) -> bool:
    """Whether the store at `root` has its exports table (written with the first file
    a snapshot saw prepared)."""
    path = f"{root.rstrip('/')}/exports"
    return bool(DeltaTable.is_deltatable(path, storage_options=dict(storage_options or {})))


def has_events(root: str, storage_options: Mapping[str, str] | None = None) -> bool:
    """Whether the store at `root` holds a terminal webhook event (the queries then match
    runs with them, as the toolkit does)."""
    path = f"{root.rstrip('/')}/events"
    options = dict(storage_options or {})
    if not DeltaTable.is_deltatable(path, storage_options=options):
        return False
    con = duckdb.connect()
    try:
        con.register("events", DeltaTable(path, storage_options=options).to_pyarrow_dataset())
        kinds = ", ".join(f"'{kind}'" for kind in TERMINAL)
        found = con.execute(
            f"SELECT count(*) FROM events WHERE type IN ({kinds}) AND chapter_id IS NOT NULL"
        ).fetchone()
    finally:
        con.close()
    return bool(found and found[0])


def read_first(
    root: str, storage_options: Mapping[str, str] | None = None, *, shown: str | None = None
) -> bool:
    """Whether the store at `root` holds terminal events, once the toolkit's own read
    of it passed: a store in an earlier layout (whose rows lack what the queries read),
    a damaged one or one with no snapshot is refused in words that say what to do.
    `shown`: how the user named the store (Spark's `s3a://`), for those words."""
    options = dict(storage_options or {})
    if SnapshotStore(root, storage_options=options).snapshots().empty:
        raise ToolkitError(
            f"the store {shown or root} holds no snapshot yet: take one with "
            f"`toolkit snapshot --store {root}`, then ask again"
        )
    return has_events(root, options)


def run_figure(
    figure: str, root: str, *, storage_options: Mapping[str, str] | None = None
) -> pd.DataFrame:
    """`figure` worked out by DuckDB from the store's Delta tables alone, through the
    views of `views_sql` (the tables read with `deltalake`, as docs/store.md's DuckDB
    section does): the frame the toolkit function of that name gives (`FIGURES`; the
    periods of `credit_spend` and `throughput` are days)."""
    figure_known(figure)
    root = str(root).rstrip("/")
    options = dict(storage_options or {})
    events = read_first(root, options)
    con = duckdb.connect()
    try:
        con.execute("SET TimeZone = 'UTC'")
        for name in ["manifest", *SNAPSHOT_TABLES, *(["events"] if events else [])]:
            if name == "exports" and not has_exports(root, options):
                con.register(name, stored_schema(name).empty_table())  # none prepared yet
                continue
            table = DeltaTable(f"{root}/{name}", storage_options=options)
            con.register(name, table.to_pyarrow_dataset())
        for statement in views_sql(events=events):
            con.execute(statement)
        return figure_frame(con.sql(figure_sql(figure, events=events)).to_arrow_table())
    finally:
        con.close()


def figure_known(figure: str) -> None:
    """Refuses a figure no SQL defines, naming those that are."""
    if figure not in FIGURES:
        raise QueryError(f"no SQL defines {figure!r}: choose one of {', '.join(FIGURES)}")

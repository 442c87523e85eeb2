"""The DuckDB connection the store queries with, and the SQL it writes names into.

One in-memory database is shared by the whole process: opening one costs some 20 ms,
a cursor on it almost nothing, and a store runs a handful of queries per read.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

import duckdb
import pyarrow as pa

__all__ = ["arrow", "column_list", "connect", "q"]


def q(name: str) -> str:
    """A name quoted as a SQL identifier."""
    return '"' + name.replace('"', '""') + '"'


def column_list(names: Sequence[str], alias: str | None = None) -> str:
    """Names quoted and joined for a SQL select list, each after `alias.` when given."""
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
            # Freed memory goes back to the system within a second, not at the next
            # query: jemalloc keeps a query's freed pages until DuckDB allocates again,
            # and the work after a query is pandas' (a year's review moves left 600 MiB
            # of them held through the weekly page's peak).
            _database.execute("SET allocator_background_threads = true")
        con = _database.cursor()
    # Times come back as UTC whatever the machine's zone.
    con.execute("SET TimeZone = 'UTC'")
    return con


def arrow(con: duckdb.DuckDBPyConnection, sql: str, params: Sequence[object] = ()) -> pa.Table:
    """A query's answer as an Arrow table."""
    return con.sql(sql, params=list(params) or None).to_arrow_table()

"""A table's rows as a DuckDB view over its files: every file of its current version,
or, for a reader of the snapshots since one of them alone (`Recent`:
`SnapshotStore.asking(since=)`), the files that may hold their rows.

On a local disk, a table of plain Parquet files (reader protocol 1, which is all this
store writes) is read by DuckDB's own Parquet reader over the files of the table's
current version: on a year of history some three times faster than through an Arrow
dataset, and it still skips files by their statistics. Other tables (object stores,
tables an engine wrote with newer reader features) go through delta-rs's Arrow dataset.
Either way a column the table never had reads as null.

A question about what changed since a kept state (the run stages' update after a
snapshot) reads an hour of a year. DuckDB skips a year's older files by their
statistics too, but only after opening each of them, some eighty files a table: the
view of such a question holds the files that may have its rows alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
from deltalake import DeltaTable

from toolkit.store.manifest import Snapshots
from toolkit.store.tables import columns

if TYPE_CHECKING:
    from toolkit.store.tables import Tables

__all__ = ["Recent", "expose", "files_since"]


@dataclass(frozen=True)
class Recent:
    """What a reader reads of `tables`: only the rows of the snapshots from position
    `first` on, by `idx` and by `snapshot_at` (at least that snapshot's time), so their
    logs need hold no other."""

    first: int
    tables: frozenset[str]

    def reaches(self, manifest: pa.Table) -> tuple[int, datetime | None]:
        """Where the logs may start: `first` and its time when every snapshot from it on
        is linear (stored as its change, none worked out from the states before); else
        0 and None, the whole logs."""
        snapshots = Snapshots.of(manifest)
        if self.first >= len(snapshots.ids) or not snapshots.linear[self.first :].all():
            return 0, None
        return self.first, snapshots.time(self.first)


def expose(
    tables: Tables,
    con: duckdb.DuckDBPyConnection,
    view: str,
    name: str,
    schema: pa.Schema,
    *,
    since: datetime | None = None,
) -> None:
    """Make the rows of the table `name` readable in DuckDB as `view`, with the columns
    of `schema`. `since`: the caller reads only rows of snapshots taken at or after it,
    and the view holds only the files that may have one (`files_since`)."""
    table = tables.get(name)
    files = files_since(table, since) if table is not None else []
    present = columns(table) if table is not None else set()
    # A column the table never had (one added to the store since it was written)
    # reads as null.
    listed_columns = ", ".join(
        f'"{field.name}"' if field.name in present or table is None
        else f'CAST(NULL AS {_duckdb_type(con, field)}) AS "{field.name}"'
        for field in schema
    )  # fmt: skip
    if table is None or not files or not tables.plain(table):
        con.register(f"{view}_dataset", tables.dataset(name, schema))
        source = f"{view}_dataset"
    else:
        listed = ", ".join("'" + uri.replace("'", "''") + "'" for uri in files)
        source = f"read_parquet([{listed}], union_by_name = true)"
    con.execute(f"CREATE OR REPLACE TEMP VIEW {view} AS SELECT {listed_columns} FROM {source}")


def files_since(table: DeltaTable, since: datetime | None) -> list[str]:
    """The table's files (`file_uris`), but those whose rows were all taken before
    `since` by the statistics its commits keep; a file without them is kept."""
    files = table.file_uris()
    if since is None:
        return files
    actions = pa.table(table.get_add_actions(flatten=True))
    column = "max.snapshot_at"
    if column not in actions.column_names:
        return files
    newest = actions.column(column).cast(pa.timestamp("us", tz="UTC"))
    recent = pc.fill_null(pc.greater_equal(newest, pa.scalar(since, newest.type)), True)
    # By file name: the table writes each under a name of its own (a UUID).
    paths = pc.filter(actions.column("path"), recent).to_pylist()
    kept = {path.rsplit("/", 1)[-1] for path in paths}
    return [uri for uri in files if uri.rsplit("/", 1)[-1] in kept]


def _duckdb_type(con: duckdb.DuckDBPyConnection, field: pa.Field) -> str:
    """The DuckDB type a column of this Arrow type reads as (DuckDB's own answer)."""
    return str(con.from_arrow(pa.schema([field]).empty_table()).types[0])

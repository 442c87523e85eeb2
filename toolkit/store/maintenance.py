"""Keeping the store's Delta tables small and quick as snapshots accrue.

An hourly `take` appends one small file per changed table. Left alone, a year of them
is some 35,000 files and as many log entries, and reads slow down. So, once a day (on
the first snapshot of a new day, or when `compact()` is called):

- **Merge**: a past day's files become one file, and a past week's day files one file,
  sorted by key then snapshot, so that a chapter's history sits together and
  compresses well; in the tables with `_changed`, its flagged rows come first (a run
  or a line count is read from those alone, and a reader skips the rest of the file
  sooner: on a year, the runs' query reads its rows in half the time). The manifest
  and the projects, small and read whole, keep a file a month instead. Each
  merge is one Delta commit that replaces exactly the rows of that period
  (`overwrite` with a predicate on the time column): readers see the same rows before
  and after, and a reader still on the older version keeps its files until `vacuum`
  removes them `retention` later. A merge that loses a race with another writer's
  merge is given up; the next day's run does it. Files group by the time column's
  statistics, so a week file covers one week and a read of a time window skips the
  others.
- **Checkpoint** and **log cleanup**: a checkpoint, then log entries older than the
  retention removed (`cleanup_metadata`); the per-commit cleanup is off (see `tables`).
- **Vacuum** (`full=True`): data files no longer referenced, and files a crashed write
  left unreferenced, once older than the retention.

The history never depends on Delta's time travel: every row carries its snapshot, so
vacuum may remove any old version.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import NamedTuple

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
from deltalake import CommitProperties, DeltaTable, write_deltalake
from deltalake.exceptions import CommitFailedError, DeltaError

from toolkit.frames import schema
from toolkit.store.columns import CHANGED, TRACKED
from toolkit.store.tables import WRITER, Tables
from toolkit.timestamps import utc

__all__ = ["Layout", "SortKeys", "in_layout_order", "layout", "maintain", "spans"]

SortKeys = list[tuple[str, str]]  # column, "ascending" or "descending"
# A sort key, not a stored column: `_changed` with null (rows older than the flag) read
# as true. (pyarrow before 25 places nulls for all keys at once, not per key.)
_FLAGGED = "_flagged"


class Layout(NamedTuple):
    """How a table's files are merged: by which time, in which order, by month or week."""

    time: str  # the column files are grouped by
    order: SortKeys  # of the rows in a merged file
    monthly: bool  # a past month's files into one, not a past week's


def layout() -> dict[str, Layout]:
    """How each table's files are merged. The manifest and the projects (and their
    groups) are small and read whole by every question: a file a month (a year of week
    files is fifty files, and opening each costs more than reading it; one file for all
    would put the whole history's commits in one file, lost together if it were
    damaged)."""
    tables: dict[str, Layout] = {}
    for name in schema.SNAPSHOT_TABLES:
        flagged_first = [(_FLAGGED, "descending")] if name in TRACKED else []
        keys = [(column, "ascending") for column in [*schema.KEYS[name], "snapshot_id"]]
        small = name in ("projects", "project_groups")
        tables[name] = Layout("snapshot_at", flagged_first + keys, monthly=small)
    tables["events"] = Layout(
        "received_at", [("received_at", "ascending"), ("webhook_id", "ascending")], monthly=False
    )
    tables["manifest"] = Layout("snapshot_at", [("snapshot_id", "ascending")], monthly=True)
    return tables


def in_layout_order(rows: pa.Table, name: str) -> pa.Table:
    """Rows of table `name` in the order its merged files keep them (`layout`): the
    flagged rows first when the rows have the flag (a table an earlier toolkit wrote
    may not, until the store is upgraded), then by key and snapshot."""
    order = layout()[name].order
    keys = rows
    if CHANGED in rows.column_names:
        keys = rows.append_column(_FLAGGED, pc.fill_null(rows.column(CHANGED), True))
    else:
        order = [key for key in order if key[0] != _FLAGGED]
    return rows.take(pc.sort_indices(keys, order))


def spans(
    rows: pa.Table, column: str, *, monthly: bool
) -> Iterator[tuple[datetime, datetime, pa.Table]]:
    """The rows a week (Monday to Monday, UTC) or a month at a time, by `column`, with
    each period's bounds: how a migration or an upgrade writes them, as merges keep
    them."""
    if rows.num_rows == 0:
        return
    times = rows.column(column)
    low = utc(pc.min(times).as_py())
    high = utc(pc.max(times).as_py())
    start = datetime(low.year, low.month, 1 if monthly else low.day, tzinfo=UTC)
    if not monthly:
        start -= timedelta(days=start.weekday())
    while start <= high:
        end = (start + timedelta(days=31)).replace(day=1) if monthly else start + timedelta(days=7)
        mask = pc.and_(
            pc.greater_equal(times, pa.scalar(start, times.type)),
            pc.less(times, pa.scalar(end, times.type)),
        )
        part = rows.filter(mask)
        if part.num_rows:
            yield start, end, part
        start = end


def maintain(tables: Tables, today: datetime | None) -> dict[str, int]:
    """Merge, checkpoint, clean the log and vacuum every table; returns the number of
    files merged per table. Periods before `today`'s day are merged; every period with
    `today=None`, as `compact()` does (whatever this machine's clock says: a store may
    hold times ahead of it)."""
    merged: dict[str, int] = {}
    for name in layout():
        table = tables.get(name)
        if table is None:
            continue
        merged[name] = _merge(table, name, today)
        table.update_incremental()
        table.create_checkpoint()
        table.cleanup_metadata()
        table.vacuum(
            retention_hours=int(tables.retention.total_seconds() // 3600),
            enforce_retention_duration=False,
            dry_run=False,
            full=True,
        )
    return merged


def _periods(
    table: DeltaTable, kept: Layout, today: datetime | None
) -> dict[tuple[datetime, datetime], int]:
    """The table's files grouped by the period (day, week or month) each lies in whole."""
    actions = pa.table(table.get_add_actions(flatten=True))
    lows = actions.column(f"min.{kept.time}").to_pylist()
    highs = actions.column(f"max.{kept.time}").to_pylist()
    if today is None:
        day = week = datetime.max.replace(tzinfo=UTC)  # every period is past
    else:
        day = datetime(today.year, today.month, today.day, tzinfo=UTC)
        week = day - timedelta(days=day.weekday())
    groups: dict[tuple[datetime, datetime], int] = defaultdict(int)
    straddling: list[tuple[datetime, datetime]] = []
    for low, high in zip(lows, highs, strict=True):
        if low is None or high is None or high >= day:
            continue
        low, high = utc(low), utc(high)
        if kept.monthly:
            # This month's so far until it ends: the span never reaches today's rows.
            start = datetime(low.year, low.month, 1, tzinfo=UTC)
            end = min((start + timedelta(days=31)).replace(day=1), day)
        elif high < week:
            start = datetime(low.year, low.month, low.day, tzinfo=UTC)
            start -= timedelta(days=start.weekday())
            end = start + timedelta(days=7)
        else:
            start = datetime(low.year, low.month, low.day, tzinfo=UTC)
            end = start + timedelta(days=1)
        if high < end:
            groups[(start, end)] += 1
        else:
            straddling.append((low, high))
    return {
        span: count
        for span, count in groups.items()
        if count > 1 and not any(lo < span[1] and hi >= span[0] for lo, hi in straddling)
    }


def _merge(table: DeltaTable, name: str, today: datetime | None) -> int:
    merged = 0
    kept = layout()[name]
    column = kept.time
    for (start, end), count in sorted(_periods(table, kept, today).items()):
        field = ds.field(column)
        low, high = pa.scalar(start, schema.TIME), pa.scalar(end, schema.TIME)
        rows = table.to_pyarrow_dataset().to_table(filter=(field >= low) & (field < high))
        rows = in_layout_order(rows, name)
        predicate = f"{column} >= '{start.isoformat()}' AND {column} < '{end.isoformat()}'"
        try:
            write_deltalake(
                table,
                rows,
                mode="overwrite",
                predicate=predicate,
                commit_properties=CommitProperties(custom_metadata={"toolkit.operation": "merge"}),
                writer_properties=WRITER,
            )
        except (CommitFailedError, DeltaError):
            # Another process merged or changed this period meanwhile: leave it.
            table.update_incremental()
            continue
        merged += count
    return merged

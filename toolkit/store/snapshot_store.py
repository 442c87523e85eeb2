"""SnapshotStore: a workspace's history as Parquet files, read with DuckDB.

```python
store = tk.SnapshotStore("data/snapshots")       # or "s3://bucket/snapshots"
info = store.take(client)                        # pull and write one snapshot
store.history("chapters", since="2026-01-01")    # every snapshot's rows
store.latest("languages"); store.as_of("chapters", when)
store.query("SELECT project_id, max(credits_spent) FROM chapters GROUP BY 1")
```

Layout (hive partitioning, one folder per table):

```
<root>/manifest/<snapshot_id>.parquet                          a snapshot's row: its commit
<root>/<table>/snapshot_date=YYYY-MM-DD/<snapshot_id>.parquet  projects, chapters, languages,
                                                               exports
<root>/events/received_date=YYYY-MM-DD/<batch_id>.parquet      webhook events
<root>/<folder>/compact-<id>.parquet                           merged by compact()
```

What a snapshot's files hold: only the rows that changed since the snapshot it was
based on, each stamped with `snapshot_id` and `snapshot_at`, plus the rows that went
away flagged `_deleted`; every `FULL_EVERY`-th snapshot (and the first) holds every row.
A year of hourly snapshots of a large workspace is then the size of its changes, not
8,760 copies of it. The reading methods behave as if every snapshot were stored whole
(`_store_log` explains how); `query` offers both views (`chapters`, and the change log
`chapters_changes`). Other engines (Spark, Trino) read the same files: a table's rows
at a snapshot are the newest row per key at or before it, since the last full snapshot,
dropping `_deleted`, and only snapshots with a manifest row count.

Files are few and large, as DuckDB likes them: `compact()` merges each folder into one
sorted file (keyed by snapshot, so uncommitted rows stay invisible), and on a local
disk `take` does it as it goes, for past days once a new day starts and for the
manifest every `MANIFEST_BATCH` snapshots. Within a file rows are sorted by key, so a
chapter's history sits together, compresses well, and a project filter skips row groups.

Writes are atomic: each file appears complete under its final name or not at all (see
`_store_files`), and the manifest row is written last. Readers ignore every row whose
snapshot has no manifest row, so a crash at any point leaves the store readable and
the half-written snapshot invisible. Ids sort by snapshot time and are unique across
processes, and no file is ever rewritten in place, so two processes taking snapshots
into one store never overwrite each other; a snapshot written concurrently with another
is reconciled when read.

Decisions the design leaves open: a naive `at` or `since`/`until` is taken as UTC;
`latest`, `as_of` and `history` rows carry the id and time of the snapshot they show;
`history("events")` filters on the event's `timestamp` (the service's clock, like
`snapshot_at`), not on when it was received; two snapshots at the same time are ordered
as they were taken (the service's `Date` header counts whole seconds).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TypeVar

import duckdb
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from toolkit.config import store_path
from toolkit.frames import Details, Workspace, pull, schema
from toolkit.frames.pull import project_id_list
from toolkit.store import events as _store_events
from toolkit.store.files import Files, new_id, resolve
from toolkit.store.log import (
    FULL_EVERY,
    MANIFEST_STORED,
    Log,
    When,
    arrow,
    connect,
    diff,
    order_manifest,
    stored_schema,
    utc,
)

if TYPE_CHECKING:
    import pyarrow.fs as pafs

    from toolkit.client import Client

T = TypeVar("T")
MANIFEST_BATCH = 48  # small manifest files that make take() merge them


@dataclass(frozen=True, repr=False)
class SnapshotInfo:
    """What `take` wrote: the snapshot's manifest row. Prints as one readable line."""

    snapshot_id: str
    snapshot_at: datetime
    details: str
    requests: int
    seconds: float
    rows_projects: int
    rows_chapters: int
    rows_languages: int
    rows_exports: int

    def __str__(self) -> str:
        at = self.snapshot_at.strftime("%Y-%m-%d %H:%M:%S UTC")
        return (
            f"snapshot {self.snapshot_id} at {at}: {self.rows_projects} projects, "
            f"{self.rows_chapters} chapters, {self.rows_languages} chapter languages, "
            f"{self.rows_exports} files; {self.requests} requests in {self.seconds:.1f} s "
            f"(details={self.details})"
        )

    def __repr__(self) -> str:
        return f"<SnapshotInfo {self}>"


class SnapshotStore:
    """Snapshots of a workspace in Parquet under `root` (a folder or a pyarrow URI)."""

    def __init__(
        self,
        root: str | os.PathLike[str] | None = None,
        *,
        filesystem: pafs.FileSystem | None = None,
        auto_compact: bool | None = None,
    ) -> None:
        location = store_path(None) if root is None else root
        fs, base = resolve(location, filesystem)
        self.root = os.fspath(location)
        self._files = Files(fs, base)
        # Where no lock can keep compactions apart (object stores), only compact() merges.
        self.auto_compact = self._files.local if auto_compact is None else auto_compact
        self._lock = threading.Lock()
        self._manifest_files: dict[str, pa.Table] = {}
        # The state this object last wrote, so the next take need not read it back.
        self._last: tuple[str, dict[str, pa.Table]] | None = None
        self._worked_out: dict[tuple[str, str, str | None], pa.Table] = {}

    def __repr__(self) -> str:
        return f"SnapshotStore({self.root!r})"

    # Writing

    def take(
        self,
        client: Client,
        *,
        details: Details = "changed",
        at: When | None = None,
        concurrency: int | None = None,
        progress: bool | None = None,
    ) -> SnapshotInfo:
        """Pull the workspace and write it as one snapshot.

        details: "changed" reads chapter details only for chapters that are processing
        or moved since the latest snapshot; "all" reads every one; "none" reads none.
        at: the snapshot's time; by default the service's clock (its `Date` header),
        else the local clock.
        """
        since = self.workspace() if details == "changed" else None
        workspace = pull(
            client, details=details, since=since, concurrency=concurrency, progress=progress
        )
        return self.write(workspace, at=at)

    def write(self, workspace: Workspace, *, at: When | None = None) -> SnapshotInfo:
        """Write an already pulled workspace as one snapshot (for backfills and tests)."""
        when = utc(at if at is not None else workspace.pulled_at or datetime.now(UTC))
        snapshot_id = new_id(when)
        # A deep copy: Arrow may share the frames' buffers, and the caller may edit the
        # frames after this returns, while the store keeps these tables as its last state.
        tables = {
            name: schema.from_pandas(workspace.table(name).copy(deep=True), table_schema)
            for name, table_schema in schema.SNAPSHOT_TABLES.items()
        }
        manifest = self._manifest()
        base, base_at, since_full = _before(manifest, snapshot_id)
        full = base is None or since_full + 1 >= FULL_EVERY
        before = self._state(base, manifest) if base is not None else None

        partition = f"snapshot_date={when:%Y-%m-%d}"
        con = connect()
        try:
            for name, table in tables.items():
                old = before[name] if before is not None else table.schema.empty_table()
                change = diff(con, name, table, old)
                if full:
                    # Every row, and the deletions since the base as in any snapshot.
                    target = stored_schema(name).remove(0).remove(0)
                    gone = change.filter(change.column("_deleted"))
                    kept = table.append_column(
                        "_deleted", pa.array([False] * table.num_rows, pa.bool_())
                    )
                    change = pa.concat_tables(
                        [schema.conform(kept, target), schema.conform(gone, target)]
                    )
                if change.num_rows:
                    rows = _stamp(change, snapshot_id, when, stored_schema(name))
                    self._files.write(
                        rows,
                        self._files.folder(name, partition),
                        snapshot_id,
                        sort_by=[(k, "ascending") for k in schema.KEYS[name]],
                    )
        finally:
            con.close()

        info = SnapshotInfo(
            snapshot_id=snapshot_id,
            snapshot_at=when,
            details=workspace.details,
            requests=workspace.requests,
            seconds=float(workspace.seconds),
            **{f"rows_{name}": table.num_rows for name, table in tables.items()},
        )
        row = {**info.__dict__, "base_id": base, "full": full}
        self._files.write(
            schema.from_rows([row], MANIFEST_STORED), self._files.folder("manifest"), snapshot_id
        )
        with self._lock:
            self._last = (snapshot_id, tables)
        if self.auto_compact:
            self._tidy(when, base_at)
        return info

    def record_events(self, events: Iterable[Mapping[str, Any]]) -> int:
        """Append webhook events (dicts with webhook_id, type, timestamp, data and
        optionally received_at) to the table "events"; returns how many were written."""
        return _store_events.record(self._files, events)

    def compact(self, *, grace: float = 3600.0, linger: float = 300.0) -> dict[str, int]:
        """Merge each folder's small files into one sorted file, atomically.

        Files merged away are deleted by a later compaction once `linger` seconds have
        passed (readers in other processes may still be reading them; 0 deletes them at
        once). Also deletes temporary and uncommitted files older than `grace` seconds
        (left by a crash; younger ones may belong to a write in progress). Returns the
        number of files merged per table.
        """
        with self._files.lock(wait=True):
            return self._compact(grace=grace, linger=linger)

    def _compact(self, **scope: Any) -> dict[str, int]:
        from toolkit.store.compaction import compact

        committed = {r["snapshot_id"] for r in self._manifest().to_pylist()}
        merged = compact(self._files, committed, **scope)
        with self._lock:
            self._manifest_files.clear()
        return merged

    def _tidy(self, when: datetime, base_at: datetime | None) -> None:
        """Compact as snapshots accrue, so that reads stay quick without a nightly job:
        a day's folders once a snapshot of a later day is written, the manifest every
        `MANIFEST_BATCH` snapshots. Skipped while another process compacts."""
        today = f"{when:%Y-%m-%d}"
        new_day = base_at is not None and f"{base_at:%Y-%m-%d}" < today
        with self._lock:
            small = sum(1 for path in self._manifest_files if "/compact-" not in path)
        if not (new_day or small >= MANIFEST_BATCH):
            return
        with self._files.lock(wait=False) as held:
            if held:
                tables = None if new_day else ["manifest"]
                self._compact(grace=None, tables=tables, before=today)

    # Reading

    def snapshots(self) -> pd.DataFrame:
        """The manifest: one row per snapshot, oldest first."""
        return schema.to_pandas(self._manifest(), schema.MANIFEST)

    def history(
        self,
        table: str,
        since: When | None = None,
        until: When | None = None,
        project_ids: Sequence[str] | None = None,
    ) -> pd.DataFrame:
        """Every snapshot's rows of `table` from `since` to `until` (both included),
        optionally only for some projects; `snapshot_id` and `snapshot_at` lead."""
        if table == "events":
            return _store_events.history(
                self._files, since=since, until=until, project_ids=project_ids
            )
        result_schema = schema.with_snapshot(schema.table_schema(table))
        manifest = self._manifest()
        times = manifest.column("snapshot_at").to_pylist()
        low = utc(since) if since is not None else None
        high = utc(until) if until is not None else None
        positions = [
            i
            for i, t in enumerate(times)
            if (low is None or t >= low) and (high is None or t <= high)
        ]
        if not positions:
            return schema.empty_frame(result_schema)

        def read(log: Log) -> pa.Table:
            sql = log.history_sql(positions[0], positions[-1], _project_filter(log, project_ids))
            return arrow(log.con, sql)

        return schema.to_pandas(self._read(table, manifest, read), result_schema)

    def changes(self, table: str, project_ids: Sequence[str] | None = None) -> pd.DataFrame:
        """The change log of a snapshot table: a row each time a row was new, changed or
        went away (`_deleted`), with the position `idx` of its snapshot (0 = the first).

        The compact way to read a long history: a row that did not change between
        snapshots is not repeated. The analysis reads this.
        """
        if table not in schema.SNAPSHOT_TABLES:
            raise ValueError(
                f"changes are kept for {', '.join(schema.SNAPSHOT_TABLES)}, not {table!r}"
            )
        log_schema = pa.schema([pa.field("idx", schema.COUNT), *stored_schema(table)])
        manifest = self._manifest()
        if manifest.num_rows == 0:
            return schema.empty_frame(log_schema)

        def read(log: Log) -> pa.Table:
            return arrow(log.con, log.changes_sql(_project_filter(log, project_ids)))

        return schema.to_pandas(self._read(table, manifest, read), log_schema)

    def latest(self, table: str) -> pd.DataFrame:
        """The rows of `table` at the newest snapshot."""
        if table == "events":
            return self.history("events")
        return self._at(table, self._manifest(), None)

    def as_of(self, table: str, when: When) -> pd.DataFrame:
        """The rows of `table` at the newest snapshot taken at or before `when`."""
        if table == "events":
            return self.history("events", until=when)
        return self._at(table, self._manifest(), utc(when))

    def workspace(self, snapshot_id: str | None = None) -> Workspace | None:
        """A snapshot (the newest by default) as a `Workspace`; None for an empty store."""
        manifest = self._manifest()
        ids = manifest.column("snapshot_id").to_pylist()
        if not ids:
            return None
        chosen = ids[-1] if snapshot_id is None else snapshot_id
        if chosen not in ids:
            raise ValueError(f"no snapshot {chosen!r} in {self!r}; see store.snapshots()")
        row = manifest.slice(ids.index(chosen), 1).to_pylist()[0]
        state = self._state(chosen, manifest)
        frames = {
            name: schema.to_pandas(t, schema.SNAPSHOT_TABLES[name]) for name, t in state.items()
        }
        return Workspace(
            **frames,
            pulled_at=row["snapshot_at"],
            requests=row["requests"] or 0,
            seconds=row["seconds"] or 0.0,
            details=row["details"] or "none",
        )

    def query(self, sql: str) -> pd.DataFrame:
        """Run DuckDB SQL over the store. Views: `snapshots`; `projects`, `chapters`,
        `languages`, `exports` (every snapshot's rows); `<table>_changes` (the change
        log, a row per change, `_deleted` marking rows that went away); `events`."""
        manifest = self._manifest()

        def run(logs: dict[str, Log]) -> pa.Table:
            con = next(iter(logs.values())).con
            last = manifest.num_rows - 1
            for name, log in logs.items():
                body = (
                    log.history_sql(0, last)
                    if last >= 0
                    else f"SELECT * FROM {log.name} WHERE false"
                )
                con.execute(f"CREATE OR REPLACE TEMP VIEW {name} AS {body}")
                # Unordered, like any SQL view: sorting millions of change rows first
                # would cost a query that only aggregates them a second or more.
                con.execute(
                    f"CREATE OR REPLACE TEMP VIEW {name}_changes AS SELECT * FROM {log.name}"
                )
            con.execute(
                "CREATE OR REPLACE TEMP VIEW snapshots AS SELECT "
                + ", ".join(schema.MANIFEST.names)
                + " FROM manifest ORDER BY snapshot_id"
            )
            con.register("events", schema.from_pandas(self.history("events"), schema.EVENTS))
            return arrow(con, sql)

        result = self._with_logs(list(schema.SNAPSHOT_TABLES), manifest, run)
        return schema.to_pandas(result, result.schema)

    # Machinery

    def _manifest(self) -> pa.Table:
        """Committed snapshots in order, with `idx`, `linear`, `base_id` and `full`."""
        files = self._files.visible("manifest")
        with self._lock:
            cached = dict(self._manifest_files)
        tables = []
        for f in files:
            if f.path not in cached:
                cached[f.path] = self._files.read(f.path, MANIFEST_STORED)
            tables.append(cached[f.path])
        with self._lock:
            self._manifest_files = {f.path: cached[f.path] for f in files}
        merged = pa.concat_tables(tables) if tables else MANIFEST_STORED.empty_table()
        return order_manifest(merged)

    def _state(self, snapshot_id: str, manifest: pa.Table) -> dict[str, pa.Table]:
        """Every table's rows at one snapshot (from memory when this object wrote it)."""
        with self._lock:
            if self._last is not None and self._last[0] == snapshot_id:
                return self._last[1]
        k = manifest.column("snapshot_id").to_pylist().index(snapshot_id)

        def read(logs: dict[str, Log]) -> dict[str, pa.Table]:
            return {
                name: schema.conform(arrow(log.con, log.state_sql(k)), schema.SNAPSHOT_TABLES[name])
                for name, log in logs.items()
            }

        return self._with_logs(list(schema.SNAPSHOT_TABLES), manifest, read)

    def _at(self, table: str, manifest: pa.Table, when: datetime | None) -> pd.DataFrame:
        result_schema = schema.with_snapshot(schema.table_schema(table))
        times = manifest.column("snapshot_at").to_pylist()
        chosen = [i for i, t in enumerate(times) if when is None or t <= when]
        if not chosen:
            return schema.empty_frame(result_schema)
        k = chosen[-1]
        snapshot_id = manifest.column("snapshot_id")[k].as_py()
        with self._lock:
            cached = self._last[1][table] if self._last and self._last[0] == snapshot_id else None
        if cached is None:
            cached = self._read(table, manifest, lambda log: arrow(log.con, log.state_sql(k)))
        rows = _stamp(
            schema.conform(cached, schema.SNAPSHOT_TABLES[table]),
            snapshot_id,
            times[k],
            result_schema,
        )
        return schema.to_pandas(rows, result_schema)

    def _read(self, table: str, manifest: pa.Table, read: Callable[[Log], T]) -> T:
        return self._with_logs([table], manifest, lambda logs: read(logs[table]))

    def _with_logs(
        self, tables: list[str], manifest: pa.Table, work: Callable[[dict[str, Log]], T]
    ) -> T:
        """Run `work` on the tables' change logs; tried again when a compaction removed a
        file between listing and reading."""
        for attempt in range(3):
            listed = {name: self._files.visible(name) for name in tables}
            con = connect()
            try:
                con.register("manifest", manifest)
                logs = {}
                for name, files in listed.items():
                    con.register(f"stored_{name}", self._files.dataset(files, stored_schema(name)))
                    logs[name] = Log(con, name, f"stored_{name}", manifest, cache=self._worked_out)
                return work(logs)
            except (OSError, duckdb.Error):
                vanished = any(
                    not self._files.exists(f.path) for files in listed.values() for f in files
                )
                if not vanished or attempt == 2:
                    raise
            finally:
                con.close()
        raise AssertionError("unreachable")


def _before(manifest: pa.Table, snapshot_id: str) -> tuple[str | None, datetime | None, int]:
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


def _stamp(rows: pa.Table, snapshot_id: str, when: datetime, target: pa.Schema) -> pa.Table:
    n = rows.num_rows
    stamped = rows.append_column("snapshot_id", pa.array([snapshot_id] * n, schema.TEXT))
    stamped = stamped.append_column("snapshot_at", pa.array([when] * n, schema.TIME))
    return schema.conform(stamped, target)


def _project_filter(log: Log, project_ids: Sequence[str] | None) -> str:
    if project_ids is None:
        return "true"
    log.con.register(
        "_project_ids",
        pa.table({"project_id": pa.array(project_id_list(project_ids), pa.string())}),
    )
    return "project_id IN (SELECT project_id FROM _project_ids)"

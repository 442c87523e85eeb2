"""SnapshotStore: a workspace's history as Parquet files, read with DuckDB.

Past 400 lines on purpose: `SnapshotStore` is the public facade, one method per call a
user makes; the work is in `writing`, `log`, `tables`, `maintenance` and the rest
(`toolkit.store` lists them).

```python
store = tk.SnapshotStore("data/snapshots")       # or "s3://bucket/snapshots"
info = store.take(client)                        # pull and write one snapshot
store.history("chapters", since="2026-01-01")    # every snapshot's rows
store.latest("languages"); store.as_of("chapters", when)
store.query("SELECT project_id, max(credits_spent) FROM chapters GROUP BY 1")
```

Layout: one Delta Lake table per table, `<root>/<name>/` with its `_delta_log/`:
`projects`, `chapters`, `languages`, `exports` (the change log), `events` (webhook
events) and `manifest` (one row per snapshot: its commit). DuckDB, Polars, Spark, Trino
and Databricks read them natively; docs/store.md gives their queries.

What a snapshot holds: only the rows that changed since the snapshot it was based on,
each stamped with `snapshot_id` and `snapshot_at`, plus the rows that went away flagged
`_deleted`; every `FULL_EVERY`-th snapshot (and the first) holds every row. A year of
hourly snapshots of a large workspace is then the size of its changes, not 8,760
copies of it. The reading methods behave as if every snapshot were stored whole
(`log` explains how); `query` offers both views (`chapters`, and the change log
`chapters_changes`).

Delta has no commit across tables, so the manifest row, appended last, is still the
commit: readers ignore every row whose snapshot has no manifest row, and a crash at any
point leaves the store readable and the half-written snapshot invisible. Each table
commit records the snapshot as an application transaction, so writing the same
snapshot again after a crash (same `at`) finishes it instead of starting over. Two
processes writing at once both commit (Delta retries the loser's commit); ids sort by
snapshot time and are unique across processes, and a snapshot written concurrently with
another is reconciled when read. `maintenance` keeps files and log entries few.

Decisions the design leaves open: a naive `at` or `since`/`until` is taken as UTC;
`latest`, `as_of` and `history` rows carry the id and time of the snapshot they show;
`history("events")` filters on the event's `timestamp` (the service's clock, like
`snapshot_at`), not on when it was received; two snapshots at the same time are ordered
as they were taken (the service's `Date` header counts whole seconds).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import threading
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, TypeVar

import duckdb
import pandas as pd
import pyarrow as pa
from deltalake.exceptions import CommitFailedError

from toolkit.config import store_path
from toolkit.errors import DamagedStore, OldStoreLayout, QueryError, StoreError, ToolkitError
from toolkit.frames import Details, Workspace, pull, schema
from toolkit.frames.pull import project_id_list
from toolkit.store import events as _store_events
from toolkit.store import versions
from toolkit.store.columns import MANIFEST_STORED, PREVIOUS, stored_schema
from toolkit.store.connection import arrow, connect
from toolkit.store.ids import new_id
from toolkit.store.ledger import COMMITS, EVENTS, Ledger, Problem, newest_witness, witness_of
from toolkit.store.log import Log
from toolkit.store.manifest import order_manifest
from toolkit.store.migrate import FIRST_LAYOUT, is_old_store, migrate_in_place
from toolkit.store.tables import (
    BASE_ID_KEY,
    SNAPSHOT_AT_KEY,
    SNAPSHOT_ID_KEY,
    Tables,
    app_id,
    first_line,
    version_of,
)
from toolkit.store.upgrade import is_current, is_current_store, upgrade, upgrade_message
from toolkit.store.writing import base_of, changes_of, resume, stamp
from toolkit.timestamps import When, utc

if TYPE_CHECKING:
    from toolkit.client import Client

T = TypeVar("T")
FULL_EVERY = 168  # a week of hourly snapshots
QUERY_VIEWS = (
    "snapshots",
    *schema.SNAPSHOT_TABLES,
    *(f"{name}_changes" for name in schema.SNAPSHOT_TABLES),
    "events",
)


class StoreUpgraded(UserWarning):
    """A take upgraded a store written by an earlier toolkit; the message says what
    was done."""


@dataclass(frozen=True, repr=False)
class SnapshotInfo:
    """What `take` or `write` wrote: the snapshot's manifest row. Prints as one line.

    Attributes:
        snapshot_id: The snapshot's id; ids sort by snapshot time.
        snapshot_at: The snapshot's time (aware, UTC).
        details: Which chapter details the pull read: "all", "changed" or "none".
        requests: The requests the pull made, retries included.
        seconds: How long the pull took.
        rows_projects: The projects the snapshot holds.
        rows_chapters: The chapters the snapshot holds.
        rows_languages: The chapter-language rows the snapshot holds.
        rows_exports: The prepared files the snapshot holds.
        workspace: The label stored with the snapshot, if one was given.
    """

    snapshot_id: str
    snapshot_at: datetime
    details: str
    requests: int
    seconds: float
    rows_projects: int
    rows_chapters: int
    rows_languages: int
    rows_exports: int
    workspace: str | None = None

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

    def _repr_html_(self) -> str:
        from toolkit.formatting import card, count, moment

        return card(f"Snapshot {self.snapshot_id}", {
            "taken at": f"{moment(self.snapshot_at)} UTC",
            "rows": f"{count(self.rows_projects, 'project')}, "
            f"{count(self.rows_chapters, 'chapter')}, "
            f"{count(self.rows_languages, 'chapter language')}, "
            f"{count(self.rows_exports, 'file')}",
            "requests": f"{self.requests:,} in {self.seconds:.1f} s (details={self.details})",
            "workspace": self.workspace or "default",
        })  # fmt: skip


class SnapshotStore:
    """Snapshots of a workspace in Delta Lake tables under one folder or URI.

    Args:
        root: A folder or a URI such as `s3://bucket/snapshots`; by default the
            environment's `CTS_STORE`, else `data/snapshots`.
        workspace: A label stored with every snapshot this object takes (shown by
            `snapshots()`), e.g. which service account or environment it came from.
        storage_options: Credentials and options for a remote `root`, as delta-rs takes
            them.
        auto_compact: Merge files and tidy the tables once a day as snapshots are taken
            (the default); when False only `compact()` does it.
        retention: How long log entries and files no longer in use are kept for readers
            still on an older version (`vacuum` and the log cleanup honour it).
        filesystem: Refused: the store is Delta Lake and takes a folder or a URI with
            `storage_options`, not a pyarrow filesystem.

    Raises:
        TypeError: A `filesystem` was given.
    """

    def __init__(
        self,
        root: str | os.PathLike[str] | None = None,
        *,
        workspace: str | None = None,
        storage_options: Mapping[str, str] | None = None,
        auto_compact: bool = True,
        retention: timedelta = timedelta(days=1),
        filesystem: object | None = None,
    ) -> None:
        if filesystem is not None:
            raise TypeError(
                "SnapshotStore takes a folder or a URI (s3://..., gs://..., az://...) with "
                "storage_options since the store is Delta Lake, not a pyarrow filesystem"
            )
        location = store_path(None) if root is None else root
        self.root = os.fspath(location)
        self.workspace_label = workspace
        self.auto_compact = auto_compact
        self._tables = Tables(
            self.root, storage_options=dict(storage_options or {}), retention=retention
        )
        self._lock = threading.Lock()
        self._manifest_files: dict[str, pa.Table] = {}  # by file: files never change
        # The state this object last wrote, so the next take need not read it back.
        self._last: tuple[str, dict[str, pa.Table]] | None = None
        self._worked_out: dict[tuple[str, str, str | None], pa.Table] = {}
        self._wrote = False  # this object's last write finished
        self._ledger = Ledger(self._tables)
        self._verified: set[tuple[object, ...]] = set()  # (tables, their versions)
        self._upgrading = threading.Lock()

    def __repr__(self) -> str:
        return f"SnapshotStore({self.root!r})"

    def _repr_html_(self) -> str:
        """The store in a notebook: where, which workspace, how many snapshots over which
        span, and its size on disk (a local store)."""
        from toolkit.formatting import card, count, moment, size

        manifest = self.snapshots()
        times = manifest["snapshot_at"]
        span = f"{moment(times.iloc[0])} to {moment(times.iloc[-1])} UTC" if len(times) else "-"
        local = not re.match(r"^[a-z][a-z0-9+.-]*://", self.root) and os.path.isdir(self.root)
        on_disk = sum(
            os.path.getsize(os.path.join(folder, name))
            for folder, _, names in os.walk(self.root)
            for name in names
        ) if local else None  # fmt: skip
        recorded = list(manifest["workspace"].dropna()) if "workspace" in manifest.columns else []
        label = self.workspace_label or (str(recorded[-1]) if recorded else "default")
        return card("SnapshotStore", {
            "location": self.root,
            "workspace": label,
            "snapshots": count(len(manifest), "snapshot"),
            "span": span,
            "size": size(on_disk) if on_disk is not None else "not measured (remote)",
        })  # fmt: skip

    # Writing

    def take(
        self,
        client: Client,
        *,
        details: Details = "changed",
        at: When | None = None,
        concurrency: int | None = None,
        progress: bool | None = None,
        workspace: str | None = None,
    ) -> SnapshotInfo:
        """Pull the workspace and write it as one snapshot.

        A store written by an earlier toolkit is upgraded first (with a `StoreUpgraded`
        warning saying what was done).

        Args:
            client: The client to pull with.
            details: "changed" reads chapter details only for chapters that are
                processing or moved since the latest snapshot; "all" reads every one;
                "none" reads none.
            at: The snapshot's time (a naive time is UTC); by default the service's
                clock (its `Date` header), else the local clock.
            concurrency: Requests in flight; by default it adapts to how the service
                answers.
            progress: Show a progress bar; by default shown on long pulls.
            workspace: The snapshot's label; by default the store's `workspace`.

        Returns:
            The snapshot's manifest row.

        Raises:
            IncompletePull: Some requests still failed when the pull's deadline came.
            DamagedStore: The store does not read; the message says which command
                names the damage.
        """
        self._manifest(writing=True)  # a store of an earlier toolkit is upgraded first
        since = self.workspace() if details == "changed" else None
        pulled = pull(
            client, details=details, since=since, concurrency=concurrency, progress=progress
        )
        return self._write(pulled, at, workspace or self.workspace_label)

    def write(self, workspace: Workspace, *, at: When | None = None) -> SnapshotInfo:
        """Write an already pulled workspace as one snapshot (for backfills and tests).

        Args:
            workspace: The pull to write, e.g. from `toolkit.pull`.
            at: The snapshot's time (a naive time is UTC); by default the pull's
                `pulled_at`, else the local clock.

        Returns:
            The snapshot's manifest row.
        """
        return self._write(workspace, at, self.workspace_label)

    def _write(self, workspace: Workspace, at: When | None, label: str | None) -> SnapshotInfo:
        when = utc(at if at is not None else workspace.pulled_at or datetime.now(UTC))
        # A deep copy: Arrow may share the frames' buffers, and the caller may edit the
        # frames after this returns, while the store keeps these tables as its last state.
        tables = {
            name: schema.from_pandas(workspace.table(name).copy(deep=True), table_schema)
            for name, table_schema in schema.SNAPSHOT_TABLES.items()
        }
        manifest = self._manifest(writing=True)
        snapshot_id = new_id(when)
        base, base_at, since_full = base_of(manifest, snapshot_id)
        full = base is None or since_full + 1 >= FULL_EVERY
        previous = self._state(base, manifest) if base is not None else None
        changes = changes_of(tables, previous, full)
        # Only a store object that has not yet written, or whose last write failed, can be
        # finishing a stopped write: asking the tables costs a read of each one's log.
        resumed = resume(self._tables, when, manifest, base, changes) if not self._wrote else None
        snapshot_id, held = resumed or (snapshot_id, set())
        self._wrote = False
        metadata = {
            SNAPSHOT_ID_KEY: snapshot_id,
            SNAPSHOT_AT_KEY: when.isoformat(),
            BASE_ID_KEY: base or "",
        }
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
                version = self._tables.append(
                    name, pending[name], metadata=metadata, transaction=transaction
                )
            else:  # held since the stopped write: its newest commit
                version = self._tables.last_commit(name)["version"]
            return witness_of(self._tables, name, version, snapshot_id, changes[name].num_rows)

        written = [*pending, *held]
        with ThreadPoolExecutor(max_workers=len(written) or 1) as pool:
            commits = dict(zip(written, pool.map(commit, written), strict=True))

        info = SnapshotInfo(
            snapshot_id=snapshot_id,
            snapshot_at=when,
            details=workspace.details,
            requests=workspace.requests,
            seconds=float(workspace.seconds),
            **{f"rows_{name}": table.num_rows for name, table in tables.items()},
            workspace=label,
        )
        keeps_previous = PREVIOUS in stored_schema("chapters").names
        row = {
            **info.__dict__,
            "base_id": base,
            "full": full,
            "keeps_previous": keeps_previous,
            COMMITS: json.dumps(
                {
                    **{name: commits.get(name) for name in schema.SNAPSHOT_TABLES},
                    EVENTS: newest_witness(self._tables, EVENTS),
                }
            ),
        }
        self._tables.append(
            "manifest",
            schema.from_rows([row], MANIFEST_STORED),
            metadata=metadata,
            transaction=transaction,
        )
        if not self._wrote and versions.recorded(self._tables) is None:
            # A new store, or one from before the version: recorded once. The snapshot is
            # committed already; if other writers keep the record from landing, the next
            # take records it.
            with contextlib.suppress(CommitFailedError):
                versions.record(self._tables, versions.LAYOUT)
        with self._lock:
            self._last = (snapshot_id, tables)
        self._wrote = True
        if self.auto_compact and base_at is not None and base_at.date() < when.date():
            self._maintain(when)
        return info

    def record_events(self, events: Iterable[Mapping[str, Any]]) -> int:
        """Append webhook events to the table "events", as one commit.

        Args:
            events: Dicts with `webhook_id`, `type`, `timestamp`, `data` (a dict or its
                JSON text) and optionally `received_at` (the time of writing when
                absent); times as ISO 8601 text or datetimes. A repeated `webhook_id` is
                kept, and read only once.

        Returns:
            How many events were written.

        Raises:
            ValueError: An event lacks its `webhook_id` or a time.
        """
        self._tables.begin()
        return _store_events.record(self._tables, events)

    def compact(self) -> dict[str, int]:
        """Merge every table's files by day (by week for past weeks), checkpoint, clean
        the log and vacuum, now.

        Takes do this once a day by themselves unless `auto_compact=False`.

        Returns:
            The number of files merged, per table.
        """
        return self._maintain(None)

    def _maintain(self, today: datetime | None) -> dict[str, int]:
        from toolkit.store.maintenance import maintain

        merged = maintain(self._tables, today)
        with self._lock:
            self._manifest_files.clear()
        return merged

    # Reading

    def version(self) -> tuple[int | None, ...]:
        """What the store holds now, as each table's Delta version.

        It changes whenever anyone writes a snapshot, events or a merge, so what was
        worked out from an equal version still holds.

        Returns:
            The versions of the tables projects, chapters, languages, exports, events
            and manifest, in that order; None for a table never written.
        """
        self._tables.begin()
        names = [*schema.SNAPSHOT_TABLES, "events", "manifest"]
        # Side by side: opening a table reads its log outside the interpreter lock, and a
        # fresh store opens all six here.
        with ThreadPoolExecutor(max_workers=len(names)) as pool:
            tables = list(pool.map(self._tables.get, names))
        return tuple(table.version() if table is not None else None for table in tables)

    def snapshots(self) -> pd.DataFrame:
        """The manifest: one row per snapshot, oldest first.

        Returns:
            A frame with every column docs/store.md describes: those of `SnapshotInfo`,
            and `base_id`, `full`, `keeps_previous` and the `commits` JSON text.

        Raises:
            OldStoreLayout: The store was written by an earlier toolkit; the message
                says how to upgrade it.
        """
        return schema.to_pandas(self._manifest(), MANIFEST_STORED)

    def upgrade(self) -> list[str]:
        """Bring a store written by an earlier toolkit to the current layout, once.

        `toolkit store migrate PATH` runs this; a take does it by itself.

        Returns:
            What was done, a line per table; empty when the store was current.
        """
        with self._upgrading:
            done = versions.migrate(self._tables, self.root, self._steps(), is_current_store)
        with self._lock:
            self._manifest_files.clear()
            self._worked_out.clear()
        return done

    def _steps(self) -> list[versions.Step]:
        """The migrations, one per layout before the current one (`versions`)."""

        def from_first(tables: Tables) -> list[str]:
            copied = migrate_in_place(tables.root)
            rows = ", ".join(f"{name} {count:,}" for name, count in copied.items())
            return [
                f"converted from the first layout (rows copied: {rows}; the old files are "
                f"kept in {os.path.join(tables.root, FIRST_LAYOUT)})"
            ]

        return [
            versions.Step(1, "layout 1 to 2 (Parquet folders to Delta tables)", from_first),
            versions.Step(2, "layout 2 to 3 (rows keep what they changed from)", upgrade),
        ]

    def history(
        self,
        table: str,
        since: When | None = None,
        until: When | None = None,
        project_ids: Sequence[str] | None = None,
    ) -> pd.DataFrame:
        """Every snapshot's rows of a table, as if each snapshot were stored whole.

        Args:
            table: "projects", "chapters", "languages", "exports" or "events" (for
                events, the times compare with each event's `timestamp`).
            since: The first snapshot time to include (a naive time is UTC); by
                default the first snapshot.
            until: The last snapshot time to include; by default the newest.
            project_ids: Only these projects' rows (a list, not one id).

        Returns:
            The rows, `snapshot_id` and `snapshot_at` first, then the table's columns.

        Raises:
            ValueError: `table` is not one of the store's tables.
            TypeError: `project_ids` is one id as a string.
            DamagedStore: The store does not read; the message says what to run.
        """
        if table == "events":
            self._tables.begin()
            try:
                if self._tables.unlike_listed("events"):
                    raise OSError("a data file of events is not the file its log lists")
                return _store_events.history(
                    self._tables, since=since, until=until, project_ids=project_ids
                )
            except ToolkitError:
                raise
            except Exception as error:
                raise self._damaged(error) from error
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
        went away.

        The compact way to read a long history: a row that did not change between
        snapshots is not repeated. The analysis reads this.

        Args:
            table: "projects", "chapters", "languages" or "exports".
            project_ids: Only these projects' rows (a list, not one id).

        Returns:
            The changes, with the position `idx` of their snapshot (0 = the first) and
            `_deleted` marking rows that went away.

        Raises:
            ValueError: `table` has no change log (e.g. "events").
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
        """The rows of a table at the newest snapshot.

        Args:
            table: "projects", "chapters", "languages", "exports", or "events" (every
                event recorded).

        Returns:
            The rows ordered by the table's key, with the snapshot's `snapshot_id` and
            `snapshot_at` first; no rows for an empty store.

        Raises:
            ValueError: `table` is not one of the store's tables.
        """
        if table == "events":
            return self.history("events")
        return self._at(table, self._manifest(), None)

    def as_of(self, table: str, when: When) -> pd.DataFrame:
        """The rows of a table at the newest snapshot taken at or before a time.

        Args:
            table: "projects", "chapters", "languages", "exports", or "events" (every
                event up to `when`).
            when: The time (a naive time is UTC).

        Returns:
            The rows ordered by the table's key, with the snapshot's `snapshot_id` and
            `snapshot_at` first; no rows when no snapshot is that old.

        Raises:
            ValueError: `table` is not one of the store's tables.
        """
        if table == "events":
            return self.history("events", until=when)
        return self._at(table, self._manifest(), utc(when))

    def workspace(self, snapshot_id: str | None = None) -> Workspace | None:
        """A snapshot as a `Workspace`, the shape `toolkit.pull` returns.

        Args:
            snapshot_id: The snapshot's id (see `snapshots()`); by default the newest.

        Returns:
            The snapshot's four tables and how its pull went; None for an empty store.

        Raises:
            ValueError: The store has no snapshot with that id.
        """
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

    def query(
        self, sql: str, *, frames: Mapping[str, pd.DataFrame | pa.Table] | None = None
    ) -> pd.DataFrame:
        """Run DuckDB SQL over the store.

        The views: `snapshots` (the manifest); `projects`, `chapters`, `languages`,
        `exports` (every snapshot's rows); `<table>_changes` (the change log, a row per
        change, `_deleted` marking rows that went away); `events`.

        Args:
            sql: One DuckDB query over those views (and `frames`).
            frames: Your own tables by name, to join with the store's in the same query.

        Returns:
            The query's result.

        Raises:
            QueryError: The SQL does not run (syntax, a view or column that does not
                exist); the message names the views.
            DamagedStore: The store does not read; the message says what to run.
        """
        result = self.query_arrow(sql, frames=frames)
        return schema.to_pandas(result, result.schema)

    def query_arrow(
        self, sql: str, *, frames: Mapping[str, pd.DataFrame | pa.Table] | None = None
    ) -> pa.Table:
        """`query`, answered as an Arrow table (no conversion to pandas: for results of
        millions of rows that are read column by column).

        Args:
            sql: One DuckDB query over the views `query` lists (and `frames`).
            frames: Your own tables by name, to join with the store's in the same query.

        Returns:
            The query's result.

        Raises:
            QueryError: The SQL does not run; the message names the views.
            DamagedStore: The store does not read; the message says what to run.
        """
        manifest = self._manifest()
        lowered = _without_comments(sql).lower()

        def mentions(view: str) -> bool:
            return re.search(rf"\b{view}\b", lowered) is not None

        def run(logs: dict[str, Log]) -> pa.Table:
            con = next(iter(logs.values())).con
            for name, frame in (frames or {}).items():
                con.register(name, frame)
            last = manifest.num_rows - 1
            # Only the views the SQL names: making one costs DuckDB a look at every
            # file under it (some 5 ms each on a year).
            for name, log in logs.items():
                if mentions(name):
                    body = (
                        log.history_sql(0, last)
                        if last >= 0
                        else f"SELECT * FROM {log.name} WHERE false"
                    )
                    con.execute(f"CREATE OR REPLACE TEMP VIEW {name} AS {body}")
                if mentions(f"{name}_changes"):
                    # Unordered, like any SQL view: sorting millions of change rows
                    # first would cost a query that only aggregates them a second or more.
                    con.execute(
                        f"CREATE OR REPLACE TEMP VIEW {name}_changes AS SELECT * FROM {log.name}"
                    )
            con.execute(
                "CREATE OR REPLACE TEMP VIEW snapshots AS SELECT "
                + ", ".join(f'"{name}"' for name in MANIFEST_STORED.names)
                + " FROM manifest ORDER BY snapshot_id"
            )
            if mentions("events"):
                con.register("events", schema.from_pandas(self.history("events"), schema.EVENTS))
            try:
                return arrow(con, sql)
            except duckdb.ProgrammingError as error:
                # The SQL's fault (syntax, a view or column that does not exist), not
                # the store's: say so, not "damaged".
                views = ", ".join([*QUERY_VIEWS, *(frames or {})])
                raise QueryError(
                    f"the SQL could not run: {first_line(error)}. The views are {views}"
                ) from error

        # Only the tables the SQL names (opening each costs a read of its log), and
        # always one, whose connection runs the query.
        named = [
            name for name in schema.SNAPSHOT_TABLES if mentions(name) or mentions(f"{name}_changes")
        ] or ["projects"]
        return self._with_logs(named, manifest, run)

    # Machinery

    def _manifest(self, *, writing: bool = False) -> pa.Table:
        """Committed snapshots in order, with `idx`, `linear`, `base_id` and `full`.
        Every reading and writing method starts here, so this starts an operation: each
        table is brought up to date once in it. A store written by an earlier toolkit is
        upgraded first when `writing`, refused otherwise: it reads only once upgraded."""
        manifest = self._committed()
        versions.refuse_newer(self._tables, self.root)
        if manifest is not None and is_current(manifest):
            # Another engine's DELETE of manifest rows would make snapshots vanish without
            # a word: every read and write is refused until the commit is undone.
            self._refuse(self._ledger.foreign("manifest", self._ledger.settled()), manifest)
            return manifest
        first_layout = manifest is None and self._tables.local and is_old_store(self._tables.root)
        if manifest is None and not first_layout:
            return order_manifest(MANIFEST_STORED.empty_table())
        if not writing:
            raise OldStoreLayout(upgrade_message(self.root))
        done = self.upgrade()
        warnings.warn(
            StoreUpgraded(f"upgraded the store {self.root!r}: " + "; ".join(done)), stacklevel=3
        )
        return self._manifest()

    def _committed(self) -> pa.Table | None:
        """The manifest's rows in order; None when there is no manifest table."""
        self._tables.begin()
        if self._tables.get("manifest") is None:
            return None
        try:
            with self._lock:
                parts = self._tables.read_files("manifest", self._manifest_files, MANIFEST_STORED)
        except StoreError:
            raise
        except Exception as error:
            raise self._damaged(error) from error
        merged = pa.concat_tables(parts) if parts else MANIFEST_STORED.empty_table()
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
        rows = stamp(
            schema.conform(cached, schema.SNAPSHOT_TABLES[table]),
            snapshot_id,
            times[k],
            result_schema,
        )
        # By key: the files' order depends on which snapshot last changed each row.
        rows = rows.sort_by([(key, "ascending") for key in schema.KEYS[table]])
        return schema.to_pandas(rows, result_schema)

    def _read(self, table: str, manifest: pa.Table, read: Callable[[Log], T]) -> T:
        return self._with_logs([table], manifest, lambda logs: read(logs[table]))

    def _with_logs(
        self, tables: list[str], manifest: pa.Table, work: Callable[[dict[str, Log]], T]
    ) -> T:
        """Run `work` on the tables' change logs, each at its newest version."""
        con = connect()
        try:
            self._verify(manifest, tables)
            con.register("manifest", manifest)
            logs = {}
            for name in tables:
                self._tables.expose(con, f"stored_{name}", name, stored_schema(name))
                logs[name] = Log(con, name, f"stored_{name}", manifest, cache=self._worked_out)
            return work(logs)
        except ToolkitError:
            raise
        except Exception as error:
            raise self._damaged(error) from error
        finally:
            con.close()

    def _verify(self, manifest: pa.Table, tables: list[str]) -> None:
        """Refuse to read tables whose logs do not hold what the snapshots committed
        (`ledger`): a commit missing, changed or made by another engine. Checked once per
        version of the tables; reads no data file."""
        names = [*tables, "manifest"]
        found = [self._tables.get(name) for name in names]
        key = (*names, *(t.version() if t is not None else None for t in found))
        if key in self._verified:
            return
        problems = [p for p in self._ledger.verify(manifest, tables) if p.kind != "uncommitted"]
        self._refuse(problems, manifest)
        unlike = [path for name in names for path in self._tables.unlike_listed(name)]
        if unlike:
            raise self._damaged(OSError(f"{unlike[0]} is not the file its table lists"))
        self._verified.add(key)

    def _refuse(self, problems: list[Problem], manifest: pa.Table) -> None:
        """`DamagedStore` naming `problems` and the snapshots they make read wrong."""
        if problems:
            times = dict(zip(manifest.column("snapshot_id").to_pylist(),
                             manifest.column("snapshot_at").to_pylist(), strict=True))  # fmt: skip
            named = "; ".join(
                p.what + _affected([(i, times[i]) for i in p.snapshot_ids if i in times])
                for p in problems
            )
            raise DamagedStore(
                f"the store {self.root!r} would read wrong: {named}. Run `toolkit store check "
                f"--store {self.root} --repair`: it undoes another engine's commits, and names "
                "and removes every snapshot it cannot keep, so that the others read as taken"
            )

    def _damaged(self, error: Exception) -> StoreError:
        """What a failed read says: the damaged files, found by the check, and what to do."""
        from toolkit.store.check import check

        reason = str(error).strip().splitlines()[0] if str(error).strip() else repr(error)
        try:
            found = check(self._tables.root) if self._tables.local else []
        except (StoreError, OSError):
            found = []
        named = "; ".join(str(f) for f in found) or reason
        return DamagedStore(
            f"the store {self.root} could not be read: {named}. Run `toolkit store check "
            f"--store {self.root}` to see which snapshots it touches and what `--repair` "
            "does about each"
        )


def _affected(snapshots: list[tuple[str, datetime]]) -> str:
    """Which snapshots read wrong, said in a few words."""
    if not snapshots:
        return ""
    at = [when.strftime("%Y-%m-%d %H:%M:%S UTC") for _, when in snapshots]
    if len(snapshots) == 1:
        return f" (snapshot {snapshots[0][0]} taken {at[0]} reads wrong)"
    return f" ({len(snapshots)} snapshots taken {at[0]} to {at[-1]} read wrong)"


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

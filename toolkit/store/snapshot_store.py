"""SnapshotStore: a workspace's history in Delta Lake tables, read with DuckDB.

The public facade, one method per call a user makes; the work is in `engine` (the
manifest and the change logs every operation reads), `writing` (a snapshot's commit),
`query` (the reads and SQL), `verify` (what a read checks first) and the rest
(`toolkit.store` lists them).

Past 400 lines on purpose: the facade is one method per call a user makes, each with the
docstring that is its contract; the work itself lives in the modules above.

```python
store = tk.SnapshotStore("data/snapshots")       # or "s3://bucket/snapshots"
info = store.take(client)                        # pull and write one snapshot
store.history("chapters", since="2026-01-01")    # every snapshot's rows
store.latest("languages"); store.as_of("chapters", when)
store.query("SELECT project_id, max(credits_spent) FROM chapters GROUP BY 1")
```

Layout: one Delta Lake table per table, `<root>/<name>/` with its `_delta_log/`:
`projects`, `chapters`, `languages`, `exports` (the change log), `events` (webhook
events) and `manifest` (one row per snapshot: its commit). A snapshot holds only the
rows that changed since the snapshot it was based on (every `writing.FULL_EVERY`-th
holds every row); the reading methods behave as if every snapshot were stored whole. docs/store.md
gives the format, how other engines read it, and the decisions: a naive `at` or
`since`/`until` is UTC; `latest`, `as_of` and `history` rows carry the id and time of
the snapshot they show; `history("events")` filters on the event's `timestamp`; two
snapshots at the same time are ordered as they were taken.
"""

from __future__ import annotations

import os
import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import pandas as pd
import pyarrow as pa

from toolkit.config import store_path
from toolkit.frames import Details, Workspace, pull, schema
from toolkit.store import events as _store_events
from toolkit.store import query as _query
from toolkit.store.columns import MANIFEST_STORED
from toolkit.store.engine import StoreEngine, StoreUpgraded
from toolkit.store.info import SnapshotInfo
from toolkit.store.tables import Tables
from toolkit.store.views import Recent
from toolkit.store.writing import write
from toolkit.timestamps import When, utc

if TYPE_CHECKING:
    from toolkit.client import Client

__all__ = ["SnapshotInfo", "SnapshotStore", "StoreUpgraded"]


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
        self._engine = StoreEngine(self.root, self._tables)

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
        self._engine.manifest(writing=True)  # a store of an earlier toolkit is upgraded first
        since = self.workspace() if details == "changed" else None
        pulled = pull(
            client, details=details, since=since, concurrency=concurrency, progress=progress
        )
        return write(
            self._engine, pulled, at, workspace or self.workspace_label, compact=self.auto_compact
        )

    def write(self, workspace: Workspace, *, at: When | None = None) -> SnapshotInfo:
        """Write an already pulled workspace as one snapshot (for backfills and tests).

        Args:
            workspace: The pull to write, e.g. from `toolkit.pull`.
            at: The snapshot's time (a naive time is UTC); by default the pull's
                `pulled_at`, else the local clock.

        Returns:
            The snapshot's manifest row.
        """
        return write(self._engine, workspace, at, self.workspace_label, compact=self.auto_compact)

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
        return self._engine.maintain(None)

    # Reading

    def version(self) -> tuple[int | None, ...]:
        """What the store holds now, as each table's Delta version.

        It changes whenever anyone writes a snapshot, events or a merge, so what was
        worked out from an equal version still holds.

        Returns:
            The versions of the tables `schema.VERSIONED_TABLES` names (projects,
            chapters, languages, exports, project_groups, events, manifest), in that
            order; None for a table never written.
        """
        self._tables.begin()
        tables = self._tables.each(schema.VERSIONED_TABLES)
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
        return schema.to_pandas(self._engine.manifest(), MANIFEST_STORED)

    def upgrade(self) -> list[str]:
        """Bring a store written by an earlier toolkit to the current layout, once.

        `toolkit store migrate PATH` runs this; a take does it by itself.

        Returns:
            What was done, a line per table; empty when the store was current.
        """
        return self._engine.upgrade()

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
        return _query.read_history(self._engine, table, since, until, project_ids)

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
        return _query.changes(self._engine, table, project_ids)

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
        return _query.at(self._engine, table, None)

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
        return _query.at(self._engine, table, utc(when))

    def workspace(self, snapshot_id: str | None = None) -> Workspace | None:
        """A snapshot as a `Workspace`, the shape `toolkit.pull` returns.

        Args:
            snapshot_id: The snapshot's id (see `snapshots()`); by default the newest.

        Returns:
            The snapshot's four tables and how its pull went; None for an empty store.

        Raises:
            ValueError: The store has no snapshot with that id.
        """
        return _query.workspace(self._engine, snapshot_id, repr(self))

    def query(
        self,
        sql: str,
        *,
        frames: Mapping[str, pd.DataFrame | pa.Table] | None = None,
        window: tuple[int, int] | None = None,
    ) -> pd.DataFrame:
        """Run DuckDB SQL over the store.

        The views: `snapshots` (the manifest); `projects`, `chapters`, `languages`,
        `exports` (every snapshot's rows); `<table>_changes` (the change log, a row per
        change, `_deleted` marking rows that went away); `events`.

        Args:
            sql: One DuckDB query over those views (and `frames`).
            frames: Your own tables by name, to join with the store's in the same query.
            window: Positions `(first, last)` in `snapshots()`: the views then hold
                those snapshots alone, and `<table>_changes` begins with each key's row
                in force at the snapshot before `first` (stamped with it, `_changed`
                null), so a question about a period reads the period and the state
                before it, not the whole history.

        Returns:
            The query's result.

        Raises:
            QueryError: The SQL does not run (syntax, a view or column that does not
                exist); the message names the views.
            DamagedStore: The store does not read; the message says what to run.
            ValueError: `window` is not positions of this store's snapshots.
        """
        result = self.query_arrow(sql, frames=frames, window=window)
        return schema.to_pandas(result, result.schema)

    def query_arrow(
        self,
        sql: str,
        *,
        frames: Mapping[str, pd.DataFrame | pa.Table] | None = None,
        window: tuple[int, int] | None = None,
    ) -> pa.Table:
        """`query`, answered as an Arrow table (no conversion to pandas: for results of
        millions of rows that are read column by column).

        Args:
            sql: One DuckDB query over the views `query` lists (and `frames`).
            frames: Your own tables by name, to join with the store's in the same query.
            window: Positions `(first, last)` in `snapshots()`, as `query` takes them.

        Returns:
            The query's result.

        Raises:
            QueryError: The SQL does not run; the message names the views.
            DamagedStore: The store does not read; the message says what to run.
            ValueError: `window` is not positions of this store's snapshots.
        """
        return _query.query_arrow(self._engine, sql, frames, window)

    def asking(
        self, tables: Sequence[str], *, since: int | None = None, whole: Collection[str] = ()
    ) -> AbstractContextManager[_query.Asking]:
        """Several queries over the same views, for a caller that asks one query after
        another (what it asks next depends on the answer before): the tables are
        verified and their logs opened once, not once a query. Each query's answer is
        `query_arrow`'s, without `window`.

        ```python
        with store.asking(["chapters", "languages"]) as ask:
            changed = ask.arrow("SELECT DISTINCT chapter_id FROM chapters_changes")
            rows = ask.arrow("SELECT * FROM languages_changes WHERE chapter_id IN "
                             "(SELECT chapter_id FROM ids)", frames={"ids": changed})
        ```

        Args:
            tables: The snapshot tables the queries read (`projects`, `chapters`,
                `languages`, `exports`, `project_groups`), as themselves or their
                `_changes` views.
            since: A snapshot's position: the queries read only the rows of the
                snapshots from it on, of each table but those in `whole`, with both
                `idx >= since` and `snapshot_at >=` its time in their conditions. The
                logs then hold only the files such rows may be in: over a long history
                much quicker to open and scan, and a query that reads further back is
                answered wrongly. Where a snapshot from it on is not linear (its change
                worked out from the states before), the logs are whole.
            whole: The tables read whole all the same (`since`).

        Returns:
            A context whose `arrow(sql, frames=None)` answers one query; the logs close
            when it is left.

        Raises:
            DamagedStore: The store does not read; the message says what to run.
        """
        recent = None if since is None else Recent(since, frozenset(tables) - frozenset(whole))
        return _query.asking(self._engine, tables, recent)

    def _manifest(self, *, writing: bool = False) -> pa.Table:
        """The committed snapshots in order (`StoreEngine.manifest`)."""
        return self._engine.manifest(writing=writing)

"""The store's engine: its tables, what one store object has read and written, and the
reading every operation starts from (the manifest, then the tables' change logs).

`SnapshotStore` is the facade over it: `writing` writes a snapshot through it, `query`
reads through it, `verify` checks what it reads.

Delta has no commit across tables, so the manifest row, appended last, is the commit:
readers ignore every row whose snapshot has no manifest row, and a crash at any point
leaves the store readable and the half-written snapshot invisible.
"""

from __future__ import annotations

import operator
import os
import threading
import warnings
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from datetime import datetime
from typing import TypeVar

import pyarrow as pa

from toolkit.errors import OldStoreLayout, StoreError, ToolkitError
from toolkit.frames import schema
from toolkit.native_stderr import panics_kept_off_stderr
from toolkit.store import latest, versions
from toolkit.store.columns import MANIFEST_STORED, stored_schema
from toolkit.store.connection import arrow, connect
from toolkit.store.ledger import Ledger
from toolkit.store.log import Log
from toolkit.store.manifest import order_manifest
from toolkit.store.migrate import FIRST_LAYOUT, is_old_store, migrate_in_place
from toolkit.store.tables import Tables
from toolkit.store.upgrade import is_current, is_current_store, upgrade, upgrade_message
from toolkit.store.verify import damaged, refuse, verify_reads
from toolkit.store.views import Recent, expose

__all__ = ["StoreEngine", "StoreUpgraded", "T"]

T = TypeVar("T")


class StoreUpgraded(UserWarning):
    """A take upgraded a store written by an earlier toolkit; the message says what
    was done."""


class StoreEngine:
    """One store object's tables and caches, and its reads of them."""

    def __init__(self, root: str, tables: Tables) -> None:
        self.root = root
        self.tables = tables
        self.lock = threading.Lock()
        self.manifest_files: dict[str, pa.Table] = {}  # by file: files never change
        # The manifest ordered from those files (the files themselves, held: the same
        # objects are the same files).
        self.ordered: tuple[list[pa.Table], pa.Table] | None = None
        # The state this object last wrote, so the next take need not read it back.
        self.last: tuple[str, dict[str, pa.Table]] | None = None
        self.worked_out: dict[tuple[str, str, str | None], pa.Table] = {}
        self.wrote = False  # this object's last write finished
        self.ledger = Ledger(tables)
        self.verified: set[tuple[object, ...]] = set()  # (tables, their versions)
        self.upgrading = threading.Lock()

    def upgrade(self) -> list[str]:
        """Migrate a store of an earlier layout one version at a time (`versions`)."""
        with self.upgrading, panics_kept_off_stderr():
            done = versions.upgrade_in_steps(self.tables, self.root, _steps(), is_current_store)
        with self.lock:
            self.manifest_files.clear()
            self.worked_out.clear()
        return done

    def maintain(self, today: datetime | None) -> dict[str, int]:
        """Merge, checkpoint, clean and vacuum the tables (`maintenance`); the merged
        manifest files are read afresh."""
        from toolkit.store.maintenance import maintain

        with panics_kept_off_stderr():  # delta-rs' threads panic on a full disk
            merged = maintain(self.tables, today)
        with self.lock:
            self.manifest_files.clear()
        return merged

    def manifest(self, *, writing: bool = False) -> pa.Table:
        """Committed snapshots in order, with `idx`, `linear`, `base_id` and `full`.
        Every reading and writing method starts here, so this starts an operation: each
        table is brought up to date once in it. A store written by an earlier toolkit is
        upgraded first when `writing`, refused otherwise: it reads only once upgraded."""
        manifest = self.committed()
        versions.refuse_newer(self.tables, self.root)
        if manifest is not None and is_current(manifest):
            # Another engine's DELETE of manifest rows would make snapshots vanish without
            # a word: every read and write is refused until the commit is undone.
            refuse(self.root, self.ledger.foreign("manifest", self.ledger.settled()), manifest)
            return manifest
        first_layout = manifest is None and self.tables.local and is_old_store(self.tables.root)
        if manifest is None and not first_layout:
            return order_manifest(MANIFEST_STORED.empty_table())
        if not writing:
            raise OldStoreLayout(upgrade_message(self.root))
        done = self.upgrade()
        warnings.warn(
            StoreUpgraded(f"upgraded the store {self.root!r}: " + "; ".join(done)), stacklevel=3
        )
        return self.manifest()

    def committed(self) -> pa.Table | None:
        """The manifest's rows in order; None when there is no manifest table."""
        self.tables.begin()
        if self.tables.get("manifest") is None:
            return None
        try:
            with self.lock:
                parts = self.tables.read_files("manifest", self.manifest_files, MANIFEST_STORED)
        except StoreError:
            raise
        except Exception as error:
            raise damaged(self.tables, self.root, error) from error
        with self.lock:
            last = self.ordered
        if (
            last is not None
            and len(last[0]) == len(parts)
            and all(map(operator.is_, last[0], parts))
        ):
            return last[1]  # the same files: ordered once (0.02 s a year of snapshots)
        merged = pa.concat_tables(parts) if parts else MANIFEST_STORED.empty_table()
        ordered = order_manifest(merged)
        with self.lock:
            self.ordered = (parts, ordered)
        return ordered

    def state(self, snapshot_id: str, manifest: pa.Table) -> dict[str, pa.Table]:
        """Every table's rows at one snapshot (from memory when this object wrote it)."""
        with self.lock:
            if self.last is not None and self.last[0] == snapshot_id:
                return self.last[1]
        if self.tables.local:  # kept by the write that made it, in another process?
            root = self.tables.root
            folders = latest.kept_versions(root, snapshot_id)
            # The folder kept for the snapshot is read on a thread while the tables are
            # opened and their logs verified here (Arrow's reads and delta-rs' let go of
            # the interpreter); its rows are used once its versions prove the store's.
            with ThreadPoolExecutor(max_workers=1) as pool:
                loading = (
                    pool.submit(latest.load, root, snapshot_id, folders[0]) if folders else None
                )
                named = self.kept_state(snapshot_id, folders)
                if named:
                    if loading is None or named != folders[0]:
                        loading = pool.submit(latest.load, root, snapshot_id, named)
                    verify_reads(self, manifest, list(schema.SNAPSHOT_TABLES))
                    kept = loading.result()
                    if kept is not None:
                        return kept
        return self.logged_state(snapshot_id, manifest)

    def kept_rows(self, table: str, snapshot_id: str, manifest: pa.Table) -> pa.Table | None:
        """One table's rows at `snapshot_id` as the write that made it kept them
        (`latest`), while the store is in that state; None otherwise (then they are
        worked out from the log)."""
        if not self.tables.local:
            return None
        named = self.kept_state(snapshot_id)
        kept = latest.load_table(self.tables.root, snapshot_id, named, table) if named else None
        if kept is not None:
            verify_reads(self, manifest, [table])  # a damaged store is refused all the same
        return kept

    def logged_state(self, snapshot_id: str, manifest: pa.Table) -> dict[str, pa.Table]:
        """Every table's rows at one snapshot, worked out from the change logs."""
        k = manifest.column("snapshot_id").to_pylist().index(snapshot_id)

        def read(logs: dict[str, Log]) -> dict[str, pa.Table]:
            return {
                name: schema.conform(arrow(log.con, log.state_sql(k)), schema.SNAPSHOT_TABLES[name])
                for name, log in logs.items()
            }

        return self.with_logs(list(schema.SNAPSHOT_TABLES), manifest, read)

    def kept_versions(self) -> tuple[int | None, ...]:
        """The Delta versions that name a kept state (`latest.KEPT_TABLES`), as of this
        operation's look at each table."""
        tables = self.tables.each(latest.KEPT_TABLES)
        return tuple(table.version() if table is not None else None for table in tables)

    def kept_state(
        self, snapshot_id: str, folders: list[tuple[int | None, ...]] | None = None
    ) -> tuple[int | None, ...] | None:
        """The versions that name the rows kept for `snapshot_id` (`latest`) when they are
        the store's rows now: kept at this operation's versions, or at earlier ones with
        only commits since that change no row (`Commit.keeps_rows`); else None.
        `folders`: the versions of the folders kept for it, when read already."""
        now = self.kept_versions()
        if folders is None:
            folders = latest.kept_versions(self.tables.root, snapshot_id)
        for named in folders:
            if named == now or self._rows_kept(named, now):
                return named
        return None

    def _rows_kept(self, then: tuple[int | None, ...], now: tuple[int | None, ...]) -> bool:
        """Whether every commit between versions `then` and `now` of each kept table
        changes no row."""
        if len(then) != len(now):
            return False
        for name, old, new in zip(latest.KEPT_TABLES, then, now, strict=True):
            if old == new:
                continue
            if old is None or new is None or new < old:
                return False
            commits = self.ledger.commits(name)
            for version in range(old + 1, new + 1):
                commit = commits.get(version)
                if commit is None or not commit.keeps_rows():
                    return False
        return True

    def keeping(self, tables: dict[str, pa.Table]) -> latest.Keeping | None:
        """Start keeping the rows a write is about to commit, for the next write's base
        (`latest`); None on an object store, which keeps nothing."""
        return latest.Keeping(self.tables.root, tables) if self.tables.local else None

    def keep_state(self, snapshot_id: str, keeping: latest.Keeping) -> None:
        """Keep the rows a write just committed (`keeping`), named by the tables'
        versions now."""
        self.tables.begin()  # the versions after this write's commits
        keeping.done(snapshot_id, self.kept_versions())

    def read(self, table: str, manifest: pa.Table, read: Callable[[Log], T]) -> T:
        return self.with_logs([table], manifest, lambda logs: read(logs[table]))

    def with_logs(
        self, tables: list[str], manifest: pa.Table, work: Callable[[dict[str, Log]], T]
    ) -> T:
        """Run `work` on the tables' change logs, each at its newest version, once the
        tables are verified against the manifest (`verify`)."""
        with self.logs_open(tables, manifest) as logs, self.read_as_damage():
            return work(logs)

    @contextmanager
    def read_as_damage(self) -> Iterator[None]:
        """An error reading the store (not one of the toolkit's own) says the store is
        damaged and what to run (`verify.damaged`)."""
        try:
            yield
        except ToolkitError:
            raise
        except Exception as error:
            raise damaged(self.tables, self.root, error) from error

    @contextmanager
    def logs_open(
        self, tables: list[str], manifest: pa.Table, recent: Recent | None = None
    ) -> Iterator[dict[str, Log]]:
        """The tables' change logs, each at its newest version, on one connection, once
        the tables are verified against the manifest (`verify`); closed on leaving. What
        the block does with them maps its own errors (`with_logs`, `query.Asking`).
        `recent`: the logs of its tables hold only the rows of its snapshots (`Recent`)."""
        con = connect()
        try:
            with self.read_as_damage():
                verify_reads(self, manifest, tables)
                con.register("manifest", manifest)
                first, at = recent.reaches(manifest) if recent is not None else (0, None)
                cut = recent.tables if recent is not None and at is not None else frozenset()
                logs = {}
                for name in tables:
                    expose(self.tables, con, f"stored_{name}", name, stored_schema(name),
                           since=at if name in cut else None)  # fmt: skip
                    logs[name] = Log(con, name, f"stored_{name}", manifest, cache=self.worked_out,
                                     first=first if name in cut else 0)  # fmt: skip
            yield logs
        finally:
            con.close()


def _steps() -> list[versions.Step]:
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

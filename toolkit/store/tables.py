"""The snapshot store's Delta Lake tables: where they are, how rows are appended, how they
are read.

Knows nothing of snapshots' meaning; `snapshot_store` decides what to write and `log`
what the rows mean. Every table lives at `<root>/<name>/` with its `_delta_log/`; a
local folder and an object store URI (`s3://...`) behave the same, through delta-rs.

An append is one Delta commit: its data files appear, complete, the moment the commit
lands, or never (a crash leaves only unreferenced files, which `vacuum` removes later).
Two writers committing at once are serialised by Delta's optimistic concurrency (on S3
by conditional puts): the loser retries its commit, which for appends always succeeds.
Each append records the snapshot as an application transaction (`txn` action, app id
`toolkit.snapshot:<snapshot id>`, version = the snapshot's time in microseconds) and
carries the snapshot's id and time in the commit's metadata, so a rerun after a crash
can tell which tables already hold a snapshot. One app id per snapshot, not per store:
Delta refuses two concurrent commits that set the same app id, and two processes
taking snapshots at once must both commit.
"""

from __future__ import annotations

import contextlib
import errno
import os
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta
from typing import Any

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
from deltalake import (
    CommitProperties,
    DeltaTable,
    PostCommitHookProperties,
    Transaction,
    WriterProperties,
    write_deltalake,
)
from deltalake.exceptions import CommitFailedError

from toolkit.errors import DamagedStore, StoreError
from toolkit.formatting import first_line
from toolkit.frames.schema import conform
from toolkit.native_stderr import panics_kept_off_stderr

__all__ = ["BASE_ID_KEY", "SNAPSHOT_AT_KEY", "SNAPSHOT_ID_KEY", "WRITER",
           "Tables", "app_id", "columns", "version_of"]  # fmt: skip

_APP_PREFIX = "toolkit.snapshot:"
SNAPSHOT_ID_KEY = "toolkit.snapshot_id"
SNAPSHOT_AT_KEY = "toolkit.snapshot_at"
BASE_ID_KEY = "toolkit.base_id"
# Commits retried when another writer got there first (appends never really conflict).
_COMMIT_RETRIES = 25
_APPEND_ATTEMPTS = 5
# zstd, as the first layout used: a third smaller than delta-rs's default snappy here.
WRITER = WriterProperties(compression="ZSTD")


def columns(table: DeltaTable) -> set[str]:
    """The names of the columns the table's schema has now."""
    return {field.name for field in table.schema().fields}


def app_id(snapshot_id: str) -> str:
    """The Delta transaction app id that marks the commits of a snapshot."""
    return _APP_PREFIX + snapshot_id


def version_of(when: datetime) -> int:
    """A snapshot's application transaction version: its time in microseconds."""
    return int(when.timestamp() * 1_000_000)


def _table_config(retention: timedelta) -> dict[str, str]:
    """Table properties every store table is created with.

    The per-commit log cleanup is off (it lists the whole `_delta_log` on every commit,
    which made a write 4x slower over a year); `maintain` runs it once a day instead,
    keeping log entries and removed files for `retention`.
    """
    seconds = max(int(retention.total_seconds()), 0)
    return {
        "delta.enableExpiredLogCleanup": "false",
        "delta.logRetentionDuration": f"interval {seconds} seconds",
        "delta.deletedFileRetentionDuration": f"interval {seconds} seconds",
        "delta.checkpointInterval": "100",
        # One application transaction per snapshot: forgotten after the retention, so
        # checkpoints do not carry a year of them.
        "delta.setTransactionRetentionDuration": f"interval {seconds} seconds",
    }


class Tables:
    """The Delta tables under one store root, opened once and brought up to date on use."""

    def __init__(
        self,
        root: str,
        *,
        storage_options: dict[str, str] | None = None,
        retention: timedelta = timedelta(days=1),
    ) -> None:
        self.local = "://" not in root or root.startswith("file://")
        self.root = os.path.abspath(root.removeprefix("file://")) if self.local else root
        self.storage_options = dict(storage_options or {})
        self.retention = retention
        self._open: dict[str, DeltaTable] = {}
        self._fresh: set[str] = set()
        self._lock = threading.Lock()
        # The versions this object's appends committed, by table (`verify_reads` need
        # not read them back to trust them).
        self.appended: dict[str, set[int]] = {}

    def uri(self, name: str) -> str:
        return f"{self.root.rstrip('/')}/{name}"

    def check_root(self) -> None:
        """Refuse a local root that is a file or lies under one: it must not read as an
        empty store, and writing would fail deep inside delta-rs."""
        if not self.local:
            return
        path = self.root
        while path and not os.path.exists(path):
            parent = os.path.dirname(path)
            if parent == path:
                break
            path = parent
        if os.path.exists(path) and not os.path.isdir(path):
            where = "is" if path == self.root else f"lies under {path!r}, which is"
            raise StoreError(
                f"the store {self.root!r} {where} a file, not a folder; "
                "give a folder (new or holding a store)"
            )

    def begin(self) -> None:
        """Start an operation: each table is brought up to date once, on its first use
        (listing a table's log costs some milliseconds, and a write uses each table a
        few times)."""
        with self._lock:
            self._fresh.clear()

    def forget(self, name: str) -> None:
        """Drop table `name`'s open object: the next `get` opens it afresh (from its newest
        checkpoint, without the state every commit since it was opened added)."""
        with self._lock:
            self._open.pop(name, None)
            self._fresh.discard(name)

    def get(self, name: str) -> DeltaTable | None:
        """The table at its newest version (as of this operation's first look), or None
        when it was never written."""
        with self._lock:
            table = self._open.get(name)
            fresh = name in self._fresh
            self._fresh.add(name)
        try:
            if table is not None:
                if not fresh:
                    table.update_incremental()
                return table
            self.check_root()
            if not DeltaTable.is_deltatable(self.uri(name), storage_options=self.storage_options):
                return None
            table = DeltaTable(self.uri(name), storage_options=self.storage_options)
        except StoreError:
            raise
        except Exception as error:
            raise DamagedStore(
                f"the log of {self.uri(name)} cannot be read ({first_line(error)}); run "
                f"`toolkit store check --store {self.root}` to see which snapshots it "
                "touches and what `--repair` does about each"
            ) from error
        with self._lock:
            self._open[name] = table
        return table

    def each(self, names: Sequence[str]) -> list[DeltaTable | None]:
        """`get` of each of `names`, side by side: opening a table reads its log outside
        the interpreter lock, and a fresh store object opens several at its first write
        or version (0.1 s one after the other at a year of snapshots). Tables open
        already are brought up to date one after the other: that costs less than
        starting threads."""
        with self._lock:
            opened = all(name in self._open for name in names)
        if opened or len(names) < 2:
            return [self.get(name) for name in names]
        with ThreadPoolExecutor(max_workers=len(names)) as pool:
            return list(pool.map(self.get, names))

    def append(
        self,
        name: str,
        rows: pa.Table,
        *,
        metadata: dict[str, str] | None = None,
        transaction: tuple[str, int] | None = None,
    ) -> int:
        """Append `rows` to table `name` (created on first use) as one commit, recording
        `transaction` (app id, version) when given; returns the commit's version."""
        properties = CommitProperties(
            custom_metadata=metadata,
            app_transactions=(
                [Transaction(*transaction, last_updated=int(time.time() * 1000))]
                if transaction is not None
                else None
            ),
            max_commit_retries=_COMMIT_RETRIES,
        )
        hooks = PostCommitHookProperties(create_checkpoint=True, cleanup_expired_logs=False)
        for attempt in range(_APPEND_ATTEMPTS):
            table = self.get(name)
            before = self._listing(name)
            target: Any = table if table is not None else self.uri(name)
            # A table written before a column was added to the store gains it.
            grows = table is not None and bool(set(rows.schema.names) - columns(table))
            try:
                with panics_kept_off_stderr():  # delta-rs' threads panic on a full disk
                    write_deltalake(
                        target,
                        rows,
                        mode="append",
                        schema_mode="merge" if grows else None,
                        configuration=_table_config(self.retention) if table is None else None,
                        storage_options=self.storage_options if table is None else None,
                        commit_properties=properties,
                        post_commithook_properties=hooks,
                        writer_properties=WRITER,
                    )
                break
            except CommitFailedError as error:
                # A merge in another process replaced files meanwhile (delta-rs counts
                # that as a conflict even for an append), or it created the table first.
                # The rows do not depend on what was replaced: append them again; the
                # files of the failed attempt are unreferenced and vacuum removes them.
                if attempt == _APPEND_ATTEMPTS - 1:
                    raise self.failed("write to", name, error) from error
            except Exception as error:
                self._remove_leftovers(name, before, error)
                exists = DeltaTable.is_deltatable(
                    self.uri(name), storage_options=self.storage_options
                )
                if table is not None or not exists or attempt == _APPEND_ATTEMPTS - 1:
                    raise self.failed("write to", name, error) from error
            with self._lock:
                self._fresh.discard(name)
        if table is None:
            # Created by this append: delta-rs wrote version 0, or another writer
            # created the table first and this append landed after.
            created = self.get(name)
            assert created is not None
            version = created.version()
        else:
            version = table.version()  # delta-rs moved the table to the version it committed
        with self._lock:
            self.appended.setdefault(name, set()).add(version)
        return version

    def _listing(self, name: str) -> set[str] | None:
        folder = self.uri(name)
        return set(os.listdir(folder)) if self.local and os.path.isdir(folder) else None

    def _remove_leftovers(self, name: str, before: set[str] | None, error: Exception) -> None:
        """After a write that failed on a full disk, remove the files it left.

        Only then: a file that appeared meanwhile and that no version lists could also
        be another writer's, about to be committed, and a full disk fails that writer
        too. Other leftovers go with the daily vacuum, once older than the retention.
        """
        if before is None or not self.disk_full(name, error):
            return
        table = self.get(name)
        listed = {os.path.basename(uri) for uri in table.file_uris()} if table else set()
        for leftover in (self._listing(name) or set()) - before - listed:
            if leftover.endswith(".parquet") or "#" in leftover:
                with contextlib.suppress(OSError):
                    os.remove(os.path.join(self.uri(name), leftover))

    def disk_full(self, name: str, error: BaseException) -> bool:
        """Whether `error` stopped a write to `name` because its disk is full: the OS's
        words anywhere in delta-rs' text, or, when delta-rs said only "Generic
        LocalFileSystem error", a local disk with no block left."""
        if "no space left" in str(error).lower() or getattr(error, "errno", 0) == errno.ENOSPC:
            return True
        if not self.local or not hasattr(os, "statvfs"):
            return False
        place = self.uri(name)
        while not os.path.exists(place) and os.path.dirname(place) != place:
            place = os.path.dirname(place)
        with contextlib.suppress(OSError):
            return os.statvfs(place).f_bavail == 0
        return False

    def failed(self, doing: str, name: str, error: BaseException) -> StoreError:
        """A store error naming the table's location, in place of a delta-rs error."""
        reason = first_line(error)
        lowered = reason.lower()
        if self.disk_full(name, error):
            advice = "the disk is full: free some space and take the snapshot again"
        elif "permission denied" in lowered or "read-only" in lowered:
            advice = "the store is read-only here: give a folder you can write to"
        else:
            advice = f"({type(error).__name__}: {reason})"
        return StoreError(f"could not {doing} {self.uri(name)}: {advice}")

    def transaction_version(self, name: str, app: str) -> int | None:
        table = self.get(name)
        return table.transaction_version(app) if table is not None else None

    def last_commit(self, name: str) -> dict[str, Any]:
        """The newest commit's information, custom metadata included."""
        table = self.get(name)
        return table.history(1)[0] if table is not None else {}

    def dataset(self, name: str, schema: pa.Schema) -> ds.Dataset:
        """The table's current rows as a lazy Arrow dataset (DuckDB scans it with filter
        pushdown, and file statistics skip files outside a time window); an empty one
        when the table was never written."""
        table = self.get(name)
        if table is None:
            return ds.dataset(schema.empty_table())
        return table.to_pyarrow_dataset()

    def plain(self, table: DeltaTable) -> bool:
        """Whether DuckDB's own Parquet reader reads the table: a local one of plain
        Parquet files (reader protocol 1, which is all this store writes)."""
        return self.local and table.protocol().min_reader_version <= 1

    def read_files(
        self, name: str, cache: dict[str, pa.Table], schema: pa.Schema
    ) -> list[pa.Table]:
        """The table's data files as `schema`, each read once: data files never change,
        so `cache` (by file) keeps what was read before; files no longer in the table
        leave it."""
        uris = self.files(name)
        missing = [uri for uri in uris if uri not in cache]
        if missing and self.local:
            # Plain file reads, side by side (Arrow reads outside the interpreter lock):
            # `pq.read_table` sets up a dataset per file, which costs more than reading
            # one of these small files, and a year's manifest is some fifty of them.
            def read(uri: str) -> pa.Table:
                with pq.ParquetFile(uri.removeprefix("file://")) as file:
                    return conform(file.read(), schema)

            with ThreadPoolExecutor(max_workers=min(8, len(missing))) as pool:
                cache.update(zip(missing, pool.map(read, missing), strict=True))
        elif missing:
            table = self.get(name)
            assert table is not None
            wanted = set(missing)
            for fragment in table.to_pyarrow_dataset().get_fragments():
                found = next((u for u in wanted if u.endswith("/" + fragment.path)), None)
                found = found or (fragment.path if fragment.path in wanted else None)
                if found is not None:
                    cache[found] = conform(fragment.to_table(), schema)
        for uri in [uri for uri in cache if uri not in set(uris)]:
            del cache[uri]
        return [cache[uri] for uri in uris if uri in cache]

    def unlike_listed(self, name: str) -> list[str]:
        """The files table `name` lists that are missing, or not the size its log
        records (replaced by another file), on a local disk: a read of them would
        return other rows than were committed. A stat per file, no read."""
        table = self.get(name)
        if table is None or not self.local:
            return []
        listed = pa.table(table.get_add_actions(flatten=False)).select(["path", "size_bytes"])
        wrong = []
        for path, size in zip(*listed.to_pydict().values(), strict=True):
            full = os.path.join(self.uri(name), path)
            try:
                if os.path.getsize(full) == size:
                    continue
            except OSError:
                pass
            wrong.append(full)
        return wrong

    def files(self, name: str) -> list[str]:
        table = self.get(name)
        return table.file_uris() if table is not None else []

"""The snapshot store's files: where they go, how they are written, which ones count.

Knows nothing of snapshots; `toolkit.store` decides what to write and `_store_log` what
the rows mean. Everything goes through a `pyarrow.fs.FileSystem`, so a local folder and
an object store URI (`s3://...`, `gs://...`) behave the same; local folders also get
`fsync` before each rename, so a committed file survives a power cut.

A file is written under `.<stem>.parquet.tmp` (a dot name that does not end in
`.parquet`: neither pyarrow nor DuckDB's glob reads it) and then moved to
`<stem>.parquet`; the move is the moment it appears.

Compaction merges a folder's files into `compact-<id>.parquet`, whose footer lists the
stems it replaces (`toolkit.covers`, including what the files it merged had replaced).
A file whose stem another file in the same folder covers is not visible, so readers see
the same rows before, during and after a compaction, and a crash between writing the
merged file and deleting the small ones changes nothing. Covered files stay on disk a
while (`linger`) before a later compaction deletes them, so that a reader that listed
the folder just before still finds every file it listed.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.fs as pafs
import pyarrow.parquet as pq

COMPACT_PREFIX = "compact-"
COVERS_KEY = b"toolkit.covers"
SUFFIX = ".parquet"
TEMP_SUFFIX = ".parquet.tmp"


@dataclass(frozen=True)
class StoredFile:
    """One visible Parquet file: its full path, folder, partition value and stem."""

    path: str
    folder: str
    partition: str | None
    stem: str
    mtime: float | None

    @property
    def compacted(self) -> bool:
        return self.stem.startswith(COMPACT_PREFIX)


def new_id(when: datetime) -> str:
    """A UUIDv7-shaped id that sorts by `when`, then by the moment it was made.

    The first 60 bits are `when` (milliseconds, then the sub-millisecond part), so ids
    sort as their snapshot times do; the next 52 bits are the wall clock in
    microseconds, so two ids for the same `when` sort in the order they were made, by
    whichever process; 10 random bits keep two processes in the same microsecond apart.
    """
    micros = int(when.astimezone(UTC).timestamp() * 1_000_000)
    millis, sub = divmod(micros, 1000)
    sub12 = sub * 4096 // 1000
    made = time.time_ns() // 1000 & ((1 << 52) - 1)
    value = (millis & ((1 << 48) - 1)) << 80 | 0x7 << 76 | sub12 << 64
    value |= 0b10 << 62 | made << 10 | secrets.randbits(10)
    text = f"{value:032x}"
    return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"


def resolve(
    root: str | os.PathLike[str], filesystem: pafs.FileSystem | None
) -> tuple[pafs.FileSystem, str]:
    """The filesystem and base path of a store location (a folder or a URI)."""
    text = os.fspath(root)
    if filesystem is not None:
        return filesystem, text.rstrip("/")
    if "://" in text:
        fs, path = pafs.FileSystem.from_uri(text)
        return fs, path.rstrip("/")
    return pafs.LocalFileSystem(), os.path.abspath(text)


class Files:
    """Atomic writes, listings with the covering rule, and datasets over a store's files."""

    def __init__(self, fs: pafs.FileSystem, base: str) -> None:
        self.fs = fs
        self.base = base
        self.local = isinstance(fs, pafs.LocalFileSystem)
        self._covers: dict[str, frozenset[str]] = {}
        self._lock = threading.Lock()

    def folder(self, table: str, partition: str | None = None) -> str:
        parts = [self.base, table] if partition is None else [self.base, table, partition]
        return "/".join(parts)

    def write(
        self,
        table: pa.Table,
        folder: str,
        stem: str,
        *,
        covers: list[str] | None = None,
        sort_by: list[tuple[str, str]] | None = None,
    ) -> str:
        """Write `table` to `<folder>/<stem>.parquet` atomically; returns the final path."""
        if covers is not None:
            metadata = dict(table.schema.metadata or {})
            metadata[COVERS_KEY] = json.dumps(sorted(covers)).encode()
            table = table.replace_schema_metadata(metadata)
        if sort_by:
            table = table.sort_by(sort_by)
        self.fs.create_dir(folder, recursive=True)
        temp = f"{folder}/.{stem}{TEMP_SUFFIX}"
        final = f"{folder}/{stem}{SUFFIX}"
        if self.local:
            with open(temp, "wb") as out:
                pq.write_table(table, out, compression="zstd")
                out.flush()
                os.fsync(out.fileno())
            os.replace(temp, final)
            _fsync_folder(folder)
        else:
            with self.fs.open_output_stream(temp) as out:
                pq.write_table(table, out, compression="zstd")
            self.fs.move(temp, final)
        return final

    def visible(self, table: str) -> list[StoredFile]:
        """The visible files of a table's folder (recursively), covered ones left out."""
        return self.scan(table)[0]

    def scan(self, table: str) -> tuple[list[StoredFile], list[tuple[StoredFile, float]]]:
        """The visible files of a table's folder, and the covered ones each with the
        modification time of the newest file covering it."""
        selector = pafs.FileSelector(self.folder(table), recursive=True, allow_not_found=True)
        found: list[StoredFile] = []
        for info in self.fs.get_file_info(selector):
            if info.type != pafs.FileType.File:
                continue
            name = info.base_name
            if name.startswith((".", "_")) or not name.endswith(SUFFIX):
                continue
            folder = info.path.rsplit("/", 1)[0]
            partition = folder.rsplit("/", 1)[1]
            mtime = info.mtime.timestamp() if info.mtime is not None else None
            found.append(
                StoredFile(
                    path=info.path,
                    folder=folder,
                    partition=partition.split("=", 1)[1] if "=" in partition else None,
                    stem=name[: -len(SUFFIX)],
                    mtime=mtime,
                )
            )
        covering: dict[tuple[str, str], float] = {}
        gone: set[str] = set()
        for f in found:
            if not f.compacted:
                continue
            try:
                stems = self.covers(f.path)
            except FileNotFoundError:
                gone.add(f.path)  # removed by a compaction since the listing
                continue
            for stem in stems:
                key = (f.folder, stem)
                covering[key] = max(covering.get(key, 0.0), f.mtime or 0.0)
        visible = [f for f in found if (f.folder, f.stem) not in covering and f.path not in gone]
        covered = [
            (f, covering[(f.folder, f.stem)]) for f in found if (f.folder, f.stem) in covering
        ]
        return sorted(visible, key=lambda f: f.path), covered

    def covers(self, path: str) -> frozenset[str]:
        """The stems a compacted file replaces (read from its footer once, then cached)."""
        with self._lock:
            if path in self._covers:
                return self._covers[path]
        metadata = pq.read_metadata(path, filesystem=self.fs).metadata or {}
        stems = frozenset(json.loads(metadata.get(COVERS_KEY, b"[]")))
        with self._lock:
            self._covers[path] = stems
        return stems

    def leftovers(self, table: str, older_than: float) -> list[str]:
        """Temporary files of a table's folder last touched more than `older_than` s ago."""
        selector = pafs.FileSelector(self.folder(table), recursive=True, allow_not_found=True)
        limit = time.time() - older_than
        return [
            info.path
            for info in self.fs.get_file_info(selector)
            if info.type == pafs.FileType.File
            and info.base_name.startswith(".")
            and info.base_name.endswith(TEMP_SUFFIX)
            and info.mtime is not None
            and info.mtime.timestamp() < limit
        ]

    def dataset(self, files: list[StoredFile], schema: pa.Schema) -> ds.Dataset:
        """A lazy dataset over `files`, read as `schema` (DuckDB scans it with pushdown)."""
        return ds.dataset(
            [f.path for f in files], schema=schema, format="parquet", filesystem=self.fs
        )

    def read(self, path: str, schema: pa.Schema) -> pa.Table:
        return pq.read_table(path, schema=schema, filesystem=self.fs)

    @contextmanager
    def lock(self, *, wait: bool) -> Iterator[bool]:
        """Hold the store's compaction lock; yields whether it is held. Without `wait`,
        yields False at once when another process holds it. Only local disks have one:
        elsewhere this yields `wait`."""
        if not self.local:
            yield wait
            return
        import fcntl

        os.makedirs(self.base, exist_ok=True)
        with open(os.path.join(self.base, ".compact.lock"), "a") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
            except BlockingIOError:
                yield False
                return
            try:
                yield True
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def exists(self, path: str) -> bool:
        return bool(self.fs.get_file_info(path).type == pafs.FileType.File)

    def delete(self, paths: list[str]) -> None:
        for path in paths:
            with contextlib.suppress(FileNotFoundError):
                self.fs.delete_file(path)


def _fsync_folder(folder: str) -> None:
    # The rename itself is only durable once the folder's entry is on disk.
    try:
        descriptor = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(descriptor)
    except OSError:
        pass
    finally:
        os.close(descriptor)

"""The run pipeline's stages kept in the store: worked out once per state of the store,
then read by every later question, in any process, until the store changes.

Every run figure stands on the same stages (transitions -> prices -> charges -> run
table -> runs frame), and each rebuilt them from the whole change log: seconds on a long
history, for a week's figure as for the history's. A stage built for a store is written
beside its tables, under `<root>/_runs/<state>/<stage>.arrow`, and a later `Observed` of
the same state reads it instead of building it. What is read is what the pipeline built, byte for
byte (`tests/analysis/test_run_store.py` holds the figures read so equal, frame for
frame, to the figures built on the scenario stores and on the seeded histories).

`<state>` names everything a stage is worked out from, so a stage is never read for
another: the version of each Delta table (a snapshot, events, a merge, an upgrade or a
repair each move one), the manifest's snapshots with the commits each recorded, and the
source of the toolkit's analysis and store code (a rule changed by an upgrade of the
toolkit reads as another state). A state the store has moved on from is never read
again; its folder is deleted by a later save (at most `_MOST_STATES` others are kept).
A stage is saved only when the store did not change while it was built, so what was
read for it is one state. A state that keeps its transitions keeps every stage, however
quick, and a `basis` beside them: the next state's stages are extended from them
(`run_extend`), not built from the whole log.

A stage is written to a temporary file and renamed into place: a crash leaves a whole
file or none, and a file that does not read is built again (never an error). Only local
stores keep stages; on an object store every question builds them, as before.
`toolkit store check` compares what is kept with a build (`run_check`), and `--repair`
deletes what disagrees.

Past 400 lines on purpose: how a state's files are named, encoded, written (in place or
behind, `Keeper.write_behind`) and read back is one contract every reader of `_runs/`
depends on; the encoding is the part to move out if it grows.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import shutil
import time
from concurrent.futures import Future, ThreadPoolExecutor
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, cast

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from toolkit.analysis._arrays import to_micros
from toolkit.files import write_arrow, write_whole

if TYPE_CHECKING:
    from toolkit.store import SnapshotStore

__all__ = [
    "BASIS",
    "FOLDER",
    "KEEP_AFTER_SECONDS",
    "KEPT",
    "LANGUAGES",
    "LAST",
    "PART",
    "READ_LAST",
    "SAMPLES",
    "Keeper",
    "code_version",
    "decode",
    "encode",
    "extended",
    "folder_of",
    "forget",
    "frame_table",
    "kept_as",
    "manifest_digests",
]

FOLDER: Final = "_runs"
# The stages kept (by module and class: this module imports none of them, since the
# last, the runs frame, reads `Observed`), each by the name of its file.
KEPT: Final[dict[str, str]] = {
    "toolkit.analysis.transitions.Transitions": "transitions",
    "toolkit.analysis.prices.Prices": "prices",
    "toolkit.analysis.charges.Charges": "charges",
    "toolkit.analysis.run_table.RunTable": "run_table",
    "toolkit.analysis.runs.RunFrame": "run_frame",
    # Kept as they are, not extended: the review figures' moves (`review_moves`).
    "toolkit.analysis.review_moves.ReviewMoves": "review_moves",
}
# The stages an extension makes for a new state from an earlier one's (`run_extend`).
_EXTENDED: Final = frozenset(("transitions", "prices", "charges", "run_table", "run_frame"))
_FIRST: Final = "toolkit.analysis.transitions.Transitions"
# The last stage (an extension makes it from the others, not kept: `Observed`).
LAST: Final = "run_frame"
# The last stage an extension reads: once it is kept, so is what the next state's
# extension starts from (`run_extend.remember`), whichever figure asked it. Not the
# runs frame: the weekly page asks none, and a store only paged was built whole at
# every snapshot (18.6-19.3 s and 2.9-3.2 GiB at 100,000 chapters x a year, against
# 12-13 s extended).
READ_LAST: Final = "run_table"
# A stage that built faster than this is not kept: reading it back would save next to
# nothing, and a small store (a test's, a notebook's first days) stays as it was, with
# no `_runs` folder and no write on a read. The stages of a long history take seconds.
KEEP_AFTER_SECONDS = 0.25
# A state's folder older than this, not the one being written, is deleted by a save: a
# reader that listed it a moment ago may still be opening its files.
_STALE_SECONDS: Final = 600
# At most this many states besides the one being written are kept (the newest).
_MOST_STATES: Final = 2
# The file beside a state's stages that an extension starts from (`run_extend`).
BASIS: Final = "basis"
# And every chapter's languages, each pair once, which an extension counts with the
# pairs since alone (`run_extend`; written before the basis).
LANGUAGES: Final = "languages"
# And, beside a base state (one whose stages are kept whole), its first charges, which
# the learned prices of a part over it are learned from (`run_part`).
SAMPLES: Final = "first_charges"
# A part's rows, which name the base state it is joined with (`run_part`).
PART: Final = "part"
# Kept uncompressed, and read mapped: a part reads the rows of a few chapters of its
# base's transitions (`run_part`), and a figure the columns of the run table it needs,
# as pages of the file the system holds already. Decompressed, each was fresh memory
# (at 100,000 chapters x a year 0.1-0.5 s each, however few of its columns were read).
_MAPPED: Final = frozenset({"transitions", "run_table", "review_moves"})
_FRAME: Final = "frame:"  # the columns of a DataFrame field, as `frame:<field>:<column>`


@cache
def code_version() -> str:
    """A digest of the analysis and store code: a toolkit whose rules differ works out
    other stages, and must not read these."""
    digest = hashlib.sha256()
    toolkit = Path(__file__).resolve().parent.parent
    sources = [
        p for part in ("analysis", "store", "frames") for p in (toolkit / part).rglob("*.py")
    ]
    for path in sorted(sources):
        digest.update(str(path.relative_to(toolkit)).encode())
        digest.update(path.read_bytes())
    # No source to read (a zipped install): no digest could tell two toolkits apart.
    return digest.hexdigest() if sources else ""


def folder_of(store: SnapshotStore) -> Path | None:
    """Where a store keeps its stages; None for an object store, or a toolkit whose code
    cannot be read (not kept)."""
    root = str(store.root)
    if ("://" in root and not root.startswith("file://")) or not code_version():
        return None
    return Path(root.removeprefix("file://")) / FOLDER


# The manifest's columns that name a state (a kept state's snapshots must have them
# unchanged).
_NAMING: Final = ("snapshot_id", "snapshot_at", "commits", "base_id")


def manifest_digests(manifest: pd.DataFrame, n: int) -> dict[str, str]:
    """A digest of each of the manifest's columns that name a state (`_NAMING`) over
    its first `n` snapshots: what a kept state compares, not every value (a year's
    8,760 snapshots each made a Python text twice an extension, 0.1 s), and what names
    it (`Keeper.state`)."""
    digests = {}
    for column in _NAMING:
        if column not in manifest:
            continue
        values = manifest[column].iloc[:n]
        if pd.api.types.is_datetime64_any_dtype(values):
            # As microseconds: times written as texts cost 13 ms a year of snapshots.
            data = to_micros(values).tobytes()
        else:
            texts = pa.array(values, from_pandas=True).cast(pa.string())
            data = "\x1f".join(pc.fill_null(texts, "\x00").to_pylist()).encode()
        digests[column] = hashlib.sha256(data).hexdigest()
    return digests


class Keeper:
    """Reads and saves one `Observed`'s stages, for the state its store was in when it
    was made."""

    def __init__(
        self,
        store: SnapshotStore,
        version: tuple[int | None, ...],
        *,
        after: float | None = None,
    ) -> None:
        """`after`: the seconds a stage must take to build to be kept (None:
        `KEEP_AFTER_SECONDS`; 0 keeps every stage)."""
        self.store = store
        self.version = version
        self.after = KEEP_AFTER_SECONDS if after is None else after
        self._folder = folder_of(store)
        self._state: str | None = None
        self._digests: dict[str, str] | None = None
        self._behind: _Behind | None = None
        self._joins: frozenset[str] = frozenset()

    def joins(self, base: str) -> None:
        """This state's part joins with the state `base`: no later save drops it, however
        old (an hourly snapshot's part is over a base kept an hour or more before, and
        the part's own file, which says so to every other save, is written last)."""
        self._joins = self._joins | {base}

    def state(self, manifest: pd.DataFrame) -> str:
        """The name of the state: table versions, snapshots and their commits, code."""
        if self._state is None:
            digest = hashlib.sha256(code_version().encode())
            digest.update(json.dumps(list(self.version)).encode())
            digest.update(json.dumps(self.digests(manifest), sort_keys=True).encode())
            self._state = digest.hexdigest()[:32]
        return self._state

    def digests(self, manifest: pd.DataFrame) -> dict[str, str]:
        """`manifest_digests` of all the state's snapshots, worked out once: they name
        it, and its basis keeps them (`run_extend`)."""
        if self._digests is None:
            self._digests = manifest_digests(manifest, len(manifest))
        return self._digests

    def load(self, kind: type, manifest: pd.DataFrame, *, state: str | None = None) -> Any | None:
        """The stage kept for this state (or the kept `state` named); None when none is
        (or it does not read)."""
        name = kept_as(kind)
        if self._folder is None or name is None:
            return None
        table = self.load_table(name, state or self.state(manifest))
        try:
            return None if table is None else decode(kind, table)
        except Exception:  # any file that does not read is built again, never an error
            return None

    def save(self, kind: type, value: Any, manifest: pd.DataFrame, *, took: float) -> None:
        """Keep a stage just built in `took` seconds, unless that was quick (under
        `after`) or the store changed while it was (then what it was built
        from may mix two states)."""
        name = kept_as(kind)
        if self._folder is None or name is None or (took < self.after and not self.keeps(manifest)):
            return
        if name == "transitions" and value.empty:
            return  # nothing to save: an empty store builds in no time
        self.save_table(name, encode(value), manifest)

    def keeps(self, manifest: pd.DataFrame, name: str = KEPT[_FIRST]) -> bool:
        """Whether this state keeps `name` (by default its transitions: then it keeps
        every stage, however quick, so that the next state can be extended from them,
        `run_extend`)."""
        return self.holds(self.state(manifest), name)

    def save_table(self, name: str, table: pa.Table, manifest: pd.DataFrame) -> bool:
        """Keep `table` as `<name>.arrow` for this state, written whole or not at all;
        whether it was (not when the store moved on, or cannot be written), or is being
        written behind (`write_behind`)."""
        if self._folder is None:
            return False
        try:
            if self._behind is None and self.store.version() != self.version:
                return False
            folder = self._folder / self.state(manifest)
            folder.mkdir(parents=True, exist_ok=True)
        except OSError:
            return False
        if self._behind is not None:
            self._behind.submit(folder, name, table, self._joins)
            return True
        return _written(folder, name, table, self._joins)

    def write_behind(self) -> None:
        """Write the tables saved from now on from a thread of their own, in the order
        saved, while the caller goes on (an extension's runs frame is made meanwhile:
        Arrow's writer lets go of the interpreter); `flush` waits for them. Whether the
        store moved on is asked once, now: what is saved then was built already."""
        if self._behind is None:
            self._behind = _Behind(moved=self.store.version() != self.version)

    def flush(self) -> None:
        """Wait for the tables written behind: when it returns they are in place, or
        were not kept."""
        behind, self._behind = self._behind, None
        if behind is not None:
            behind.join()

    def holds(self, state: str, name: str) -> bool:
        """Whether the kept `state` has a table kept as `name`."""
        return self._folder is not None and (self._folder / state / f"{name}.arrow").exists()

    def discard(self, name: str, manifest: pd.DataFrame) -> None:
        """Delete the table kept as `name` for this state, if any."""
        if self._folder is not None:
            (self._folder / self.state(manifest) / f"{name}.arrow").unlink(missing_ok=True)

    def load_table(
        self, name: str, state: str, *, columns: list[str] | None = None
    ) -> pa.Table | None:
        """The table `save_table` kept as `name` for `state`; None when none reads. A
        table kept uncompressed (`_MAPPED`) is mapped, its columns read as they are used
        (the table's arrays are views of it). `columns`: those alone (named as `encode`
        names them), the others neither read nor decompressed; None when one is
        missing."""
        if self._folder is None:
            return None
        path = str(self._folder / state / f"{name}.arrow")
        try:
            if name in _MAPPED:
                table = pa.ipc.open_file(pa.memory_map(path)).read_all()
                return table if columns is None else table.select(columns)
            with pa.OSFile(path) as source:
                if columns is None:
                    return pa.ipc.open_file(source).read_all()
                names = pa.ipc.open_file(source).schema.names
                fields = [names.index(column) for column in columns]
                options = pa.ipc.IpcReadOptions(included_fields=fields)
                return pa.ipc.open_file(source, options=options).read_all()
        except Exception:  # a file that does not read is no basis, never an error
            return None

    def earlier(self, manifest: pd.DataFrame) -> list[str]:
        """The other states kept with a basis, newest first: those an extension may start
        from. Newest by the snapshots each saw (its basis says), then by its basis's
        time: not by its folder's, which a stage saved late into an older state (a
        notebook's view of it asking a new question) makes the newest."""
        if self._folder is None or not self._folder.is_dir():
            return []
        mine = self.state(manifest)
        entries = []
        try:
            for entry in self._folder.iterdir():
                basis = entry / f"{BASIS}.arrow"
                if entry.name != mine and basis.exists():
                    entries.append((_snapshots_seen(basis), basis.stat().st_mtime, entry.name))
        except OSError:
            return []
        return [name for *_, name in sorted(entries, reverse=True)]


def _written(folder: Path, name: str, table: pa.Table, joins: frozenset[str]) -> bool:
    """Whether `table` was written whole as `<name>.arrow` in a state's `folder` (whose
    part `joins` those states: `Keeper.joins`)."""
    compressed = name not in _MAPPED
    try:
        write_whole(folder / f"{name}.arrow",
                    lambda path: write_arrow(path, table, compressed=compressed))  # fmt: skip
        _drop_stale(folder.parent, keep=folder.name, joins=joins)
    except (OSError, pa.ArrowException, TypeError, ValueError):
        # A read-only store, a full disk, a value Arrow cannot hold: nothing is kept,
        # and the figure is the one just built.
        return False
    return True


class _Behind:
    """Tables written one after another on a thread of their own (`Keeper.write_behind`).
    Once one could not be written none after it is: a state's basis is saved last, and
    is kept only beside what it extends from."""

    def __init__(self, *, moved: bool) -> None:
        """`moved`: the store moved on since what is saved was read; nothing is kept."""
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="toolkit-keep")
        self._writes: list[Future[None]] = []
        self._failed = moved

    def submit(
        self, folder: Path, name: str, table: pa.Table, joins: frozenset[str] = frozenset()
    ) -> None:
        self._writes.append(self._pool.submit(self._write, folder, name, table, joins))

    def _write(self, folder: Path, name: str, table: pa.Table, joins: frozenset[str]) -> None:
        if not self._failed:
            self._failed = not _written(folder, name, table, joins)

    def join(self) -> None:
        self._pool.shutdown(wait=True)
        for write in self._writes:
            write.result()  # what `_written` does not expect is raised here, as unwritten


def extended(kind: type) -> bool:
    """Whether a stage is one an extension makes (`run_extend`): asked for one not
    kept, the extension is tried first; any other is built alone."""
    return kept_as(kind) in _EXTENDED


def kept_as(kind: type) -> str | None:
    """The name of a stage's file; None for a stage not kept."""
    return KEPT.get(f"{kind.__module__}.{kind.__qualname__}")


def _drop_stale(folder: Path, *, keep: str, joins: frozenset[str]) -> None:
    """Delete the states older than `_STALE_SECONDS`, and all but the newest
    `_MOST_STATES` others however young (snapshots taken quickly, each extended from the
    one before: superseded), but the bases of the parts kept and those `keep`'s part
    `joins`. A reader that listed one and finds it gone builds its stages or extends
    another: deleting a state is never wrong, only slower for that reader."""
    limit = time.time() - _STALE_SECONDS
    others = []
    for entry in folder.iterdir():
        try:
            if entry.name != keep:
                others.append((entry.stat().st_mtime, entry))
        except OSError:
            continue
    ranked = sorted(others, key=lambda o: o[0], reverse=True)
    dropped = [entry for rank, (mtime, entry) in enumerate(ranked)
               if mtime < limit or rank >= _MOST_STATES]  # fmt: skip
    # Never the base of a part kept (`run_part`): the part is joined with it.
    kept = [folder / keep, *(entry for _, entry in ranked if entry not in dropped)]
    bases = {_base_of_part(entry) for entry in kept} | joins
    for entry in dropped:
        if entry.name not in bases:
            shutil.rmtree(entry, ignore_errors=True)


def _snapshots_seen(basis: Path) -> int:
    """How many snapshots a kept state saw, as its basis's metadata says; 0 when it
    does not read (`run_extend.kept_start` then finds it no basis)."""
    try:
        return int(_kept_meta(basis)["snapshots"])
    except Exception:  # not a basis that reads: the oldest
        return 0


def _kept_meta(path: Path) -> dict[str, Any]:
    """What a kept file's metadata says (`run_extend`'s basis, `run_part`'s part),
    without reading its rows; raises when it does not read."""
    with pa.OSFile(str(path)) as source:
        meta = pa.ipc.open_file(source).schema.metadata or {}
    return cast(dict[str, Any], json.loads(meta[b"toolkit"]))


def _base_of_part(state: Path) -> str | None:
    """The base state a state's part is joined with; None for a state with no part, or
    whose stages are kept whole (a part's reader keeps them: it is a base then)."""
    if (state / f"{KEPT[_FIRST]}.arrow").exists():
        return None
    try:
        return str(_kept_meta(state / f"{PART}.arrow")["base"])
    except Exception:  # no part, or not one that reads: nothing to keep for it
        return None


def encode(value: Any) -> pa.Table:
    """A stage as one Arrow table: its arrays as columns (a 2-D array's columns as
    `<field>[j]`), a frame's columns as `frame:<field>:<column>`, everything else (and
    each array's dtype and shape) in the schema's metadata as JSON."""
    columns: dict[str, pa.Array | pa.ChunkedArray] = {}
    meta: dict[str, Any] = {"arrays": {}, "frames": {}, "values": {}}
    items = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    lengths = [len(v) for v in items.values() if isinstance(v, pd.DataFrame | np.ndarray)]
    frames = [len(v) for v in items.values() if isinstance(v, pd.DataFrame)]
    length = (frames or lengths or [0])[0]
    for name, item in items.items():
        if isinstance(item, pd.DataFrame):
            meta["frames"][name] = _encode_frame(name, item, columns)
        elif isinstance(item, np.ndarray) and item.ndim in (1, 2) and len(item) == length:
            meta["arrays"][name] = [item.dtype.str, list(item.shape)]
            columns.update(_array_columns(name, item))
        elif isinstance(item, np.ndarray) and item.ndim == 1:  # the snapshots' times
            meta["values"][name] = {"dtype": item.dtype.str, "list": item.tolist()}
        elif isinstance(item, dict):
            meta["values"][name] = {"pairs": [[k, v] for k, v in item.items()]}
        elif item is None or isinstance(item, str | int | float | bool):
            meta["values"][name] = {"value": item}
        else:
            raise TypeError(f"a stage's {name} of type {type(item).__name__} is not kept")
    if not columns:
        raise ValueError("a stage with no rows is not kept")
    table = pa.table(columns)
    return table.replace_schema_metadata({"toolkit": json.dumps(meta)})


def _encode_frame(name: str, frame: pd.DataFrame, columns: dict[str, Any]) -> dict[str, Any]:
    """Add a frame's columns to `columns` as `frame:<name>:<column>`; returns what
    reads them back as they were."""
    table = pa.Table.from_pandas(frame, preserve_index=False)
    # pandas reads dictionary texts back as `str` categories; the pipeline's are
    # objects, as are the categories of every categorical it makes.
    texts = {c: str(frame[c].cat.categories.dtype) for c in frame.columns
             if isinstance(frame[c].dtype, pd.CategoricalDtype)}  # fmt: skip
    for column in table.column_names:
        columns[f"{_FRAME}{name}:{column}"] = table.column(column)
    pandas = table.schema.pandas_metadata
    for dtype, described in zip(frame.dtypes, pandas["columns"], strict=True):
        # Arrow writes a string column's dtype as "string", which pandas reads back with
        # its default storage: Python objects on pandas 2.2 (where the pipeline's texts
        # are Arrow-backed, `string[pyarrow]`), Arrow on pandas 3. So the storage is
        # written too.
        if isinstance(dtype, pd.StringDtype) and dtype.name == "string":
            described["numpy_type"] = f"string[{dtype.storage}]"
    return {"pandas": pandas, "categories": texts}


def _array_columns(name: str, values: np.ndarray) -> dict[str, pa.Array]:
    """A 1-D array as the column `name`, a 2-D one's columns as `name[j]`."""
    if values.ndim == 1:
        return {name: _arrow(values)}
    return {f"{name}[{j}]": _arrow(values[:, j]) for j in range(values.shape[1])}


def _arrow(values: np.ndarray) -> pa.Array:
    if values.dtype == object:
        return pa.array(values, pa.large_string(), from_pandas=False)
    return pa.array(values)


def decode(kind: type, table: pa.Table) -> Any:
    """The stage `encode` wrote, with the dtypes it had."""
    meta = json.loads(table.schema.metadata[b"toolkit"])
    values: dict[str, Any] = {}
    for name, (dtype, shape) in meta["arrays"].items():
        if len(shape) == 1:
            values[name] = _numpy(table.column(name), dtype)
        else:
            values[name] = np.zeros(shape, dtype)
            for j in range(shape[1]):
                values[name][:, j] = _numpy(table.column(f"{name}[{j}]"), dtype)
    for name in meta["frames"]:
        values[name] = frame_columns(table, name)
    for name, item in meta["values"].items():
        if "pairs" in item:
            values[name] = {k: float(v) for k, v in item["pairs"]}
        elif "list" in item:
            values[name] = np.asarray(item["list"], dtype=item["dtype"])
        else:
            values[name] = item["value"]
    return kind(**values)


def frame_columns(table: pa.Table, name: str) -> pd.DataFrame:
    """A kept stage's frame field `name`, with the dtypes it had: those of its columns
    `table` holds (a table read with some columns alone, `Keeper.load_table`, holds
    those)."""
    frame_meta = json.loads(table.schema.metadata[b"toolkit"])["frames"][name]
    part = frame_table(table, name)
    pandas = dict(frame_meta["pandas"])
    pandas["columns"] = [c for c in pandas["columns"] if c["name"] in part.column_names]
    # One chunk a column, as the pipeline's Arrow-backed texts have: a file's batches
    # would make several, or none when empty, and pandas cannot join on a text
    # column without a chunk (seeds 25 and 36: `lead_times` on a frame of no rows).
    # A column of one chunk is kept as read: joining one chunk copies it, and at
    # 100,000 chapters x a year the runs frame's copy was 1 s of a 1.4 s read.
    part = pa.Table.from_arrays(
        [column if column.num_chunks == 1 else pa.chunked_array([column.combine_chunks()])
         for column in part.columns],
        schema=part.schema.with_metadata({"pandas": json.dumps(pandas)}),
    )  # fmt: skip
    frame: pd.DataFrame = part.to_pandas()
    for column, dtype in frame_meta["categories"].items():
        if column not in frame:
            continue
        categories = frame[column].cat.categories
        frame[column] = pd.Categorical.from_codes(
            frame[column].cat.codes.to_numpy(),
            categories=pd.Index(categories.tolist(), dtype=categories.dtype
                                if dtype != "object" else object),
        )  # fmt: skip
    return frame


def frame_table(table: pa.Table, name: str) -> pa.Table:
    """A kept stage's frame field `name` (`encode`'s `frame:<name>:<column>`) as the
    Arrow table it was written from, not made into a frame."""
    prefix = f"{_FRAME}{name}:"
    kept = [c for c in table.column_names if c.startswith(prefix)]
    return table.select(kept).rename_columns([c[len(prefix) :] for c in kept])


def _numpy(column: pa.ChunkedArray, dtype: str) -> np.ndarray:
    """A column as the array the pipeline made: a view of the file's buffer where it can
    be (read-only, as every stage's arrays are once built: `Observed.stage`). A copy
    cost more than the read at 100,000 chapters: each new array's memory is fresh pages
    the system has to hand over."""
    if np.dtype(dtype) == object:  # texts: Arrow makes the objects (a tenth of the time)
        return np.asarray(column.to_numpy(zero_copy_only=False), dtype=object)
    return np.asarray(column.to_numpy(), dtype=dtype)


def forget(store: SnapshotStore) -> None:
    """Delete every stage a store keeps (`toolkit store check --repair` does, for a
    stage that disagrees): the next question builds them again."""
    folder = folder_of(store)
    if folder is not None:
        shutil.rmtree(folder, ignore_errors=True)

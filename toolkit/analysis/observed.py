"""What the analysis reads from a store, read once per question.

`Observed` wraps a `SnapshotStore` and reads its manifest, change logs and events on
first use, so a figure that needs the chapters' log three times reads it once, and a
report computing every figure can share one `Observed` between them. It also holds the
stages of the run pipeline (transitions -> prices -> charges -> run table -> runs
frame), each built once on first use and kept by its type: `obs.stage(Charges)`.
"""

from __future__ import annotations

import dataclasses
import importlib
import threading
import time
import weakref
from collections.abc import Sequence
from functools import cached_property
from types import ModuleType
from typing import TYPE_CHECKING, Any, Final, Protocol, Self, TypeVar, cast

import numpy as np
import pandas as pd
import pyarrow as pa

from toolkit.analysis.read_ahead import at_key, remembered
from toolkit.analysis.run_store import (
    BASIS,
    KEPT,
    LAST,
    READ_LAST,
    Keeper,
    extended,
    folder_of,
    kept_as,
)
from toolkit.frames.schema import TEXT_DTYPE, TIME_DTYPE

if TYPE_CHECKING:
    from toolkit.store import SnapshotStore

__all__ = [
    "Observed",
    "S",
    "Stage",
    "answer",
    "flag",
    "observe",
    "stacked",
    "with_previous",
]

# The tables the view reads at the latest snapshot (`Observed.latest_<table>`).
_LATEST: Final = ("chapters", "languages", "projects")


class Stage(Protocol):
    """A stage of the run pipeline: a typed value built from what came before it."""

    @classmethod
    def build(cls, obs: Observed) -> Self: ...


S = TypeVar("S", bound=Stage)


class Observed:
    """A store's data read once for every question, and the run pipeline's stages built once."""

    def __init__(
        self,
        store: SnapshotStore,
        *,
        keep: bool = True,
        keep_after: float | None = None,
        version: tuple[int | None, ...] | None = None,
    ) -> None:
        """`keep`: read the run pipeline's stages kept in the store for its present
        state, and keep those that took `keep_after` seconds or more to build (None:
        `run_store.KEEP_AFTER_SECONDS`; 0: all); `version`: the store's, when the caller
        just read it."""
        self.store = store
        self._stages: dict[type, object] = {}
        self._keeper = _keeper(store, version, keep_after) if keep else None
        self._extension_tried = False
        self._asking = 0  # stages being asked, one inside another
        # Whether the stages were extended from those kept for an earlier state.
        self.extended = False
        # Answers of questions asked with arguments (the forecast's by moment), by a key
        # of their arguments, for the next question that asks the same.
        self.memo: dict[str, object] = {}

    def stage(self, kind: type[S]) -> S:
        """The stage of this type, built on first use from the stages before it."""
        if kind not in self._stages:
            self._asking += 1
            try:
                self._stages[kind] = _frozen(self._found(kind))
            finally:
                self._asking -= 1
                if self._keeper is not None:
                    self._keeper.flush()  # an extension's files: in place when it returns
            if not self._asking:
                self._completed()
        return cast(S, self._stages[kind])

    def kept_columns(self, kind: type, columns: list[str]) -> pa.Table | None:
        """Only `columns` (as `run_store.encode` names them) of the stage of this type
        kept for this state, while the stage is not read: a question that needs two
        columns of a year's stage reads them alone (`paid_pages`, `rescans_seen`: 2 s of
        a watch cycle at 100,000 chapters was the whole stages read for them). None:
        ask `stage`."""
        keeper, name = self._keeper, kept_as(kind)
        if keeper is None or name is None or kind in self._stages:
            return None
        return keeper.load_table(name, keeper.state(self.manifest), columns=columns)

    def _found(self, kind: type[S]) -> S:
        """The stage of this type as kept, extended or built (and then kept)."""
        keeper = self._keeper
        found = keeper.load(kind, self.manifest) if keeper is not None else None
        if found is None and keeper is not None and extended(kind) and self._extend(keeper):
            found = self._stages.get(kind)  # the runs frame is made from them
        grown = getattr(kind, "extended_from", None)
        if found is None and keeper is not None and grown is not None:
            # A stage kept for an earlier state, grown by the snapshots since (the
            # review moves); kept however quick, as an extension's stages are.
            found = grown(self, keeper)
            if found is not None:
                keeper.save(kind, found, self.manifest, took=float("inf"))
        if found is None:
            started = time.perf_counter()
            found = kind.build(self)
            if keeper is not None and not (self.extended and kept_as(kind) == LAST):
                # An extension's runs frame is not kept: made from the stages kept
                # with it, it is as quick as read (its texts are most of what a state
                # writes), and the next reader of this state keeps it.
                took = time.perf_counter() - started
                keeper.save(kind, found, self.manifest, took=took)
                # Remembered once (an extension remembers as it keeps its stages).
                kept = keeper.keeps(self.manifest) if kept_as(kind) == READ_LAST else False
                if kept and not keeper.keeps(self.manifest, BASIS):
                    run_extend().remember(self, keeper)
        return cast(S, found)

    def _completed(self) -> None:
        """After a question's stages: what the next state's extension starts from kept
        too, whichever figure asked. A figure that reads the charges alone
        (`throughput`, `spend_in`, the prices) kept no run table, and a store asked only
        such figures was built whole at every snapshot: once this state keeps its
        transitions, its run table is built and kept, and the basis with it."""
        keeper, last = self._keeper, _stage_type(READ_LAST)
        if keeper is None or last in self._stages or not any(map(extended, self._stages)):
            return
        if keeper.keeps(self.manifest) and not keeper.keeps(self.manifest, BASIS):
            self.stage(last)

    def _extend(self, keeper: Keeper) -> bool:
        """Whether every stage was extended from those kept for an earlier state (once
        per `Observed`: `run_extend`), and kept for this one."""
        if self._extension_tried:
            return False
        self._extension_tried = True
        if keeper.keeps(self.manifest):
            return False  # this state's own stages are kept: a stage missing is built
        extend = run_extend()
        extended = extend.extend(self, keeper)
        if extended is None:
            return False
        # Written while the figure goes on (the runs frame is made from the stages),
        # and in place before `stage` returns.
        keeper.write_behind()
        for kind, value in extended.items():
            self._stages.setdefault(kind, _frozen(value))
            # Kept however quick: the next snapshot's extension starts from it.
            keeper.save(kind, self._stages[kind], self.manifest, took=float("inf"))
        extend.remember(self, keeper)
        self.extended = True
        return True

    def update(self, *, join_past: float | None = None) -> bool:
        """After a snapshot: keep this state's run stages as a part over the newest base
        state kept (`run_part`), for its first reader to join; a part of more than
        `join_past` of the chapters is joined and kept whole (None: a tenth). Whether
        anything is kept for the state (its stages whole, or a part)."""
        if self._keeper is None:
            return False
        return bool(run_extend().update(self, self._keeper, join_past=join_past))

    def has(self, kind: type[Stage]) -> bool:
        """Whether the stage of this type is built already."""
        return kind in self._stages

    def forget(self, kind: type[Stage]) -> None:
        """Let go of the stage of this type (its memory): asked again, it is read or
        built again."""
        self._stages.pop(kind, None)

    @cached_property
    def manifest(self) -> pd.DataFrame:
        return self.store.snapshots()

    @cached_property
    def times(self) -> list[pd.Timestamp]:
        """Snapshot time by position (`idx`)."""
        return list(self.manifest["snapshot_at"])

    # The change logs, with `_deleted` as `deleted` (itertuples hides leading underscores).

    @cached_property
    def chapters(self) -> pd.DataFrame:
        return self.store.changes("chapters").rename(columns={"_deleted": "deleted"})

    @cached_property
    def languages(self) -> pd.DataFrame:
        return self.store.changes("languages").rename(columns={"_deleted": "deleted"})

    @cached_property
    def events(self) -> pd.DataFrame:
        return self.store.history("events")

    @cached_property
    def latest_chapters(self) -> pd.DataFrame:
        return self.store.latest("chapters")

    @cached_property
    def latest_languages(self) -> pd.DataFrame:
        return self.store.latest("languages")

    @cached_property
    def latest_projects(self) -> pd.DataFrame:
        return self.store.latest("projects")

    def at(self, table: str, moment: pd.Timestamp) -> pd.DataFrame:
        """`table` at the newest snapshot at or before `moment` (`store.as_of`), read
        once per view and moment: a page asks the same snapshot many times (its
        figures' forecast at each period's end, the review backlog, the rows that
        explain them). At the latest snapshot, the view's own read. Callers read it and
        never change it in place."""
        if self.reads_latest(table, moment):
            return cast(pd.DataFrame, getattr(self, f"latest_{table}"))
        key = at_key(table, moment)
        if key not in self.memo:
            self.memo[key] = self.store.as_of(table, moment)
        return cast(pd.DataFrame, remembered(self, key))

    def reads_latest(self, table: str, moment: pd.Timestamp) -> bool:
        """Whether `at(table, moment)` is the view's own read of the latest snapshot."""
        return bool(self.times) and moment == self.times[-1] and table in _LATEST

    @cached_property
    def project_names(self) -> pd.Series:
        """Each project's name by id, as the latest snapshot has it."""
        projects = self.latest_projects
        return pd.Series(
            projects["name"].astype(object).to_numpy(), index=projects["project_id"].astype(object)
        )


def _frozen(stage: S) -> S:
    """`stage` with its arrays read-only: every figure of the view shares it, so a figure
    that wrote into one would change the others' answers (a kept stage's arrays are
    views of the file's buffers, read-only already)."""
    if dataclasses.is_dataclass(stage):
        for f in dataclasses.fields(stage):
            value = getattr(stage, f.name)
            if isinstance(value, np.ndarray):
                value.setflags(write=False)
    return stage


# What was read from each store object, with the store's version it was read at: a
# notebook asks for cycle times, then failures, then lead times of the same store, and
# each would otherwise read the logs and build the runs again (seconds on a long
# history). Anything written since, by this process or another, changes the version.
_seen: weakref.WeakKeyDictionary[SnapshotStore, tuple[tuple[int | None, ...], Observed]] = (
    weakref.WeakKeyDictionary()
)
_seen_lock = threading.Lock()


def observe(source: SnapshotStore | Observed) -> Observed:
    """The `Observed` of a store, shared until the store takes a new snapshot.

    An `Observed` given is returned as it is."""
    if isinstance(source, Observed):
        return source
    version = source.version()
    with _seen_lock:
        found = _seen.get(source)
        if found is not None and found[0] == version:
            return found[1]
        observed = Observed(source, version=version)
        _seen[source] = (version, observed)
        return observed


def _stage_type(name: str) -> type[Stage]:
    """The stage class kept as `name` (imported by name: the stages read this module)."""
    path = next(path for path, kept in KEPT.items() if kept == name)
    module, _, cls = path.rpartition(".")
    return cast("type[Stage]", getattr(importlib.import_module(module), cls))


def run_extend() -> ModuleType:
    """`toolkit.analysis.run_extend`, imported on first use: it builds on the stages,
    which read this module."""
    return importlib.import_module("toolkit.analysis.run_extend")


def _keeper(
    store: SnapshotStore, version: tuple[int | None, ...] | None, after: float | None
) -> Keeper | None:
    """What reads and keeps the store's stages, for its state now; None for a store
    that keeps none (an object store, or not a `SnapshotStore`)."""
    if not hasattr(store, "root") or folder_of(store) is None:
        return None
    return Keeper(store, store.version() if version is None else version, after=after)


def answer(obs: Observed, sql: str, window: tuple[int, int] | None = None) -> pd.DataFrame:
    """A DuckDB query over the store, with text as `string` and times in UTC, as the
    change logs read; `window`: the snapshots' positions the logs hold (`query_arrow`)."""
    table = obs.store.query_arrow(sql, window=window)
    frame: pd.DataFrame = table.to_pandas(types_mapper={pa.string(): TEXT_DTYPE}.get)
    for field in table.schema:
        if pa.types.is_timestamp(field.type):
            frame[field.name] = frame[field.name].astype(TIME_DTYPE)
        elif pa.types.is_string(field.type) and table.num_rows == 0:
            # Arrow hands over an empty text column with no chunk at all, which pandas
            # fails to join on; pandas' own empty column has one.
            frame[field.name] = pd.Series([], dtype=TEXT_DTYPE)
    return frame


def with_previous(log: pd.DataFrame, keys: list[str], columns: list[str]) -> pd.DataFrame:
    """The log sorted by key and snapshot, with `prev_<column>` holding each key's
    previous row; where the key was absent before (no row yet, or deleted), those are
    null and `is_new` is true."""
    log = log.sort_values([*keys, "idx"], ignore_index=True)
    grouped = log.groupby(keys, sort=False, dropna=False)
    previous_deleted = grouped["deleted"].shift(1)
    log["is_new"] = previous_deleted.isna() | flag(previous_deleted)
    for column in columns:
        log[f"prev_{column}"] = grouped[column].shift(1).where(~log["is_new"])
    return log


def flag(series: pd.Series) -> pd.Series:
    """A nullable boolean column as plain bools, null as False."""
    # Compared, not `fillna(False)`: on an object column (a shifted bool column, bools
    # mixed with nulls) that fill downcasts, which pandas 2.2 warns of; this is the same
    # answer on every pandas.
    return series.eq(True).fillna(False).astype(bool)


def stacked(frames: Sequence[pd.DataFrame]) -> pd.DataFrame:
    """`frames`' rows one after another (`pd.concat`, a new index), a column that is empty
    or all null in one frame taking the dtype the other frames give it.

    pandas 2.2 leaves such a column out when it picks the result's dtype and warns that
    pandas 3 takes it in (an all-null object column then makes the column object): given
    the others' dtype first, the column comes out the same on both, with no warning."""
    known: dict[str, Any] = {}
    for frame in frames:
        for name in frame.columns:
            if name not in known and frame[name].notna().any():
                known[name] = frame[name].dtype
    typed = []
    for frame in frames:
        nulls = {
            name: pd.Series(None, index=frame.index, dtype=known[name])  # not astype: pandas
            for name in frame.columns  # 2.2 cannot cast pd.NA in an object column to float64
            if name in known
            and frame[name].dtype != known[name]
            and _holds_null(known[name])
            and frame[name].isna().all()
        }
        typed.append(frame.assign(**nulls) if nulls else frame)
    return pd.concat(typed, ignore_index=True)


def _holds_null(dtype: Any) -> bool:
    """Whether a column of `dtype` can hold a null (numpy's bools and integers cannot)."""
    return isinstance(dtype, pd.api.extensions.ExtensionDtype) or dtype.kind not in "biu"

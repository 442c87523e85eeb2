"""What the analysis reads from a store, read once per question.

`Observed` wraps a `SnapshotStore` and reads its manifest, change logs and events on
first use, so a figure that needs the chapters' log three times reads it once, and a
report computing every figure can share one `Observed` between them.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

if TYPE_CHECKING:
    from toolkit.store import SnapshotStore

TIME = "datetime64[us, UTC]"


class Observed:
    def __init__(self, store: SnapshotStore) -> None:
        self.store = store
        # Figures derived from the logs, by name, for other figures to reuse.
        self.memo: dict[str, object] = {}

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
    def target_languages(self) -> pd.DataFrame:
        """Each chapter's target languages, as its rows show them: `chapter_id,
        language_code`, one row per pair, sorted (a frame, not a dict of lists, so the
        figures that need them join it rather than loop over millions of rows)."""
        live = self.languages.loc[~self.languages["deleted"], ["chapter_id", "language_code"]]
        pairs = live.drop_duplicates().sort_values(["chapter_id", "language_code"])
        return pairs.reset_index(drop=True)

    def language_counts(self, chapter_ids: pd.Series) -> np.ndarray:
        """How many target languages each chapter shows, at least 1 (spend is split by
        it; a chapter whose languages were never seen still spent)."""
        counts = self.target_languages["chapter_id"].value_counts()
        found = chapter_ids.map(counts).astype("Float64").fillna(0).to_numpy("int64")
        return np.maximum(found, 1)


def observe(source: SnapshotStore | Observed) -> Observed:
    return source if isinstance(source, Observed) else Observed(source)


def with_previous(log: pd.DataFrame, keys: list[str], columns: list[str]) -> pd.DataFrame:
    """The log sorted by key and snapshot, with `prev_<column>` holding each key's
    previous row; where the key was absent before (no row yet, or deleted), those are
    null and `is_new` is true."""
    log = log.sort_values([*keys, "idx"], ignore_index=True)
    grouped = log.groupby(keys, sort=False, dropna=False)
    previous_deleted = grouped["deleted"].shift(1)
    log["is_new"] = previous_deleted.isna() | previous_deleted.fillna(False).astype(bool)
    for column in columns:
        log[f"prev_{column}"] = grouped[column].shift(1).where(~log["is_new"])
    return log


def periods(times: pd.Series, freq: str) -> pd.Series:
    """Times floored to `freq`, as `datetime64[us, UTC]`."""
    try:
        floored = times.dt.floor(freq)
    except ValueError:
        # Calendar frequencies (weeks, months) have no fixed length to floor to.
        naive = times.dt.tz_convert(None).dt.to_period(freq).dt.start_time
        floored = naive.dt.tz_localize("UTC")
    return floored.astype(TIME)


def records(frame: pd.DataFrame, columns: list[str]) -> Iterator[tuple[Any, ...]]:
    """The rows of `frame` as plain tuples of `columns`, nulls as None: far quicker to
    walk than `itertuples` when a figure needs a loop."""
    lists = []
    for column in columns:
        values = frame[column].tolist()
        lists.append([None if v is pd.NA or v is pd.NaT else v for v in values])
    return zip(*lists, strict=True)


def flag(series: pd.Series) -> pd.Series:
    """A nullable boolean column as plain bools, null as False."""
    return series.fillna(False).astype(bool)

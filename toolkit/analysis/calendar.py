"""Periods, windows and names: the calendar and shape every analysis function shares.

- `freq` is any pandas offset alias. A period is labelled by its first moment, in `tz`:
  fixed lengths ("h", "15min", "D") are floored in that zone's local time; calendar
  periods that begin on a date ("MS", "QS", "YS", "W-MON") start on it; those named by
  their end ("ME", "QE", "YE") start the day after the one before ends. `W-<day>` weeks
  start on <day> (pandas would end them there): "W-MON" is Monday to Sunday.
- `since` and `until` bound a window [since, until); a naive time is read in `tz`.
- Outputs carry names beside ids: `project` (the project's name) after `project_id`,
  `chapter` (its title, else "Chapter <position>") after `chapter_id`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from toolkit.frames.schema import TEXT_DTYPE
from toolkit.timestamps import When

if TYPE_CHECKING:
    from toolkit.store import SnapshotStore

__all__ = [
    "names",
    "period_starts",
    "snapshots_within",
    "sorted_by",
    "utc_bound",
    "with_names",
    "within",
]


def utc_bound(when: When | None, tz: str | None) -> pd.Timestamp | None:
    """A bound as an aware UTC timestamp; a naive one is read in `tz` (else UTC)."""
    if when is None:
        return None
    stamp = pd.Timestamp(when)
    if stamp.tzinfo is None:
        stamp = stamp.tz_localize(tz or "UTC")
    return stamp.tz_convert("UTC")


def within(
    frame: pd.DataFrame, column: str, *, since: When | None, until: When | None, tz: str | None
) -> pd.DataFrame:
    """The rows whose `column` lies in [since, until); rows without a time stay only
    when no bound is given."""
    low, high = utc_bound(since, tz), utc_bound(until, tz)
    if low is None and high is None:
        return frame
    times = frame[column]
    keep = times.notna()
    if low is not None:
        keep &= times >= low
    if high is not None:
        keep &= times < high
    return frame[keep.fillna(False).to_numpy(bool)].reset_index(drop=True)


def snapshots_within(
    times: pd.Series, *, since: When | None, until: When | None, tz: str | None
) -> pd.DataFrame:
    """The snapshots taken in [since, until): `snapshot_at, idx` (each one's position),
    of `times`, the manifest's `snapshot_at` in position order. The one rule of which
    snapshots a period's figures read: the throughput's periods, the drill-down's lines
    and the week the weekly page reads their rows for agree on it."""
    frame = pd.DataFrame({"snapshot_at": times, "idx": np.arange(len(times), dtype="int64")})
    return within(frame, "snapshot_at", since=since, until=until, tz=tz)


def sorted_by(frame: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
    """`frame` sorted by `columns`, ascending, nulls last, ties in their order, with a
    fresh index: `sort_values(columns, ignore_index=True)`, ordered in Arrow (pandas
    sorts a text column by factorizing it first: a tenth of a second on a year's runs)."""
    keys = pa.table({column: pa.array(frame[column], from_pandas=True) for column in columns})
    order = pc.sort_indices(keys, [(column, "ascending") for column in columns])
    return frame.take(order.to_numpy()).reset_index(drop=True)


def period_starts(times: pd.Series, freq: str, tz: str | None = None) -> pd.Series:
    """The start of the `freq` period holding each time, in `tz` (default UTC)."""
    try:
        offset = pd.tseries.frequencies.to_offset(freq)
    except ValueError as error:
        raise ValueError(
            f"freq={freq!r} is not a pandas offset alias; use e.g. 'h', 'D', 'W-MON', 'MS'"
        ) from error
    zone = tz or "UTC"
    utc = pd.to_datetime(times, utc=True)
    local = utc.dt.tz_convert(zone).dt.tz_localize(None)
    if isinstance(offset, pd.offsets.Tick):
        naive = local.dt.floor(offset)
    else:
        days = local.dt.normalize()
        unique = pd.Series(days.dropna().unique())
        starts = {day: _calendar_start(day, offset) for day in unique}
        naive = days.map(starts).astype("datetime64[ns]")
    return _localized(naive, utc, zone).astype(pd.DatetimeTZDtype("us", zone))


def _localized(naive: pd.Series, times: pd.Series, zone: str) -> pd.Series:
    """Local period starts made aware. Where a start's local time happens twice (the
    hour repeated when summer time ends), it is the latest of the two that is not after
    the time it holds: 02:30+01:00 is in the period 02:00+01:00, 02:30+02:00 in
    02:00+02:00, two real hours with two labels, not one."""

    def aware(summer: bool) -> pd.Series:
        flags = np.full(len(naive), summer)
        localized: pd.Series = naive.dt.tz_localize(
            zone, ambiguous=flags, nonexistent="shift_forward"
        )
        return localized

    summer, winter = aware(True), aware(False)  # equal where the time is not repeated
    return winter.where((winter > summer) & (winter <= times), summer)


def _calendar_start(day: pd.Timestamp, offset: pd.offsets.BaseOffset) -> pd.Timestamp:
    name = type(offset).__name__
    # pandas-stubs leave out Week.weekday (an int, or None for plain weeks).
    weekday: int | None = getattr(offset, "weekday", None)
    if isinstance(offset, pd.offsets.Week) and weekday is not None:
        return day - pd.Timedelta(days=(day.weekday() - weekday) % 7)
    if "End" in name:
        end = offset.rollforward(day)
        return (end - offset) + pd.Timedelta(days=1)
    return day if offset.is_on_offset(day) else offset.rollback(day)


def names(
    store: SnapshotStore, *, chapters: bool = True
) -> tuple[dict[str, str], dict[str, str] | None]:
    """Project names and chapter labels by id, as the store last saw them (trashed ones
    included, so old rows keep their names); `chapters=False`: no chapter labels (None),
    which are a read of the chapters' whole log."""
    projects = store.query(
        "SELECT project_id, arg_max(name, idx) AS name FROM projects_changes "
        "WHERE name IS NOT NULL GROUP BY project_id"
    )
    project_names = dict(zip(projects["project_id"], projects["name"], strict=True))
    if not chapters:
        return project_names, None
    labels = store.query(
        "SELECT chapter_id, arg_max(coalesce(title, 'Chapter ' || position::VARCHAR), idx) "
        "AS label FROM chapters_changes WHERE NOT _deleted GROUP BY chapter_id"
    )
    return project_names, dict(zip(labels["chapter_id"], labels["label"], strict=True))


def with_names(
    frame: pd.DataFrame, projects: dict[str, str], chapters: dict[str, str] | None = None
) -> pd.DataFrame:
    """`project` after `project_id` and `chapter` after `chapter_id`, where present."""
    frame = frame.copy()
    for key, label, lookup in (
        ("project_id", "project", projects),
        ("chapter_id", "chapter", chapters),
    ):
        if key in frame.columns and label not in frame.columns and lookup is not None:
            values = frame[key].astype(object).map(lookup)
            frame.insert(list(frame.columns).index(key) + 1, label, values.astype(TEXT_DTYPE))
    return frame

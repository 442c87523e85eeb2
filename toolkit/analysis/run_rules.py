"""The rules that give each run its kind, credits, times and outcome, one function each.

Every function here is pure: arrays in (one element per run, or per transition row
where it says so), an array out. The run table (`run_table.py`) calls them in order on a
year's 200,000 runs at once. Each names the CTE of `toolkit/analysis/sql/runs.py` that
says the same in SQL; docs/analysis.md says how the two are kept equal.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from toolkit.analysis._arrays import NO_TIME
from toolkit.analysis.run_codes import NULL, EndReason, EndSource, Kind, Outcome
from toolkit.frames import says_stalled

__all__ = [
    "activity_is_end",
    "after_previous_end",
    "end_rows",
    "event_window",
    "events_to_skip",
    "finish_source",
    "finish_time",
    "is_rework",
    "kind_at_baseline",
    "outcome",
    "ran_in_turn",
    "run_credits",
    "run_failed",
    "run_order",
    "stalls",
    "start_time",
    "starts_at_creation",
]


def run_credits(
    pages: np.ndarray,
    per_page: np.ndarray,
    *,
    row: np.ndarray,
    last: np.ndarray,
    rise: np.ndarray,
    at_baseline: np.ndarray,
) -> np.ndarray:
    """A run's credits are its share of the rise by its pages, in whole credits, the
    rise's remainder going to the row's last run, so a rise is split exactly; a run
    already going at the baseline was charged before the history: 0. `rise` is per
    transition row, `row` each run's. (Reference: CTEs `row_ends`, `spent`, and
    `started`, `run_credits`.)"""
    with np.errstate(invalid="ignore"):
        share = np.nan_to_num(np.round(pages * per_page))
    spent = np.bincount(row, weights=share, minlength=len(rise))
    credits = share + np.where(last, (rise - spent)[row], 0.0)
    return np.where(at_baseline, 0.0, credits)


def kind_at_baseline(
    kind: np.ndarray,
    *,
    at_baseline: np.ndarray,
    novel: np.ndarray,
    spent: np.ndarray,
    pages: np.ndarray,
    per_page: np.ndarray,
) -> np.ndarray:
    """A run going at the baseline is a first run if what the chapter had spent by then
    pays for its pages once (a novel's always), else of a kind the store cannot tell.
    (Reference: CTE `started`, `unknown_kind`.)"""
    once = novel | ~(spent > pages * per_page + 1e-6)
    return np.where(at_baseline & ~once, NULL, kind)


def starts_at_creation(kind: np.ndarray, *, new: np.ndarray, created: np.ndarray) -> np.ndarray:
    """A first run of a chapter that appeared since the snapshot before starts at its
    `created_at`. (Reference: CTE `started`, `from_creation`.)"""
    return np.asarray((kind == Kind.FIRST) & new & (created != NO_TIME), bool)


def start_time(
    from_creation: np.ndarray,
    *,
    created: np.ndarray,
    at_baseline: np.ndarray,
    snapshot_before: np.ndarray,
) -> np.ndarray:
    """A run starts at its chapter's `created_at` (above), else at the snapshot before
    the one that showed it, the earliest moment the store allows; a run going at the
    baseline has no known start. (Reference: CTE `windows`, `started0`.)"""
    return np.where(from_creation, created, np.where(at_baseline, NO_TIME, snapshot_before))


def ran_in_turn(started: np.ndarray, ordinal: np.ndarray) -> np.ndarray:
    """Runs between the same two snapshots ran one after another: each starts no earlier
    than the one before it. `ordinal` is a run's place among its row's runs (rows
    together, in order). (Reference: CTE `matched`.)"""
    started = started.copy()
    for k in range(1, int(ordinal.max(initial=0)) + 1):
        at = np.flatnonzero(ordinal == k)
        started[at] = np.maximum(started[at], started[at - 1])
    return started


def after_previous_end(
    started: np.ndarray, *, row: np.ndarray, from_creation: np.ndarray, event_end: np.ndarray
) -> np.ndarray:
    """A run started after the end of the run before it between the same snapshots, when
    an event gives that end (`event_end`, `NO_TIME` where none). (Reference: CTE
    `matched` with events, `previous_end`.)"""
    previous_end = np.roll(event_end, 1)
    follows = np.zeros(len(row), bool)
    follows[1:] = row[1:] == row[:-1]
    return np.where(follows & ~from_creation, np.maximum(started, previous_end), started)


def end_rows(
    processing: np.ndarray, deleted: np.ndarray, chapter: np.ndarray, starts_runs: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Per transition row: the row (of the same chapter, this one or later; -1 none)
    that shows how the run open after it ended, and why (`EndReason`): the row itself
    when the chapter is not processing there or was trashed, else the next row that is,
    or that starts a run. (Reference: CTE `row_marks`, `end_idx`.)"""
    n = len(processing)
    ends = ~processing | deleted
    position = np.arange(n)
    # For a row still processing: the next row (after it) that ends or starts a run.
    stops = np.where(ends | starts_runs, position, n)
    following = np.minimum.accumulate(stops[::-1])[::-1]  # first at or after each row
    end = np.where(ends, position, np.append(following[1:], n))
    same = (end < n) & (chapter[np.minimum(end, n - 1)] == chapter)
    end = np.where(same, end, -1)
    at = np.maximum(end, 0)
    reason = np.full(n, int(EndReason.STILL_RUNNING))
    reason = np.where(same & deleted[at], EndReason.TRASHED, reason)
    next_run = (end != position) & starts_runs[at]
    reason = np.where(same & ~deleted[at] & next_run, EndReason.NEXT_RUN, reason)
    reason = np.where(same & ~deleted[at] & ~next_run, EndReason.SETTLED, reason)
    return end, reason


def run_failed(
    settled: np.ndarray,
    *,
    failed_at_end: np.ndarray,
    kind: np.ndarray,
    failed_before: np.ndarray,
    reason_changed: np.ndarray,
) -> np.ndarray:
    """A run failed when the snapshot that shows it settled shows the chapter failed,
    and the failure is its own: a first run or a re-scan (they clear the flag), or the
    chapter was not failed before the run, or the reason changed. (Reference: CTE
    `outcomes`, `run_failed`.)"""
    fresh = np.isin(kind, [Kind.FIRST, Kind.RESCAN])
    return np.asarray(settled & failed_at_end & (fresh | ~failed_before | reason_changed), bool)


def stalls(reasons: np.ndarray) -> np.ndarray:
    """Whether each failure reason (None for none) says the run stalled (abandoned by
    the service). The distinct reasons are few, so each is matched once. (Reference:
    CTE `windows`, `outcome0`.)"""
    coded, distinct = pd.factorize(pd.Series(reasons, dtype=object), use_na_sentinel=True)
    matched = np.array([says_stalled(str(r)) for r in distinct] + [False], bool)
    return np.asarray(matched[coded], bool)


def outcome(
    settled: np.ndarray, *, failed: np.ndarray, stalled: np.ndarray, still_running: np.ndarray
) -> np.ndarray:
    """A settled run finished unless it failed (`stalled` when its reason says so); a
    run processing at the last snapshot is running; anything else the store cannot tell
    (`NULL`). (Reference: CTE `windows`, `outcome0`.)"""
    result = np.full(len(settled), NULL)
    result[settled] = Outcome.FINISHED
    result[failed] = np.where(stalled[failed], Outcome.STALLED, Outcome.FAILED)
    result[still_running] = Outcome.RUNNING
    return result


def activity_is_end(
    *,
    reviewed: np.ndarray,
    grew_unpaid: np.ndarray,
    activity: np.ndarray,
    snapshot_before: np.ndarray,
    snapshot_at: np.ndarray,
) -> np.ndarray:
    """`last_activity_at` of the snapshot that shows a run settled is its end unless
    something else touched the chapter in that interval (it became reviewed, pages were
    added without a charge) or it lies outside the interval. (Reference: CTEs
    `outcomes`, `inside`, and `windows`, `finished0`.)"""
    inside = (activity > snapshot_before) & (activity <= snapshot_at)
    return np.asarray(~(reviewed | grew_unpaid | ~inside), bool)


def finish_time(
    settled: np.ndarray, activity_ends: np.ndarray, *, activity: np.ndarray, snapshot_at: np.ndarray
) -> np.ndarray:
    """Without an event, a settled run ends at `last_activity_at` of the snapshot that
    shows it settled, or at that snapshot's time when that is not its end (above).
    (Reference: CTE `windows`, `finished0`.)"""
    return np.where(settled, np.where(activity_ends, activity, snapshot_at), NO_TIME)


def finish_source(settled: np.ndarray, activity_ends: np.ndarray) -> np.ndarray:
    """Where `finish_time` came from. (Reference: CTE `windows`, `finished_source0`.)"""
    source = np.where(activity_ends, EndSource.LAST_ACTIVITY, EndSource.SNAPSHOT)
    return np.where(settled, source, NULL)


def event_window(
    open_at_row: np.ndarray,
    *,
    snapshot_before: np.ndarray,
    snapshot_at: np.ndarray,
    end_at: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Where a run's end event may lie: a run that ended before its row's snapshot,
    between that snapshot and the one before; the last run of a row still processing
    (`open_at_row`), between that snapshot and the one that showed how it ended
    (`end_at`). (Reference: CTE `windows`, `window_low`, `window_high`.)"""
    low = np.where(open_at_row, snapshot_at, snapshot_before)
    high = np.where(open_at_row, end_at, snapshot_at)
    return low, high


def events_to_skip(
    open_at_row: np.ndarray, *, ordinal: np.ndarray, open_before: np.ndarray
) -> np.ndarray:
    """How many of the chapter's end events in a run's window belong to runs before it:
    the runs before it in its row, and a run open at the snapshot before, which ended
    first. (Reference: CTE `windows`, `skip`.)"""
    return np.where(open_at_row, 0, ordinal + open_before)


def is_rework(kind: np.ndarray) -> np.ndarray:
    """A re-scan's whole charge is rework: it pays again for pages that ran. (Reference:
    the final SELECT, `rework`.)"""
    return np.asarray(kind == Kind.RESCAN, bool)


def run_order(started: np.ndarray, chapter: np.ndarray, number: np.ndarray) -> np.ndarray:
    """The runs' order: by start (unknown starts last), then chapter, then run number.
    (Reference: the final SELECT's ORDER BY.)"""
    return np.lexsort((number, chapter, start_key(started)))


def start_key(started: np.ndarray) -> np.ndarray:
    """A run's start as the runs' order reads it: unknown starts last."""
    return np.where(started == NO_TIME, np.iinfo("int64").max, started)

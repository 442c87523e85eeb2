"""The review stage: chapters translated and waiting for a person to review them.

```python
tk.analysis.review_backlog(store)   # per project: waiting, the oldest wait, reviews per day
```

A chapter is *ready* when its status turns `needs_review` with no run going, at its
`last_activity_at` in the first snapshot that shows it (the run's last step); it is
*reviewed* when its status turns `reviewed`, at its `last_activity_at` then (a review
touches the chapter). The review lag is the time between the two; the forecast adds a
project's median lag to its finish for `reviewed_p50`. A chapter finished and reviewed
between two snapshots was never seen ready: its `chapter.finished` event, where the
store holds it, says when it was; else it lies between the two snapshots
(`review_lags`). Reviews a day count over the span the store saw, at most the window.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from toolkit.analysis.calendar import utc_bound
from toolkit.analysis.observed import Observed, answer, flag, observe
from toolkit.analysis.workspaces import across
from toolkit.frames.schema import TEXT_DTYPE
from toolkit.timestamps import When

if TYPE_CHECKING:
    from toolkit.store import SnapshotStore

__all__ = [
    "review_backlog",
    "review_lag_hours",
    "review_lags",
    "review_moves",
    "reviews_within",
    "span_days",
    "waiting_for_review",
]

COLUMNS = ["waiting", "oldest_wait_hours", "reviews_per_day", "review_lag_hours", "as_of"]


# A move is a change of status, a followed column: only rows flagged `_changed` can
# hold one, and each carries the status it changed from (`_previous`), so the query
# reads a few rows of the chapters' log instead of the whole of it. `since` is the time
# of the snapshot before the move's (the chapter was not there yet then).
_MOVES = """
SELECT c.chapter_id, c.project_id, c.last_activity_at AS at,
       CASE WHEN c.status::VARCHAR = 'needs_review' THEN 'ready' ELSE 'reviewed' END AS move,
       c.idx, s.snapshot_at AS since
FROM chapters_changes c
LEFT JOIN (SELECT snapshot_at, row_number() OVER (ORDER BY snapshot_at) AS idx
           FROM snapshots) s ON s.idx = c.idx
WHERE c._changed IS NOT false AND c.snapshot_at <= '{as_of}'::TIMESTAMPTZ
  AND NOT coalesce(c._deleted, false) AND NOT coalesce(c.processing, false)
  AND c.status::VARCHAR IN ('needs_review', 'reviewed')
  AND c.status::VARCHAR IS DISTINCT FROM
      CASE WHEN c._previous.existed THEN c._previous.status::VARCHAR END
"""

# The runs' ends the store holds as events: where a chapter was finished and reviewed
# between two snapshots, the only trace of its being ready.
_FINISHED = """
SELECT chapter_id, min(timestamp) AS finished_at FROM events
WHERE type = 'chapter.finished' AND chapter_id IS NOT NULL
  AND timestamp <= '{as_of}'::TIMESTAMPTZ
GROUP BY chapter_id, timestamp ORDER BY chapter_id, timestamp
"""


def review_moves(obs: Observed, as_of: pd.Timestamp) -> pd.DataFrame:
    """Each chapter's moves into `needs_review` (ready) and `reviewed` seen up to
    `as_of`, in order: `chapter_id, project_id, move` (`ready` or `reviewed`), `at`,
    `idx` (the snapshot's position) and `since` (the time of the snapshot before; null
    for the first)."""
    if obs.manifest.empty:
        return pd.DataFrame(columns=["chapter_id", "project_id", "at", "move", "idx", "since"])
    # Once per view and moment: a page's review backlog, the forecast's review lags and
    # the rows behind the backlog's three numbers each ask it at the period's end, and
    # each read is the chapters' log up to then. A shallow copy: some callers add
    # columns, which copy-on-write keeps their own (a deep copy is the whole history's
    # moves again, 1.5 million at 100,000 chapters x a quarter).
    key = f"review_moves:{as_of.isoformat()}"
    if key not in obs.memo:
        obs.memo[key] = _in_order(answer(obs, _MOVES.format(as_of=as_of.isoformat())))
    return cast(pd.DataFrame, obs.memo[key]).copy(deep=False)


def _in_order(moves: pd.DataFrame) -> pd.DataFrame:
    """The moves by chapter (a null one last), each chapter's in snapshot order.

    Sorted here, by one integer key, not by the query: DuckDB's sort of the rows with
    their texts held some 570 MiB more at 100,000 chapters x a year (5.7 million moves),
    the weekly page's peak."""
    codes, chapters = pd.factorize(moves["chapter_id"], sort=True)
    codes = np.where(codes < 0, len(chapters), codes).astype("int64")
    idx = moves["idx"].to_numpy("int64")
    # One row per chapter and snapshot: the keys are unique but for null chapters.
    order = np.argsort(codes * (int(idx.max(initial=0)) + 1) + idx, kind="stable")
    # A column at a time, each dropped once taken: the frame is held once, not twice.
    ordered = {}
    for name in list(moves.columns):
        ordered[name] = moves.pop(name).take(order).reset_index(drop=True)
    return pd.DataFrame(ordered)


def review_lags(obs: Observed, as_of: pd.Timestamp) -> pd.DataFrame:
    """Per review seen up to `as_of`: `chapter_id, project_id, reviewed_at, ready_at,
    source, hours`. The chapter was ready at its move into `needs_review` before the
    review (`snapshot`); reviewed before any snapshot showed it waiting, at its
    `chapter.finished` event in the store since the snapshot before (`event`), else at
    the middle of that snapshot and the review (`bounds`: the lag is then known to half
    the span). A review the first snapshot already showed has no lag."""
    moves = review_moves(obs, as_of)
    lags = _lags(obs, as_of, moves)
    return pd.DataFrame(
        {
            "chapter_id": moves["chapter_id"].take(lags.index),
            "project_id": moves["project_id"].take(lags.index),
            "reviewed_at": lags["reviewed_at"],
            "ready_at": lags["ready_at"],
            "source": lags["source"].astype(TEXT_DTYPE),
            "hours": lags["hours"],
        }
    ).reset_index(drop=True)


def _lags(obs: Observed, as_of: pd.Timestamp, moves: pd.DataFrame) -> pd.DataFrame:
    """`review_lags` without its two text columns, on the reviews' rows of `moves`
    (the rows are positions): `reviewed_at, ready_at, source, hours`.

    The move before each review is the row before it, of the same chapter: the moves
    come sorted by chapter and snapshot. Found by position and compared by Arrow, not
    by grouping the text keys (5.7 million moves at 100,000 chapters x a year: a
    second, and the page's peak memory, grouped)."""
    move = moves["move"]
    ready_move = (move == "ready").to_numpy(dtype=bool, na_value=False)
    reviewed = (move == "reviewed").to_numpy(dtype=bool, na_value=False)
    same = np.zeros(len(moves), dtype=bool)  # the row before is the same chapter's
    if len(moves) > 1:
        ids = pa.chunked_array(pa.array(moves["chapter_id"]))
        equal = pc.fill_null(pc.equal(ids[1:], ids[:-1]), False)
        same[1:] = equal.to_numpy(zero_copy_only=False)
    rows = np.flatnonzero(reviewed & moves["since"].notna().to_numpy())
    # A null chapter is its own (`same` is false after it), as a group by leaves it out.
    paired = pd.Series(ready_move[rows - 1] & same[rows], index=rows, dtype=bool)
    at = moves["at"].take(rows)
    before_at = pd.Series(moves["at"].take(np.maximum(rows - 1, 0)).array, index=rows)
    ready = before_at.where(paired)
    source = pd.Series("snapshot", index=rows, dtype=object).where(paired, "bounds")
    fast_rows = rows[~paired.to_numpy()]
    if len(fast_rows):
        fast = pd.DataFrame(
            {
                "chapter_id": moves["chapter_id"].take(fast_rows),
                "at": moves["at"].take(fast_rows),
                "since": moves["since"].take(fast_rows),
            }
        )
        finished = answer(obs, _FINISHED.format(as_of=as_of.isoformat()))
        found = fast.reset_index().merge(finished, on="chapter_id")
        found = found[
            (found["finished_at"] > found["since"]) & (found["finished_at"] <= found["at"])
        ]
        last = found.sort_values("finished_at").drop_duplicates("index", keep="last")
        by_event = pd.Series(
            pd.to_datetime(last["finished_at"], utc=True).to_numpy(), index=last["index"].to_numpy()
        ).astype(ready.dtype)
        ready = ready.fillna(by_event.reindex(ready.index))
        source[by_event.index] = "event"
        middle = fast["since"] + (fast["at"] - fast["since"]) / 2
        ready = ready.fillna(middle.reindex(ready.index))
    ready = pd.to_datetime(ready, utc=True)
    hours = (at - ready).dt.total_seconds() / 3600
    return pd.DataFrame(
        {
            "reviewed_at": at,
            "ready_at": ready,
            "source": source,
            "hours": hours.clip(lower=0).astype(float),
        }
    )


def waiting_for_review(
    obs: Observed, as_of: pd.Timestamp, moves: pd.DataFrame | None = None
) -> pd.DataFrame:
    """The chapters waiting for review at the snapshot `as_of` (at `needs_review`, no
    run going): `chapter_id, project_id, since` (their latest move into `needs_review`,
    else their last activity) and `wait_hours` (from then to `as_of`). `moves` are
    `review_moves(obs, as_of)` when the caller has them. Found once per view and
    moment (the page's backlog and the rows behind its three numbers ask it); callers
    only read it."""
    key = f"waiting_for_review:{as_of.isoformat()}"
    if key not in obs.memo:
        obs.memo[key] = _waiting_for_review(obs, as_of, moves)
    return cast(pd.DataFrame, obs.memo[key])


def _waiting_for_review(
    obs: Observed, as_of: pd.Timestamp, moves: pd.DataFrame | None
) -> pd.DataFrame:
    moves = review_moves(obs, as_of) if moves is None else moves
    current = obs.at("chapters", as_of)
    waiting = current[(current["status"].astype(TEXT_DTYPE) == "needs_review")
                      & ~flag(current["processing"])]  # fmt: skip
    ready_rows = np.flatnonzero((moves["move"] == "ready").to_numpy(dtype=bool, na_value=False))
    ready = _latest_by_chapter(moves, ready_rows)
    # reindex, not map: mapping text ids through an empty (no review move yet) Series of
    # times makes pandas cast them to floats.
    found = ready.reindex(waiting["chapter_id"].to_numpy())
    # The times as they are, where there are any (`to_datetime` of the array of objects
    # `to_numpy` gives parses each: a quarter of a second at 30,000 chapters).
    ready_at = pd.DatetimeIndex(found) if len(ready) else pd.to_datetime(found.to_numpy(), utc=True)
    since = pd.Series(ready_at, index=waiting.index).fillna(waiting["last_activity_at"])
    return pd.DataFrame(
        {
            "chapter_id": waiting["chapter_id"],
            "project_id": waiting["project_id"],
            "since": since,
            "wait_hours": (as_of - since).dt.total_seconds() / 3600,
        }
    )


def _latest_by_chapter(moves: pd.DataFrame, rows: np.ndarray) -> pd.Series:
    """The latest `at` of the moves at `rows` (positions, ascending) per chapter id.

    Grouped by the runs of each chapter's rows, not by the texts: the moves come sorted
    by chapter, and a year's ready moves are 2.8 million at 100,000 chapters (each text
    taken and hashed: half a second and 300 MiB at the page's peak)."""
    if not len(rows):
        return moves.iloc[:0].groupby("chapter_id")["at"].max()
    ids = pa.chunked_array(pa.array(moves["chapter_id"])).take(pa.array(rows))
    new = np.ones(len(rows), dtype=bool)  # a null chapter's row stands alone
    new[1:] = ~pc.fill_null(pc.equal(ids[1:], ids[:-1]), False).to_numpy(zero_copy_only=False)
    group = np.cumsum(new) - 1
    latest = moves["at"].take(rows).groupby(group).max()
    named = moves["chapter_id"].take(rows[new])
    known = named.notna().to_numpy()  # a group by leaves null keys out
    return pd.Series(latest.array[known], index=pd.Index(named.array[known], name="chapter_id"),
                     name="at")  # fmt: skip


def reviews_within(
    moves: pd.DataFrame, as_of: pd.Timestamp, window: str | pd.Timedelta, *, first: pd.Timestamp
) -> tuple[pd.DataFrame, pd.Timedelta]:
    """The reviews `reviews_per_day` counts at `as_of` (moves into `reviewed` within the
    span), and that span: the `window` before `as_of`, or less where the store (its
    first snapshot `first`) saw less of it."""
    span = min(pd.Timedelta(window), as_of - first)
    reviewed = moves[(moves["move"] == "reviewed") & (moves["at"] > as_of - span)]
    return reviewed, span


def span_days(span: pd.Timedelta) -> float:
    """A span in days, as `reviews_per_day` divides by (never 0)."""
    return max(span / pd.Timedelta(days=1), 1e-9)


def review_lag_hours(obs: Observed, as_of: pd.Timestamp) -> pd.Series:
    """The median review lag in hours per project id, over the reviews seen up to
    `as_of` (`review_lags`)."""
    if obs.manifest.empty:
        return pd.Series(dtype="float64")
    moves = review_moves(obs, as_of)
    lags = _lags(obs, as_of, moves)
    # By the projects' codes, not their texts: 2.8 million reviews at 100,000 chapters
    # x a year, each text taken and made an object (a second) only to be grouped.
    codes, projects = pd.factorize(moves["project_id"])
    of = codes[lags.index.to_numpy()]
    hours = lags["hours"].to_numpy()[of >= 0]
    medians = pd.Series(hours).groupby(of[of >= 0]).median()
    # Inferred from Python strings, as grouping by the ids as objects gives them.
    ids = pd.Index(np.asarray(projects, dtype=object)[medians.index.to_numpy()], name="project_id")
    return pd.Series(medians.to_numpy("float64"), index=ids, name="hours").sort_index()


@across
def review_backlog(
    store: SnapshotStore | Observed,
    *,
    window: str | pd.Timedelta = "7D",
    until: When | None = None,
    tz: str | None = None,
) -> pd.DataFrame:
    """Per project with chapters waiting for review or reviewed in the window:
    `project_id, project, waiting` (chapters at `needs_review`, no run going),
    `oldest_wait_hours` (since the longest-waiting of them was ready), `reviews_per_day`
    (over the `window` before the snapshot), `review_lag_hours` (the median, over the
    whole history, from ready to reviewed) and `as_of`.

    Args:
        store: A `SnapshotStore` or its `Observed` view; or several workspaces' stores at
            once (a mapping of label to store, or a list), and then the answer has a
            `workspace` column first, or is one dict per label where the call answers
            with a dict (`toolkit.analysis.workspaces`).
        window: the time before the snapshot that `reviews_per_day` counts over.
        until: as seen at the latest snapshot at or before it (a naive time is read in
            `tz`); default the latest snapshot.
        tz: The time zone a naive `since` or `until` is read in; UTC by default; also the
            zone of `as_of`.

    Returns:
        One row per project, sorted by `project_id`; empty without a snapshot.
    """
    obs = observe(store)
    times = obs.manifest["snapshot_at"]
    if until is not None:
        times = times[times <= utc_bound(until, tz)]
    if times.empty:
        return pd.DataFrame(columns=["project_id", "project", *COLUMNS])
    as_of = times.iloc[-1]
    moves = review_moves(obs, as_of)
    waiting = waiting_for_review(obs, as_of, moves)
    reviewed, span = reviews_within(moves, as_of, window, first=times.iloc[0])
    frame = pd.DataFrame(
        {
            "waiting": waiting.groupby("project_id")["chapter_id"].nunique(),
            "oldest_wait_hours": waiting.groupby("project_id")["wait_hours"].max(),
            "reviews_per_day": reviewed.groupby("project_id").size() / span_days(span),
            "review_lag_hours": review_lag_hours(obs, as_of),
        }
    )
    # The projects by their distinct ids: `isin` over a column of text compares row by
    # row (half a second over a month's reviews at 30,000 chapters).
    shown = {*waiting["project_id"].dropna().unique(), *reviewed["project_id"].dropna().unique()}
    frame = frame[frame.index.isin(list(shown))]
    frame["waiting"] = frame["waiting"].fillna(0).astype("Int64")
    frame["reviews_per_day"] = frame["reviews_per_day"].fillna(0.0)
    for column in ("oldest_wait_hours", "reviews_per_day", "review_lag_hours"):
        frame[column] = frame[column].astype("Float64")
    frame["as_of"] = as_of.tz_convert(tz) if tz else as_of
    frame.index.name = "project_id"
    projects = obs.at("projects", as_of)
    names = dict(zip(projects["project_id"], projects["name"], strict=True))
    frame.insert(0, "project", frame.index.map(names).astype(TEXT_DTYPE))
    out = frame.reset_index()
    out["project_id"] = out["project_id"].astype(TEXT_DTYPE)
    return out.sort_values("project_id", ignore_index=True)

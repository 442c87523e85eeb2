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

from toolkit.analysis.calendar import utc_bound
from toolkit.analysis.observed import Observed, answer, flag, observe
from toolkit.analysis.review_moves import ReviewMoves, moves_at
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
    "reviews_seen",
    "reviews_within",
    "span_days",
    "waiting_for_review",
]

COLUMNS = ["waiting", "oldest_wait_hours", "reviews_per_day", "review_lag_hours", "as_of"]


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
    # Once per view and moment (`moves_at`). A shallow copy: some callers add columns,
    # which copy-on-write keeps their own (a deep copy is the whole history's moves again).
    return moves_at(obs, as_of).frame.copy(deep=False)


def review_lags(obs: Observed, as_of: pd.Timestamp) -> pd.DataFrame:
    """Per review seen up to `as_of`: `chapter_id, project_id, reviewed_at, ready_at,
    source, hours`. The chapter was ready at its move into `needs_review` before the
    review (`snapshot`); reviewed before any snapshot showed it waiting, at its
    `chapter.finished` event in the store since the snapshot before (`event`), else at
    the middle of that snapshot and the review (`bounds`: the lag is then known to half
    the span). A review the first snapshot already showed has no lag."""
    moves = moves_at(obs, as_of)
    rows, lags = _lags(obs, as_of, moves)
    named = moves.frame_at(rows)
    return pd.DataFrame(
        {
            "chapter_id": named["chapter_id"].set_axis(lags.index),
            "project_id": named["project_id"].set_axis(lags.index),
            "reviewed_at": lags["reviewed_at"],
            "ready_at": lags["ready_at"],
            "source": lags["source"].astype(TEXT_DTYPE),
            "hours": lags["hours"],
        }
    ).reset_index(drop=True)


def _lags(
    obs: Observed, as_of: pd.Timestamp, moves: ReviewMoves
) -> tuple[np.ndarray, pd.DataFrame]:
    """`review_lags` without its two text columns: the reviews' rows of `moves.frame`
    (positions) and, on their positions in order, `reviewed_at, ready_at, source,
    hours`.

    The move before each review is the one before it in order, of the same chapter:
    found by position, not by grouping the text keys (a second and the page's peak
    memory at 100,000 chapters x a year)."""
    frame = moves.rows  # the numbers, in order: no text is made for the lags
    ready_move, reviewed, chapter = moves.move == 0, moves.move == 1, moves.chapter
    # The one before is the same chapter's; a null chapter is its own, as a group by
    # leaves it out.
    same = np.zeros(len(chapter), dtype=bool)
    same[1:] = (chapter[1:] == chapter[:-1]) & (chapter[1:] >= 0)
    ks = np.flatnonzero(reviewed & frame["since"].notna().to_numpy())
    rows = ks
    paired = pd.Series(ready_move[ks - 1] & same[ks], index=ks, dtype=bool)
    at = pd.Series(frame["at"].take(rows).array, index=ks)
    before_at = pd.Series(frame["at"].take(np.maximum(ks - 1, 0)).array, index=ks)
    ready = before_at.where(paired)
    # Taken from two words by position: a Series of 2.8 million objects filled and
    # replaced was a tenth of a second.
    said = np.array(["bounds", "snapshot"], dtype=object)
    source = pd.Series(said[paired.to_numpy().astype("int64")], index=ks, dtype=object)
    unpaired = ~paired.to_numpy()
    if unpaired.any():
        fast_rows, fast_ks = rows[unpaired], ks[unpaired]
        fast = moves.frame_at(fast_rows)[["chapter_id", "at", "since"]].set_axis(fast_ks)
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
    lags = pd.DataFrame(
        {
            "reviewed_at": at,
            "ready_at": ready,
            "source": source,
            "hours": hours.clip(lower=0).astype(float),
        }
    )
    return rows, lags


def waiting_for_review(obs: Observed, as_of: pd.Timestamp) -> pd.DataFrame:
    """The chapters waiting for review at the snapshot `as_of` (at `needs_review`, no
    run going): `chapter_id, project_id, since` (their latest move into `needs_review`,
    else their last activity) and `wait_hours` (from then to `as_of`). Found once per
    view and moment (the page's backlog and the rows behind its three numbers ask it);
    callers only read it."""
    key = f"waiting_for_review:{as_of.isoformat()}"
    if key not in obs.memo:
        obs.memo[key] = _waiting_for_review(obs, as_of)
    return cast(pd.DataFrame, obs.memo[key])


def _waiting_for_review(obs: Observed, as_of: pd.Timestamp) -> pd.DataFrame:
    current = obs.at("chapters", as_of)
    waiting = current[(current["status"].astype(TEXT_DTYPE) == "needs_review")
                      & ~flag(current["processing"])]  # fmt: skip
    ready = _latest_ready(moves_at(obs, as_of))
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


def _latest_ready(moves: ReviewMoves) -> pd.Series:
    """Each chapter's latest move into `needs_review`, its `at` by chapter id.

    Grouped by the chapters' codes, not their texts: a year's ready moves are 2.8
    million at 100,000 chapters (each text taken and hashed: half a second and 300 MiB
    at the page's peak)."""
    # A group by leaves null keys out.
    rows = np.flatnonzero((moves.move == 0) & (moves.chapter >= 0))
    if not len(rows):
        return moves.frame_at(rows).groupby("chapter_id")["at"].max()
    # In the moves' order a chapter's rows are together: its latest is the largest of
    # its run of them (`reduceat`; a group by was 0.2-0.4 s of the page). NaT is the
    # smallest time, so a chapter with a time has it, as a group by's max has.
    chapter = moves.chapter[rows]
    starts = np.flatnonzero(np.append(True, chapter[1:] != chapter[:-1]))
    at = moves.rows["at"]
    stamps = at.to_numpy("datetime64[us]").view("int64")  # the store's times: microseconds
    latest = np.maximum.reduceat(stamps[rows], starts).view("datetime64[us]")
    times = pd.DatetimeIndex(latest).tz_localize("UTC").astype(at.dtype)
    ids = moves.chapter_ids().take(chapter[starts])
    return pd.Series(times, index=pd.Index(ids, name="chapter_id"), name="at")


def reviews_within(
    moves: pd.DataFrame, as_of: pd.Timestamp, window: str | pd.Timedelta, *, first: pd.Timestamp
) -> tuple[pd.DataFrame, pd.Timedelta]:
    """The reviews `reviews_per_day` counts at `as_of` (moves into `reviewed` within the
    span), and that span: the `window` before `as_of`, or less where the store (its
    first snapshot `first`) saw less of it."""
    span = _span(as_of, window, first)
    reviewed = moves[
        _counted((moves["move"] == "reviewed").to_numpy(bool), moves["at"], as_of, span)
    ]
    # In the moves' order (by chapter, then snapshot) whatever order `moves` has.
    return reviewed.sort_values(["chapter_id", "idx"], kind="stable"), span


def _span(as_of: pd.Timestamp, window: str | pd.Timedelta, first: pd.Timestamp) -> pd.Timedelta:
    """The `window` before `as_of`, or less where the store (first snapshot `first`) saw less."""
    return min(pd.Timedelta(window), as_of - first)


def _counted(
    reviewed: np.ndarray, at: pd.Series, as_of: pd.Timestamp, span: pd.Timedelta
) -> np.ndarray:
    """Which moves `reviews_within` counts: into `reviewed`, within the span."""
    return reviewed & (at > as_of - span).to_numpy(bool)


def reviews_seen(
    obs: Observed, as_of: pd.Timestamp, window: str | pd.Timedelta
) -> tuple[pd.DataFrame, pd.Timedelta]:
    """`reviews_within` the store's moves up to `as_of`, found once per view, moment and
    window (the backlog's reviews a day and the rows behind them): kept when the moves
    are let go (`forget_moves`). Callers only read it."""
    key = f"reviews_seen:{as_of.isoformat()}:{pd.Timedelta(window)}"
    if key not in obs.memo:
        first = obs.manifest["snapshot_at"].iloc[0]
        moves = moves_at(obs, as_of)
        # The reviews it counts picked by code, texts made for them alone.
        span = _span(as_of, window, first)
        counted = _counted(moves.move == 1, moves.rows["at"], as_of, span)
        obs.memo[key] = reviews_within(moves.frame_at(np.flatnonzero(counted)), as_of, window,
                                       first=first)  # fmt: skip
    return cast("tuple[pd.DataFrame, pd.Timedelta]", obs.memo[key])


def span_days(span: pd.Timedelta) -> float:
    """A span in days, as `reviews_per_day` divides by (never 0)."""
    return max(span / pd.Timedelta(days=1), 1e-9)


def review_lag_hours(obs: Observed, as_of: pd.Timestamp) -> pd.Series:
    """The median review lag in hours per project id, over the reviews seen up to
    `as_of` (`review_lags`)."""
    if obs.manifest.empty:
        return pd.Series(dtype="float64")
    moves = moves_at(obs, as_of)
    rows, lags = _lags(obs, as_of, moves)
    # By the projects' codes, not their texts: 2.8 million reviews at 100,000 chapters
    # x a year, each text taken and made an object (a second) only to be grouped.
    of = moves.project[rows]
    hours = lags["hours"].to_numpy()[of >= 0]
    medians = pd.Series(hours).groupby(of[of >= 0]).median()
    # Inferred from Python strings, as grouping by the ids as objects gives them.
    ids = pd.Index(moves.projects[medians.index.to_numpy()], name="project_id")
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
    waiting = waiting_for_review(obs, as_of)
    reviewed, span = reviews_seen(obs, as_of, window)
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

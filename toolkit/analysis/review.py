"""The review stage: chapters translated and waiting for a person to review them.

```python
tk.analysis.review_backlog(store)   # per project: waiting, the oldest wait, reviews per day
```

A chapter is *ready* when its status turns `needs_review` with no run going, at its
`last_activity_at` in the first snapshot that shows it (the run's last step); it is
*reviewed* when its status turns `reviewed`, at its `last_activity_at` then (a review
touches the chapter). The review lag is the time between the two; the forecast adds a
project's median lag to its finish for `reviewed_p50`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

from toolkit.analysis.calendar import moment
from toolkit.analysis.observed import Observed, answer, flag, observe
from toolkit.analysis.workspaces import across
from toolkit.timestamps import When

if TYPE_CHECKING:
    from toolkit.store import SnapshotStore

COLUMNS = ["waiting", "oldest_wait_hours", "reviews_per_day", "review_lag_hours", "as_of"]


# A move is a change of status, a followed column: only rows flagged `_changed` can
# hold one, and each carries the status it changed from (`_previous`), so the query
# reads a few rows of the chapters' log instead of the whole of it.
_MOVES = """
SELECT chapter_id, project_id, last_activity_at AS at,
       CASE WHEN status::VARCHAR = 'needs_review' THEN 'ready' ELSE 'reviewed' END AS move
FROM chapters_changes
WHERE _changed IS NOT false AND snapshot_at <= '{as_of}'::TIMESTAMPTZ
  AND NOT coalesce(_deleted, false) AND NOT coalesce(processing, false)
  AND status::VARCHAR IN ('needs_review', 'reviewed')
  AND status::VARCHAR IS DISTINCT FROM
      CASE WHEN _previous.existed THEN _previous.status::VARCHAR END
ORDER BY chapter_id, idx
"""


def review_moves(obs: Observed, as_of: pd.Timestamp) -> pd.DataFrame:
    """Each chapter's moves into `needs_review` (ready) and `reviewed` seen up to
    `as_of`: `chapter_id, project_id, move` (`ready` or `reviewed`), `at`."""
    if obs.manifest.empty:
        return pd.DataFrame(columns=["chapter_id", "project_id", "at", "move"])
    return answer(obs, _MOVES.format(as_of=as_of.isoformat()))


# A review's lag: from the chapter's last move into `needs_review` at or before it
# (an ASOF join per chapter), its median per project over the history.
_LAG_MEDIANS = """
WITH moves AS ({moves})
SELECT r.project_id, median((epoch_us(r.at) - epoch_us(w.ready_at)) / 3600e6) AS hours
FROM (SELECT * FROM moves WHERE move = 'reviewed') r
ASOF JOIN (SELECT chapter_id, moves.at AS ready_at FROM moves WHERE move = 'ready') w
  ON r.chapter_id = w.chapter_id AND r.at >= w.ready_at
GROUP BY r.project_id
"""


def review_lag_hours(obs: Observed, as_of: pd.Timestamp) -> pd.Series:
    """The median review lag in hours per project id, over the reviews seen up to
    `as_of`, in one query."""
    if obs.manifest.empty:
        return pd.Series(dtype="float64")
    moves = _MOVES.format(as_of=as_of.isoformat()).replace("ORDER BY chapter_id, idx", "")
    found = answer(obs, _LAG_MEDIANS.format(moves=moves))
    return pd.Series(found["hours"].to_numpy(float), index=found["project_id"].astype(object))


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
        store: the snapshot history (or its observed form).
        window: the time before the snapshot that `reviews_per_day` counts over.
        until: as seen at the latest snapshot at or before it (a naive time is read in
            `tz`); default the latest snapshot.
        tz: the zone of a naive `until` and of `as_of`.

    Returns:
        One row per project, sorted by `project_id`; empty without a snapshot.
    """
    obs = observe(store)
    times = obs.manifest["snapshot_at"]
    if until is not None:
        times = times[times <= moment(until, tz)]
    if times.empty:
        return pd.DataFrame(columns=["project_id", "project", *COLUMNS])
    as_of = times.iloc[-1]
    moves = review_moves(obs, as_of)
    current = obs.store.as_of("chapters", as_of)
    waiting = current[(current["status"].astype("string") == "needs_review")
                      & ~flag(current["processing"])]  # fmt: skip
    ready = moves[moves["move"] == "ready"].groupby("chapter_id")["at"].max()
    # reindex, not map: mapping text ids through an empty (no review move yet) Series of
    # times makes pandas cast them to floats.
    ready_at = pd.to_datetime(ready.reindex(waiting["chapter_id"].to_numpy()).to_numpy(), utc=True)
    since = pd.Series(ready_at, index=waiting.index).fillna(waiting["last_activity_at"])
    wait_hours = (as_of - since).dt.total_seconds() / 3600
    span = pd.Timedelta(window)
    reviewed = moves[(moves["move"] == "reviewed") & (moves["at"] > as_of - span)]
    frame = pd.DataFrame(
        {
            "waiting": waiting.groupby("project_id")["chapter_id"].nunique(),
            "oldest_wait_hours": wait_hours.groupby(waiting["project_id"]).max(),
            "reviews_per_day": reviewed.groupby("project_id").size()
            / (span / pd.Timedelta(days=1)),
            "review_lag_hours": review_lag_hours(obs, as_of),
        }
    )
    frame = frame[
        frame.index.isin(waiting["project_id"]) | frame.index.isin(reviewed["project_id"])
    ]
    frame["waiting"] = frame["waiting"].fillna(0).astype("Int64")
    frame["reviews_per_day"] = frame["reviews_per_day"].fillna(0.0)
    for column in ("oldest_wait_hours", "reviews_per_day", "review_lag_hours"):
        frame[column] = frame[column].astype("Float64")
    frame["as_of"] = as_of.tz_convert(tz) if tz else as_of
    frame.index.name = "project_id"
    projects = obs.store.as_of("projects", as_of)
    names = dict(zip(projects["project_id"], projects["name"], strict=True))
    frame.insert(0, "project", frame.index.map(names).astype("string"))
    out = frame.reset_index()
    out["project_id"] = out["project_id"].astype("string")
    return out.sort_values("project_id", ignore_index=True)

"""The forecast's own track record: replayed at past snapshots, checked against what
happened next.

```python
tk.analysis.forecast_accuracy(store, by="project_id", horizon="24h", every="1D")
```

- **Replays** are made every `every` from the store's first snapshot (at the latest
  snapshot at or before each tick, as `forecast(until=...)` sees it), for ticks in
  [since, until).
- **What happened**: a group's open work at a replay is the chapters it forecast (open,
  needing no person); it was done when the last of them was, at the `last_activity_at`
  of the first later snapshot showing it settled at `needs_review` or after. A
  language's finish is read as its chapter's (snapshots do not tell the packaging of
  one language from the next).
- **Scored** when the outcome is known within `horizon` of the replay: the work was
  done by then (inside the band or not; the p50 error), or it was not although the
  band's p90 said it would be (a miss). A band reaching past the horizon with the work
  not yet done, or a horizon past the store's last snapshot, is not scored yet.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final, cast

import numpy as np
import pandas as pd

from toolkit.analysis._arrays import looked_up
from toolkit.analysis.calendar import names, utc_bound, with_names
from toolkit.analysis.forecast import (
    DONE,
    FREQ,
    WINDOW,
    ForecastBy,
    Seen,
    forecast_seen,
    is_open,
)
from toolkit.analysis.observed import Observed, answer, observe
from toolkit.analysis.replayed import replays
from toolkit.analysis.trouble import STALL_AFTER
from toolkit.analysis.workspaces import across
from toolkit.frames.schema import TEXT_DTYPE
from toolkit.timestamps import When

if TYPE_CHECKING:
    from toolkit.store import SnapshotStore

__all__ = ["EVERY", "HORIZON", "forecast_accuracy", "replay_scores", "replay_ticks",
           "summed_scores"]  # fmt: skip

# How long after a replay its outcome is looked for, and how often it replays, by default
# (the weekly page's track record and `tk.explain`'s replays too).
HORIZON: Final = "24h"
EVERY: Final = "1D"
_COLUMNS = ["replays", "inside", "inside_share", "p50_error_hours", "p50_error_share"]


@across
def forecast_accuracy(
    store: SnapshotStore | Observed,
    *,
    by: ForecastBy = "project_id",
    horizon: str | pd.Timedelta = HORIZON,
    every: str | pd.Timedelta = EVERY,
    window: str | pd.Timedelta = WINDOW,
    freq: str = FREQ,
    stall_after: str | pd.Timedelta = STALL_AFTER,
    since: When | None = None,
    until: When | None = None,
    tz: str | None = None,
) -> pd.DataFrame:
    """Per group, how the forecast replayed at past snapshots held: `replays` scored,
    `inside` (true finish inside p10-p90) and `inside_share`, `p50_error_hours` (median
    of p50 minus the true finish: positive when the forecast was late) and
    `p50_error_share` (median of that error over the true time left, unsigned).

    Args:
        store: A `SnapshotStore` or its `Observed` view; or several workspaces' stores at
            once (a mapping of label to store, or a list), and then the answer has a
            `workspace` column first, or is one dict per label where the call answers with a
            dict (`toolkit.analysis.workspaces`).
        by: the groups, as `forecast` takes them.
        horizon: how long after a replay its outcome is looked for.
        every: the time between replays, counted from the first snapshot.
        window: as `forecast` takes it.
        freq: as `forecast` takes it.
        stall_after: as `forecast` takes it.
        since: replays at or after this time only.
        until: replays before this time only.
        tz: The time zone a naive `since` or `until` is read in; UTC by default.

    Returns:
        One row per group with a scored replay, sorted by group, with project or chapter
        names beside the ids.
    """
    obs = observe(store)
    if obs.manifest.empty:
        return _shaped(pd.DataFrame(columns=[by, *_COLUMNS]), by)
    frame = replay_scores(obs, by=by, horizon=horizon, every=every, window=window, freq=freq,
                          stall_after=stall_after, since=since, until=until, tz=tz)  # fmt: skip
    return summed_scores(obs, frame, by)


def summed_scores(obs: Observed, frame: pd.DataFrame, by: ForecastBy) -> pd.DataFrame:
    """`forecast_accuracy`'s table from `replay_scores`' rows (a caller that also
    calibrates the band from them replays once)."""
    grouped = frame.groupby(by)
    out = pd.DataFrame(
        {
            "replays": grouped.size(),
            "inside": grouped["hit"].sum(),
            "p50_error_hours": grouped["error"].median(),
            "p50_error_share": grouped["share"].median(),
        }
    )
    out["inside_share"] = out["inside"] / out["replays"]
    projects, chapters = names(obs.store, chapters=by == "chapter_id")
    return with_names(_shaped(out.reset_index(), by), projects, chapters)


def replay_scores(
    obs: Observed,
    *,
    by: ForecastBy,
    horizon: str | pd.Timedelta,
    every: str | pd.Timedelta,
    window: str | pd.Timedelta,
    freq: str,
    stall_after: str | pd.Timedelta,
    since: When | None,
    until: When | None,
    tz: str | None,
) -> pd.DataFrame:
    """One row per group and scored replay (as `forecast_accuracy` scores them): `<by>,
    hit, error` (p50 minus the true finish, hours; null for a miss not yet done),
    `share` (its unsigned share of the true time left), `score`: how far outside
    the band the finish fell, in shares of the time to p50 (`_score`), and what was
    scored: the replay's snapshot `as_of`, its `finish_p10`, `finish_p50`, `finish_p90`
    and the true `finish` (null for a miss not yet done: then `known`, the time by
    which the band said it would be done, is past)."""
    # The weekly page, `explain`'s track record and the band's calibration each ask for
    # the same replays of one view: made once per view (a replay is a whole forecast).
    key = repr(("replay_scores", by, str(horizon), str(every), str(window), freq,
                str(stall_after), str(since), str(until), tz))  # fmt: skip
    if key in obs.memo:
        return cast(pd.DataFrame, obs.memo[key]).copy()
    times = obs.manifest["snapshot_at"]
    ahead = pd.Timedelta(horizon)
    ticks = replay_ticks(obs, every=every, since=since, until=until, tz=tz)
    # Only what happened after the first replay can be its outcome.
    first = times[times <= ticks[0]].iloc[-1] if ticks else times.iloc[-1]
    done = _chapter_finishes(obs, after=first)
    scores: list[tuple[Any, ...]] = []
    for seen in replays(obs, ticks, stall_after=pd.Timedelta(stall_after)):
        if not is_open(seen.chapters, seen.reasons).any():
            continue  # nothing open that needs no person: no finish to forecast
        made = forecast_seen(
            obs, seen, by=by, window=window, freq=freq, reviewed=False, dated_waits=False
        )
        made = made[made["finish_p50"].notna()]
        if made.empty:
            continue
        as_of = seen.as_of
        # The outcome is known up to the horizon, or to the store's end if that is sooner.
        known = min(as_of + ahead, pd.Timestamp(times.iloc[-1]))
        truth = _true_finishes(seen, done, by)
        for group, p10, p50, p90 in zip(made[by], made["finish_p10"], made["finish_p50"],
                                        made["finish_p90"], strict=True):  # fmt: skip
            finish = truth.get(str(group))
            if finish is not None and finish <= known:
                hit = bool(p10 <= finish and (pd.isna(p90) or finish <= p90))
                error = (p50 - finish) / pd.Timedelta(hours=1)
                share = abs(error) / max((finish - as_of) / pd.Timedelta(hours=1), 1e-9)
                scores.append((str(group), hit, error, share, _score(as_of, p10, p50, p90, finish),
                               as_of, p10, p50, p90, finish))  # fmt: skip
            elif known == as_of + ahead and pd.notna(p90) and p90 < known:
                # The band said done by then; the finish is later than `known`, at least.
                score = _score(as_of, p10, p50, p90, known)
                scores.append((str(group), False, np.nan, np.nan, score, as_of, p10, p50, p90,
                               pd.NaT))  # fmt: skip
    columns = [by, "hit", "error", "share", "score", "as_of", "finish_p10", "finish_p50",
               "finish_p90", "finish"]  # fmt: skip
    obs.memo[key] = pd.DataFrame(scores, columns=columns)
    return cast(pd.DataFrame, obs.memo[key]).copy()


def replay_ticks(
    obs: Observed,
    *,
    every: str | pd.Timedelta,
    since: When | None,
    until: When | None,
    tz: str | None,
) -> list[pd.Timestamp]:
    """The moments `replay_scores` replays the forecast at: `every` after the first
    snapshot up to the last, those in [since, until)."""
    times = obs.manifest["snapshot_at"]
    step = pd.Timedelta(every)
    low, high = utc_bound(since, tz), utc_bound(until, tz)
    return [
        tick
        for tick in pd.date_range(times.iloc[0] + step, times.iloc[-1], freq=step)
        if (low is None or tick >= low) and (high is None or tick < high)
    ]


def _score(
    as_of: pd.Timestamp,
    p10: pd.Timestamp,
    p50: pd.Timestamp,
    p90: pd.Timestamp,
    finish: pd.Timestamp,
) -> float:
    """How far outside p10-p90 `finish` fell (negative: how far inside), over the time
    from the replay to its p50 (at least a minute): the conformity score of a split-
    conformal band (`calibration`). An open p90 bounds nothing above."""
    span = max((p50 - as_of) / pd.Timedelta(hours=1), 1 / 60)
    below = (p10 - finish) / pd.Timedelta(hours=1)
    above = -np.inf if pd.isna(p90) else (finish - p90) / pd.Timedelta(hours=1)
    return float(max(below, above) / span)


# Settling changes `status` or `processing`, both followed: the first settled row after
# a chapter was open is always one the store flags `_changed`, and only those are read.
_SETTLED = """
SELECT chapter_id, snapshot_at, last_activity_at AS finished_at
FROM chapters_changes
WHERE _changed IS NOT false AND NOT coalesce(_deleted, false)
  AND snapshot_at > '{after}'::TIMESTAMPTZ
  AND NOT coalesce(processing, false) AND status::VARCHAR IN ('needs_review', 'reviewed')
ORDER BY snapshot_at, chapter_id
"""


def _chapter_finishes(obs: Observed, *, after: pd.Timestamp) -> pd.DataFrame:
    """Every change after the snapshot `after` showing a chapter settled at
    `needs_review` or after, in time order: `chapter_id, snapshot_at, finished_at` (its
    `last_activity_at`)."""
    return answer(obs, _SETTLED.format(after=after.isoformat()))


def _true_finishes(seen: Seen, done: pd.DataFrame, by: ForecastBy) -> dict[str, pd.Timestamp]:
    """When each group's open work at the snapshot `seen` was done (absent: not in the
    store)."""
    current, as_of = seen.chapters, seen.as_of
    open_now = current[is_open(current, seen.reasons)][["chapter_id", "project_id"]]
    later = done[done["snapshot_at"] > as_of].drop_duplicates("chapter_id")
    finished_at = later.set_index("chapter_id")["finished_at"]
    open_now = open_now.assign(finished=looked_up(open_now["chapter_id"], finished_at))
    if by == "language_code":
        languages = seen.languages
        undone = languages[~languages["status"].isin(DONE)][["chapter_id", "language_code"]]
        open_now = open_now.merge(undone, on="chapter_id")
    grouped = open_now.groupby(open_now[by].astype(str))["finished"]
    # Any chapter not yet done leaves the group not done.
    return {
        str(group): cast(pd.Timestamp, values.max())
        for group, values in grouped
        if values.notna().all()
    }


def _shaped(frame: pd.DataFrame, by: ForecastBy) -> pd.DataFrame:
    frame = frame.reindex(columns=[by, *_COLUMNS])
    frame[by] = frame[by].astype(TEXT_DTYPE)
    for column in ("replays", "inside"):
        frame[column] = frame[column].astype("Int64")
    for column in ("inside_share", "p50_error_hours", "p50_error_share"):
        frame[column] = frame[column].astype("Float64")
    return frame.sort_values(by, ignore_index=True)

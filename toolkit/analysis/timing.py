"""How long runs and chapters take, and how many runs finish per period: from `runs`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

import numpy as np
import pandas as pd

from toolkit.analysis.calendar import period_starts, sorted_by, utc_bound, within
from toolkit.analysis.observed import Observed, observe
from toolkit.analysis.run_codes import Kind, Outcome
from toolkit.analysis.run_table import RunTable
from toolkit.analysis.runs import all_runs, run_chapters, runs_kept
from toolkit.analysis.workspaces import across
from toolkit.frames.schema import TEXT_DTYPE
from toolkit.timestamps import When, in_hours

if TYPE_CHECKING:
    from toolkit.store import SnapshotStore

__all__ = ["RunsBy", "check_by", "cycle_times", "fill_grid", "finished", "lead_times"]

RunsBy = Literal["project_id", "model", "kind"]
_BY_COLUMN = {"project_id": "project_id", "model": "models", "kind": "kind"}


def check_by(by: str) -> str:
    """The runs column a `by=` argument groups by; a `ValueError` names the choices."""
    if by not in _BY_COLUMN:
        raise ValueError(f"by must be one of {', '.join(_BY_COLUMN)}, not {by!r}")
    return _BY_COLUMN[by]


@across
def cycle_times(
    store: SnapshotStore | Observed,
    *,
    since: When | None = None,
    until: When | None = None,
    tz: str | None = None,
) -> pd.DataFrame:
    """One row per finished run, every kind: `chapter_id, chapter, project_id, project,
    kind, started_at, finished_at, hours, run_id, started_source, finished_source`;
    `since`/`until` bound `finished_at`. A failed or stalled run is in `failures`.

    Args:
        store: A `SnapshotStore` or its `Observed` view; or several workspaces' stores at
            once (a mapping of label to store, or a list), and then the answer has a
            `workspace` column first, or is one dict per label where the call answers with a
            dict (`toolkit.analysis.workspaces`).
        since: The window's start, included, on `finished_at` (a naive time is read in
            `tz`); by default the beginning.
        until: The window's end, excluded; by default no end.
        tz: The time zone a naive `since` or `until` is read in; UTC by default.

    Returns:
        The finished runs, in the order they finished.
    """
    obs = observe(store)
    # The period's runs picked before their texts are made (a week's of a quarter's
    # 1.2 million runs at 100,000 chapters), unless the whole runs frame is at hand.
    runs = runs_kept(obs, _finished_within(obs, since=since, until=until, tz=tz))
    frame = runs[["chapter_id", "chapter", "project_id", "project", "kind", "started_at",
                  "finished_at", "run_id", "started_source", "finished_source"]]  # fmt: skip
    frame.insert(7, "hours", in_hours(frame["finished_at"] - frame["started_at"]).astype("Float64"))
    return sorted_by(frame, ["finished_at", "run_id"])


def _finished_within(
    obs: Observed, *, since: When | None, until: When | None, tz: str | None
) -> np.ndarray:
    """Which runs (of `RunTable`, in the runs frame's order) finished in [since,
    until): the period's runs are picked before they are sorted or joined (a stable
    sort of them is the whole history's order cut to the period)."""
    table = obs.stage(RunTable)
    times = table.finished.view("datetime64[us]")  # NO_TIME is NaT: never within
    done: np.ndarray = (table.outcome == Outcome.FINISHED) & ~np.isnat(times)
    low, high = utc_bound(since, tz), utc_bound(until, tz)
    if low is not None:
        done &= times >= low.to_datetime64()
    if high is not None:
        done &= times < high.to_datetime64()
    return done


@across
def lead_times(
    store: SnapshotStore | Observed,
    *,
    since: When | None = None,
    until: When | None = None,
    tz: str | None = None,
) -> pd.DataFrame:
    """Per chapter whose first run the store saw: from its upload (`created_at`) to its
    first `needs_review` (the end of its first finished run), failed runs and re-scans in
    between included: `chapter_id, chapter, project_id, project, uploaded_at,
    reviewable_at, hours, runs, failed_runs`. A chapter not yet reviewable has no row;
    `since`/`until` bound `reviewable_at`.

    Args:
        store: A `SnapshotStore` or its `Observed` view; or several workspaces' stores at
            once (a mapping of label to store, or a list), and then the answer has a
            `workspace` column first, or is one dict per label where the call answers with a
            dict (`toolkit.analysis.workspaces`).
        since: The window's start, included, on `reviewable_at` (a naive time is read in
            `tz`); by default the beginning.
        until: The window's end, excluded; by default no end.
        tz: The time zone a naive `since` or `until` is read in; UTC by default.

    Returns:
        The chapters, in the order they became reviewable.
    """
    obs = observe(store)
    chapter = run_chapters(obs)
    seen_first = np.isin(chapter, chapter[obs.stage(RunTable).kind == Kind.FIRST])
    mine = runs_kept(obs, seen_first).sort_values(["chapter_id", "started_at"])
    finished = (mine["outcome"] == "finished").fillna(False) & mine["finished_at"].notna()
    done_at = mine["finished_at"].where(finished).groupby(mine["chapter_id"]).min()
    first = mine[mine["kind"] == "first"].drop_duplicates("chapter_id").set_index("chapter_id")
    uploaded = first["created_at"].fillna(first["started_at"])
    until_done = mine.join(done_at.rename("done_at"), on="chapter_id")["done_at"]
    counted = mine[(mine["started_at"] <= until_done).fillna(False).to_numpy(bool)]
    failed = counted["outcome"].isin(["failed", "stalled"]).fillna(False)
    frame = pd.DataFrame(
        {
            "chapter": first["chapter"],
            "project_id": first["project_id"],
            "project": first["project"],
            "uploaded_at": uploaded,
            "reviewable_at": done_at.reindex(first.index),
            "runs": counted.groupby("chapter_id").size().reindex(first.index),
            "failed_runs": failed.groupby(counted["chapter_id"]).sum().reindex(first.index),
        }
    )
    frame = frame[frame["reviewable_at"].notna()].rename_axis("chapter_id").reset_index()
    frame.insert(
        6, "hours", in_hours(frame["reviewable_at"] - frame["uploaded_at"]).astype("Float64")
    )
    frame["runs"] = frame["runs"].astype("Int64")
    frame["failed_runs"] = frame["failed_runs"].astype("Int64")
    frame["chapter_id"] = frame["chapter_id"].astype(TEXT_DTYPE)
    frame = sorted_by(frame, ["reviewable_at", "chapter_id"])
    return within(frame, "reviewable_at", since=since, until=until, tz=tz)


@across
def finished(
    store: SnapshotStore | Observed,
    *,
    freq: str = "D",
    by: RunsBy = "project_id",
    since: When | None = None,
    until: When | None = None,
    tz: str | None = None,
    fill: bool = False,
) -> pd.DataFrame:
    """Runs finished per period: long frame `period, <by>[, project], runs`. Periods
    without a finished run are left out unless `fill`.

    Args:
        store: A `SnapshotStore` or its `Observed` view; or several workspaces' stores at
            once (a mapping of label to store, or a list), and then the answer has a
            `workspace` column first, or is one dict per label where the call answers with a
            dict (`toolkit.analysis.workspaces`).
        freq: The period, any pandas offset alias ("h", "D", "W-MON", "MS").
        by: Group by "project_id" (its name in `project`), "model" or "kind" (of run).
        since: The window's start, included (a naive time is read in `tz`); by default
            the beginning.
        until: The window's end, excluded; by default no end.
        tz: The time zone a naive `since` or `until` is read in; UTC by default; also the
            zone of the periods.
        fill: Give every period from the first to the last, and every group, a row (0
            where nothing happened).

    Returns:
        The runs finished, one row per period and group.

    Raises:
        ValueError: `by` or `freq` is not one this function takes.
    """
    column = check_by(by)
    done = cycle_times(store, since=since, until=until, tz=tz)
    obs = observe(store)
    runs = all_runs(obs)
    # The models of the period's runs alone: a join with every run's would cost by them.
    models = runs[["run_id", "models"]][_finished_within(obs, since=since, until=until, tz=tz)]
    done = done.merge(models, on="run_id", how="left")
    done["period"] = period_starts(done["finished_at"], freq, tz)
    counts = done.groupby(["period", column], dropna=False).size().rename("runs")
    frame = counts.reset_index().rename(columns={column: by})
    if fill:
        frame = fill_grid(frame, by, ["runs"], freq=freq, tz=tz)
    frame["runs"] = frame["runs"].astype("Int64")
    frame[by] = frame[by].astype(TEXT_DTYPE)
    if by == "project_id":
        names = runs.drop_duplicates("project_id").set_index("project_id")["project"]
        frame.insert(2, "project", frame["project_id"].map(names).astype(TEXT_DTYPE))
    return frame.sort_values(["period", by], ignore_index=True)


def fill_grid(
    frame: pd.DataFrame, by: str, measures: list[str], *, freq: str, tz: str | None
) -> pd.DataFrame:
    """Every period from the first to the last and every group, zeros where none."""
    if frame.empty:
        return frame
    zone = tz or "UTC"
    first, last = frame["period"].min(), frame["period"].max()
    stamps = pd.Series(pd.date_range(first, last, freq="h", tz=zone))
    periods = period_starts(stamps, freq, tz).drop_duplicates()
    grid = pd.MultiIndex.from_product([periods, frame[by].dropna().unique()], names=["period", by])
    full = frame.set_index(["period", by])[measures].reindex(grid, fill_value=0)
    return full.reset_index()

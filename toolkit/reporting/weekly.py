"""The figures of the weekly report, gathered in one place from the public analysis.

`gather(store, since=, until=)` is the only function that reads the store for the
HTML report (`tk.report`): switching the report to another source of runs
means changing this module only. Everything is counted as `toolkit.analysis` counts it
(between snapshots, in the period of the later one); the window keeps the daily periods
from the day of `since` to the day of `until`.

Decisions:

- The window is the last 7 days up to the last snapshot, unless given; it never starts
  before the store's first snapshot (the baseline counts for nothing).
- A day is *partial* when the snapshots do not span it: history starts after its
  midnight, or the last snapshot is before its end. Its figures are then a part-day's.
- Rework is put down to a cause per chapter: the kind of the chapter's latest failure
  seen by the end of the day the re-run was paid (`stalled` when its reason says the run
  stalled, else `failed`); a re-run of a chapter that had not failed is `rescan`.
- A chapter *finished* in the window when one of its runs finished in it
  (`analysis.cycle_times`); the cycle hours are the median of those runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

import pandas as pd

from toolkit import analysis
from toolkit.analysis.observed import Observed, observe

if TYPE_CHECKING:
    from toolkit.store import SnapshotStore

CAUSES = ("stalled", "failed", "rescan")
CAUSE_WORDS = {"stalled": "after stalls", "failed": "after failures", "rescan": "as plain re-scans"}
DAY = pd.Timedelta(days=1)


@dataclass(frozen=True)
class Weekly:
    """What the report shows; frames carry project names beside ids."""

    start: pd.Timestamp  # first moment counted (the window's first day, or the baseline)
    end: pd.Timestamp  # the last snapshot counted
    snapshots: int  # snapshots inside the window
    projects: pd.DataFrame  # one row per project: see `_per_project`
    days: pd.DataFrame  # day, project, lines, credits, rework_credits (every pair)
    partial: pd.DataFrame  # day, partial (bool), covered (text: which hours are in)
    median_cycle_hours: float  # over every run that finished in the window (NaN: none)
    observed: Observed


def gather(
    store: SnapshotStore | Observed,
    *,
    since: pd.Timestamp | str | None = None,
    until: pd.Timestamp | str | None = None,
    days: int = 7,
) -> Weekly:
    obs = observe(store)
    times = pd.Series(obs.times, dtype="datetime64[us, UTC]")
    if len(times) < 2:
        raise ValueError(
            "the report needs at least two snapshots (the first is the baseline); "
            "take snapshots every hour or so (`toolkit snapshot`) and try again"
        )
    end = _utc(until) if until is not None else times.iloc[-1]
    end = min(end, times.iloc[-1])
    start = _utc(since) if since is not None else (end - pd.Timedelta(days=days)).ceil("D")
    start = max(start.floor("D"), times.iloc[0].floor("D"))
    inside = times[(times > times.iloc[0]) & (times >= start) & (times <= end)]

    names = obs.store.latest("projects").set_index("project_id")["name"].astype("string")
    lines = _window(analysis.throughput(obs, freq="1D", by="project_id"), start, end)
    spend = _window(analysis.credit_spend(obs, freq="1D", by="project_id"), start, end)
    measures = ["credits", "rework_credits", "lines"]
    daily = spend.merge(lines, on=["period", "project_id"], how="outer")
    daily = daily[["period", "project_id", *measures]]
    daily[measures] = daily[measures].fillna(0)
    daily = daily.rename(columns={"period": "day"})
    daily["project"] = daily["project_id"].map(names).fillna(daily["project_id"])
    runs = analysis.cycle_times(obs)
    runs = runs[(runs["finished_at"] > start) & (runs["finished_at"] <= end)]

    return Weekly(
        start=start,
        end=end,
        snapshots=len(inside),
        projects=_per_project(obs, daily, runs, names, start, end),
        days=daily.sort_values(["day", "project"]).reset_index(drop=True),
        partial=_partial_days(times, start, end),
        median_cycle_hours=float(runs["hours"].median()) if len(runs) else float("nan"),
        observed=obs,
    )


def _utc(value: pd.Timestamp | str) -> pd.Timestamp:
    stamp = pd.Timestamp(value)
    return stamp.tz_localize("UTC") if stamp.tzinfo is None else stamp.tz_convert("UTC")


def _window(frame: pd.DataFrame, start: pd.Timestamp, end: pd.Timestamp) -> pd.DataFrame:
    return frame[(frame["period"] >= start) & (frame["period"] <= end)]


def _per_project(
    obs: Observed,
    daily: pd.DataFrame,
    runs: pd.DataFrame,
    names: pd.Series,
    start: pd.Timestamp,
    end: pd.Timestamp,
) -> pd.DataFrame:
    """project_id, project, chapters_finished, failed_runs, stalled_runs, lines, credits,
    rework_credits, rework_<cause> for each cause, median_cycle_hours."""
    totals = daily.groupby("project_id")[["lines", "credits", "rework_credits"]].sum()
    failures = _failures(obs)
    seen = failures[(failures["seen_at"] > start) & (failures["seen_at"] <= end)]
    table = pd.DataFrame(index=names.index)
    table["project"] = names
    table["chapters_finished"] = runs.groupby("project_id")["chapter_id"].nunique()
    table["failed_runs"] = seen[seen["kind"] == "failed"].groupby("project_id").size()
    table["stalled_runs"] = seen[seen["kind"] == "stalled"].groupby("project_id").size()
    table = table.join(totals, how="outer")
    table = table.join(_rework_causes(obs, failures, start, end), how="left")
    counts = [c for c in table.columns if c != "project"]
    table[counts] = table[counts].fillna(0)
    table["median_cycle_hours"] = runs.groupby("project_id")["hours"].median()
    table["project"] = table["project"].fillna(pd.Series(table.index, index=table.index))
    table.index.name = "project_id"
    return table.reset_index().sort_values("project").reset_index(drop=True)


def _failures(obs: Observed) -> pd.DataFrame:
    """`analysis.failures` with `kind`: stalled or failed, from the reason's words."""
    failures = analysis.failures(obs).copy()
    reasons = failures["failure_reason"].fillna("").astype(str).str.lower()
    failures["kind"] = reasons.str.contains("stall").map({True: "stalled", False: "failed"})
    return failures


def _rework_causes(
    obs: Observed, failures: pd.DataFrame, start: pd.Timestamp, end: pd.Timestamp
) -> pd.DataFrame:
    """Per project: `rework_<cause>` credits for each cause in `CAUSES`."""
    spend = _window(analysis.credit_spend(obs, freq="1D", by="chapter_id"), start, end)
    spend = spend[spend["rework_credits"] > 0]
    columns = [f"rework_{cause}" for cause in CAUSES]
    if spend.empty:
        return pd.DataFrame(columns=columns, dtype="float64")
    projects = obs.chapters.drop_duplicates("chapter_id", keep="last")
    spend = spend.merge(projects[["chapter_id", "project_id"]], on="chapter_id", how="left")
    causes = []
    for chapter, day in zip(spend["chapter_id"], spend["period"], strict=True):
        before = failures[(failures["chapter_id"] == chapter) & (failures["seen_at"] < day + DAY)]
        causes.append(before.sort_values("seen_at")["kind"].iloc[-1] if len(before) else "rescan")
    spend["cause"] = causes
    table = spend.pivot_table(
        index="project_id", columns="cause", values="rework_credits", aggfunc="sum"
    )
    table = table.reindex(columns=list(CAUSES)).fillna(0)
    table.columns = columns
    return table


def _partial_days(times: pd.Series, start: pd.Timestamp, end: pd.Timestamp) -> pd.DataFrame:
    """Each day of the window, whether the snapshots span it, and which hours they cover."""
    first, last = times.iloc[0], min(times.iloc[-1], end)
    rows = []
    for day in pd.date_range(start.floor("D"), last.floor("D"), freq="D"):
        begins_late, ends_early = first > day, last < day + DAY
        covered = "whole day"
        if begins_late and ends_early:
            covered = f"{first:%H:%M}-{last:%H:%M} UTC"
        elif begins_late:
            covered = f"from {first:%H:%M} UTC"
        elif ends_early:
            covered = f"until {last:%H:%M} UTC"
        rows.append((day, begins_late or ends_early, covered))
    return pd.DataFrame(rows, columns=["day", "partial", "covered"])


def _number(value: object) -> float:
    """A numeric cell of an itertuples row: pandas-stubs type those as any scalar."""
    return cast(float, value)


def sentences(weekly: Weekly) -> list[str]:
    """A few plain sentences on the week, one per project with work, busiest first."""
    said = []
    table = weekly.projects.sort_values(["credits", "lines"], ascending=False)
    for row in table.itertuples(index=False):
        if not (row.credits or row.lines or row.chapters_finished):
            continue
        finished = int(_number(row.chapters_finished))
        text = f"{row.project} finished {finished} chapter{'s' if finished != 1 else ''}"
        if row.rework_credits:
            share = _number(row.rework_credits) / _number(row.credits)
            text += f"; {share:.0%} of its credits paid for re-runs, {_mostly(row)}"
        elif row.credits:
            text += "; none of its credits paid for re-runs"
        trouble = [
            _count(int(_number(row.failed_runs)), "run failed", "runs failed"),
            _count(int(_number(row.stalled_runs)), "run stalled", "runs stalled"),
        ]
        if any(trouble):
            text += "; " + " and ".join(part for part in trouble if part)
        said.append(text + ".")
    if not said:
        said.append("Nothing ran in this window: no lines translated and no credits spent.")
    return said


def _mostly(row: object) -> str:
    amounts = {cause: float(getattr(row, f"rework_{cause}")) for cause in CAUSES}
    cause, amount = max(amounts.items(), key=lambda item: item[1])
    lead = "mostly" if amount / sum(amounts.values()) > 0.5 else "the largest part"
    return f"{lead} {CAUSE_WORDS[cause]}"


def _count(count: int, one: str, many: str) -> str:
    return "" if count == 0 else f"{count} {one if count == 1 else many}"

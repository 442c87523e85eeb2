"""The headline figures of a period, defined and computed once (docs/figures.md).

```python
figs = figures(store)                  # the 7 days up to the last snapshot
figs = figures(store, since="2026-11-19", until="2026-11-26")
figs.projects                          # one row per project: project_id, project, FIGURES...
figs.totals["runs_failed"]             # the workspace's; None where there is no data
label("runs_failed", figs.period)      # "runs failed, stalls apart, 19-26 Nov"
```

Every surface reads its figures here: the report folder's `summary.csv`, `figures.json`
and terminal table, the weekly page, the demo's closing lines and the Dashboard's spend.

The period is [since, until): by default `until` is just after the last snapshot and
`since` the midnight (UTC) that makes it `days` calendar days long; it never starts
before the store's first snapshot, the baseline, which counts for nothing. Figures over
the period are counted as `toolkit.analysis` counts them: a change between two
snapshots belongs to the later one, a run to the moment it finished or failed. A period
with no snapshot after the baseline has no data: its figures are None, never 0. Open
lines and chapters that need a person are counts at the period's last snapshot.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from toolkit import analysis, metrics
from toolkit.analysis.forecast import forecast_seen, seen_at
from toolkit.analysis.observed import Observed, observe
from toolkit.errors import ToolkitError
from toolkit.frames.schema import TEXT_DTYPE, TIME_DTYPE

if TYPE_CHECKING:
    from toolkit.store import SnapshotStore

__all__ = [
    "AT_END",
    "DAY",
    "FIGURES",
    "TICK",
    "WORDS",
    "Figures",
    "Period",
    "figures",
    "header_of",
    "label",
    "period",
    "spend",
    "whole_numbers",
    "write_json",
]

FIGURES = ("chapters_finished", "runs_failed", "runs_stalled", "credits", "rework_credits",
           "lines", "open_lines", "needs_action")  # fmt: skip
# What each figure counts, in a reader's words (the registry's labels, toolkit.metrics);
# a surface adds the period (`label`).
WORDS = {name: metrics.FIGURES[name].words for name in (*FIGURES, "median_cycle_hours")}
# Counted at the last snapshot, not over the period.
AT_END = tuple(name for name in FIGURES if metrics.FIGURES[name].at_end)
DAY = pd.Timedelta(days=1)
TICK = pd.Timedelta(microseconds=1)


@dataclass(frozen=True)
class Period:
    """The time the figures cover: [since, until), shown as start..end."""

    since: pd.Timestamp  # the lower bound asked for (a midnight by default)
    until: pd.Timestamp  # the upper bound, exclusive
    start: pd.Timestamp  # the first moment counted: since, or the baseline if later
    end: pd.Timestamp | None  # the last snapshot counted (None: no snapshot in the period)
    snapshots: int  # snapshots after the baseline inside the period; 0 means no data
    days: pd.DataFrame  # day, partial (bool), covered (which hours of it the snapshots span)
    tz: str = "UTC"  # the zone its days, midnights and times shown are in

    def local(self, moment: pd.Timestamp) -> pd.Timestamp:
        """`moment` in the period's zone."""
        return moment.tz_convert(self.tz)

    @property
    def has_data(self) -> bool:
        return self.snapshots > 0

    @property
    def partial_days(self) -> list[date]:
        return [day.date() for day in self.days.loc[self.days["partial"], "day"]]

    def label(self) -> str:
        """`19-26 Nov`, `28 Nov-3 Dec`, `28 Dec 2026-3 Jan 2027`; one day with its hours:
        `19 Nov 09:01-12:01 UTC`."""
        if self.end is None:  # no snapshot in it: the period asked for
            first, last = self.local(self.since), self.local(self.until - TICK)
        else:
            first, last = self.local(self.start), self.local(self.end)
        if first.date() == last.date():
            return f"{first.day} {first:%b} {first:%H:%M}-{last:%H:%M} {last:%Z}"
        if (first.year, first.month) == (last.year, last.month):
            return f"{first.day}-{last.day} {last:%b}"
        if first.year == last.year:
            return f"{first.day} {first:%b}-{last.day} {last:%b}"
        return f"{first.day} {first:%b %Y}-{last.day} {last:%b %Y}"


@dataclass(frozen=True)
class Figures:
    """The figures of one period, per project and for the whole workspace."""

    period: Period
    projects: pd.DataFrame  # project_id, project, FIGURES (Int64), median_cycle_hours
    totals: dict[str, Any]  # FIGURES as int or None, median_cycle_hours as float or None
    # `analysis.forecast` by project at the period's last snapshot, which the at-end
    # figures are read from (None without a snapshot): kept so a page showing the
    # forecast does not compute it twice.
    forecast: pd.DataFrame | None = None


def label(figure: str, when: Period) -> str:
    """What `figure` counts and over which period: `runs failed, stalls apart, 19-26 Nov`;
    a count at the period's end names that moment: `open lines that go on by themselves
    at 26 Nov 12:01 UTC`."""
    if when.end is None:
        return metrics.label(figure, when.label())
    end = when.local(when.end)
    return metrics.label(figure, when.label(), at=f"{end.day} {end:%b %H:%M %Z}")


def header_of(name: str) -> str:
    """A column's header on a page: the registry's label (toolkit.metrics), capitalised."""
    return metrics.header(name).capitalize()


def check_zone(tz: str | None) -> None:
    """Refuse a zone this machine does not know, in words, before any time is read in it."""
    if tz is None:
        return
    try:
        pd.Timestamp(0, tz=tz)
    except Exception as exc:  # pytz and zoneinfo each raise their own KeyError
        raise ToolkitError(
            f"{tz!r} is not a time zone this machine knows; give an IANA name such as "
            "Europe/Paris or America/New_York, or leave it out for UTC"
        ) from exc


def period(
    store: SnapshotStore | Observed,
    *,
    since: pd.Timestamp | str | None = None,
    until: pd.Timestamp | str | None = None,
    days: int = 7,
    tz: str | None = None,
) -> Period:
    """The period `figures` counts over (see the module's docstring); `tz` names the
    zone of its days and midnights, and of a naive `since` or `until` (default UTC)."""
    check_zone(tz)
    zone = tz or "UTC"
    obs = observe(store)
    # From the manifest's column, not its list of times: a Series made of 8,760
    # Timestamps is 0.02 s, and a weekly page asks for its period some 16 times.
    times = obs.manifest["snapshot_at"].astype(TIME_DTYPE).reset_index(drop=True)
    if times.empty:
        raise ValueError(
            "it has no snapshots yet; take some first (`toolkit snapshot`, or "
            "store.take(client)), an hour or so apart"
        )
    stop = _utc(until, zone) if until is not None else times.iloc[-1] + TICK
    before = times[times < stop]
    end = before.iloc[-1] if len(before) else None
    anchor = end if end is not None else stop
    begin = (
        _utc(since, zone)
        if since is not None
        else _midnight(anchor - pd.Timedelta(days=days), zone, up=True)
    )
    if since is None:  # by default, never before the day of the baseline
        begin = max(begin, _midnight(times.iloc[0], zone))
    inside = times[(times > times.iloc[0]) & (times >= begin) & (times < stop)]
    end = end if end is not None and end >= begin else None
    start = max(begin, times.iloc[0])
    return Period(
        since=begin,
        until=stop,
        start=start,
        end=end,
        snapshots=len(inside),
        days=_coverage(times.iloc[0], start, end, zone),
        tz=zone,
    )


def _utc(value: pd.Timestamp | str, tz: str = "UTC") -> pd.Timestamp:
    """A bound as a UTC instant; a naive one is read in `tz`."""
    stamp = pd.Timestamp(value)
    return (stamp.tz_localize(tz) if stamp.tzinfo is None else stamp).tz_convert("UTC")


def _midnight(moment: pd.Timestamp, tz: str, *, up: bool = False) -> pd.Timestamp:
    """The midnight in `tz` at or before `moment` (`up`: at or after), as a UTC instant."""
    local = moment.tz_convert(tz)
    day = local.normalize()
    if up and day != local:
        day = (day + pd.DateOffset(days=1)).normalize()
    return day.tz_convert("UTC")


def _coverage(
    first: pd.Timestamp, start: pd.Timestamp, end: pd.Timestamp | None, tz: str = "UTC"
) -> pd.DataFrame:
    """Each day of the period in `tz` (its local midnight), whether the snapshots span it,
    and which hours they cover. A day is partial when history starts after its midnight
    or ends before the next."""
    rows = []
    if end is not None:
        first, end = first.tz_convert(tz), end.tz_convert(tz)
        day = start.tz_convert(tz).normalize()
        while day <= end:
            # A calendar day, 23 or 25 hours long where the clocks change.
            after = (day + pd.DateOffset(days=1)).normalize()
            begins_late, ends_early = first > day, end < after
            covered = "whole day"
            if begins_late and ends_early:
                covered = f"{first:%H:%M}-{end:%H:%M %Z}"
            elif begins_late:
                covered = f"from {first:%H:%M %Z}"
            elif ends_early:
                covered = f"until {end:%H:%M %Z}"
            rows.append((day, begins_late or ends_early, covered))
            day = after
    frame = pd.DataFrame(rows, columns=["day", "partial", "covered"])
    frame["day"] = frame["day"].astype(pd.DatetimeTZDtype(unit="us", tz=tz))
    frame["partial"] = frame["partial"].astype(bool)
    return frame


def spend(store: SnapshotStore | Observed, when: Period) -> pd.DataFrame:
    """Credits and re-run credits per project over `when` (index project_id), as floats."""
    frame = analysis.credit_spend(
        observe(store), freq="1D", by="project_id", since=when.since, until=when.until
    )
    return frame.groupby("project_id")[["credits", "rework_credits"]].sum()


def figures(
    store: SnapshotStore | Observed,
    *,
    since: pd.Timestamp | str | None = None,
    until: pd.Timestamp | str | None = None,
    days: int = 7,
    tz: str | None = None,
    outlook: bool = True,
) -> Figures:
    """The headline figures of a period, per project and in total (docs/figures.md);
    `tz`: the zone of the period's days and midnights (default UTC). `outlook`: keep the
    forecast at the period's end (`Figures.forecast`); False for a page that shows none
    (the weekly page): the figures at the end are then read from the same forecast's
    open work without dating the work that waits for a person (the same numbers; the
    dating is most of a forecast's time on a large workspace)."""
    obs = observe(store)
    when = period(obs, since=since, until=until, days=days, tz=tz)
    names = _names(obs)
    table = pd.DataFrame(index=pd.Index(names.index, name="project_id", dtype=TEXT_DTYPE))
    runs = analysis.cycle_times(obs, since=when.since, until=when.until)
    if not when.has_data:
        runs = runs.iloc[:0]
    else:
        failures = analysis.failures(obs, since=when.since, until=when.until)
        # In the period's zone, as the weekly page's days ask it (one question for both):
        # a period's sum per project does not depend on where its days start.
        lines = analysis.throughput(
            obs, "1D", "project_id", since=when.since, until=when.until, tz=when.tz
        )
        per = {
            "chapters_finished": runs.groupby("project_id")["chapter_id"].nunique(),
            "runs_failed": failures[failures["kind"] == "failed"].groupby("project_id").size(),
            "runs_stalled": failures[failures["kind"] == "stalled"].groupby("project_id").size(),
            **spend(obs, when).to_dict("series"),
            "lines": lines.groupby("project_id")["lines"].sum(),
        }
        for name, values in per.items():
            table = table.join(values.rename(name), how="outer")
            table[name] = whole_numbers(table[name].fillna(0))
    forecast = None
    if when.end is not None:
        if outlook:
            forecast = analysis.forecast(obs, by="project_id", until=when.end)
            made = forecast
        else:
            seen = seen_at(obs, when.end, stall_after=pd.Timedelta(analysis.STALL_AFTER))
            made = forecast_seen(obs, seen, by="project_id", reviewed=False, dated_waits=False)
        at_end = made.set_index("project_id")
        at_end = at_end[["remaining_lines", "needs_action"]].set_axis(list(AT_END), axis=1)
        table = table.join(at_end, how="outer")
        # A project absent from the forecast has no open work: 0, not unknown.
        absent = ~table.index.isin(at_end.index)
        for name in AT_END:
            table[name] = whole_numbers(table[name].mask(absent, 0))
    for name in FIGURES:
        if name not in table.columns:
            table[name] = pd.array([pd.NA] * len(table), dtype="Int64")
    table["median_cycle_hours"] = runs.groupby("project_id")["hours"].median().astype("Float64")
    table.insert(0, "project", names.reindex(table.index).fillna(table.index.to_series()))
    table = table.reset_index().sort_values(["project", "project_id"], ignore_index=True)
    table = table[["project_id", "project", *FIGURES, "median_cycle_hours"]]
    totals: dict[str, Any] = {name: _sum(table[name]) for name in FIGURES}
    totals["median_cycle_hours"] = float(runs["hours"].median()) if len(runs) else None
    return Figures(period=when, projects=table, totals=totals, forecast=forecast)


def _names(obs: Observed) -> pd.Series:
    projects = obs.latest_projects  # the view's read, which the page's other parts share
    return pd.Series(
        projects["name"].astype(TEXT_DTYPE).to_numpy(),
        index=pd.Index(projects["project_id"].astype(TEXT_DTYPE), name="project_id"),
        dtype=TEXT_DTYPE,
    )


def whole_numbers(values: pd.Series) -> pd.Series:
    """Counts and credits as whole numbers (halves up, as `formatting.whole` shows them)."""
    numbers = pd.to_numeric(values, errors="coerce").astype("Float64")
    return pd.Series(np.floor(numbers + 0.5), index=values.index).astype("Int64")


def _sum(column: pd.Series) -> int | None:
    """The total of a figure: unknown (None) when any project's is unknown."""
    return None if column.isna().any() else int(column.sum())


# -- figures.json (contract) ---------------------------------------------------------


def _as_json(figs: Figures) -> dict[str, Any]:
    """`figures.json`'s content: period, projects, totals; no data is null."""
    when = figs.period
    projects = [
        {key: _plain(row[key]) for key in ("project_id", "project", *FIGURES)}
        for row in figs.projects.to_dict("records")
    ]
    return {
        "period": {
            "start": when.start.isoformat(),
            "end": when.end.isoformat() if when.end is not None else None,
            "partial_days": [day.isoformat() for day in when.partial_days],
        },
        "projects": projects,
        "totals": {key: figs.totals[key] for key in FIGURES},
    }


def _plain(value: Any) -> Any:
    if value is None or value is pd.NA or (isinstance(value, float) and np.isnan(value)):
        return None
    if isinstance(value, np.integer | int):
        return int(value)
    return str(value)


def write_json(
    figs: Figures,
    path: str | os.PathLike[str],
    *,
    by_tag: Mapping[str, pd.DataFrame] | None = None,
) -> Path:
    """Write `_as_json(figs)` to `path` (by convention `figures.json`); returns it.
    `by_tag` (`tags.by_tag`'s tables by tag name), when given, is added as `by_tag`:
    each tag's list of `{<tag>, projects, FIGURES}`; without it the file is as before."""
    content = _as_json(figs)
    if by_tag is not None:
        content["by_tag"] = {
            key: [{name: _plain(value) for name, value in row.items()}
                  for row in table.to_dict("records")]
            for key, table in by_tag.items()
        }  # fmt: skip
    path = Path(path)
    path.write_text(json.dumps(content, indent=2) + "\n", encoding="utf-8")
    return path

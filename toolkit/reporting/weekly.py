"""The weekly report's material: the period's figures (`figures.py`), day by day, and
re-runs by cause, the forecast's track record and the review backlog.

`gather(store, since=, until=)` is the only function that reads the store for the
HTML report (`tk.report`). The headline figures and the period come from
`toolkit.reporting.figures`, so the page shows the numbers every other surface shows;
this module adds what only the page shows: the days and the causes of re-runs.

Decisions:

- The previous period is the one of the same length (in whole days) just before this
  one; a change is shown only where both periods have data.
- Rework is put down to a cause per chapter and day (`rework_causes`: the kind of the
  chapter's latest failure seen by the end of the day the re-run was paid).
- The track record is `analysis.forecast_accuracy` replayed daily inside the period,
  summed over projects: one share of the finishes checked, or "no finish to check yet".
  The same replays calibrate the band (`analysis.band_calibration`'s split-conformal
  width, by project, at 80%): the page says how the band was set beside how often it
  held, from one set of replays (replaying is the page's costliest step).
- The review backlog is `analysis.review_backlog` at the period's last snapshot, its
  reviews per day over the period's length in whole days.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from toolkit import analysis
from toolkit.analysis.accuracy import EVERY, HORIZON, replay_scores, replay_ticks, summed_scores
from toolkit.analysis.calibration import Calibration, calibrated
from toolkit.analysis.forecast import FREQ, WINDOW
from toolkit.analysis.lines import lines_ahead, window_of
from toolkit.analysis.observed import Observed, observe
from toolkit.analysis.read_ahead import tables_ahead
from toolkit.analysis.replayed import replays_ahead
from toolkit.analysis.review_moves import forget_moves
from toolkit.reporting.agency_drilldown import Drilldown, Scope, explained_week
from toolkit.reporting.drilldown import explained
from toolkit.reporting.figures import FIGURES, TICK, Figures, Period, figures, period
from toolkit.reporting.rework_causes import CAUSE_WORDS, CAUSES, rework_causes
from toolkit.reporting.tags import Tags, sum_by_tag

if TYPE_CHECKING:
    from toolkit.store import SnapshotStore

__all__ = ["Weekly", "gather", "sentences", "tag_drilldown", "track_record"]


@dataclass(frozen=True)
class Weekly:
    """What the report shows; frames carry project names beside ids."""

    figures: Figures  # the headline figures of the period, as every surface shows them
    previous: Figures  # the same figures over the period of the same length before it
    projects: pd.DataFrame  # figures.projects with rework_<cause> for each cause
    days: pd.DataFrame  # day, project_id, project, lines, credits, rework_credits
    accuracy: pd.DataFrame  # analysis.forecast_accuracy by project, replays in the period
    band: Calibration  # analysis.band_calibration from the same replays
    review: pd.DataFrame  # analysis.review_backlog at the period's last snapshot
    observed: Observed
    explained: dict[str, pd.DataFrame]  # the rows behind each number the page links
    # The projects' tags (a watch config's [tags]); with them the page groups the
    # figures by each tag, both periods, each number opening its rows: the previous
    # period's rows are read for that alone.
    tags: Tags = field(default_factory=dict)
    previous_explained: dict[str, pd.DataFrame] = field(default_factory=dict)

    @property
    def period(self) -> Period:
        return self.figures.period

    def by_tag(self, key: str, which: str = "figures") -> pd.DataFrame:
        """The headline figures per value of tag `key`, this period's (`figures`) or the
        previous one's (`previous`)."""
        return sum_by_tag(getattr(self, which).projects, self.tags, key)

    def totals(self, which: str = "figures") -> Mapping[str, Any]:
        """Every project's figures together, this period's or the previous one's."""
        totals: Mapping[str, Any] = getattr(self, which).totals
        return totals


def tag_drilldown(weekly: Weekly) -> Drilldown | None:
    """The anchors and sections of the rows behind each number of the page's tables by
    a tag (the agency page's scheme, this workspace its one scope); None without tags."""
    if not weekly.tags:
        return None
    root = weekly.observed.store.root
    periods = {"figures": weekly.period, "previous": weekly.previous.period}
    rows = {"figures": {name: weekly.explained[name] for name in FIGURES
                        if name in weekly.explained},
            "previous": weekly.previous_explained}  # fmt: skip
    scope = Scope(Path(str(root)).name or str(root), str(root), periods, rows, {},
                  {which: getattr(weekly, which).projects for which in periods},
                  {which: getattr(weekly, which).totals for which in periods})  # fmt: skip
    return Drilldown([scope], weekly.tags)


def gather(
    store: SnapshotStore | Observed,
    *,
    since: pd.Timestamp | str | None = None,
    until: pd.Timestamp | str | None = None,
    days: int = 7,
    tz: str | None = None,
    tags: Tags | None = None,
) -> Weekly:
    """The report's material; `tz` is the zone of its days (default UTC). A single
    snapshot is enough: what needs a period then says so (`nothing_over_the_period`).
    `tags`: the projects' tags, to group the figures by (`Weekly.tags`)."""
    obs = observe(store)
    if not obs.times:
        raise ValueError(
            "the report needs a snapshot; take one (`toolkit snapshot`), then another "
            "an hour or so later, and try again"
        )
    when = period(obs, since=since, until=until, days=days, tz=tz)
    earlier, later = _before(when)
    span = later - earlier  # whole days, as long as this period
    # Read meanwhile, on a thread of their own (`toolkit.analysis.read_ahead`), while
    # the backlog is worked out: the tables at the previous period's end (its figures
    # at the end, the replays' start; a second at 100,000 chapters x a year), each
    # period's lines at each snapshot, read once (the figures sum them by day and the
    # drill-down lists this period's; 0.3-0.5 s a query), and the replays' changes.
    before = period(obs, since=earlier, until=later, tz=when.tz)
    if before.end is not None:
        tables_ahead(obs, ["chapters", "languages", "projects"], before.end)
    for each in (when, before):
        window = window_of(obs, each.since, each.until)
        if each.has_data and window is not None:
            lines_ahead(obs, window)
    replays_ahead(obs, replay_ticks(obs, every=EVERY, since=when.since, until=when.until,
                                    tz=when.tz))  # fmt: skip
    # The review backlog first, before the run stages are read: it reads the whole
    # history's moves (5.7 million at 100,000 chapters x a year), which are let go once
    # it and the rows behind it have what they need (`forget_moves`). Read beside the
    # stages, they were the page's peak memory.
    review = analysis.review_backlog(obs, window=span, until=when.until - TICK, tz=when.tz)
    forget_moves(obs)
    # The page shows no forecast: its figures at each period's end are read undated.
    figs = figures(obs, since=since, until=until, days=days, tz=tz, outlook=False)
    when = figs.period
    previous = previous_figures(obs, figs)
    names = figs.projects.set_index("project_id")["project"]
    since, until, tz = when.since, when.until, when.tz
    lines = analysis.throughput(obs, "1D", "project_id", since=since, until=until, tz=tz)
    spend = analysis.credit_spend(obs, "1D", "project_id", since=since, until=until, tz=tz)
    measures = ["credits", "rework_credits", "lines"]
    daily = spend[["period", "project_id", "credits", "rework_credits"]].merge(
        lines[["period", "project_id", "lines"]], on=["period", "project_id"], how="outer"
    )
    daily[measures] = daily[measures].fillna(0)
    daily = daily.rename(columns={"period": "day"})
    daily["project"] = daily["project_id"].map(names).fillna(daily["project_id"])
    causes = rework_causes(obs, when)
    # One set of replays for both: the track record and the band's calibration.
    scores = replay_scores(obs, by="project_id", horizon=HORIZON, every=EVERY, window=WINDOW,
                           freq=FREQ, stall_after=analysis.STALL_AFTER, since=since,
                           until=until, tz=tz)  # fmt: skip
    accuracy = summed_scores(obs, scores, "project_id")
    projects = figs.projects.set_index("project_id").join(causes, how="left")
    projects[list(causes.columns)] = projects[list(causes.columns)].fillna(0)
    return Weekly(
        figures=figs,
        previous=previous,
        projects=projects.reset_index(),
        days=daily.sort_values(["day", "project"]).reset_index(drop=True),
        accuracy=accuracy,
        band=calibrated(scores, by="project_id"),
        review=review,
        observed=obs,
        explained=explained(obs, when),
        tags=dict(tags or {}),
        previous_explained=explained_week(obs, previous.period) if tags else {},
    )


def previous_figures(store: SnapshotStore | Observed, figs: Figures) -> Figures:
    """The figures of the period before `figs`' one: as long, in whole days, ending
    where it starts (the page's "against the previous period"); no page shows its
    forecast, so none is kept."""
    since, until = _before(figs.period)
    return figures(store, since=since, until=until, tz=figs.period.tz, outlook=False)


def _before(when: Period) -> tuple[pd.Timestamp, pd.Timestamp]:
    """The bounds [since, until) of the period before `when`: as long, in whole days,
    ending where it starts."""
    span = (when.until - when.since).ceil("D")
    return when.since - span, when.since


ONE_SNAPSHOT = "One snapshot so far: figures over a period need a second one."
# The story names this many projects at most, the busiest; an agency's 300 would bury
# the page's first screen, and each project has its row in the table below anyway.
STORY_PROJECTS = 10
EMPTY_PERIOD = "No snapshot was taken in this period after the first, so it has no figures."


def nothing_over_the_period(weekly: Weekly) -> str | None:
    """Why no figure over the period can be shown, in one line; None when they can. The
    figures at the last snapshot (open lines, chapters that need a person, where chapters
    stand) can be shown from a single snapshot."""
    if len(weekly.observed.times) < 2:
        return ONE_SNAPSHOT
    return None if weekly.period.has_data else EMPTY_PERIOD


def period_line(weekly: Weekly) -> str:
    """The page's line under its title: the period's first and last snapshot and how
    many were taken after the first (`Mon 02 Mar 2026 09:00 to Fri 06 Mar 2026 17:00 UTC ·
    32 snapshots`), or what stands in for that on a first snapshot or an empty period."""
    when = weekly.period
    if when.end is None:
        return f"{when.label()} · no snapshot in this period"
    last = f"{when.local(when.end):%a %d %b %Y %H:%M %Z}"
    if len(weekly.observed.times) == 1:
        return f"{last} · the first snapshot"
    return f"{when.local(when.start):%a %d %b %Y %H:%M} to {last} · {when.snapshots} snapshots"


def sentences(weekly: Weekly) -> list[str]:
    """A few plain sentences on the week, one per project with work, busiest first (at
    most `STORY_PROJECTS`, then one line counting the others)."""
    nothing = nothing_over_the_period(weekly)
    if nothing == ONE_SNAPSHOT:
        return [f"{nothing[:-1]}: take another (toolkit snapshot) an hour or so after it."]
    if nothing is not None:
        return [nothing]
    said = []
    table = weekly.projects.sort_values(["credits", "lines"], ascending=False)
    for row in table.to_dict("records"):  # cells typed Any, not as any scalar (itertuples)
        if not (row["credits"] or row["lines"] or row["chapters_finished"]):
            continue
        finished = int(row["chapters_finished"])
        # Each count says its figure's label (toolkit.metrics), as the tables head it.
        text = f"{row['project']}: {finished} chapter{'s' if finished != 1 else ''} finished"
        if row["rework_credits"]:
            share = row["rework_credits"] / row["credits"]
            text += f"; {share:.0%} of its credits spent went to re-runs, {_mostly(row)}"
        elif row["credits"]:
            text += "; none of its credits spent went to re-runs"
        trouble = [
            _count(int(row["runs_failed"]), "run failed", "runs failed"),
            _count(int(row["runs_stalled"]), "run stalled", "runs stalled"),
        ]
        if any(trouble):
            text += "; " + " and ".join(part for part in trouble if part)
        said.append(text + ".")
    if not said:
        said.append("Nothing ran in this window: no lines translated and no credits spent.")
    if len(said) > STORY_PROJECTS:
        more = len(said) - STORY_PROJECTS
        said[STORY_PROJECTS:] = [
            f"And {more} more project{'s' if more != 1 else ''} with work in this period: "
            "each has its row in the table below."
        ]
    return said


def track_record(weekly: Weekly) -> str:
    """The forecast's track record over the period, in one line."""
    checked = int(weekly.accuracy["replays"].sum())
    over = f"Over {weekly.period.label()}"
    if not checked:
        return (
            f"{over}, no finish to check yet: the forecast's band is checked once the work "
            f"it forecast is done. {band_setting(weekly.band)}"
        )
    inside = int(weekly.accuracy["inside"].sum())
    return (
        f"{over}, {inside / checked:.0%} of finishes fell inside the forecast's p10-p90 band "
        f"({inside} of {checked} {'finish' if checked == 1 else 'finishes'} checked). "
        f"{band_setting(weekly.band)}"
    )


def band_setting(band: Calibration) -> str:
    """How the forecast's band is set, from the same replays as the track record, in
    the calibration's own words (`Calibration.says`)."""
    return f"The band is {band.says()}."


def _mostly(row: Mapping[Any, Any]) -> str:
    amounts = {cause: float(row[f"rework_{cause}"]) for cause in CAUSES}
    cause, amount = max(amounts.items(), key=lambda item: item[1])
    lead = "mostly" if amount / sum(amounts.values()) > 0.5 else "the largest part"
    return f"{lead} {CAUSE_WORDS[cause]}"


def _count(count: int, one: str, many: str) -> str:
    return "" if count == 0 else f"{count} {one if count == 1 else many}"

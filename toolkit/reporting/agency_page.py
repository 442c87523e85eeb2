"""The agency page: every workspace of a config on one self-contained HTML page.

```python
agency = gather_agency({"studio-a": "data/snapshots/studio-a", "studio-b": ...},
                       tags={"Moonlit Harbor": {"client": "Acme"}})
write_agency_page(agency, "agency-report.html")    # `toolkit report --html --config FILE`
```

What it shows: every headline figure per workspace, per project and per value of each
tag (`client`, `vendor`, `team`: the keys the config's `[tags]` use), this week against
the previous week, and the forecast per project. Decisions (docs/figures.md, "The
agency page"):

- Each workspace's week is its own weekly page's week (`figures` with the same `days`
  and zone: the days up to its own last snapshot), and its previous week is the page's
  previous period (`weekly.previous_figures`), so every number on this page is the one
  that workspace's weekly page and `figures.json` show. The watch snapshots every
  workspace in one round, so their weeks agree to within a round; the page names each.
- A total over workspaces or over a tag's projects is unknown (a dash) when any of its
  parts is, as a workspace's total is.
- Tags are the config's, and the service's `translation_group` (each project's
  `translationGroupId` as the store kept it at the week's end, `(unknown)` where no
  snapshot recorded one; docs/figures.md), whose section comes in name order with the
  config's.
- Every number opens the rows that make it, in sections of the same page
  (`agency_drilldown`): a workspace's, a project's or a tag's, this week's or the
  previous week's, and each project's forecast.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import partial
from html import escape
from pathlib import Path
from typing import cast

import pandas as pd

from toolkit.analysis.observed import Observed
from toolkit.formatting import missing, whole_or_dash
from toolkit.metrics import ALIASES
from toolkit.reporting.agency_drilldown import FORECAST as OUTLOOK_SHOWN
from toolkit.reporting.agency_drilldown import (
    ROWS_STYLE,
    WEEKS,
    Drilldown,
    Scope,
    explained_outlook,
    explained_week,
    moment_in,
)
from toolkit.reporting.figures import AT_END, FIGURES, WORDS, Figures, figures, header_of
from toolkit.reporting.linked_tables import (
    WEEKS_STYLE,
    Opens,
    cells_table,
    figure_cells,
    linked,
    tag_sections,
)
from toolkit.reporting.page import STYLE
from toolkit.reporting.tags import Tags, sum_by_tag, with_groups
from toolkit.reporting.weekly import previous_figures
from toolkit.store import SnapshotStore

__all__ = ["Agency", "WorkspaceWeek", "gather_agency", "render_agency", "write_agency_page"]

# Wider than the weekly page: eight figures and two names a row.
WIDE = """
body { max-width: 1280px; }
"""
FORECAST = (*OUTLOOK_SHOWN, "status")


@dataclass(frozen=True)
class WorkspaceWeek:
    """One workspace's week, as its weekly page counts it."""

    name: str
    store: str  # the store's location, for the `toolkit explain` hint
    figures: Figures
    previous: Figures
    forecast: pd.DataFrame  # analysis.forecast by project at the week's last snapshot
    # The rows behind the numbers (`tk.explain`): by `WEEKS` key then figure, and the
    # forecast's chapters by forecast figure.
    explained: dict[str, dict[str, pd.DataFrame]] = field(default_factory=dict)
    outlook: dict[str, pd.DataFrame] = field(default_factory=dict)


@dataclass(frozen=True)
class Agency:
    """Every workspace's week, previous week and forecast, and the tags of its projects:
    what the agency page shows (`gather_agency`), by workspace, tag or project."""

    workspaces: dict[str, WorkspaceWeek]
    tags: Tags = field(default_factory=dict)

    def projects(self, which: str = "figures") -> pd.DataFrame:
        """Every workspace's projects one after another: `workspace, project_id,
        project, FIGURES`, this week's (`figures`) or the previous week's (`previous`)."""
        frames = [
            getattr(week, which).projects.assign(workspace=name)
            for name, week in self.workspaces.items()
        ]
        columns = ["workspace", "project_id", "project", *FIGURES]
        if not frames:
            return pd.DataFrame(columns=columns)
        together: pd.DataFrame = pd.concat(frames, ignore_index=True)
        return together[columns]

    def totals(self, which: str = "figures") -> dict[str, int | None]:
        """Each figure summed over the workspaces; None when any workspace's is."""
        said: dict[str, int | None] = {}
        for name in FIGURES:
            values = [getattr(w, which).totals[name] for w in self.workspaces.values()]
            said[name] = None if any(v is None for v in values) else sum(values)
        return said

    def by_tag(self, key: str, which: str = "figures") -> pd.DataFrame:
        """The figures summed per value of tag `key` over every workspace's projects."""
        return sum_by_tag(self.projects(which), self.tags, key)


def gather_agency(
    stores: Mapping[str, SnapshotStore | str | os.PathLike[str]],
    *,
    tags: Tags | None = None,
    days: int = 7,
    tz: str | None = None,
) -> Agency:
    """Each workspace's week, previous week and forecast; `stores` by workspace name.
    A workspace whose store has no snapshot yet is refused by name (ValueError)."""
    weeks = {}
    merged = with_groups(tags, [])  # the user's tags, refused if one is the service's
    for name, where in stores.items():
        store = where if isinstance(where, SnapshotStore) else SnapshotStore(where)
        obs = Observed(store)
        try:
            figs = figures(obs, days=days, tz=tz)
        except ValueError as exc:
            raise ValueError(f"workspace {name!r} (store {str(store.root)!r}): {exc}") from exc
        outlook = (
            figs.forecast
            if figs.forecast is not None
            else pd.DataFrame(columns=["project_id", "project", *FORECAST])
        )
        before = previous_figures(obs, figs)
        rows = {"figures": explained_week(obs, figs.period),
                "previous": explained_week(obs, before.period)}  # fmt: skip
        weeks[name] = WorkspaceWeek(name, str(store.root), figs, before, outlook, rows,
                                    explained_outlook(obs, figs.period))  # fmt: skip
        # Each project's translation group as of the week's end, by id: a tag section too.
        for project_id, own in with_groups({}, [obs], until=figs.period.end).items():
            merged.setdefault(project_id, {}).update(own)
    return Agency(weeks, merged)


def write_agency_page(
    agency: Agency, out: str | os.PathLike[str], *, title: str | None = None
) -> Path:
    """Write the page to `out` (its folder made if missing); returns the path."""
    path = Path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_agency(agency, title=title), encoding="utf-8")
    return path


# -- the page -----------------------------------------------------------------------


def render_agency(agency: Agency, *, title: str | None = None) -> str:
    """The agency page's HTML: one self-contained page (`write_agency_page` writes it)."""
    ends = [w.figures.period.end for w in agency.workspaces.values()]
    known = [end for end in ends if end is not None]
    zone = next(iter(agency.workspaces.values())).figures.period.tz if agency.workspaces else "UTC"
    last = max(known).tz_convert(zone) if known else None
    heading = title or (f"Agency week to {last:%d %b %Y}" if last is not None else "Agency week")
    count, spaces = len(agency.projects()), len(agency.workspaces)
    drill = drilldown(agency)
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{escape(heading)}</title><style>{STYLE}{WIDE}{ROWS_STYLE}{WEEKS_STYLE}</style></head><body>",
        f"<h1>{escape(heading)}</h1>",
        f'<p class="when">{spaces} workspace{"s" if spaces != 1 else ""} &middot; {count} '
        f"project{'s' if count != 1 else ''} "
        "&middot; each number this week, then the previous week's in grey &middot; "
        "click a number for the rows behind it</p>",
        "<h2>Workspaces</h2>",
        _weeks_table(agency),
        _workspace_figures(agency, drill),
        *tag_sections(agency.tags, agency.by_tag, agency.totals, drill),
        "<h2>Projects</h2>",
        _projects_table(agency, drill),
        "<h2>Forecast per project</h2>",
        _forecast_table(agency, drill),
        _notes(),
        *drill.sections(),
        "</body></html>",
    ]
    return "\n".join(parts)


def drilldown(agency: Agency) -> Drilldown:
    """The anchors and sections of the rows behind each number of `agency`."""
    scopes = [
        Scope(name, week.store, {"figures": week.figures.period, "previous": week.previous.period},
              week.explained, week.outlook,
              {which: getattr(week, which).projects for which in WEEKS},
              {which: getattr(week, which).totals for which in WEEKS})
        for name, week in agency.workspaces.items()
    ]  # fmt: skip
    return Drilldown(scopes, agency.tags)


def _weeks_table(agency: Agency) -> str:
    """Which week each workspace's numbers cover, and its previous week."""
    rows = []
    for name, week in agency.workspaces.items():
        now, before = week.figures.period, week.previous.period
        rows.append([escape(name), escape(now.label()), escape(before.label()),
                     f"{now.snapshots:,}"])  # fmt: skip
    header = [header_of(name) for name in ("workspace", "week", "previous_week", "snapshots")]
    return cells_table(header, rows)


def _workspace_figures(agency: Agency, drill: Drilldown) -> str:
    header = [header_of("workspace"), *(header_of(name) for name in FIGURES)]
    rows = []
    for name, week in agency.workspaces.items():
        opens: Opens = partial(drill.workspace, name=name)
        rows.append([escape(name), *figure_cells(week.figures.totals, week.previous.totals,
                                                 opens)])  # fmt: skip
    rows.append(["All workspaces", *figure_cells(agency.totals(), agency.totals("previous"),
                                                 drill.total)])  # fmt: skip
    return cells_table(header, rows, total=True)


def _projects_table(agency: Agency, drill: Drilldown) -> str:
    now = agency.projects()
    before = agency.projects("previous").set_index(["workspace", "project_id"])
    header = [header_of("project"), header_of("workspace"), *(header_of(n) for n in FIGURES)]
    rows = []
    for row in now.to_dict("records"):
        key = (row["workspace"], row["project_id"])
        was = before.loc[key].to_dict() if key in before.index else {}
        opens: Opens = partial(drill.project, name=key[0], project_id=key[1])
        rows.append([escape(str(row["project"])), escape(str(row["workspace"])),
                     *figure_cells(row, was, opens)])  # fmt: skip
    if not rows:
        return '<p class="nothing">No project yet in any workspace.</p>'
    return cells_table(header, rows)


def _forecast_table(agency: Agency, drill: Drilldown) -> str:
    rows = []
    for name, week in agency.workspaces.items():
        zone = week.figures.period.tz
        for row in week.forecast.to_dict("records"):
            shown = {"open_chapters": whole_or_dash(row["open_chapters"]),
                     "remaining_lines": whole_or_dash(row["remaining_lines"]),
                     "lines_per_hour": _pace(row["lines_per_hour"]),
                     **{key: escape(moment_in(row[key], zone))
                        for key in ("finish_p10", "finish_p50", "finish_p90")}}  # fmt: skip
            cells = [escape(str(row["project"])), escape(name),
                     *(linked(text, drill.outlook(figure, name, row["project_id"]),
                               ALIASES.get(figure, figure))
                       for figure, text in shown.items()),
                     escape(str(row["status"]))]  # fmt: skip
            rows.append(cells)
    if not rows:
        return '<p class="nothing">No open work in any workspace: nothing to forecast.</p>'
    header = [header_of(n) for n in ("project", "workspace", *FORECAST)]
    return cells_table(header, rows)


def _pace(value: object) -> str:
    # A pace is a mean, not a count: Python's format (half to even), as before.
    return "–" if missing(value) else f"{float(cast(float, value)):,.0f}"


def _notes() -> str:
    counted = " and ".join(WORDS[name] for name in AT_END)
    return (
        f'<p class="note">{escape(counted.capitalize())}: at each week\'s last snapshot; the '
        "other figures: over the week. A dash: no data (no snapshot in that week). Each "
        "workspace's numbers are its weekly page's (<code>toolkit report --html</code> on its "
        "store). An underlined number opens the rows behind it, below. "
        "docs/figures.md defines each figure.</p>"
    )

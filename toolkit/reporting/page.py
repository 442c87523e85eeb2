"""The weekly report as one self-contained HTML page: tables, sentences, embedded plots.

Past 400 lines on purpose: the page's sections, tables and plots are drawn together,
one function each, and the table's cells carry the drill-down links.

Nothing outside it is linked: the style is inline and each plot is a PNG in a `data:`
URI, so the file can be mailed or opened anywhere; each headline number links to its
explanation, a section of the same page (`drilldown`). Figures come from
`weekly.gather`; this module only formats them (whole credits, hours to one decimal,
partial days marked `*`).
"""

from __future__ import annotations

import base64
import bisect
import io
from collections.abc import Callable, Collection, Mapping
from html import escape
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from toolkit import metrics, plots
from toolkit.formatting import hours, show, whole_or_dash
from toolkit.reporting import weekly as material
from toolkit.reporting.agency_drilldown import ROWS_STYLE, Drilldown
from toolkit.reporting.drilldown import link, section
from toolkit.reporting.figures import AT_END, FIGURES, WORDS, Figures, header_of
from toolkit.reporting.linked_tables import WEEKS_STYLE, tag_heading, tag_sections
from toolkit.reporting.rework_causes import CAUSES
from toolkit.reporting.tags import keys_of
from toolkit.reporting.weekly import Weekly, sentences, tag_drilldown, track_record

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["STYLE"]

REWORK_COLOR = "#d0454c"
NEW_COLOR = "#4f8fc0"
CAUSE_COLORS = {"stalled": "#f2b134", "failed": "#d0454c", "rescan": "#a8a8a8"}
STYLE = """
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: #222;
       max-width: 980px; margin: 2em auto; padding: 0 1em; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; } h2 { margin-top: 1.8em; font-size: 1.2em; }
p.when { color: #555; margin-top: 0; }
ul.story li { margin: 0.3em 0; }
table { border-collapse: collapse; margin: 0.6em 0; width: 100%; }
th, td { padding: 0.3em 0.6em; border-bottom: 1px solid #ddd; }
td:first-child { white-space: nowrap; }
th { text-align: left; background: #f3f3f3; } td.n, th.n { text-align: right; }
tr.total td { font-weight: 600; border-top: 2px solid #999; }
tr.partial td { color: #777; font-style: italic; }
img { max-width: 100%; margin: 0.4em 0 1em; }
p.note { color: #666; font-size: 0.9em; }
p.nothing { color: #555; font-style: italic; }
td a { color: inherit; text-decoration: underline dotted; } section:target { background: #fff8d6; }
"""


def render(weekly: Weekly, *, title: str) -> str:
    drill = tag_drilldown(weekly)
    # The tables by a tag are drawn, and their rows' sections, only where there is a
    # period to show; else each tag's heading says why in one line.
    tables = drill if drill is not None and _nothing_by_tag(weekly) is None else None
    style = STYLE + (WEEKS_STYLE + ROWS_STYLE if tables else "")
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{escape(title)}</title><style>{style}</style></head><body>",
        f"<h1>{escape(title)}</h1>",
        f'<p class="when">{escape(material.period_line(weekly))}</p>',
        '<ul class="story">',
        *(f"<li>{escape(sentence)}</li>" for sentence in sentences(weekly)),
        "</ul>",
        f"<h2>Projects, {escape(weekly.period.label())}</h2>",
        *_section(weekly, _nothing_in_projects, _project_section),
        f"<h2>Against the previous period, {escape(weekly.previous.period.label())}</h2>",
        *_section(
            weekly,
            material.nothing_over_the_period,
            lambda w: [_change_table(w.figures, w.previous, opened=w.explained)],
        ),
        *(_tag_tables(weekly, tables) if tables else _no_tag_tables(weekly)),
        "<h2>Review and forecast</h2>",
        f'<p class="record">{escape(track_record(weekly))}</p>',
        _review_table(weekly),
        f"<h2>{escape(header_of('rework_credits'))}, by project</h2>",
        *_section(weekly, _nothing_in_rework, _rework_section),
        "<h2>Day by day</h2>",
        *_section(weekly, _nothing_in_days, _daily_section),
        f"<h2>{escape(header_of('chapters'))}, by state and project</h2>",
        *_section(weekly, _nothing_in_status, _status_section),
        '<h2 id="explanations">Where each figure comes from</h2>',
        *_section(weekly, _nothing_to_open, _explanations),
        *(tables.sections("Where each number by a tag comes from") if tables else []),
        "</body></html>",
    ]
    return "\n".join(parts)


# -- sections -----------------------------------------------------------------------
# A section with nothing to show for the data at hand says so in one line and the rest
# of the page renders. Each `_nothing_in_*` names the one case its section cannot be
# drawn for; anything else a section raises is a bug and fails the page.


def _section(
    weekly: Weekly,
    nothing: Callable[[Weekly], str | None],
    draw: Callable[[Weekly], list[str]],
) -> list[str]:
    """The section's HTML, or one line saying why it has nothing to show."""
    why = nothing(weekly)
    return [f'<p class="nothing">{escape(why)}</p>'] if why else draw(weekly)


def _nothing_to_open(weekly: Weekly) -> str | None:
    # The figures at the period's end (open lines, needing a person) open even on a
    # first snapshot; only a page with no figure at all says why in the period's words.
    if weekly.explained:
        return None
    return material.nothing_over_the_period(weekly) or "No figure to open: the period has no data."


def _explanations(weekly: Weekly) -> list[str]:
    return section(weekly.explained, weekly.period, str(weekly.observed.store.root))


def _tag_tables(weekly: Weekly, drill: Drilldown) -> list[str]:
    """The figures by each tag, this period against the previous one (the agency
    page's tables, one workspace): `<h2>By client</h2>`, a row per value."""
    return [
        *tag_sections(weekly.tags, weekly.by_tag, weekly.totals, drill),
        f'<p class="note">Each number {escape(weekly.period.label())}, then the previous '
        f"period's ({escape(weekly.previous.period.label())}) in grey; an underlined number "
        "opens the rows that make it, below.</p>",
    ]


def _nothing_by_tag(weekly: Weekly) -> str | None:
    """Why the tables by a tag have nothing to show: the period has no figure (a first
    snapshot, or none in the period: as the change table says), or there is no project
    to group."""
    return material.nothing_over_the_period(weekly) or _nothing_in_projects(weekly)


def _no_tag_tables(weekly: Weekly) -> list[str]:
    """Each tag's heading and, in one line, why it has no table (none without tags)."""
    why = _nothing_by_tag(weekly) if weekly.tags else None
    if why is None:
        return []
    line = f'<p class="nothing">{escape(why)}</p>'
    return [part for key in keys_of(weekly.tags) for part in (tag_heading(key), line)]


def _nothing_in_projects(weekly: Weekly) -> str | None:
    if weekly.figures.projects.empty:
        return "No project yet: the snapshots have found no project in this workspace."
    return None


def _project_section(weekly: Weekly) -> list[str]:
    return [_summary_table(weekly.figures, opened=weekly.explained), _at_end_note(weekly.figures)]


def _nothing_in_rework(weekly: Weekly) -> str | None:
    paid = (weekly.projects["rework_credits"].fillna(0) > 0).any()
    none = None if paid else "No credits were paid for re-runs in this period."
    return material.nothing_over_the_period(weekly) or none


def _rework_section(weekly: Weekly) -> list[str]:
    return [
        _rework_table(weekly.projects, opened=weekly.explained),
        _image(_rework_plot(weekly.projects), "Re-run credits by project and cause"),
    ]


def _nothing_in_days(weekly: Weekly) -> str | None:
    empty = "No day to show: nothing was translated or charged between this period's snapshots."
    return material.nothing_over_the_period(weekly) or (empty if weekly.days.empty else None)


def _daily_section(weekly: Weekly) -> list[str]:
    return [
        _daily_table(weekly),
        _image(daily_plot(weekly, "lines"), "Lines translated per day and project"),
        _image(daily_plot(weekly, "credits"), "Credits per day, new work and re-runs"),
        '<p class="note">* partial day: the snapshots do not span it, so its figures are '
        "a part-day's. Every figure is counted between snapshots, in the day of the later "
        "one.</p>",
    ]


def _nothing_in_status(weekly: Weekly) -> str | None:
    moment = _status_moment(weekly)
    if moment is None:
        return (
            "No snapshot had been taken by the end of this period, so the chapters' "
            "states then are not known."
        )
    if weekly.observed.at("chapters", moment).empty:
        return "No chapter yet: the last snapshot found none."
    return None


def _status_section(weekly: Weekly) -> list[str]:
    return [_image(_status_plot(weekly), "Chapters by state and project")]


def _status_moment(weekly: Weekly) -> pd.Timestamp | None:
    """The newest snapshot at or before the period's end: the states a page of a past
    period draws are those it ended with, not today's."""
    times = weekly.observed.times  # in time order
    taken = bisect.bisect_left(times, weekly.period.until)  # how many before its end
    return times[taken - 1] if taken else None


# -- tables -------------------------------------------------------------------------


def _credits(value: float) -> str:
    return "–" if pd.isna(value) else f"{round(float(value)):,}"


def _hours(value: float) -> str:
    return hours(value) or "–"


def _share(part: float, whole: float) -> str:
    return "–" if pd.isna(part) or pd.isna(whole) or not whole else f"{part / whole:.0%}"


def _table(
    header: list[str],
    rows: list[list[str]],
    *,
    classes: list[str] | None = None,
    links: Callable[[int, int], str | None] | None = None,
) -> str:
    """`links(row, column)`: the figure a body cell opens (drill-down), or None."""

    def cell(tag: str, index: int, text: str, figure: str | None = None) -> str:
        numeric = ' class="n"' if index > 0 else ""
        shown = escape(text) if figure is None or text == "–" else link(figure, escape(text))
        return f"<{tag}{numeric}>{shown}</{tag}>"

    head = "".join(cell("th", i, text) for i, text in enumerate(header))
    body = []
    for number, row in enumerate(rows):
        css = classes[number] if classes else ""
        attr = f' class="{css}"' if css else ""
        cells = [cell("td", i, t, links(number, i) if links else None) for i, t in enumerate(row)]
        body.append(f"<tr{attr}>" + "".join(cells) + "</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _summary_table(figs: Figures, *, opened: Collection[str]) -> str:
    """`opened`: the figures whose rows the page carries; only those link."""
    columns = ("project", *FIGURES, "median_cycle_hours")
    header = [header_of(name) for name in columns]
    rows = [
        [str(row["project"]), *_figure_cells(row), _hours(row["median_cycle_hours"])]
        for row in figs.projects.to_dict("records")
    ]
    total = figs.totals
    median = total["median_cycle_hours"]
    rows.append(["All projects", *_figure_cells(total),
                 _hours(float("nan") if median is None else median)])  # fmt: skip

    def opens(_: int, column: int) -> str | None:
        return columns[column] if columns[column] in opened else None

    return _table(header, rows, classes=[""] * (len(rows) - 1) + ["total"], links=opens)


def _figure_cells(row: Mapping[Any, Any]) -> list[str]:
    """One cell per figure; re-run credits with their share of the credits."""
    cells = [whole_or_dash(row[name]) for name in FIGURES]
    rework, spent = row["rework_credits"], row["credits"]
    if cells[FIGURES.index("rework_credits")] != "–":
        share = _share(rework, spent)
        cells[FIGURES.index("rework_credits")] += f" ({share})"
    return cells


def _change_table(now: Figures, before: Figures, *, opened: Collection[str]) -> str:
    """Each figure's total in both periods, and the change where both have data."""
    header = [header_of("figure"), now.period.label(), before.period.label(),
              header_of("difference")]  # fmt: skip
    rows = []
    for name in FIGURES:
        this, last = now.totals[name], before.totals[name]
        change = "–" if this is None or last is None else f"{this - last:+,}"
        rows.append([header_of(name), whole_or_dash(this), whole_or_dash(last), change])

    def opens(row: int, column: int) -> str | None:
        return FIGURES[row] if column == 1 and FIGURES[row] in opened else None

    return _table(header, rows, links=opens)


def _at_end_note(figs: Figures) -> str:
    when = figs.period
    if when.end is None:
        return ""
    counted = " and ".join(WORDS[name] for name in AT_END)
    return (
        f'<p class="note">{escape(counted.capitalize())}: at the last snapshot, '
        f"{when.local(when.end):%a %d %b %H:%M %Z}. The other figures: over the period. A dash: no "
        "data (no snapshot in the period). docs/figures.md defines each figure.</p>"
    )


def _rework_table(projects: pd.DataFrame, *, opened: Collection[str]) -> str:
    columns = ("project", "rework_credits", *(f"rework_{cause}" for cause in CAUSES),
               "rework_share")  # fmt: skip
    header = [header_of(name) for name in columns]
    rows = [
        [
            str(row["project"]),
            _credits(row["rework_credits"]),
            *(_credits(row[f"rework_{cause}"]) for cause in CAUSES),
            _share(row["rework_credits"], row["credits"]),
        ]
        for row in projects.to_dict("records")  # cells typed Any, as the helpers take them
    ]

    def opens(_: int, column: int) -> str | None:
        return columns[column] if columns[column] in opened else None

    return _table(header, rows, links=opens)


def _review_table(weekly: Weekly) -> str:
    """Per project: chapters waiting for review, the oldest wait, reviews per day."""
    if weekly.review.empty:
        return '<p class="note">No chapter is waiting for review and none was reviewed.</p>'
    rows = [
        [
            str(row["project"]),
            f"{int(row['waiting']):,}",
            _hours(row["oldest_wait_hours"]),
            show("reviews_per_day", row["reviews_per_day"]),
        ]
        for row in weekly.review.to_dict("records")
    ]
    columns = ("project", "needs_review", "oldest_wait_hours", "reviews_per_day")
    header = [header_of(name) for name in columns]

    def opens(_: int, column: int) -> str | None:
        return columns[column] if columns[column] in weekly.explained else None

    return _table(header, rows, links=opens) + (
        f'<p class="note">{header_of("needs_review")} and the '
        f"{metrics.header('oldest_wait_hours')}: at the last snapshot. "
        f"{header_of('reviews_per_day')}: over the period's whole days.</p>"
    )


def _daily_table(weekly: Weekly) -> str:
    per_day = weekly.days.groupby("day")[["lines", "credits", "rework_credits"]].sum()
    marks = weekly.period.days.set_index("day")
    rows, classes = [], []
    for day, row in per_day.iterrows():
        partial = bool(marks["partial"].get(day, False))
        label = f"{day:%a %d %b}" + (" *" if partial else "")
        note = str(marks["covered"].get(day, "")) if partial else ""
        rows.append(
            [
                label,
                f"{int(row['lines']):,}",
                _credits(row["credits"]),
                _credits(row["rework_credits"]),
                note,
            ]
        )
        classes.append("partial" if partial else "")
    header = [header_of(name) for name in ("day", "lines", "credits", "rework_credits", "covered")]
    return _table(header, rows, classes=classes)


# -- plots --------------------------------------------------------------------------


def _figure() -> tuple[Figure, Axes]:
    import matplotlib.pyplot as plt

    figure, ax = plt.subplots(figsize=(9.5, 3.8), layout="constrained")
    return figure, ax


def _day_labels(weekly: Weekly, days: list[pd.Timestamp]) -> tuple[list[str], list[bool]]:
    marks = weekly.period.days.set_index("day")["partial"]
    partial = [bool(marks.get(day, False)) for day in days]
    labels = [f"{day:%a %d}" + ("*" if p else "") for day, p in zip(days, partial, strict=True)]
    return labels, partial


def daily_plot(weekly: Weekly, measure: str) -> Figure:
    figure, ax = _figure()
    days = sorted(weekly.days["day"].unique())
    labels, partial = _day_labels(weekly, days)
    x = np.arange(len(days))
    hatch = ["//" if p else "" for p in partial]
    marked = " (* part-day)" if any(partial) else ""  # as the table and the plots mark it
    if measure == "lines":
        wide = plots.largest_wide(weekly.days, "day", "project", "lines").reindex(
            days, fill_value=0
        )
        bottom = np.zeros(len(days))
        colors = {
            **plots.project_colors(weekly.projects["project"]),
            plots.OTHER: plots.OTHER_COLOR,
        }
        for project in wide.columns:
            values = wide[project].to_numpy()
            ax.bar(x, values, bottom=bottom, label=str(project), hatch=hatch, edgecolor="white",
                   color=colors[str(project)])  # fmt: skip
            bottom += values
        ax.set_ylabel(metrics.per("lines", "day"))
        ax.set_title(f"{metrics.per('lines', 'day').capitalize()}{marked}, by project")
    else:
        per_day = weekly.days.groupby("day")[["credits", "rework_credits"]].sum().reindex(days)
        rework = per_day["rework_credits"].fillna(0).to_numpy()
        new = per_day["credits"].fillna(0).to_numpy() - rework
        ax.bar(x, new, color=NEW_COLOR, label=metrics.header("new_credits"), hatch=hatch,
               edgecolor="white")  # fmt: skip
        ax.bar(x, rework, bottom=new, color=REWORK_COLOR, label=plots.REWORK, hatch=hatch,
               edgecolor="white")  # fmt: skip
        ax.set_ylabel(metrics.per("credits", "day"))
        ax.set_title(f"{metrics.per('credits', 'day').capitalize()}{marked}")
    ax.set_xticks(x, labels)
    if ax.get_legend_handles_labels()[0]:
        # Beside the bars, never on them.
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize="small", frameon=False)
    ax.spines[["top", "right"]].set_visible(False)
    return figure


def _rework_plot(projects: pd.DataFrame) -> Figure:
    figure, ax = _figure()
    shown = _largest_rework(projects).sort_values("rework_credits")
    left = np.zeros(len(shown))
    for cause in CAUSES:
        values = shown[f"rework_{cause}"].to_numpy(dtype=float)
        ax.barh(shown["project"].astype(str), values, left=left, color=CAUSE_COLORS[cause],
                label=metrics.header(f"rework_{cause}"))  # fmt: skip
        left += values
    ax.set_xlabel(metrics.header("rework_credits"))
    ax.set_title(f"{metrics.header('rework_credits').capitalize()}, by project and cause")
    if ax.get_legend_handles_labels()[0]:
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize="small", frameon=False)
    ax.spines[["top", "right"]].set_visible(False)
    return figure


def _largest_rework(projects: pd.DataFrame) -> pd.DataFrame:
    """The projects with the most re-run credits, the rest summed as one "other" row
    (one bar per project stops being readable past a few)."""
    ranked = projects.sort_values("rework_credits", ascending=False)
    if len(ranked) <= plots.TOP + 1:
        return ranked
    rest = ranked.iloc[plots.TOP :]
    columns = ["rework_credits", *(f"rework_{cause}" for cause in CAUSES)]
    other = pd.DataFrame({"project": [plots.OTHER], **{c: [rest[c].sum()] for c in columns}})
    return pd.concat([ranked.iloc[: plots.TOP][["project", *columns]], other], ignore_index=True)


def _status_plot(weekly: Weekly) -> Figure:
    figure, ax = _figure()
    plots.status_breakdown(weekly.observed, ax=ax, at=_status_moment(weekly))
    return figure


def _image(figure: Figure, alt: str) -> str:
    import matplotlib.pyplot as plt

    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=100)
    plt.close(figure)
    encoded = base64.b64encode(buffer.getvalue()).decode("ascii")
    return f'<img alt="{escape(alt)}" src="data:image/png;base64,{encoded}">'

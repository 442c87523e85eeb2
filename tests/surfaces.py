"""Each figure as every surface shows it, per project, read back as a person reads it.

A reader finds a figure by the label the registry gives it on that surface (a terminal
table's header, the page's, the spreadsheet's with its unit; a file's column by name), so
a surface that shows a figure under a label of its own is not read and the test fails on
it. Values are compared as shown: a file's number goes through `formatting.show`, the
registry's format of the figure; no data ("-", "–", an empty cell) reads as None.
(Importable from any test directory.)
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pandas as pd
from html_page import Page

from toolkit import analysis, formatting, metrics
from toolkit.reporting.figures import period
from toolkit.reporting.xlsx import heading
from toolkit.store import SnapshotStore

TOTAL = "total"  # the all-projects row, whatever each surface calls it
TOTALS = ("(all projects)", "All projects")
# figure -> project -> the values shown (one per table that shows it)
Readings = dict[str, dict[str, list[str | None]]]


def canonical(name: str) -> str:
    return metrics.ALIASES.get(name, name)


NAMES = [*metrics.FIGURES, *metrics.ALIASES]
BY_LABEL = {metrics.header(name).lower(): canonical(name) for name in NAMES}
BY_HEADING = {heading(name): canonical(name) for name in NAMES}


def shown(text: object) -> str | None:
    """A cell as read: None for no data; a page's share after re-run credits left off."""
    cell = "" if text is None else str(text).strip()
    if cell in ("", "-", "–", "nan", "NaN", "<NA>", "NaT", "None"):
        return None
    return re.sub(r" \(\d+%\)$", "", cell)


def showing(name: str, value: Any) -> str | None:
    """A file's value as the registry shows the figure."""
    if value is None or (not isinstance(value, str) and pd.isna(value)):
        return None
    return shown(formatting.show(name, value))


def _project(cell: str) -> str:
    return TOTAL if cell in TOTALS else cell


def _add(found: Readings, name: str, project: str, value: str | None) -> None:
    found.setdefault(name, {}).setdefault(project, []).append(value)


def terminal(printed: str) -> Readings:
    """Every table the command printed headed by `project`: the figures, the forecast."""
    found: Readings = {}
    lines = printed.splitlines()
    for number, line in enumerate(lines):
        if not line.startswith("project  "):
            continue
        heads = re.split(r"\s{2,}", line.strip())
        for row in lines[number + 1 :]:
            if not row.strip() or row.endswith(":") or not row.startswith(row.lstrip()):
                break
            cells = re.split(r"\s{2,}", row.strip())
            assert len(cells) == len(heads), f"a row the header does not align with: {row!r}"
            for head, cell in zip(heads[1:], cells[1:], strict=True):
                if head.lower() in BY_LABEL:
                    _add(found, BY_LABEL[head.lower()], _project(cells[0]), shown(cell))
    return found


def page(html: str) -> Readings:
    """The weekly page's tables headed by Project (per project) and by Figure (totals)."""
    found: Readings = {}
    heads: list[str] = []
    for row in Page(html).rows:
        if row and row[0] in ("Project", "Figure", "Day"):
            heads = row
            continue
        if not heads or heads[0] == "Day":
            continue
        if heads[0] == "Figure":  # the change table: this period's total of each figure
            if row[0].lower() in BY_LABEL:
                _add(found, BY_LABEL[row[0].lower()], TOTAL, shown(row[1]))
            continue
        for head, cell in zip(heads[1:], row[1:], strict=True):
            if head.lower() in BY_LABEL:
                _add(found, BY_LABEL[head.lower()], _project(row[0]), shown(cell))
    return found


def summary_csv(path: Path) -> Readings:
    found: Readings = {}
    for row in pd.read_csv(path).to_dict("records"):
        for column, value in row.items():
            if column in metrics.FIGURES or column in metrics.ALIASES:
                name = canonical(str(column))
                _add(found, name, _project(str(row["project"])), showing(name, value))
    return found


def figures_json(path: Path) -> Readings:
    found: Readings = {}
    written = json.loads(path.read_text(encoding="utf-8"))
    rows = [*written["projects"], {"project": TOTALS[0], **written["totals"]}]
    for row in rows:
        for key, value in row.items():
            if key in metrics.FIGURES:
                _add(found, key, _project(row["project"]), showing(key, value))
    return found


def xlsx(path: Path) -> Readings:
    """The sheets of a number per project: figures and forecast (a figure's own sheet
    holds its rows, a number per chapter)."""
    found: Readings = {}
    for frame in pd.read_excel(path, sheet_name=["figures", "forecast"]).values():
        if "project" not in frame.columns:
            continue
        for row in frame.to_dict("records"):
            for column, value in row.items():
                if column in BY_HEADING and column != "project":
                    name = BY_HEADING[column]
                    if metrics.FIGURES[name].format == "moment" and not pd.isna(value):
                        value = pd.Timestamp(value).tz_localize("UTC")  # a cell has no zone
                    _add(found, name, _project(str(row["project"])), showing(name, value))
    return found


def from_analysis(store: SnapshotStore) -> Readings:
    """The figures as `tk.analysis` gives them, over the period the report counts."""
    found: Readings = {}
    when = period(store)
    names = store.latest("projects").set_index("project_id")["name"].astype(str)
    since, until = when.since, when.until
    runs = analysis.cycle_times(store, since=since, until=until)
    failures = analysis.failures(store, since=since, until=until)
    spent = analysis.credit_spend(store, freq="1D", by="project_id", since=since, until=until)
    lines = analysis.throughput(store, freq="1D", by="project_id", since=since, until=until)
    outlook = analysis.forecast(store, by="project_id", until=when.end).set_index("project_id")
    per_project = {
        "chapters_finished": runs.groupby("project_id")["chapter_id"].nunique(),
        "runs_failed": failures[failures["kind"] == "failed"].groupby("project_id").size(),
        "runs_stalled": failures[failures["kind"] == "stalled"].groupby("project_id").size(),
        "credits": spent.groupby("project_id")["credits"].sum(),
        "rework_credits": spent.groupby("project_id")["rework_credits"].sum(),
        "lines": lines.groupby("project_id")["lines"].sum(),
        "open_lines": outlook["remaining_lines"],
        "needs_action": outlook["needs_action"],
        "median_cycle_hours": runs.groupby("project_id")["hours"].median(),
    }
    totals = {name: values.sum() for name, values in per_project.items()}
    totals["median_cycle_hours"] = runs["hours"].median() if len(runs) else None
    for name, values in per_project.items():
        counted = metrics.FIGURES[name].format in ("count", "credits")
        for project_id, project in names.items():
            value = values.get(project_id, 0 if counted else None)
            _add(found, name, project, showing(name, value))
        _add(found, name, TOTAL, showing(name, totals[name]))
    review = analysis.review_backlog(store)
    for row in review.to_dict("records"):
        for name in ("needs_review", "oldest_wait_hours", "reviews_per_day"):
            column = "waiting" if name == "needs_review" else name
            _add(found, name, str(row["project"]), showing(name, row[column]))
    return found


def dashboard(dash: Any) -> Readings:
    """The Dashboard's counts, project by project: the filters' and the review line's."""
    found: Readings = {}
    for project_id, project in dash.projects.items():
        dash.picker.value = project_id
        dash.refresh()
        counts = {
            label.rsplit(" (", 1)[0]: label.rsplit(" (", 1)[1].rstrip(")")
            for label, _ in dash.filter.options
        }
        _add(found, "needs_action", project.name, counts["Needs a person"])
        _add(found, "needs_review", project.name, counts["Needs review"])
        line = re.search(r"Review: (\d+|no) chapters? waiting now", dash.review.value)
        if line is not None:
            _add(found, "needs_review", project.name, line.group(1).replace("no", "0"))
    return found


def disagreements(surfaces: dict[str, Readings]) -> list[str]:
    """Where a figure reads differently on two surfaces, is missing from a surface the
    registry says shows it while another shows it, or is shown on one the registry does
    not name."""
    found = []
    for figure in metrics.FIGURES.values():
        readings = {s: r[figure.name] for s, r in surfaces.items() if figure.name in r}
        for surface in surfaces:
            # Missing where another surface shows it (a section with nothing to show
            # leaves its table out everywhere).
            if surface in figure.shown_on and surface not in readings and readings:
                found.append(f"{figure.name}: not on {surface}, which the registry names")
            if surface in readings and surface not in figure.shown_on:
                found.append(f"{figure.name}: on {surface}, which the registry does not name")
        projects = {project for values in readings.values() for project in values}
        for project in sorted(projects):
            seen = {
                surface: values[project]
                for surface, values in readings.items()
                if project in values
            }
            if len({value for values in seen.values() for value in values}) > 1:
                found.append(f"{figure.name} of {project}: {seen}")
    return found

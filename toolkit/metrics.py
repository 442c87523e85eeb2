"""Every figure a person reads, defined once: its label, its unit, how it is shown.

```python
from toolkit import metrics
metrics.FIGURES["open_lines"].words      # "open lines that go on by themselves"
metrics.header("median_cycle_hours")     # "median run time": a column's header anywhere
metrics.label("runs_failed", "19-26 Nov")            # "runs failed, stalls apart, 19-26 Nov"
metrics.label("open_lines", at="26 Nov 12:01 UTC")   # "... at 26 Nov 12:01 UTC"
tk.glossary()                            # name, label, unit, definition: one row a figure
```

The registry is the one place a label is written: the terminal's tables, the CSV files'
headers (which keep the column names, the registry's keys), `figures.json`'s keys, the
weekly page, the plots' titles and axes, the Dashboard and the notebooks' tables
(`toolkit.formatting`) read it, and docs/figures.md's table is generated from it
(`markdown`). A column holding a figure under another name reads the figure's label
(`ALIASES`: the forecast's `remaining_lines` is `open_lines`). Two quantities never
share a label (a test holds it). A duration's label
says "time", not "hours": it shows in minutes under an hour, in hours above
(`toolkit.formatting.show(name, value)` shows a value by its figure's format).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["ALIASES", "FIGURES", "KEYS", "glossary", "header", "label", "markdown", "per"]

# Where a person reads a figure, per project: the report command's terminal tables,
# summary.csv, figures.json, the weekly page, `tk.report(format="xlsx")`'s sheets, the
# `tk.analysis` frames it is computed from, and the Dashboard's counts. A figure shows the
# same number on each surface it names (tests/test_metrics.py reads exactly these).
Surface = Literal[
    "terminal", "summary_csv", "figures_json", "weekly_page", "xlsx", "analysis", "dashboard"
]
SURFACES: tuple[Surface, ...] = (
    "terminal", "summary_csv", "figures_json", "weekly_page", "xlsx", "analysis", "dashboard"
)  # fmt: skip
HEADLINE: tuple[Surface, ...] = SURFACES[:6]  # the period's headline figures: every file
FORECAST: tuple[Surface, ...] = ("terminal", "xlsx")  # the forecast's table and sheet

# How a value reads: `count` and `credits` as whole numbers, `duration` as minutes or
# hours, `share` as a percentage, `pace` to two decimals, `moment` to the minute.
Format = Literal["count", "credits", "duration", "share", "pace", "moment", "text"]


@dataclass(frozen=True)
class Figure:
    """One figure: `name` is its column and key everywhere; `words` its label."""

    name: str
    words: str  # the label, without its period
    unit: str  # what one of it is: "lines", "credits", "hours", "share of runs"...
    format: Format
    definition: str  # one sentence: what it counts
    at_end: bool = False  # a count at a moment ("at <time>"), not over a period
    shown_on: tuple[Surface, ...] = ()  # where it is read per project (`SURFACES`)


def _registry(*figures: Figure) -> dict[str, Figure]:
    return {figure.name: figure for figure in figures}


# fmt: off
FIGURES: dict[str, Figure] = _registry(
    # The headline figures of a period (toolkit/reporting/figures.py).
    Figure("chapters_finished", "chapters finished", "chapters", "count",
           "Chapters with at least one run that finished in the period, each counted once.",
           shown_on=HEADLINE),
    Figure("runs_failed", "runs failed, stalls apart", "runs", "count",
           "Runs that failed in the period, not counting those the service abandoned as "
           "stalled.", shown_on=HEADLINE),
    Figure("runs_stalled", "runs stalled", "runs", "count",
           "Runs the service abandoned in the period because they stopped progressing.",
           shown_on=HEADLINE),
    Figure("credits", "credits spent", "credits", "credits",
           "The rise of every chapter's credits spent over the period.", shown_on=HEADLINE),
    Figure("rework_credits", "credits spent on re-runs", "credits", "credits",
           "The part of the credits spent that paid again for pages already paid for.",
           shown_on=HEADLINE),
    Figure("new_credits", "credits spent on new work", "credits", "credits",
           "The credits spent less the credits spent on re-runs: pages paid for the first time."),
    Figure("lines", "lines translated", "lines", "count",
           "The rise of the lines covered over the period, counted again after a re-scan.",
           shown_on=HEADLINE),
    Figure("open_lines", "open lines that go on by themselves", "lines", "count",
           "Lines untranslated in chapters that will go on without a person (the "
           "forecast's remaining lines).", at_end=True, shown_on=HEADLINE),
    Figure("needs_action", "chapters that need a person", "chapters", "count",
           "Chapters that will not go on without a person: failed, stalled, held "
           "pages or staged never started.", at_end=True, shown_on=(*HEADLINE, "dashboard")),
    Figure("median_cycle_hours", "median run time", "hours", "duration",
           "The median time from start to finish of the runs that finished in the period.",
           shown_on=("terminal", "summary_csv", "weekly_page", "analysis")),
    # The forecast (toolkit.analysis.forecast) and its burn-down.
    Figure("open_chapters", "open chapters that go on by themselves", "chapters", "count",
           "Chapters not yet finished that will go on without a person.",
           at_end=True, shown_on=FORECAST),
    Figure("needs_action_lines", "open lines waiting for a person", "lines", "count",
           "Lines untranslated in chapters that need a person before they go on.",
           at_end=True, shown_on=FORECAST),
    Figure("open_work_lines", "all open lines, those waiting for a person included",
           "lines", "count",
           "Every untranslated line: those that go on by themselves and those "
           "waiting for a person.", at_end=True),
    Figure("needs_action_reason", "why they need a person", "text", "text",
           "What each chapter that needs a person waits for, in words, with how "
           "many chapters.", at_end=True, shown_on=FORECAST),
    Figure("lines_per_hour", "lines translated per hour", "lines per hour", "pace",
           "The project's recent pace.", shown_on=FORECAST),
    Figure("bins", "hours of pace history", "hours", "count",
           "How many hourly bins of history the pace is drawn from.", shown_on=FORECAST),
    Figure("finish_p10", "finish, early (p10)", "time", "moment",
           "The time by which the open work is done in one replay of ten.", shown_on=FORECAST),
    Figure("finish_p50", "finish, likely (p50)", "time", "moment",
           "The time by which the open work is done in half of the replays.", shown_on=FORECAST),
    Figure("finish_p90", "finish, late (p90)", "time", "moment",
           "The time by which the open work is done in nine replays of ten.", shown_on=FORECAST),
    Figure("hours_p50", "time to finish, likely (p50)", "hours", "duration",
           "From the forecast's snapshot to its likely finish.", shown_on=FORECAST),
    Figure("reviewed_p50", "reviewed, likely (p50)", "time", "moment",
           "The likely finish plus the recent review lag.", shown_on=FORECAST),
    Figure("unblocked_p10", "finish if unblocked now, early (p10)", "time", "moment",
           "When the open work and the work waiting for a person would be done, early, were "
           "the waiting work started now.", shown_on=FORECAST),
    Figure("unblocked_p50", "finish if unblocked now, likely (p50)", "time", "moment",
           "When the open work and the work waiting for a person would likely be done, were "
           "the waiting work started now.", shown_on=FORECAST),
    Figure("unblocked_p90", "finish if unblocked now, late (p90)", "time", "moment",
           "When the open work and the work waiting for a person would be done, late, were "
           "the waiting work started now.", shown_on=FORECAST),
    Figure("credits_to_finish", "credits to finish, likely", "credits", "credits",
           "What the work waiting for a person will cost at learned prices (running work "
           "has paid).", shown_on=FORECAST),
    Figure("credits_to_finish_p10", "credits to finish, low (p10)", "credits", "credits",
           "The low end of the credits to finish, from the project's chapter sizes.",
           shown_on=FORECAST),
    Figure("credits_to_finish_p90", "credits to finish, high (p90)", "credits", "credits",
           "The high end of the credits to finish, from the project's chapter sizes.",
           shown_on=FORECAST),
    Figure("band", "how the band was set", "text", "text",
           "Whether the forecast's spread was learned from the project's runs, pooled over "
           "the workspace, calibrated by its own record, or is open (nothing known).",
           shown_on=FORECAST),
    # The forecast's track record (toolkit.analysis.forecast_accuracy).
    Figure("replays", "finishes checked", "finishes", "count",
           "Past forecasts whose work has since finished, so their band can be checked."),
    Figure("inside", "finishes inside the band", "finishes", "count",
           "Finishes checked that fell between the forecast's p10 and p90."),
    Figure("inside_share", "finishes inside the band (share of finishes checked)", "share",
           "share", "Finishes inside the band over the finishes checked."),
    Figure("status", "status", "text", "text", "On track, needs action, or no pace yet.",
           shown_on=FORECAST),
    Figure("as_of", "as of", "time", "moment", "The snapshot the figures are counted at."),
    Figure("as_of_utc", "as of (UTC)", "time", "moment",
           "The snapshot the figures are counted at, in UTC.", shown_on=("terminal",)),
    # Failures (toolkit.analysis.failure_rates) and model comparison.
    Figure("runs", "runs", "runs", "count", "Runs started in the window whose outcome is known."),
    Figure("ended_runs", "runs ended", "runs", "count", "Runs that finished, failed or stalled."),
    Figure("finished", "runs finished", "runs", "count", "Runs that finished."),
    Figure("failure_rate", "failed or stalled (share of runs)", "share of runs", "share",
           "Runs that failed or stalled, over the runs that ended."),
    Figure("stalled_rate", "stalled (share of runs)", "share of runs", "share",
           "Runs that stalled, over the runs that ended."),
    Figure("rework_share", "re-run credits (share of credits)", "share of credits", "share",
           "Credits that paid again for pages already paid for, over all credits.",
           shown_on=("weekly_page",)),
    Figure("lines_to_date", "lines translated to date (running total)", "lines", "count",
           "Every line translated at each snapshot, those before the store's first snapshot "
           "included; a re-scan takes its chapter's away."),
    Figure("cycle_hours", "run time", "hours", "duration",
           "From a run's start to its chapter waiting for review."),
    Figure("mean_cycle_hours", "mean run time", "hours", "duration",
           "The mean time from start to finish of the runs that finished."),
    Figure("longest_cycle_hours", "longest run time", "hours", "duration",
           "The longest time from start to finish of a run that finished."),
    Figure("lead_hours_p50", "time from upload to review, p50", "hours", "duration",
           "Half the chapters went from upload to needs review within this time."),
    Figure("lead_hours_p90", "time from upload to review, p90", "hours", "duration",
           "Nine chapters in ten went from upload to needs review within this time."),
    Figure("chapters", "chapters", "chapters", "count",
           "Chapters in a state at the latest snapshot.", at_end=True),
    Figure("rework_stalled", "re-run credits after stalls", "credits", "credits",
           "Credits that paid again for the pages of runs the service abandoned as stalled.",
           shown_on=("weekly_page",)),
    Figure("rework_failed", "re-run credits after failures", "credits", "credits",
           "Credits that paid again for the pages of runs that failed.", shown_on=("weekly_page",)),
    Figure("rework_rescan", "re-run credits as plain re-scans", "credits", "credits",
           "Credits that paid again for pages re-scanned after a run that finished.",
           shown_on=("weekly_page",)),
    Figure("pages", "pages", "pages", "count", "Pages the runs processed."),
    Figure("languages", "target languages", "languages", "count",
           "How many target languages each chapter is translated into."),
    Figure("credits_per_page_language", "credits per page and language", "credits", "pace",
           "Credits over pages times target languages."),
    Figure("credits_per_chapter_language", "credits per chapter and language", "credits", "pace",
           "Credits over chapters times target languages (a novel has no pages)."),
    Figure("hours_per_page", "run time per page", "hours", "duration",
           "The median of runs' time over their pages."),
    Figure("verdict", "verdict", "text", "text",
           "Which model is better on price, speed and failures, or that the data cannot tell."),
    # Review (toolkit.analysis.review) and the Dashboard's counts.
    Figure("needs_review", "chapters waiting for review", "chapters", "count",
           "Chapters finished and not yet reviewed, counted live.",
           at_end=True, shown_on=("weekly_page", "analysis", "dashboard")),
    Figure("waiting_since", "waiting since", "time", "moment",
           "When the chapter started waiting: its run finished, failed or stalled, or its pages "
           "were held.", shown_on=FORECAST),
    Figure("oldest_wait_hours", "oldest review wait", "hours", "duration",
           "How long the chapter waiting longest for review has waited.",
           shown_on=("weekly_page", "analysis")),
    Figure("reviews_per_day", "reviews per day", "chapters per day", "pace",
           "Chapters reviewed in the period over its days.", shown_on=("weekly_page", "analysis")),
    Figure("review_lag_hours", "review wait", "hours", "duration",
           "From a chapter's finish to its review."),
    Figure("stalled_hours", "time without progress", "hours", "duration",
           "From a running chapter's last progress to the latest snapshot."),
    # Spend this month (toolkit.analysis.monthly_spend) and budgets.
    Figure("this_month", "credits spent this month", "credits", "credits",
           "Credits spent from the month's first day to its last snapshot."),
    Figure("last_month", "credits spent last month", "credits", "credits",
           "Credits spent over the previous month."),
    Figure("change", "change on last month", "credits", "credits",
           "This month's credits spent less last month's."),
    Figure("this_month_rework", "re-run credits this month", "credits", "credits",
           "The part of this month's credits spent on re-runs."),
    Figure("last_month_rework", "re-run credits last month", "credits", "credits",
           "The part of last month's credits spent on re-runs."),
    Figure("spent_today", "spent today", "credits", "credits", "Credits spent since midnight."),
    Figure("spent_this_week", "spent this week", "credits", "credits",
           "Credits spent since Monday's midnight."),
)
# fmt: on

# Other columns holding the same quantity as a figure: they read its label.
ALIASES = {"remaining_lines": "open_lines", "failed": "runs_failed", "stalled": "runs_stalled",
           "stall_rate": "stalled_rate", "waiting": "needs_review"}  # fmt: skip

# Plain column names that need no definition: who and when a row is about.
KEYS = {
    "project_id": "project id", "project": "project", "workspace": "workspace",
    "chapter_id": "chapter id", "chapter": "chapter", "kind": "kind", "model": "model",
    "process_steps": "process steps", "month": "month", "previous_month": "previous month",
    "reason": "reason", "detail": "detail", "since": "since", "position": "position",
    "last_progress_at": "last progress", "scope": "scope", "figure": "figure", "day": "day",
    "covered": "covered", "difference": "change", "time": "time (UTC)", "state": "state",
    "language": "language", "language_code": "language",
    # The agency page (issue 41): which weeks, how many snapshots or projects, a tag.
    "week": "week", "previous_week": "previous week", "snapshots": "snapshots",
    "projects": "projects",
}  # fmt: skip


def header(column: object) -> str:
    """A column's header in words: its registry label, a key's plain name, else the
    column name with spaces (`median_cycle_hours` -> `median run time`)."""
    name = str(column)
    name = ALIASES.get(name, name)
    if name in FIGURES:
        return FIGURES[name].words
    return KEYS.get(name, name.replace("_", " "))


def known(text: str) -> bool:
    """Whether `text` is a label the registry defines, in any case, with what a surface
    may add: an interval (`in each hour`), a unit (`(minutes)`), then a period after a
    comma or a moment after " at ". What the label-scan test asks of every header."""
    return _labelled(text, _ADDED)


def known_title(text: str) -> bool:
    """Whether a plot's title is a label the registry defines, with what a title may add:
    the interval, the part-period mark, the groups (`, by project`), the period (as
    `label` writes it), the moment, how many
    are drawn (`, 22 runs finished`); then, after "; ", what a kind of mark shows, itself a
    label (`hatched: credits spent on re-runs`). What the label scan asks of every title."""
    head, *marks = " ".join(text.split()).split("; ")  # a long title may wrap its marks
    return _labelled(head, _TITLE) and all(
        (mark := _MARK.fullmatch(note)) is not None and known(mark.group(2)) for note in marks
    )


def known_entry(text: str, data: Iterable[str]) -> bool:
    """Whether a legend's entry is one of `data` (a project's name, a language, a state),
    a label with its value (`median run time 3 min`), or a datum then its figures
    (`Seoul Nights: finish, likely (p50) 18 Nov 15:08; chapters that need a person 2`)."""
    names = sorted({str(d) for d in data}, key=len, reverse=True)
    text = " ".join(text.split())  # a long entry may wrap after its datum
    if text in names or known(text):
        return True
    said = next((text[len(n) + 2 :] for n in names if text.startswith(n + ": ")), text)
    return all(_labelled(piece, _VALUE) for piece in said.split("; "))


def _labelled(text: str, added: re.Pattern[str]) -> bool:
    """`text` is a registry label or a key, in any case, then what `added` allows."""
    words = text.strip().lower()
    labels = {f.words.lower() for f in FIGURES.values()} | set(KEYS.values())
    labels |= set(FIGURES) | set(KEYS) | set(ALIASES)
    for label in sorted(labels, key=len, reverse=True):
        if words == label:
            return True
        rest = words.removeprefix(label)
        if rest != words and added.fullmatch(rest):
            return True
    return False


_ADDED = re.compile(r"( in each \w+)?( \([^)]*\))?(, .+| at .+)?")
# A period as `label` writes it (lower-cased): `19-26 nov`, `18 nov 09:01-12:01 utc`,
# `28 dec 2026-3 jan 2027`.
_PERIOD = (
    r"\d{1,2}( [a-z]{3})?( \d{4})?( \d{2}:\d{2})?-\d{1,2}(:\d{2})?( [a-z]{3})?( \d{4})?( [a-z]+)?"
)
_TITLE = re.compile(
    r"( in each \w+)?( \(\* part-\w+\))?(, by [a-z ]+?)?(, " + _PERIOD + r")?( at [^;]+)?"
    r"(, [\d,]+ [a-z ]+)?(, all languages)?"
)
_MARK = re.compile(r"(hatched|dashed|dotted|shaded): (.+)")
# A value after its label: a number with its unit, or a moment to the minute.
_VALUE = re.compile(r" ([\d,.]+ ?[a-z%]*|\d{1,2} [a-z]{3} \d{2}:\d{2})")


def per(name: str, interval: str) -> str:
    """The label of a figure counted in each interval of a plot: `lines translated in
    each hour` (not a running total: that is `lines_to_date`)."""
    return f"{header(name)} in each {interval}"


def label(name: str, period: str | None = None, *, at: str | None = None) -> str:
    """`name`'s label with its period (`runs failed, stalls apart, 19-26 Nov`) or, for a
    count at a moment, that moment (`chapters that need a person at 26 Nov 12:01 UTC`)."""
    figure = FIGURES[ALIASES.get(name, name)]
    if figure.at_end and at is not None:
        return f"{figure.words} at {at}"
    return f"{figure.words}, {period}" if period else figure.words


def glossary() -> pd.DataFrame:
    """Every figure a person reads: `name, label, unit, definition`, one row each; names
    and labels are unique (`tk.glossary()`)."""
    import pandas as pd

    from toolkit.frames.schema import TEXT_DTYPE

    rows = [(f.name, f.words, f.unit, f.definition) for f in FIGURES.values()]
    return pd.DataFrame(rows, columns=["name", "label", "unit", "definition"]).astype(TEXT_DTYPE)


def markdown() -> str:
    """The registry as docs/figures.md's table (generated; a test checks the page)."""
    rows = [
        "| figure | label | unit | shown as | definition | read per project on |",
        "|---|---|---|---|---|---|",
    ]
    for figure in FIGURES.values():
        words = figure.words + (" at (a moment)" if figure.at_end else ", (the period)")
        where = ", ".join(figure.shown_on) or "–"
        rows.append(
            f"| `{figure.name}` | {words} | {figure.unit} | {figure.format} | "
            f"{figure.definition} | {where} |"
        )
    return "\n".join(rows)

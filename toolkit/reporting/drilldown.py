"""The weekly page's drill-down: each headline number links to the rows that make it.

Decision (docs/weekly-report.md, "Opening a number"): the explanations are sections of
the same page, not sibling files, so the page stays one file that can be mailed. Each
figure of the projects' table (every project's cell and the total) and of the change
table's current period links to `#explain-<figure>`, a section that says the figure's
total, how its rows make it (`explanations.HOW`), the rule that counted them, and shows
its largest rows (`SHOWN_ROWS`: a busy week's lines are 100,000 rows); the section names
the `toolkit explain` command that prints or writes every row.
"""

from __future__ import annotations

import shlex
from html import escape
from typing import TYPE_CHECKING, Final

import pandas as pd

from toolkit import metrics
from toolkit.formatting import count, html_table, show
from toolkit.reporting.explanations import HOW, TAKEN, explain, recount
from toolkit.reporting.figures import FIGURES, label
from toolkit.reporting.rework_causes import CAUSES

if TYPE_CHECKING:
    from toolkit.analysis.observed import Observed
    from toolkit.reporting.figures import Period

__all__ = ["LINKED", "anchor", "command", "explained", "link", "section"]

# The figures the page links: the headline figures and the median run time, re-run
# credits by cause and their share, and the review backlog.
LINKED: Final = (*FIGURES, "median_cycle_hours", *(f"rework_{cause}" for cause in CAUSES),
                 "rework_share", "needs_review", "oldest_wait_hours",
                 "reviews_per_day")  # fmt: skip
SHOWN_ROWS: Final = 50


def anchor(name: str) -> str:
    """The id of `name`'s section on the page."""
    return f"explain-{name}"


def link(name: str, text: str) -> str:
    """`text` (already escaped) as a link to `name`'s section."""
    return f'<a href="#{anchor(name)}" title="the rows behind it">{text}</a>'


def explained(obs: Observed, when: Period) -> dict[str, pd.DataFrame]:
    """The rows of each linked figure over the page's period."""
    if not when.has_data:
        return {}
    return {
        name: explain(obs, name, since=when.since, until=when.until, tz=when.tz) for name in LINKED
    }


def command(name: str, when: Period, store: str | None = None) -> str:
    """The `toolkit explain` command for `name` over `when`: every row, as a table."""
    words = ["toolkit", "explain", name]
    if store:
        words += ["--store", store]
    words += ["--since", when.since.isoformat(), "--until", when.until.isoformat()]
    if when.tz != "UTC":
        words += ["--tz", when.tz]
    return shlex.join(words)


def section(rows: dict[str, pd.DataFrame], when: Period, store: str | None = None) -> list[str]:
    """The page's explanations: one anchored section per linked figure."""
    if not rows:
        return ['<p class="nothing">No figure to open: the period has no data.</p>']
    parts = []
    for name, found in rows.items():
        figure = metrics.FIGURES[name]
        total = show(name, recount(found, name)) or "unknown"
        said = f"In {figure.unit}: {total}, from {count(len(found), 'row')}, taken as "
        said += f"{TAKEN[HOW[name]]}."
        title = label(name, when)
        rules = found["rule"].dropna().unique()
        counted = figure.definition if len(rules) != 1 else str(rules[0])
        parts += [
            f'<section id="{anchor(name)}">',
            f"<h3>{escape(title[:1].upper() + title[1:])}</h3>",
            f'<p class="total">{escape(said)} Counted: {escape(counted)}</p>',
        ]
        if len(found):
            parts.append(_rows_table(found, name))
        more = len(found) - min(len(found), SHOWN_ROWS)
        every = f"The {more:,} other rows" if more else "Every row, as a table or CSV"
        parts += [
            f'<p class="note">{every}: <code>{escape(command(name, when, store))}</code>'
            f"{' (add --csv FILE)' if not more else ''}</p>",
            "</section>",
        ]
    return parts


def _rows_table(found: pd.DataFrame, name: str) -> str:
    """The largest rows first (a sum's biggest parts), the rows that count first."""
    # Ordered by the two keys alone, then the rows shown taken (a week's rows behind a
    # figure are some 80,000 at 100,000 chapters, a few dozen of them shown).
    keys = pd.DataFrame({"counts": found["counts"].astype(int), "size": found["value"].abs()})
    keys = keys.reset_index(drop=True)  # by position
    order = keys.sort_values(["counts", "size"], ascending=False, kind="stable").index
    shown = found.iloc[order[:SHOWN_ROWS]][["project", "chapter", "language_code", "source",
                                            "source_id", "at", "detail", "value",
                                            "denominator", "counts"]]  # fmt: skip
    # A ratio's rows hold its parts, not the figure: shown as plain numbers.
    value = "numerator" if HOW[name] == "ratio" else name
    shown = shown.rename(columns={"value": value}).dropna(axis="columns", how="all")
    if shown["counts"].all():
        shown = shown.drop(columns=["counts"])
    return html_table(shown.reset_index(drop=True))

"""Tables whose numbers open the rows that make them: each figure this week, then the
previous week's in grey, each a link to its rows (`agency_drilldown.Drilldown` gives
the anchors). The agency page draws its tables with these, and the figures by a tag
are one table per tag on both the agency page and the weekly page (one rule: the
same groups, the same totals, the same links).

```python
drill = Drilldown(scopes, tags)
tag_sections(tags, agency.by_tag, agency.totals, drill)   # <h2>By client</h2><table>...
```
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import partial
from html import escape
from typing import TYPE_CHECKING, Any, Final

import pandas as pd

from toolkit.analysis.groups import GROUP_KEY, UNKNOWN_GROUP
from toolkit.formatting import whole_or_dash
from toolkit.reporting.figures import FIGURES, header_of
from toolkit.reporting.tags import UNTAGGED, Tags, keys_of

if TYPE_CHECKING:
    from toolkit.reporting.agency_drilldown import Drilldown

__all__ = [
    "NUM",
    "WEEKS_STYLE",
    "Opens",
    "cells_table",
    "figure_cells",
    "linked",
    "tag_heading",
    "tag_sections",
]

NUM: Final = ' class="n"'
# The previous week's number is grey and smaller beside this week's; a number never wraps.
# A service id (a translation group's UUID) may wrap, so its table keeps the page's width.
WEEKS_STYLE: Final = """
span.was { color: #777; font-size: 0.85em; } td.n { white-space: nowrap; }
td span.id { display: inline-block; width: 19ch; white-space: normal; overflow-wrap: anywhere;
              font: 0.8em monospace; }
"""
Opens = Callable[[str, str], "str | None"]  # (figure, week) -> the anchor of its rows
# A tag's figures in one week (`figures` or `previous`): `<key>, projects, FIGURES`.
ByTag = Callable[[str, str], pd.DataFrame]
Totals = Callable[[str], Mapping[str, Any]]  # a week's figures over every project


def linked(text: str, target: str | None, figure: str) -> str:
    """`text` (escaped) as a link to `target`'s rows; a dash or no rows: as it is."""
    if target is None or text == "–":
        return text
    return f'<a href="#{target}" data-figure="{figure}" title="the rows behind it">{text}</a>'


def _cell(figure: str, now: object, before: object, opens: Opens) -> str:
    """This week's number, then the previous week's in grey, each linked to its rows."""
    this_week = linked(whole_or_dash(now), opens(figure, "figures"), figure)
    last_week = linked(whole_or_dash(before), opens(figure, "previous"), figure)
    return f'{this_week}<span class="was"> was {last_week}</span>'


def figure_cells(now: Mapping[Any, Any], before: Mapping[Any, Any], opens: Opens) -> list[str]:
    """A cell per headline figure: this week's number and the previous week's."""
    return [_cell(name, now.get(name), before.get(name), opens) for name in FIGURES]


def cells_table(header: list[str], rows: list[list[str]], total: bool = False) -> str:
    """A table of cells already in HTML; the first column is text, the others numbers;
    with `total` the last row is the total row."""
    head = "".join(f"<th{NUM if i else ''}>{escape(text)}</th>" for i, text in enumerate(header))
    body = []
    for number, row in enumerate(rows):
        css = ' class="total"' if total and number == len(rows) - 1 else ""
        cells = "".join(f"<td{NUM if i else ''}>{c}</td>" for i, c in enumerate(row))
        body.append(f"<tr{css}>{cells}</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def tag_heading(key: str) -> str:
    """The heading of the figures by tag `key`: `<h2>By client</h2>`, in the user's own
    word for a tag of theirs."""
    return f"<h2>By {escape(key.replace('_', ' '))}</h2>"


def tag_sections(tags: Tags, by_tag: ByTag, totals: Totals, drill: Drilldown) -> list[str]:
    """A heading and a table per tag the projects carry: a row per value (in name order,
    `(untagged)` last) with its projects and figures, then `All projects`, the totals,
    which the values add up to. Every number opens its rows (`drill`)."""
    parts = []
    every = figure_cells(totals("figures"), totals("previous"), drill.total)
    for key in keys_of(tags):
        now = by_tag(key, "figures").to_dict("records")
        before = {row[key]: row for row in by_tag(key, "previous").to_dict("records")}
        words = key.replace("_", " ")  # the user's own word for a tag of theirs
        header = [words.capitalize(), header_of("projects"), *(header_of(n) for n in FIGURES)]
        rows = []
        for row in now:
            value = row[key]
            opens: Opens = partial(drill.tag, key=key, value=value)
            shown = escape(str(value))
            if key == GROUP_KEY and value not in (UNTAGGED, UNKNOWN_GROUP):
                shown = f'<span class="id">{shown}</span>'
            rows.append([shown, f"{int(row['projects']):,}",
                         *figure_cells(row, before.get(value, {}), opens)])  # fmt: skip
        rows.append(["All projects", f"{sum(int(row['projects']) for row in now):,}", *every])
        parts += [tag_heading(key), cells_table(header, rows, total=True)]
        if any(row[key] == UNTAGGED for row in now):
            giver = "the service" if key == GROUP_KEY else "the config"
            parts.append(f'<p class="note">{UNTAGGED}: projects {giver} gives no {escape(words)}'
                         ".</p>")  # fmt: skip
    return parts

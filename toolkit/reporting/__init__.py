"""Reports: the headline figures of a period, the PNG report folder, the weekly page.

The parts: `figures` (the figures of a period, defined and computed once; every surface
reads them there), `explanations` (the rows behind each figure: `tk.explain`; `recount`
remakes a figure from them, as `HOW` says), `explained_inputs`, `explained_rates` and
`explained_counts` (the rows of the other figures), `rework_causes` (re-run credits put
down to a cause, for the page and for explain), `drilldown` (the weekly page's links to
them), `summary` (PNG plots, `summary.csv`, `figures.json`: `toolkit report`),
`weekly` (what the page shows beyond the figures), `page` (the week as HTML), `html`
(`tk.report`), `xlsx` (the spreadsheet), `tags` (figures and explanations by a tag of
the projects) and `agency_page` (every workspace of a config on one page).
"""

from __future__ import annotations

from toolkit.reporting.agency_page import gather_agency, write_agency_page
from toolkit.reporting.explanations import HOW, TAKEN, explain, recount
from toolkit.reporting.figures import Figures, Period, label, period, spend
from toolkit.reporting.html import report
from toolkit.reporting.summary import PLOTS, summary, write_report
from toolkit.reporting.tags import by_tag, check_tag, explained_by_tag, tagged, with_groups

__all__ = [
    "HOW",
    "PLOTS",
    "TAKEN",
    "Figures",
    "Period",
    "by_tag",
    "check_tag",
    "explain",
    "explained_by_tag",
    "gather_agency",
    "label",
    "period",
    "recount",
    "report",
    "spend",
    "summary",
    "tagged",
    "with_groups",
    "write_agency_page",
    "write_report",
]

"""Reports: the headline figures of a period, the PNG report folder, the weekly page.

The parts: `figures` (the figures of a period, defined and computed once; every surface
reads them there), `explanations` (the rows behind each figure: `tk.explain`), `summary`
(PNG plots, `summary.csv`, `figures.json`: `toolkit report`), `weekly` (what the page
shows beyond the figures), `page` (the week as HTML) and `html` (`tk.report`).
"""

from __future__ import annotations

from toolkit.reporting.explanations import explain
from toolkit.reporting.figures import Figures, Period, label, period, spend
from toolkit.reporting.html import report
from toolkit.reporting.summary import PLOTS, summary, write_report

__all__ = [
    "PLOTS",
    "Figures",
    "Period",
    "explain",
    "label",
    "period",
    "report",
    "spend",
    "summary",
    "write_report",
]

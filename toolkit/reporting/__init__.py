"""Reports: the PNG plots with a summary table, and the weekly HTML page.

The parts: `summary` (PNG plots and the summary table, `toolkit report`), `weekly` (the
figures of a week, gathered once), `page` (the week as HTML) and `html` (`tk.report`).
"""

from __future__ import annotations

from toolkit.reporting.html import report
from toolkit.reporting.summary import PLOTS, summary, write_report

__all__ = ["PLOTS", "report", "summary", "write_report"]

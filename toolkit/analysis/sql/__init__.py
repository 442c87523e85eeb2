"""The run figures as SQL: the readable definition of the runs, the credits they were
charged, the credits spent (and the part of them that was rework), the lines translated
and the cycle times, and the query an engine other than the toolkit runs on the store.

- `runs_sql` is the runs worked out entirely in SQL from the store's change logs (one
  query, a CTE per rule, `runs.py`); `figure_sql(name)` is a figure's query: the runs
  with the figure's last step (`REFERENCES`, one per name of `FIGURES`: `runs`,
  `cycle_times`, `failures`, `lead_times`, `credit_spend` with its `rework_credits`,
  `throughput`'s lines). The numpy path the toolkit computes with is checked equal to
  them, frame for frame (tests/analysis/test_reference_runs.py).
- `views_sql` defines what the queries read over the store's Delta tables, `script` is
  the whole text for DuckDB's `delta` extension (a folder or `s3://`), and
  `run_figure` runs it here with DuckDB (`toolkit sql FIGURE`).

The SQL is DuckDB's (docs/store.md, "Where one machine ends", says what another engine
needs).
"""

from __future__ import annotations

from toolkit.analysis.sql.engines import (
    FIGURES,
    has_events,
    has_exports,
    run_figure,
    script,
    views_sql,
)
from toolkit.analysis.sql.runs import (
    ASKED_WITH,
    REFERENCES,
    figure_frame,
    figure_sql,
    reference_runs,
    runs_sql,
)

__all__ = [
    "ASKED_WITH",
    "FIGURES",
    "REFERENCES",
    "figure_frame",
    "figure_sql",
    "has_events",
    "has_exports",
    "reference_runs",
    "run_figure",
    "runs_sql",
    "script",
    "views_sql",
]

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
- On Spark (`spark.py`): the same text rendered in Spark SQL and cut into steps
  (`spark_steps`), `run_figures_spark` running them on a `SparkSession` and
  `spark_script` writing them for `spark-sql -f` (`toolkit sql FIGURE --engine spark`).

The SQL is written in DuckDB's dialect (docs/store.md, "The run figures on Spark", says
what Spark needs of it).
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
from toolkit.analysis.sql.spark import SETTINGS as SPARK_SETTINGS
from toolkit.analysis.sql.spark import (
    run_figure_spark,
    run_figures_spark,
    spark_script,
    spark_steps,
    toolkit_uri,
)

__all__ = [
    "ASKED_WITH",
    "FIGURES",
    "REFERENCES",
    "SPARK_SETTINGS",
    "figure_frame",
    "figure_sql",
    "has_events",
    "has_exports",
    "reference_runs",
    "run_figure",
    "run_figure_spark",
    "run_figures_spark",
    "runs_sql",
    "script",
    "spark_script",
    "spark_steps",
    "toolkit_uri",
    "views_sql",
]

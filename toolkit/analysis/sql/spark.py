"""The run figures on Spark: DuckDB's text (`runs.py`) rendered in Spark's dialect, so
the definition stays written once, and run as materialized steps.

Spark's analyzer does not finish the runs as one query of some forty CTEs: each CTE a
later one reads twice is inlined twice, and the plan it walks doubles with each such
step (docs/store.md, "The run figures on Spark"). So the query is handed over as steps
(`spark_steps`): each CTE a view of its own, materialized before the next reads it, so
the analyzer sees one step's plan at a time. `run_figure_spark` runs them on a
`SparkSession` (each step `localCheckpoint`ed); `spark_script` writes them for
`spark-sql -f` (each step a Parquet table of a scratch database).

The rendering is `dialect.py`'s. Spark needs `WITH RECURSIVE` (the held pages' walk),
ANSI mode off (a division by zero is null there, as in DuckDB), quoted regex column
names (`* EXCLUDE` becomes a regex of the columns left out) and a session in UTC:
`SETTINGS`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from deltalake import DeltaTable

from toolkit.analysis.sql.dialect import cte_steps, to_spark
from toolkit.analysis.sql.engines import (
    FIGURES,
    SNAPSHOT_TABLES,
    figure_known,
    has_exports,
    read_first,
    script_tables,
    views_sql,
)
from toolkit.analysis.sql.runs import figure_frame, figure_sql
from toolkit.store.columns import stored_schema

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    import pandas as pd
    from pyspark.sql import DataFrame, SparkSession

__all__ = [
    "SETTINGS",
    "register_tables",
    "run_figure_spark",
    "run_figures_spark",
    "spark_script",
    "spark_steps",
    "spark_views_sql",
    "toolkit_uri",
]

SETTINGS = {
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.ansi.enabled": "false",
    "spark.sql.parser.quotedRegexColumnNames": "true",
    # Each chapter's k-th rise is one step of the walk: a long history has many.
    "spark.sql.cteRecursionLevelLimit": "10000",
    # A checkpointed step keeps the constraints of the plan it came from, and Spark 4.3
    # fails on them under a UNION of two such steps (`key not found: idx#...` in
    # `rewriteConstraints`; the lines of `throughput`). The steps need no inferred filter.
    "spark.sql.constraintPropagation.enabled": "false",
}
"""The session settings the steps need (`spark-sql --conf`, or `SET` in the script)."""


def spark_views_sql(*, events: bool) -> list[str]:
    """`engines.views_sql` in Spark's dialect: the names the steps read, over the
    tables `manifest`, `projects`, `chapters`, `languages`, `exports` (and `events`)."""
    return [to_spark(view) for view in views_sql(events=events)]


def spark_steps(figure: str, *, events: bool) -> list[tuple[str, str]]:
    """`figure`'s query as steps, in order: each a view's name and its `SELECT` (a
    recursive CTE's with its own `WITH RECURSIVE`), then `("", the figure's SELECT)`."""
    figure_known(figure)
    steps = cte_steps(to_spark(figure_sql(figure, events=events)))
    return [(name or "", select) for name, select in steps]


def spark_script(
    figure: str, root: str, *, events: bool, exports: bool = True, database: str = "toolkit_steps"
) -> str:
    """The whole Spark SQL script for `figure` over the store at `root` (a folder, or a
    URI Spark's file system reads: `s3a://`), its tables read with the Delta Lake
    package (`delta.`<root>/<table>``): for `spark-sql -f`, its last statement the
    figure. Each step is written as a Parquet table of `database` (made if missing;
    each run replaces its tables), which the next step reads. `events`, `exports`: as
    `engines.script`. Times in the result are microseconds since the epoch."""
    figure_known(figure)
    base = root.rstrip("/").replace("`", "``")
    lines = [f"-- {figure}, as toolkit.analysis.sql defines it, over the store {root}"]
    lines += [f"SET {key}={value};" for key, value in SETTINGS.items()]
    tables = script_tables(events=events, exports=exports)
    if not exports:
        lines.append(_NO_EXPORTS)
    lines += [
        f"CREATE OR REPLACE TEMP VIEW {name} AS SELECT * FROM delta.`{base}/{name}`;"
        for name in tables
    ]
    statements = spark_views_sql(events=events)
    # Spark SQL has no checkpoint, and a CACHE TABLE keeps the plan of the views it
    # reads: a step's plan would hold every step before it again. A table does not.
    statements += [f"CREATE DATABASE IF NOT EXISTS {database}", f"USE {database}"]
    for name, select in spark_steps(figure, events=events):
        if name:
            statements.append(f"DROP TABLE IF EXISTS {name}")
            statements.append(f"CREATE TABLE {name} USING parquet AS\n{select}")
        else:
            statements.append(select)
    return "\n".join(lines) + "\n\n" + ";\n\n".join(statements) + ";\n"


# A store where no file was ever prepared has no exports table yet: the columns the
# queries read, no rows (`engines._NO_EXPORTS` in Spark's words).
_NO_EXPORTS = (
    "CREATE OR REPLACE TEMP VIEW exports AS SELECT CAST(NULL AS STRING) AS chapter_id, "
    "CAST(NULL AS BIGINT) AS page_count, CAST(NULL AS TIMESTAMP) AS prepared_at, "
    "CAST(NULL AS STRING) AS snapshot_id, CAST(NULL AS BOOLEAN) AS _deleted WHERE false;"
)


def run_figure_spark(
    spark: SparkSession,
    figure: str,
    root: str,
    *,
    read: Literal["auto", "delta", "files"] = "auto",
    storage_options: Mapping[str, str] | None = None,
) -> pd.DataFrame:
    """`figure` worked out by Spark from the store's Delta tables alone
    (`run_figures_spark` with one figure)."""
    found = run_figures_spark(spark, root, [figure], read=read, storage_options=storage_options)
    return found[figure]


def run_figures_spark(
    spark: SparkSession,
    root: str,
    figures: Sequence[str] = FIGURES,
    *,
    read: Literal["auto", "delta", "files"] = "auto",
    storage_options: Mapping[str, str] | None = None,
) -> dict[str, pd.DataFrame]:
    """`figures` worked out by Spark from the store's Delta tables alone, each the frame
    the toolkit function of that name gives (`FIGURES`; the periods of `credit_spend`
    and `throughput` are days). Each step is materialized (`localCheckpoint`) before
    the next; the steps the figures share (the runs) are worked out once. `read`,
    `storage_options`: as `register_tables`."""
    for figure in figures:
        figure_known(figure)
    events = register_tables(spark, root, read=read, storage_options=storage_options)
    for view in spark_views_sql(events=events):
        spark.sql(view)
    steps = {figure: spark_steps(figure, events=events) for figure in figures}
    shared = _shared(list(steps.values()))
    _materialize(spark, shared)
    found = {}
    for figure, own in steps.items():
        last = _materialize(spark, own[len(shared) :])
        assert last is not None  # a figure's steps end with its own SELECT
        found[figure] = figure_frame(last.toArrow())
    return found


def register_tables(
    spark: SparkSession,
    root: str,
    *,
    read: Literal["auto", "delta", "files"] = "auto",
    storage_options: Mapping[str, str] | None = None,
) -> bool:
    """The store's tables as temporary views of `spark` under their names (`manifest`,
    the four snapshot tables and, where it holds terminal events, `events`: what the
    views of `spark_views_sql` read), the settings of `SETTINGS` set; whether the store
    holds terminal events (`events=` of the other functions).

    `read="delta"` reads each table with the Delta Lake package
    (`spark.read.format("delta")`); `read="files"` reads the Parquet files the table's
    log lists (the log read here, by `deltalake`), for a session without the package:
    the same rows, as the store's tables use no deletion vectors, no column mapping and
    no partitions. `"auto"`: the package where the session is configured for it
    (`spark.sql.extensions` names Delta), else the files. `root` may be `s3a://`, as
    open-source Spark reads S3; the toolkit reads it as `s3://` with `storage_options`."""
    root = str(root).rstrip("/")
    here = toolkit_uri(root)
    options = dict(storage_options or {})
    events = read_first(here, options, shown=root)
    for key, value in SETTINGS.items():
        spark.conf.set(key, value)
    if read == "auto":
        with_delta = "delta" in str(spark.conf.get("spark.sql.extensions", "")).lower()
        read = "delta" if with_delta else "files"
    for name in ["manifest", *SNAPSHOT_TABLES, *(["events"] if events else [])]:
        if name == "exports" and not has_exports(here, options):
            frame = spark.createDataFrame(stored_schema(name).empty_table().to_pandas())
        elif read == "delta":
            frame = spark.read.format("delta").load(f"{root}/{name}")
        else:
            files = DeltaTable(f"{here}/{name}", storage_options=options).file_uris()
            spelled = [root + uri[len(here) :] if uri.startswith(here) else uri for uri in files]
            frame = spark.read.parquet(*spelled)
        frame.createOrReplaceTempView(name)
    return events


def toolkit_uri(root: str) -> str:
    """`root` as the toolkit (delta-rs) reads it: open-source Spark reads S3 as `s3a://`,
    the toolkit as `s3://`."""
    return f"s3://{root.removeprefix('s3a://')}" if root.startswith("s3a://") else root


def _shared(step_lists: list[list[tuple[str, str]]]) -> list[tuple[str, str]]:
    """The steps every list starts with (the figure's own SELECT never among them)."""
    shared = []
    for steps in zip(*step_lists, strict=False):
        if any(step != steps[0] for step in steps) or not steps[0][0]:
            break
        shared.append(steps[0])
    return shared


def _materialize(spark: SparkSession, steps: list[tuple[str, str]]) -> DataFrame | None:
    """Each step worked out and kept before the next reads it; the last one's frame."""
    frame = None
    for name, select in steps:
        frame = spark.sql(select).localCheckpoint()
        if name:
            frame.createOrReplaceTempView(name)
    return frame

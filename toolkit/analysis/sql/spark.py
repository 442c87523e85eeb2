"""The run figures on Spark: DuckDB's text (`runs.py`) rendered in Spark's dialect, so
the definition stays written once, and run as materialized steps.

Spark's analyzer does not finish the runs as one query of some forty CTEs: each CTE a
later one reads twice is inlined twice, and the plan it walks doubles with each such
step (docs/store.md, "The run figures on Spark"). So the query is handed over as steps
(`spark_steps`): each CTE a view of its own, materialized before the next reads it, so
the analyzer sees one step's plan at a time. `run_figure_spark` runs them on a
`SparkSession` (each step `localCheckpoint`ed); `spark_script` writes them for
`spark-sql -f` (each step a Parquet table of a scratch database).

Each rewrite spells one DuckDB-only construct Spark's way; the few that are one place's
shape (the runs of a row taken apart, the events before a run's window, the count of
`lead_times`, the first copy of each delivery) are replaced whole, and a text that no
longer has the shape a rewrite expects is refused rather than rendered half
(`SparkRenderError`), so a change to the DuckDB text that needs a new rewrite fails the
test, not a user's cluster.

Spark needs `WITH RECURSIVE` (the held pages' walk), ANSI mode off (a division by zero is
null there, as in DuckDB), quoted regex column names (`* EXCLUDE` becomes a regex of the
columns left out) and a session in UTC: `SETTINGS`.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Literal

from deltalake import DeltaTable

from toolkit.analysis.sql.engines import (
    FIGURES,
    SNAPSHOT_TABLES,
    figure_known,
    has_events,
    has_exports,
    views_sql,
)
from toolkit.analysis.sql.runs import figure_frame, figure_sql
from toolkit.errors import QueryError, ToolkitError
from toolkit.store import SnapshotStore
from toolkit.store.columns import stored_schema

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    import pandas as pd
    from pyspark.sql import DataFrame, SparkSession

__all__ = [
    "SETTINGS",
    "SparkRenderError",
    "register_tables",
    "run_figure_spark",
    "run_figures_spark",
    "spark_script",
    "spark_steps",
    "spark_views_sql",
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


class SparkRenderError(QueryError):
    """The DuckDB text lacks a shape a rewrite expects: the rewrite needs updating."""


def spark_views_sql(*, events: bool) -> list[str]:
    """`engines.views_sql` in Spark's dialect: the names the steps read, over the
    tables `manifest`, `projects`, `chapters`, `languages`, `exports` (and `events`)."""
    return [_render(view) for view in views_sql(events=events)]


def spark_steps(figure: str, *, events: bool) -> list[tuple[str, str]]:
    """`figure`'s query as steps, in order: each a view's name and its `SELECT` (a
    recursive CTE's with its own `WITH RECURSIVE`), then `("", the figure's SELECT)`."""
    figure_known(figure)
    steps = _steps(_render(figure_sql(figure, events=events)))
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
    tables = ["manifest", *SNAPSHOT_TABLES, *(["events"] if events else [])]
    if not exports:
        tables.remove("exports")
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
    here = f"s3://{root.removeprefix('s3a://')}" if root.startswith("s3a://") else root
    options = dict(storage_options or {})
    # The toolkit's own read first, as `engines.run_figure`: an old layout or a damaged
    # store is refused in words that say what to do.
    if SnapshotStore(here, storage_options=options).snapshots().empty:
        raise ToolkitError(
            f"the store {root} holds no snapshot yet: take one with "
            f"`toolkit snapshot --store {here}`, then ask again"
        )
    events = has_events(here, options)
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


def _render(text: str) -> str:
    """DuckDB's text in Spark's dialect, its comments left out."""
    text = re.sub(r"--[^\n]*", "", text)
    for old, new in _WHOLE.items():
        if old in text:
            text = text.replace(old, new)
    for pattern, replacement in _REWRITES:
        text = re.sub(pattern, replacement, text)
    text = _windows(text)
    text = _star_replace(text)
    text = _star_exclude(text)
    text = _literals(text)
    left = [word for word in _DUCKDB_ONLY if re.search(word, text)]
    if left:
        raise SparkRenderError(f"the Spark text still has DuckDB's {', '.join(left)}")
    return text


def _steps(text: str) -> list[tuple[str | None, str]]:
    """The CTEs of `text` as (name, SELECT), in order, those of a CTE that has its own
    `WITH` before it, then (None, the last SELECT)."""
    text = text.strip()
    opening = re.match(r"WITH(\s+RECURSIVE)?\s+", text)
    if opening is None:
        return [(None, text)]
    steps: list[tuple[str | None, str]] = []
    rest = text[opening.end() :]
    while (cte := re.match(r"(\w+)\s+AS\s+\(", rest)) is not None:
        name = cte.group(1)
        close = _closing(rest, cte.end() - 1)
        *inner, (_, select) = _steps(rest[cte.end() : close])
        steps += inner
        if re.search(rf"\b{name}\b", select):  # a recursive CTE: a step of its own
            select = f"WITH RECURSIVE {name} AS ({select})\nSELECT * FROM {name}"
        steps.append((name, select.strip()))
        rest = rest[close + 1 :].lstrip().removeprefix(",").lstrip()
    return [*steps, (None, rest)]


def _whole(old: str, new: str) -> tuple[str, str]:
    return old, new


# Shapes replaced whole, each in one place of the DuckDB text.
_WHOLE = dict(
    [
        # The rows read for their files alone have no next row: Spark's UNION is by
        # position, so the columns the other side has are spelled null.
        _whole(
            """    UNION ALL BY NAME
    SELECT chapter_id, idx, segment, known, first, added, rest, cleared, may_retry,
           pages_before, started_before, exported, files_only,
           CASE WHEN started_before THEN greatest(pages_before - known - first, 0) ELSE 0
           END AS held_alone
    FROM m_read WHERE files_only""",
            """    UNION ALL
    SELECT chapter_id, idx, segment, known, first, added, rest, cleared, may_retry,
           pages_before, started_before, exported, files_only,
           CASE WHEN started_before THEN greatest(pages_before - known - first, 0) ELSE 0
           END AS held_alone,
           NULL AS next_segment, NULL AS next_known, NULL AS next_first,
           NULL AS next_added, NULL AS next_rest, NULL AS next_pages_before,
           NULL AS next_started_before, NULL AS next_cleared
    FROM m_read WHERE files_only""",
        ),
        # The first copy of each delivery (Spark has no QUALIFY).
        _whole(
            """FROM (SELECT * FROM events
      QUALIFY row_number() OVER (PARTITION BY webhook_id ORDER BY received_at, "timestamp") = 1)""",
            """FROM (SELECT * FROM (SELECT *, row_number() OVER (
                         PARTITION BY webhook_id ORDER BY received_at, `timestamp`) AS copy_
                     FROM events) WHERE copy_ = 1)""",
        ),
        # A row's runs, one per slot and ordinal: explode twice.
        _whole(
            """SELECT * EXCLUDE (x, runs_of_row),
           x.from + unnest(range(x.n)) AS ordinal, x.slot AS slot, x.pages AS run_pages
    FROM (SELECT *, unnest(runs_of_row) AS x FROM row_ends)""",
            """SELECT `(x|runs_of_row|k_)?+.+`,
           x.from_ + k_ AS ordinal, x.slot AS slot, x.pages AS run_pages
    FROM (SELECT *, explode(runs_of_row) AS x FROM row_ends)
    LATERAL VIEW explode(sequence(0, greatest(x.n, 1) - 1)) AS k_
    WHERE k_ < x.n""",
        ),
        # The events before a run's window: the latest number at or before its start.
        _whole(
            """FROM (SELECT w.chapter_id, w.idx, w.ordinal, w.window_high,
                 coalesce(b.n, 0) + w.skip + 1 AS wanted
          FROM windows w ASOF LEFT JOIN numbered_events b
            ON b.chapter_id = w.chapter_id AND w.window_low >= b.at_us) w""",
            """FROM (SELECT w.chapter_id, w.idx, w.ordinal, w.window_high,
                 coalesce(max(b.n), 0) + w.skip + 1 AS wanted
          FROM windows w LEFT JOIN numbered_events b
            ON b.chapter_id = w.chapter_id AND w.window_low >= b.at_us
          GROUP BY w.chapter_id, w.idx, w.ordinal, w.window_high, w.skip) w""",
        ),
        # `lead_times`: a chapter's runs up to its first finish, counted in the list.
        _whole(
            """                   list(struct_pack(started_at, outcome)) AS all_runs
            FROM runs GROUP BY chapter_id HAVING count(*) FILTER (kind = 'first') > 0
        ), LATERAL (
            SELECT count(*) AS runs,
                   count(*) FILTER (x.outcome IN ('failed', 'stalled')) AS failed_runs
            FROM (SELECT unnest(all_runs) AS x) WHERE x.started_at <= reviewable_at
        )""",
            """                   collect_list(struct(started_at, outcome)) AS all_runs
            FROM runs GROUP BY chapter_id HAVING count(*) FILTER (WHERE kind = 'first') > 0
        ) LATERAL VIEW inline(array(struct(
            size(filter(all_runs, x -> x.started_at <= reviewable_at)),
            size(filter(all_runs, x -> x.started_at <= reviewable_at
                                    AND x.outcome IN ('failed', 'stalled')))
        ))) counted AS runs, failed_runs""",
        ),
    ]
)

_FAR = "9223372036854775807"
_REWRITES: list[tuple[str, str]] = [
    (r"::VARCHAR\b", "::STRING"),
    (r"\bround_even\(", "bround("),
    (r"\bepoch_us\(", "unix_micros("),
    (r"\bjson_extract_string\(", "get_json_object("),
    (r'"timestamp"', "`timestamp`"),
    (r"\bmake_timestamp\(", "timestamp_micros("),
    (r"\bregexp_matches\(([^,()]+(?:\.[^,()]+)?), '([^']*)'\)", r"(\1 RLIKE r'\2')"),
    (rf", \((coalesce\(started_at, {_FAR}\)), number\)\)", r", struct(\1, number))"),
    (r"\barg_max_null\(", "max_by("),
    (r"\barg_max\(", "max_by("),
    (r"\bfirst\((\w+) ORDER BY n DESC, price\)", r"min_by(\1, struct(-n, price))"),
    (
        r"\bfirst\(([^()]*(?:\([^()]*\))?[^()]*) ORDER BY started_at NULLS LAST\)",
        rf"min_by(\1, coalesce(started_at, {_FAR}))",
    ),
    (r"FILTER \((?!WHERE)", "FILTER (WHERE "),
    (r"\blen\(", "size("),
    (r"\b(\w+)\[1\]", r"element_at(\1, 1)"),
    (r"\b(\w+)\[-1\]", r"element_at(\1, -1)"),
    (r"\[('[^\]]+')\]\[([^\]]+)\]", r"element_at(array(\1), \2)"),
    (r"AS MATERIALIZED \(", "AS ("),
    (r"(\w+) IS NOT false", r"coalesce(\1, true)"),
    (r"'from': ", "'from_': "),
]

# What no rewrite may leave behind.
_DUCKDB_ONLY = (
    r"\bEXCLUDE\b",
    r"\bREPLACE \(",
    r"\bunnest\(",
    r"\bASOF\b",
    r"\blist_sum\(",
    r"\bstruct_pack\(",
    r"\bround_even\(",
    r"\bepoch_us\(",
    r"\bQUALIFY\b",
    r"\bBY NAME\b",
    r"\bjson_extract_string\(",
    r"\bregexp_matches\(",
    r"\barg_max",
    r"\bMATERIALIZED\b",
    r"\{'",
    r"OVER \(\s*\w+\s+ROWS",
    r"\bWINDOW \w+ AS",
)


def _closing(text: str, start: int) -> int:
    """The index of the bracket closing the one at `start`."""
    pairs = {"(": ")", "[": "]", "{": "}"}
    stack = [pairs[text[start]]]
    i = start + 1
    quoted = False
    while stack:
        c = text[i]
        if c == "'":
            quoted = not quoted
        elif not quoted and c in pairs:
            stack.append(pairs[c])
        elif not quoted and c == stack[-1]:
            stack.pop()
        i += 1
    return i - 1


def _split_top(text: str, sep: str = ",") -> list[str]:
    """`text` split at the separators outside brackets and quotes."""
    parts, depth, quoted, current = [], 0, False, ""
    for c in text:
        if c == "'":
            quoted = not quoted
        elif not quoted and c in "([{":
            depth += 1
        elif not quoted and c in ")]}":
            depth -= 1
        if c == sep and depth == 0 and not quoted:
            parts.append(current)
            current = ""
        else:
            current += c
    parts.append(current)
    return parts


def _windows(text: str) -> str:
    """Named windows written out where they are used (Spark refines none: `OVER (w
    ROWS ...)`); each `WINDOW name AS (...)` serves the text since the one before."""
    done, rest = "", text
    clause = re.compile(r"\s+WINDOW (\w+) AS \(")
    while (found := clause.search(rest)) is not None:
        name = found.group(1)
        close = _closing(rest, found.end() - 1)
        spec = rest[found.end() : close]
        before = rest[: found.start()]
        before = re.sub(rf"OVER \(\s*{name}\s", f"OVER ({spec} ", before)
        before = re.sub(rf"OVER \(\s*{name}\)", f"OVER ({spec})", before)
        before = re.sub(rf"OVER {name}\b", f"OVER ({spec})", before)
        done += before
        rest = rest[close + 1 :]
    return done + rest


def _star_replace(text: str) -> str:
    """`SELECT * REPLACE (e AS a, ...)`: every other column, then the new ones."""
    while (at := text.find("SELECT * REPLACE (")) >= 0:
        open_ = at + len("SELECT * REPLACE ")
        close = _closing(text, open_)
        items = _split_top(text[open_ + 1 : close])
        names = [item.strip().rsplit(" AS ", 1)[1].strip() for item in items]
        columns = ",".join(item.strip() for item in items)
        text = f"{text[:at]}SELECT `({'|'.join(names)})?+.+`, {columns}{text[close + 1 :]}"
    return text


def _star_exclude(text: str) -> str:
    """`t.* EXCLUDE (a, b)`: a regex of every other column (`quotedRegexColumnNames`)."""
    pattern = re.compile(r"(\b\w+\.)?\* EXCLUDE \(")
    while (found := pattern.search(text)) is not None:
        close = _closing(text, found.end() - 1)
        names = [name.strip() for name in text[found.end() : close].split(",")]
        prefix = found.group(1) or ""
        text = f"{text[: found.start()]}{prefix}`({'|'.join(names)})?+.+`{text[close + 1 :]}"
    return text


def _literals(text: str) -> str:
    """DuckDB's struct and list literals and list comprehensions, in Spark's functions."""
    summed = re.compile(r"list_sum\(\[")
    while (found := summed.search(text)) is not None:
        close = _closing(text, found.end() - 1)
        body, _, source = text[found.end() : close].rpartition(" FOR ")
        variable, _, listed = source.partition(" IN ")
        end = close + 1  # the list's `]`, then the call's `)`
        text = (
            f"{text[: found.start()]}aggregate(transform({listed.strip()}, "
            f"{variable.strip()} -> {body.strip()}), CAST(0 AS DOUBLE), (a_, b_) -> a_ + b_)"
            f"{text[end + 1 :]}"
        )
    while (at := text.find("{'")) >= 0:
        close = _closing(text, at)
        fields = []
        for item in _split_top(text[at + 1 : close]):
            key, _, value = item.partition(":")
            fields.append(f"{key.strip()}, {value.strip()}")
        text = f"{text[:at]}named_struct({', '.join(fields)}){text[close + 1 :]}"
    lists = re.compile(r"\[\s*named_struct\(")
    while (found := lists.search(text)) is not None:
        close = _closing(text, found.start())
        inner = text[found.start() + 1 : close]
        text = f"{text[: found.start()]}array({inner.strip()}){text[close + 1 :]}"
    return text.replace("x.from ", "x.from_ ")

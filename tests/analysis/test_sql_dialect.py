"""`toolkit.analysis.sql.dialect`: DuckDB's text in Spark's dialect, refused where a
rewrite no longer fits, and a query cut into the steps Spark is handed (run on Spark in
tests/analysis/test_reference_runs.py where pyspark is installed)."""

from __future__ import annotations

import pytest

from toolkit.analysis.sql import FIGURES, spark_steps
from toolkit.analysis.sql.dialect import cte_steps, to_spark
from toolkit.errors import QueryError


def test_a_duckdb_construct_no_rewrite_knows_is_refused_not_rendered_half():
    # An `ASOF` join of another shape than the events' one: no rewrite fits it.
    with pytest.raises(QueryError, match=r"still has DuckDB's .*ASOF"):
        to_spark("SELECT * FROM a ASOF JOIN b ON a.t >= b.t")
    assert to_spark("SELECT round_even(x, 0), epoch_us(t) FROM a") == (
        "SELECT bround(x, 0), unix_micros(t) FROM a"
    )


def test_a_query_is_cut_into_its_ctes_the_recursive_one_whole():
    text = """WITH RECURSIVE a AS (SELECT 1 AS n),
    walk AS (SELECT n FROM a UNION ALL SELECT n + 1 FROM walk WHERE n < 3),
    b AS (WITH c AS (SELECT n FROM walk) SELECT n FROM c)
    SELECT n FROM b"""
    assert cte_steps(text) == [
        ("a", "SELECT 1 AS n"),
        ("walk", "WITH RECURSIVE walk AS (SELECT n FROM a UNION ALL SELECT n + 1 FROM walk "
                 "WHERE n < 3)\nSELECT * FROM walk"),
        ("c", "SELECT n FROM walk"),
        ("b", "SELECT n FROM c"),
        (None, "SELECT n FROM b"),
    ]  # fmt: skip


@pytest.mark.parametrize("events", [False, True])
def test_every_figure_renders_into_steps_that_end_with_its_own_select(events):
    for figure in FIGURES:
        steps = spark_steps(figure, events=events)
        names = [name for name, _ in steps]
        assert names[-1] == "" and "runs" in names and "walk" in names
        assert all(" EXCLUDE " not in select for _, select in steps)

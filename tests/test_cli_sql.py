"""`toolkit sql`: a run figure worked out by DuckDB from the store's Delta tables alone,
or the script that does it for `duckdb` (or `spark-sql`) where the store is."""

from __future__ import annotations

import io
import sys

import duckdb
import pandas as pd
import pytest
from deltalake import DeltaTable
from report_stores import two_days

import toolkit as tk
from toolkit.analysis.sql import figure_frame
from toolkit.cli import main

SOURCE = "CREATE OR REPLACE VIEW "


@pytest.fixture(scope="module")
def store_path(tmp_path_factory) -> str:
    root = tmp_path_factory.mktemp("sql") / "store"
    two_days(root)
    return str(root)


def test_a_figure_is_printed_as_csv_equal_to_the_toolkits(store_path, capsys):
    assert main(["sql", "credit_spend", "--store", store_path]) == 0
    printed = pd.read_csv(io.StringIO(capsys.readouterr().out))
    figure = tk.analysis.credit_spend(tk.SnapshotStore(store_path), freq="1D")
    assert list(printed.columns) == list(figure.columns)
    assert printed["credits"].tolist() == figure["credits"].astype(float).tolist()
    assert printed["rework_credits"].sum() == figure["rework_credits"].sum() > 0
    assert printed["project"].tolist() == figure["project"].astype(object).tolist()


def test_the_printed_script_reads_the_tables_and_runs_on_duckdb(store_path, capsys):
    assert main(["sql", "cycle_times", "--store", store_path, "--print"]) == 0
    text = capsys.readouterr().out
    head, body = text.split("\n\n", 1)
    assert "INSTALL delta; LOAD delta;" in head and "SET TimeZone = 'UTC';" in head
    sources = [
        line for line in head.splitlines() if line.startswith(SOURCE) and "delta_scan" in line
    ]
    names = [line.removeprefix(SOURCE).split()[0] for line in sources]
    # No events stored; no file prepared yet, so no exports table: an empty view instead.
    assert names == ["manifest", "projects", "chapters", "languages"]
    assert "CREATE OR REPLACE VIEW exports AS SELECT NULL::VARCHAR AS chapter_id" in head
    assert f"delta_scan('{store_path}/chapters')" in head
    # DuckDB's delta extension cannot be installed here: the tables it would read are
    # registered under the same names, and the rest of the script runs as printed.
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    for name in names:
        con.register(name, DeltaTable(f"{store_path}/{name}").to_pyarrow_dataset())
    con.execute(next(line for line in head.splitlines() if "VIEW exports" in line))
    *views, query = body.rstrip().removesuffix(";").split(";\n\n")
    for view in views:
        con.execute(view)
    found = figure_frame(con.sql(query).to_arrow_table())
    figure = tk.analysis.cycle_times(tk.SnapshotStore(store_path))
    assert len(figure) == 3
    pd.testing.assert_frame_equal(found, figure.reset_index(drop=True))


def test_the_script_for_s3_loads_httpfs_and_a_secret(capsys):
    root = "s3://bucket/snapshots"
    assert main(["sql", "runs", "--store", root, "--print", "--events", "yes"]) == 0
    text = capsys.readouterr().out
    assert "INSTALL httpfs; LOAD httpfs;" in text and "CREATE SECRET (TYPE s3" in text
    assert f"{SOURCE}events AS SELECT * FROM delta_scan('{root}/events');" in text
    assert "CREATE OR REPLACE TEMP VIEW terminal_events AS" in text


def test_an_unknown_figure_is_refused_with_the_ones_there_are(store_path, capsys):
    assert main(["sql", "forecast", "--store", store_path]) == 1
    err = capsys.readouterr().err
    assert err.startswith("toolkit sql: no SQL defines 'forecast': choose one of runs,")
    assert "credit_spend" in err and "throughput" in err


def test_a_store_without_snapshots_is_refused_saying_what_to_do(tmp_path, capsys):
    assert main(["sql", "runs", "--store", str(tmp_path / "none")]) == 1
    err = capsys.readouterr().err
    assert "holds no snapshot yet: take one with `toolkit snapshot --store" in err


def test_the_spark_script_reads_delta_tables_and_writes_each_step_as_a_table(capsys):
    # Printed without pyspark; it is run step by step in tests/analysis/test_reference_runs.py.
    root = "s3a://bucket/snapshots"
    argv = ["sql", "lead_times", "--store", root, "--engine", "spark", "--print", "--events", "no"]
    # (Without --events the store is looked at, read as s3://bucket/snapshots.)
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "SET spark.sql.session.timeZone=UTC;" in text
    assert f"CREATE OR REPLACE TEMP VIEW chapters AS SELECT * FROM delta.`{root}/chapters`;" in text
    assert "delta.`s3a://bucket/snapshots/events`" not in text  # no events, as asked
    assert "CREATE DATABASE IF NOT EXISTS toolkit_steps;\n\nUSE toolkit_steps;" in text
    assert (
        "DROP TABLE IF EXISTS walk;\n\nCREATE TABLE walk USING parquet AS\nWITH RECURSIVE" in text
    )
    last = text.rstrip().removesuffix(";").rsplit(";\n\n", 1)[1]
    assert last.lstrip().startswith("SELECT chapter_id, chapter, project_id")


def test_spark_without_pyspark_is_refused_saying_what_to_install(store_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "pyspark.sql", None)  # as where it is not installed
    assert main(["sql", "runs", "--store", store_path, "--engine", "spark"]) == 1
    err = capsys.readouterr().err
    assert "--engine spark needs pyspark: `pip install 'chapter-translation-toolkit[spark]'`" in err
    assert "--print --engine spark" in err

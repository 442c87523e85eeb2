"""`toolkit explain`: the rows behind a headline figure, as a table or as CSV."""

from __future__ import annotations

import pandas as pd
import pytest
from report_stores import trouble, two_days

import toolkit as tk
from toolkit.cli import main


@pytest.fixture
def store_path(tmp_path) -> str:
    two_days(tmp_path / "store")
    return str(tmp_path / "store")


def test_explain_prints_the_figure_then_its_rows(store_path, capsys):
    assert main(["explain", "rework_credits", "--store", store_path]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "credits spent on re-runs, 2-3 Mar: 6 credits, 2 rows"
    assert lines[1].startswith("Counted: The part of the credits spent that paid again")
    header, *rows = lines[2:]
    assert header.split()[:3] == ["project", "chapter", "source"]
    assert header.endswith("credits spent on re-runs")
    assert [row.split()[-1] for row in rows] == ["2", "4"]
    assert "rescan run of 2 pages in 1 language, finished" in rows[0]


def test_a_count_at_the_end_names_its_moment_and_each_row_its_reason(tmp_path, capsys):
    trouble(tmp_path / "store")
    assert main(["explain", "needs_action", "--store", str(tmp_path / "store")]) == 0
    out = capsys.readouterr().out
    assert out.startswith("chapters that need a person at 2 Mar 15:00 UTC: 3 chapters, 3 rows")
    assert "Counted:" not in out  # each row says its own rule: why it needs a person
    assert tk.analysis.reason_words("held_pages") in out


def test_explain_writes_every_column_as_csv(store_path, tmp_path, capsys):
    out = tmp_path / "lines.csv"
    argv = ["explain", "lines", "--store", store_path, "--project", "Moonlit Harbor",
            "--language", "fr", "--csv", str(out)]  # fmt: skip
    assert main(argv) == 0
    assert capsys.readouterr().out == f"5 rows of lines written to {out}\n"
    written = pd.read_csv(out)
    expected = tk.explain(tk.SnapshotStore(store_path), "lines", project="p1", language="fr")
    assert list(written.columns) == list(expected.columns)
    assert written["source_id"].tolist() == expected["source_id"].tolist()
    assert written["value"].tolist() == expected["value"].tolist() == [4, 2, 5, 1, 6]
    assert set(written["language_code"]) == {"fr"}


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["verdict"], "'verdict' is a text shown beside a figure, not a number; explain "
                      "`failure_rate`"),
        (["cycle_hours"], "'cycle_hours' is one run's value, a row of `median_cycle_hours`' "
                          "explanation, not a figure that sums"),
        (["nonsense"], "'nonsense' is no figure. Explain opens these: chapters_finished"),
        (["credits", "--language", "fr"], "'credits' is not counted per language"),
        (["credits", "--project", "Nowhere"], "no project 'Nowhere' in the store; give a "
                                              "project's id or one of its names: Moonlit"),
    ],
)  # fmt: skip
def test_what_cannot_be_explained_is_refused_in_words(store_path, capsys, argv, said):
    assert main(["explain", *argv, "--store", store_path]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"toolkit explain: {said}")
    assert err.count("\n") == 1


def test_a_median_says_how_its_rows_make_it(store_path, capsys):
    assert main(["explain", "median_cycle_hours", "--store", store_path]) == 0
    lines = capsys.readouterr().out.splitlines()
    median = tk.explain(tk.SnapshotStore(store_path), "median_cycle_hours")["value"].median()
    assert (
        lines[0]
        == f"median run time, 2-3 Mar: {tk.formatting.show('median_cycle_hours', median)}, 3 rows"
    )
    assert lines[1] == "Taken as: the median of the values of the rows that count"


def test_a_store_without_snapshots_is_named(tmp_path, capsys):
    empty = tmp_path / "empty"
    assert main(["explain", "credits", "--store", str(empty)]) == 1
    assert capsys.readouterr().err == (
        f"toolkit explain: the store {empty}: it has no snapshots yet; take some first "
        "(`toolkit snapshot`, or store.take(client)), an hour or so apart\n"
    )


def test_a_rate_prints_its_parts_and_writes_them_as_csv(tmp_path, capsys):
    """A ratio's rows carry their part of both sums: the table shows them as plain
    numbers (a run that failed: 1 over 1, not "100%"), the CSV as two columns whose
    sums make the rate again."""
    trouble(tmp_path / "store")
    store = str(tmp_path / "store")
    assert main(["explain", "failure_rate", "--store", store]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "failed or stalled (share of runs), 2 Mar 09:00-15:00 UTC: 67%, 3 rows"
    assert lines[1] == (
        "Taken as: the sum of the values over the sum of the denominators, of the rows that count"
    )
    header, *rows = lines[3:]
    assert header.split()[-2:] == ["numerator", "denominator"]
    assert sorted(row.split()[-2:] for row in rows) == [["0", "1"], ["1", "1"], ["1", "1"]]
    assert "first run, stalled; model " in "\n".join(rows)
    out = tmp_path / "rate.csv"
    assert main(["explain", "failure_rate", "--store", store, "--csv", str(out)]) == 0
    written = pd.read_csv(out)
    assert written["value"].sum() / written["denominator"].sum() == pytest.approx(2 / 3)
    assert set(written["source"]) == {"run"}

"""The headline figures of a period: their period, their words, figures.json, no data."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from html_page import Page
from report_stores import two_days

import toolkit as tk
from toolkit import analysis
from toolkit.cli import main
from toolkit.reporting.figures import FIGURES, figures, label, period
from toolkit.reporting.summary import summary
from toolkit.store import SnapshotStore


@pytest.fixture
def store(tmp_path) -> SnapshotStore:
    return two_days(tmp_path / "store")


def test_the_period_is_the_days_up_to_the_last_snapshot_from_the_baseline(store):
    when = period(store)
    assert when.start == pd.Timestamp("2026-03-02 09:00", tz="UTC")  # the baseline
    assert when.end == pd.Timestamp("2026-03-03 11:00", tz="UTC")
    assert when.snapshots == 4
    assert [str(day) for day in when.partial_days] == ["2026-03-02", "2026-03-03"]
    assert when.label() == "2-3 Mar"
    one_day = period(store, until="2026-03-02 23:00")
    assert one_day.label() == "2 Mar 09:00-12:00 UTC"


def test_every_label_says_what_it_counts_and_over_which_period(store):
    when = period(store)
    assert label("runs_failed", when) == "runs failed, stalls apart, 2-3 Mar"
    assert label("credits", when) == "credits spent, 2-3 Mar"
    assert label("open_lines", when) == "open lines that go on by themselves at 3 Mar 11:00 UTC"
    assert label("needs_action", when) == "chapters that need a person at 3 Mar 11:00 UTC"


def test_the_figures_agree_with_the_analysis(store):
    figs = figures(store)
    table = figs.projects.set_index("project")
    moon, star, quiet = (table.loc[name] for name in ("Moonlit Harbor", "Star Courier",
                                                       "Quiet Isles"))  # fmt: skip
    assert moon[list(FIGURES)].tolist() == [2, 1, 0, 14, 4, 36, 0, 0]
    assert star[list(FIGURES)].tolist() == [1, 0, 1, 4, 2, 5 + 1 + 5, 0, 0]
    assert quiet[list(FIGURES)].tolist() == [0] * len(FIGURES)  # data, and nothing happened
    assert figs.totals["credits"] == analysis.credit_spend(store)["credits"].sum() == 18
    assert figs.totals["lines"] == analysis.throughput(store)["lines"].sum()
    failures = analysis.failures(store)
    assert figs.totals["runs_failed"] + figs.totals["runs_stalled"] == len(failures)


def test_a_period_without_snapshots_has_no_data_not_zero(store, tmp_path):
    figs = figures(store, since="2026-03-04")  # after the last snapshot
    assert figs.period.snapshots == 0
    flows = [name for name in FIGURES if name not in ("open_lines", "needs_action")]
    assert all(value is None for name, value in figs.totals.items() if name in flows)
    assert figs.projects[flows].isna().all().all()
    assert figs.totals["median_cycle_hours"] is None
    path = tk.report(store, tmp_path / "none", format="json", since="2026-03-04")
    written = json.loads(path.read_text())
    assert written["totals"]["credits"] is None and written["projects"][0]["lines"] is None
    csv = summary(figs)
    csv.to_csv(tmp_path / "summary.csv", index=False)
    assert pd.read_csv(tmp_path / "summary.csv")["credits"].isna().all()  # an empty cell
    page = Page(tk.report(store, tmp_path / "none.html", since="2026-03-04").read_text())
    moon = next(row for row in page.rows if row[0] == "Moonlit Harbor")
    assert moon[1:7] == ["–"] * 6


def test_tk_report_writes_figures_json_in_the_contract_shape(store, tmp_path):
    path = tk.report(store, tmp_path / "out", format="json")
    assert path == tmp_path / "out" / "figures.json"
    written = json.loads(path.read_text())
    assert written["period"] == {
        "start": "2026-03-02T09:00:00+00:00",
        "end": "2026-03-03T11:00:00+00:00",
        "partial_days": ["2026-03-02", "2026-03-03"],
    }
    assert [p["project"] for p in written["projects"]] == [
        "Moonlit Harbor", "Quiet Isles", "Star Courier",
    ]  # fmt: skip
    for project in written["projects"]:
        assert list(project) == ["project_id", "project", *FIGURES]
        assert all(type(project[name]) is int for name in FIGURES)
    assert written["totals"] == {
        "chapters_finished": 3, "runs_failed": 1, "runs_stalled": 1, "credits": 18,
        "rework_credits": 6, "lines": 47, "open_lines": 0, "needs_action": 0,
    }  # fmt: skip
    named = tk.report(store, tmp_path / "week.json", format="json")
    assert json.loads(named.read_text()) == written


def test_the_command_writes_only_figures_json(store, tmp_path, capsys):
    out = tmp_path / "figures"
    assert main(["report", "--json", "--store", str(store.root), "--out", str(out)]) == 0
    assert f"Figures written to {out / 'figures.json'}" in capsys.readouterr().out
    assert sorted(p.name for p in out.iterdir()) == ["figures.json"]
    with pytest.raises(SystemExit):  # one or the other
        main(["report", "--json", "--html", "--out", str(out)])

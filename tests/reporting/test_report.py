from __future__ import annotations

from datetime import timedelta

import pandas as pd
import pytest
from datafakes import T0, FakeService

import toolkit as tk
from toolkit import analysis
from toolkit.errors import ToolkitError
from toolkit.reporting import PLOTS, summary, write_report
from toolkit.reporting.figures import figures
from toolkit.store import SnapshotStore

COLUMNS = [
    "project_id", "project", "chapters_finished", "runs_failed", "runs_stalled", "credits",
    "rework_credits", "lines", "open_lines", "needs_action", "median_cycle_hours",
]  # fmt: skip


@pytest.fixture
def store(tmp_path) -> SnapshotStore:
    service = FakeService()
    service.add_project("p1", name="Moonlit Harbor", languages=("en", "fr"))
    service.add_project("p2", name="Star Courier", languages=("en",))
    store = SnapshotStore(tmp_path / "store")
    store.write(tk.pull(service), at=T0)
    service.add_chapter("c1", "p1", pages=3, credits=6, covered=4, created=T0)
    service.add_chapter("c2", "p2", pages=2, credits=2, covered=5, languages=("en",), created=T0)
    store.write(tk.pull(service), at=T0 + timedelta(hours=1))
    service.update("c1", covered=9, processing=False, status="needs_review")
    service.update("c2", failed=True, processing=False, reason="The run failed.")
    store.write(tk.pull(service), at=T0 + timedelta(hours=2))
    service.update("c2", failed=False, processing=True, credits=4, covered=1)  # re-scanned
    store.write(tk.pull(service), at=T0 + timedelta(hours=3))
    return store


def test_the_report_folder_holds_every_plot_and_the_summary(store, tmp_path, capsys):
    folder = write_report(store, out=tmp_path / "report")
    assert folder == tmp_path / "report"
    for name in PLOTS:
        assert (folder / f"{name}.png").read_bytes().startswith(b"\x89PNG")
    table = pd.read_csv(folder / "summary.csv")
    assert list(table.columns) == COLUMNS
    printed = capsys.readouterr().out
    assert "Figures, 2 Mar 09:00-12:00 UTC (3 snapshots after the baseline)" in printed
    assert "runs failed, stalls apart" in printed
    assert "Moonlit Harbor" in printed and f"Report written to {folder}" in printed


def test_the_summary_agrees_with_the_analysis(store):
    table = summary(figures(store)).set_index("project")
    assert list(table.index) == ["Moonlit Harbor", "Star Courier", "(all projects)"]
    moon, star, total = table.loc["Moonlit Harbor"], table.loc["Star Courier"], table.iloc[-1]
    assert (moon["chapters_finished"], moon["runs_failed"], moon["runs_stalled"]) == (1, 0, 0)
    assert (moon["lines"], moon["credits"], moon["rework_credits"]) == (18, 6, 0)
    assert (star["credits"], star["rework_credits"], star["runs_failed"]) == (4, 2, 1)
    assert star["lines"] == 5 + 1  # 5 before the failure, 1 after the re-scan
    assert moon["median_cycle_hours"] == 2.0
    assert total["lines"] == analysis.throughput(store)["lines"].sum()
    assert total["credits"] == analysis.credit_spend(store)["credits"].sum() == 10
    assert pd.isna(total["project_id"])


def test_a_store_path_works_and_echo_can_be_off(store, tmp_path, capsys):
    write_report(store.root, out=tmp_path / "quiet", echo=False)
    assert capsys.readouterr().out == ""
    assert (tmp_path / "quiet" / "summary.csv").exists()


def test_an_empty_store_is_refused_with_what_to_do(tmp_path):
    with pytest.raises(ToolkitError, match="no snapshots yet; take some first"):
        write_report(tmp_path / "empty", out=tmp_path / "report")
    assert not (tmp_path / "report").exists()


def test_the_outlook_sections_agree_with_the_analysis(store, tmp_path):
    folder = write_report(store, out=tmp_path / "report", echo=False)
    forecast = pd.read_csv(folder / "forecast.csv")
    expected = analysis.forecast(store)
    assert forecast["project"].tolist() == expected["project"].tolist()
    assert forecast["status"].tolist() == expected["status"].tolist()
    models = pd.read_csv(folder / "model_comparison.csv")
    assert models["credits"].sum() == analysis.compare_models(store)["credits"].sum()
    spend = pd.read_csv(folder / "spend_this_month.csv")
    assert spend["workspace"].tolist() == ["default", "(all workspaces)"]
    # The store has no history before this month: last month is no data, not 0.
    assert spend["last_month"].isna().all() and spend["change"].isna().all()
    assert spend["this_month"].iloc[0] == analysis.credit_spend(store)["credits"].sum()
    assert (folder / "burn_down.png").read_bytes().startswith(b"\x89PNG")

"""`toolkit snapshot` and `toolkit report`, configured from the environment."""

from __future__ import annotations

import pandas as pd
import pytest

from toolkit.cli import main
from toolkit.store import SnapshotStore


@pytest.fixture
def env(monkeypatch, emulator, workspace, tmp_path):
    monkeypatch.setenv("CTS_BASE_URL", emulator.url)
    monkeypatch.setenv("CTS_API_KEY", workspace["apiKey"])
    monkeypatch.setenv("CTS_STORE", str(tmp_path / "store"))
    return tmp_path / "store"


def test_snapshot_writes_into_the_store_from_the_environment(
    env, client, comic_project, pages, capsys
):
    client.create_chapter(comic_project["id"], pages=pages)
    assert main(["snapshot"]) == 0
    line = capsys.readouterr().out.strip()
    assert line.startswith("snapshot ") and "1 projects, 1 chapters, 2 chapter languages" in line
    assert "details=changed" in line and "\n" not in line
    manifest = SnapshotStore(env).snapshots()
    assert len(manifest) == 1 and line.startswith(f"snapshot {manifest['snapshot_id'][0]} at ")


def test_snapshot_options_override_the_environment(env, tmp_path, capsys):
    other = tmp_path / "elsewhere"
    assert main(["snapshot", "--store", str(other), "--details", "all"]) == 0
    assert "details=all" in capsys.readouterr().out
    assert SnapshotStore(other).snapshots()["details"].tolist() == ["all"]
    assert SnapshotStore(env).snapshots().empty


def test_snapshot_without_a_key_says_what_to_set(env, monkeypatch, capsys):
    monkeypatch.delenv("CTS_API_KEY")
    assert main(["snapshot"]) == 1
    assert "CTS_API_KEY" in capsys.readouterr().err


def test_report_writes_plots_and_summary_and_prints_the_table(
    env, emulator, client, comic_project, pages, tmp_path, capsys
):
    assert main(["snapshot"]) == 0
    client.create_chapter(comic_project["id"], pages=pages)
    emulator.advance(3600)
    assert main(["snapshot"]) == 0
    capsys.readouterr()
    out = tmp_path / "report"
    assert main(["report", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "Moonlit Harbor" in printed and "(all projects)" in printed
    assert sorted(p.name for p in out.iterdir()) == [
        "burn_down.png", "credit_spend.png", "cycle_times.png", "figures.json", "forecast.csv",
        "model_comparison.csv", "progress.png", "spend_this_month.csv", "status_breakdown.png",
        "summary.csv", "throughput.png",
    ]  # fmt: skip
    assert "Model comparison:" in printed and "Spend this month:" in printed
    summary = pd.read_csv(out / "summary.csv").set_index("project")
    assert summary.loc["Moonlit Harbor", "chapters_finished"] == 1
    assert summary.loc["Moonlit Harbor", "credits"] == 2 * len(pages)  # pages x languages


def test_report_on_an_empty_store_fails_with_a_hint(env, tmp_path, capsys):
    assert main(["report", "--out", str(tmp_path / "r")]) == 1
    assert "no snapshots yet" in capsys.readouterr().err

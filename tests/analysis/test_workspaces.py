"""Several workspaces read at once, against the emulator's ledger of each workspace."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd
import pytest
from page_images import make_page

from toolkit import analysis, plots
from toolkit.client import Client
from toolkit.store import SnapshotStore

COMMON = {"kind": "comic", "source_language": "ja", "reading_direction": "rtl",
          "process_steps": "translate"}  # fmt: skip


@pytest.fixture
def agency(emulator, tmp_path):
    """Two workspaces with their own keys and stores; charges in this month and, after
    the emulator's clock crosses into the next month, in that one (plus a re-scan)."""
    studios = {}
    for number, name in enumerate(["studio-a", "studio-b"]):
        ws = emulator.create_workspace(name=name, credits=5_000)
        languages = ["en", "fr"][: number + 1]
        project = emulator.create_project(
            ws["id"], name=f"Project {name}", target_languages=languages, **COMMON
        )
        client = Client(base_url=emulator.url, api_key=ws["apiKey"])
        store = SnapshotStore(tmp_path / name)
        studios[name] = (ws, project, client, store)
    seed = 0
    try:
        for _, _, client, store in studios.values():
            store.take(client)
        for round_ in range(2):
            for number, (_, project, client, _) in enumerate(studios.values()):
                pages = [make_page(seed + i) for i in range(3 + number + round_)]
                seed += len(pages)
                client.create_chapter(project["id"], pages=pages)
            emulator.advance(3600)
            for _, _, client, store in studios.values():
                store.take(client)
            if round_ == 0:  # on into the first hour of the next month
                now = emulator.now()
                start = (pd.Timestamp(now).tz_convert(None).to_period("M") + 1).start_time
                emulator.advance((start.tz_localize("UTC") - pd.Timestamp(now)).total_seconds())
                emulator.advance(600)
                _, project, client, store = studios["studio-a"]
                chapter = client.list_chapters(project["id"])[0]
                client.rescan_chapter(chapter.id)
        yield studios
    finally:
        for _, _, client, _ in studios.values():
            client.close()


def _ledger_by_month(emulator, ws_id: str) -> dict[str, int]:
    months: dict[str, int] = {}
    for charge in emulator.ledger(ws_id)["charges"]:
        month = pd.Timestamp(charge["at"]).strftime("%Y-%m")
        months[month] = months.get(month, 0) + charge["credits"]
    return months


def test_every_figure_reads_several_workspaces_with_a_workspace_column(agency, emulator):
    stores = {name: store for name, (_, _, _, store) in agency.items()}
    spend = analysis.credit_spend(stores, freq="1D")
    assert list(spend.columns)[:2] == ["workspace", "period"]
    for name, (ws, _, _, _) in agency.items():
        truth = sum(_ledger_by_month(emulator, ws["id"]).values())
        assert spend.loc[spend["workspace"] == name, "credits"].sum() == truth
    rework = spend.set_index("workspace")["rework_credits"].groupby(level=0).sum()
    assert rework["studio-a"] > 0 and rework["studio-b"] == 0

    # A list of stores is labelled by folder; the same figures.
    listed = analysis.credit_spend(list(stores.values()), freq="1D")
    pd.testing.assert_frame_equal(listed, spend)
    lines = analysis.throughput(stores, by="project_id")
    for name, (ws, _, _, _) in agency.items():
        truth = sum(entry["lines"] for entry in emulator.ledger(ws["id"])["lines"])
        assert lines.loc[lines["workspace"] == name, "lines"].sum() == truth
    assert set(analysis.cycle_times(stores)["workspace"]) == set(stores)
    assert set(analysis.forecast(stores).columns) >= {"workspace", "project_id", "finish_p50"}

    # Every function that takes a store answers for several with a workspace column.
    names = ["runs", "cycle_times", "lead_times", "failures", "failure_rates", "finished",
             "stalled", "stuck", "compare_models", "price_by_language", "burn_down"]  # fmt: skip
    for name in names:
        frame = getattr(analysis, name)(stores)
        assert frame.columns[0] == "workspace", name
        assert set(frame["workspace"]) <= set(stores), name
    assert set(analysis.runs(stores)["workspace"]) == set(stores)

    prices = analysis.price_per_page(stores)
    assert set(prices) == set(stores) and prices["studio-b"][None] == 1.0
    project_b = agency["studio-b"][1]["id"]
    assert analysis.price_estimate(stores, project_b, pages=10) == 20
    with pytest.raises(ValueError, match="in none of the workspaces"):
        analysis.price_estimate(stores, "no-such-project", pages=1)
    with pytest.raises(ValueError, match="share a workspace label"):
        analysis.credit_spend([stores["studio-a"], stores["studio-a"]])


def test_spend_this_month_against_last_equals_the_ledger(agency, emulator):
    stores = {name: store for name, (_, _, _, store) in agency.items()}
    months = analysis.monthly_spend(stores).set_index("workspace")
    this, last = months["month"].iloc[0], months["previous_month"].iloc[0]
    for name, (ws, _, _, _) in agency.items():
        truth = _ledger_by_month(emulator, ws["id"])
        assert set(truth) == {this, last}
        assert months.loc[name, "this_month"] == truth[this]
        assert months.loc[name, "last_month"] == truth[last]
        assert months.loc[name, "change"] == truth[this] - truth[last]
    assert months.loc["studio-a", "this_month_rework"] > 0
    total = months.loc["(all workspaces)"]
    assert total["this_month"] == months["this_month"].iloc[:-1].sum()
    # As of the end of the first month: that month is "this", and nothing came after.
    first = stores["studio-a"].snapshots()["snapshot_at"].iloc[1]
    early = analysis.monthly_spend(stores, until=first).set_index("workspace")
    assert (
        early.loc["studio-a", "this_month"]
        == _ledger_by_month(emulator, agency["studio-a"][0]["id"])[last]
    )


def test_every_plot_draws_several_workspaces(agency):
    stores = {name: store for name, (_, _, _, store) in agency.items()}
    for draw in (plots.progress, plots.throughput, plots.credit_spend, plots.status_breakdown):
        ax = draw(stores)
        labels = ax.get_legend_handles_labels()[1] + [t.get_text() for t in ax.get_yticklabels()]
        assert any(label.startswith("studio-a: ") for label in labels), draw.__name__
        assert any(label.startswith("studio-b: ") for label in labels), draw.__name__
        plt.close(ax.figure)
    ax = plots.cycle_times(stores)
    assert "runs finished" in ax.get_title()  # both workspaces' runs, counted in the title
    plt.close(ax.figure)
    ax = plots.burn_down(stores)
    plt.close(ax.figure)


def test_a_store_is_labelled_by_its_given_workspace_else_its_folder(tmp_path):
    from toolkit.analysis.workspaces import labelled, store_label

    plain = SnapshotStore(tmp_path / "studio-x")
    assert store_label(plain) == "studio-x"
    named = SnapshotStore(tmp_path / "somewhere")
    named.workspace_label = "studio-y"  # what SnapshotStore(..., workspace=...) keeps
    assert labelled([plain, named]) == {"studio-x": plain, "studio-y": named}
    assert labelled(plain) is None
    with pytest.raises(ValueError, match="no workspaces given"):
        labelled({})

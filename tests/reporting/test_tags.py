"""Figures and explanations grouped by a tag of the projects (client, vendor, team)."""

from __future__ import annotations

from report_stores import trouble

import toolkit as tk
from toolkit.reporting.figures import FIGURES, figures
from toolkit.reporting.tags import UNTAGGED, by_tag, tagged

TAGS = {"Moonlit Harbor": {"client": "Aster"}, "p2": {"client": "Brio", "team": "north"}}


def test_figures_by_a_tag_add_up_to_the_totals_and_untagged_projects_count(tmp_path):
    store = trouble(tmp_path / "store")
    figs = figures(store)
    projects = figs.projects.set_index("project")

    clients = by_tag(figs, TAGS, "client").set_index("client")
    assert list(clients.index) == ["Aster", "Brio"]
    assert clients.loc["Aster", list(FIGURES)].tolist() == (
        projects.loc["Moonlit Harbor", list(FIGURES)].tolist()
    )
    assert clients.loc["Brio", list(FIGURES)].tolist() == (
        projects.loc["Star Courier", list(FIGURES)].tolist()
    )

    teams = by_tag(figs, TAGS, "team")
    assert teams["team"].tolist() == ["north", UNTAGGED]  # the untagged last
    assert teams["projects"].tolist() == [1, 1]
    assert {name: int(teams[name].sum()) for name in FIGURES} == {
        name: figs.totals[name] for name in FIGURES
    }


def test_explanation_rows_carry_the_tag_and_sum_to_the_group(tmp_path):
    store = trouble(tmp_path / "store")
    clients = by_tag(figures(store), TAGS, "client").set_index("client")
    rows = tagged(tk.explain(store, "credits"), TAGS, "client")
    assert list(rows.columns[:4]) == ["figure", "project_id", "project", "client"]
    per_client = rows.groupby("client")["value"].sum()
    assert per_client.to_dict() == clients["credits"].to_dict()

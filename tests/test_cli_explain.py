"""`toolkit explain`: the rows behind a headline figure, as a table or as CSV."""

from __future__ import annotations

import re

import pandas as pd
import pytest
from agency_stores import SHARED_GROUP, TAGS, two_studios
from epochs import SUITE_START
from report_stores import trouble, two_days

import toolkit as tk
from toolkit.cli import main
from toolkit.formatting import show


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


def test_the_forecast_s_column_name_prints_the_figure_it_holds(tmp_path, capsys):
    trouble(tmp_path / "store")
    store = str(tmp_path / "store")
    assert main(["explain", "open_lines", "--store", store]) == 0
    by_its_name = capsys.readouterr().out
    assert main(["explain", "remaining_lines", "--store", store]) == 0
    assert capsys.readouterr().out == by_its_name
    assert ": 8 lines, 2 rows" in by_its_name.splitlines()[0]


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


# -- by a tag of the config: two workspaces, each its own emulator over loopback --------


@pytest.fixture(scope="module")
def agency(tmp_path_factory):
    """Two workspaces on their own emulators, and a watch config with both stores and
    the projects' tags."""
    folder = tmp_path_factory.mktemp("agency")
    studios = two_studios(folder / "stores", SUITE_START)
    lines = []
    for name, studio in studios.items():
        lines += [f"[workspaces.{name}]", f'base_url = "{studio.url}"',
                  f'key_env = "KEY_{name.upper().replace("-", "_")}"',
                  f'store = "{studio.store.root}"']  # fmt: skip
    untagged = "\n".join(lines) + "\n"
    for project, tags in TAGS.items():
        lines.append(f'[tags."{project}"]')
        lines += [f'{key} = "{value}"' for key, value in tags.items()]
    (folder / "watch.toml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (folder / "untagged.toml").write_text(untagged, encoding="utf-8")
    return studios, folder


def _table(out: str) -> dict[str, list[str]]:
    """The sums' table the command prints: each value's cells after its name."""
    lines = out.splitlines()
    heads = ("client ", "team ", "translation group ")
    start = next(n for n, line in enumerate(lines) if line.startswith(heads))
    found = {}
    for line in lines[start + 1 :]:
        if not line.strip():
            break
        name, *cells = re.split(r"\s{2,}", line.strip())  # columns: two spaces or more
        found[name] = cells
    return found


@pytest.mark.slow
def test_credits_by_client_over_the_workspaces_are_the_ledgers_charges(agency, capsys):
    studios, folder = agency
    config = str(folder / "watch.toml")
    assert main(["explain", "credits", "--by", "client", "--config", config]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].endswith(", by client (2 workspaces: studio-a, studio-b)")
    shown = _table(out)
    charged: dict[str, int] = {"Acme": 0, "Brio": 0}
    for studio in studios.values():
        when = tk.reporting.figures.figures(studio.store).period
        inside = studio.charges[(studio.charges["at"] >= when.start)
                                & (studio.charges["at"] < when.until)]  # fmt: skip
        for project, credits in inside[["project", "credits"]].itertuples(index=False):
            charged[TAGS[project]["client"]] += credits
    assert {name: int(cells[1].replace(",", "")) for name, cells in shown.items()} == {
        **charged,
        "All projects": sum(charged.values()),
    }
    assert [shown[name][0] for name in ("Acme", "Brio", "All projects")] == ["3", "1", "4"]

    # --rows --csv: every row with its client; each client's rows sum to its number.
    rows_csv = folder / "rows.csv"
    argv = ["explain", "credits", "--by", "client", "--config", config, "--rows"]
    assert main([*argv, "--csv", str(rows_csv)]) == 0
    rows = pd.read_csv(rows_csv)
    assert list(rows.columns[:4]) == ["workspace", "figure", "project_id", "project"]
    assert rows.groupby("client")["value"].sum().to_dict() == charged
    assert set(rows["workspace"]) == set(studios)
    sums_csv = folder / "sums.csv"
    assert main([*argv[:-1], "--csv", str(sums_csv)]) == 0
    assert "credits by client, 2 values, written to" in capsys.readouterr().out
    assert pd.read_csv(sums_csv).set_index("client")["credits"].to_dict() == {
        **charged,
        "All projects": sum(charged.values()),
    }


def test_a_median_by_team_is_the_median_of_each_team_s_runs(agency, capsys):
    studios, folder = agency
    argv = ["explain", "median_cycle_hours", "--by", "team", "--config",
            str(folder / "watch.toml"), "--rows"]  # fmt: skip
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "Taken as: the median of the values of the rows that count, over each team's rows" in out
    shown = {name: cells[1] for name, cells in _table(out).items()}
    runs = []
    for studio in studios.values():
        when = tk.reporting.figures.figures(studio.store).period
        found = tk.analysis.cycle_times(studio.store, since=when.since, until=when.until)
        runs.append(found[["project", "hours"]])
    every = pd.concat(runs, ignore_index=True)
    every["team"] = every["project"].map(lambda p: TAGS[p].get("team", "(untagged)"))
    expected = every.groupby("team")["hours"].median().to_dict()
    expected["All projects"] = every["hours"].median()
    assert shown == {team: show("median_cycle_hours", hours) for team, hours in expected.items()}
    assert "north" in out.split("Counted:")[1]  # the rows, each with its team


@pytest.mark.parametrize(
    ("extra", "said"),
    [
        (["--by", "clint"], "no tag 'clint' in {config}; its [tags] use client, team: group "
                            "by one of those"),
        (["--by", "client", "--project", "Iron Vale", "--config-untagged"],
         "{untagged} has no [tags]: tag the projects first"),
        (["--by", "team", "--project", "Paper Crane"],
         "project 'Paper Crane' has no team in {config}: add team = \"...\" under "
         "[tags.\"Paper Crane\"], or leave out the project to see it under (untagged)"),
        (["--rows"], "grouping by a tag needs --by and --config: add --by KEY"),
    ],
)  # fmt: skip
def test_grouping_by_a_tag_is_refused_in_one_line_that_says_what_to_do(agency, capsys, extra, said):
    _, folder = agency
    config, untagged = str(folder / "watch.toml"), str(folder / "untagged.toml")
    chosen = untagged if "--config-untagged" in extra else config
    argv = ["explain", "credits", *[a for a in extra if a != "--config-untagged"]]
    if "--rows" not in extra:
        argv += ["--config", chosen]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert said.format(config=config, untagged=untagged) in err


def _credits_in_week(studio) -> pd.DataFrame:
    """The ledger's charges of the studio's week (its weekly page's), by project name."""
    when = tk.reporting.figures.figures(studio.store).period
    charges = studio.charges
    inside = charges[(charges["at"] >= when.start) & (charges["at"] < when.until)]
    return inside.groupby("project")["credits"].sum()


def test_credits_by_translation_group_add_up_the_group_s_projects_and_the_ledger(agency, capsys):
    """The service's translationGroupId needs no config: over one store, studio-a's two
    projects share a group, whose credits are the sum of their figures and of the
    ledger's charges; over the config's two workspaces, studio-b's projects each have
    their own (a bare UUID, shown as sent)."""
    studios, folder = agency
    a = studios["studio-a"]
    argv = ["explain", "credits", "--by", "translation_group"]
    assert main([*argv, "--store", str(a.store.root)]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].endswith(", by translation_group")
    own = tk.reporting.figures.figures(a.store).projects
    charged = _credits_in_week(a)
    assert set(charged.index) == set(own["project"]) and len(own) == 2
    total = f"{int(charged.sum()):,}"
    assert int(own["credits"].sum()) == int(charged.sum())
    assert _table(out) == {SHARED_GROUP: ["2", total], "All projects": ["2", total]}

    assert main([*argv, "--config", str(folder / "watch.toml")]) == 0
    shown = _table(capsys.readouterr().out)
    expected = {SHARED_GROUP: int(charged.sum())}
    b = studios["studio-b"]
    groups = tk.analysis.project_groups(b.store).set_index("project")["translation_group"]
    for project, credits in _credits_in_week(b).items():
        expected[groups[project]] = int(credits)
    assert len(expected) == 3  # studio-b's two projects: a group each
    assert {name: int(cells[1].replace(",", "")) for name, cells in shown.items()} == {
        **expected,
        "All projects": sum(expected.values()),
    }


def test_a_config_tag_named_translation_group_is_refused_saying_what_to_rename(
    agency, tmp_path, capsys
):
    _, folder = agency
    config = tmp_path / "watch.toml"
    text = (folder / "watch.toml").read_text(encoding="utf-8")
    config.write_text(text + '[tags."Iron Vale Two"]\ntranslation_group = "mine"\n')
    assert main(["explain", "credits", "--by", "client", "--config", str(config)]) != 0
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    line = len(text.splitlines()) + 2
    assert (
        f"{config}, line {line}: tags.Iron Vale Two.translation_group: 'translation_group' is "
        "the service's translation group, which the toolkit reads itself (no config needed): "
        "rename this tag, e.g. to group or series"
    ) in err
    with pytest.raises(ValueError, match="rename this tag"):  # the Python call says the same
        tk.reporting.with_groups({"Iron Vale": {"translation_group": "mine"}}, [])


def test_a_workspace_without_snapshots_is_named(agency, tmp_path, capsys):
    _, folder = agency
    text = (folder / "watch.toml").read_text(encoding="utf-8")
    empty = tmp_path / "empty"
    config = tmp_path / "watch.toml"
    studio_b = next(line for line in text.splitlines() if "studio-b" in line and "store" in line)
    config.write_text(text.replace(studio_b, f'store = "{empty}"'), encoding="utf-8")
    assert main(["explain", "credits", "--by", "client", "--config", str(config)]) == 1
    err = capsys.readouterr().err
    assert f"workspace 'studio-b' (store {empty}): " in err and "no snapshots yet" in err


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

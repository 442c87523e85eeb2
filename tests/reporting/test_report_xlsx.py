"""`tk.report(format="xlsx")` and `toolkit report --xlsx`: the figures, their
explanations and the forecast as a workbook, equal to `figures.json`."""

from __future__ import annotations

import json

import openpyxl
import pandas as pd
import pytest
from report_stores import trouble

import toolkit as tk
from toolkit import metrics
from toolkit.cli import main
from toolkit.reporting.explanations import EXPLAINED, HOW
from toolkit.reporting.figures import FIGURES
from toolkit.reporting.xlsx import _SHEETS, heading

# The ninth pass (docs/testing.md): in the slow group, which CI runs as its own step.
pytestmark = pytest.mark.slow


def test_the_workbook_equals_figures_json_in_pandas_and_in_openpyxl(tmp_path):
    store = trouble(tmp_path / "store")
    shown = json.loads(tk.report(store, tmp_path / "out", format="json").read_text())
    path = tk.report(store, tmp_path / "out", format="xlsx")
    assert path == tmp_path / "out" / "figures.xlsx"

    sheets = pd.read_excel(path, sheet_name=None)
    assert list(sheets)[: len(_SHEETS)] == list(_SHEETS)
    table = sheets["figures"].set_index("project")
    assert list(table.columns) == [heading(name) for name in FIGURES]
    assert heading("credits") == "credits spent (credits)"
    for project in shown["projects"]:
        row = table.loc[project["project"]]
        assert [int(row[heading(name)]) for name in FIGURES] == [project[n] for n in FIGURES]
    total = table.loc["(all projects)"]
    assert [int(total[heading(name)]) for name in FIGURES] == list(shown["totals"].values())

    # The explanations sum to the totals, figure by figure, each on its own sheet.
    sums = {name: int(sheets[name][heading(name)].sum()) if name in sheets else 0
            for name in FIGURES}  # fmt: skip
    assert sums == shown["totals"]
    index = sheets["explanations"].set_index("figure")
    assert list(index.index) == list(EXPLAINED)
    assert index["unit"].to_dict() == {name: metrics.FIGURES[name].unit for name in EXPLAINED}
    assert "at (UTC)" in sheets["credits"].columns

    # The forecast's headers carry units; the About sheet says what each figure counts.
    forecast = sheets["forecast"]
    assert heading("remaining_lines") in forecast.columns
    about = sheets["about"]
    assert metrics.FIGURES["rework_credits"].definition in set(about["what it is"])

    # openpyxl: whole numbers are stored as integers and shown with a thousands separator.
    book = openpyxl.load_workbook(path)
    assert book.sheetnames == list(sheets)
    sheet = book["figures"]
    headers = [cell.value for cell in sheet[1]]
    column = headers.index(heading("credits")) + 1
    cells = [sheet.cell(row=r, column=column) for r in range(2, sheet.max_row + 1)]
    assert all(isinstance(cell.value, int) for cell in cells)
    assert {cell.number_format for cell in cells} == {"#,##0"}
    assert cells[-1].value == shown["totals"]["credits"]


def test_the_command_writes_the_workbook_into_out(tmp_path, capsys):
    trouble(tmp_path / "store")
    out = tmp_path / "report"
    assert main(["report", "--store", str(tmp_path / "store"), "--out", str(out), "--xlsx"]) == 0
    path = out / "figures.xlsx"
    assert capsys.readouterr().out == (f"Figures, explanations and forecast written to {path}\n")
    assert pd.read_excel(path, sheet_name="figures").shape[0] == 3  # two projects, the total


def test_a_store_without_snapshots_is_named(tmp_path):
    empty = tmp_path / "empty"
    with pytest.raises(tk.ToolkitError, match="it has no snapshots yet") as refused:
        tk.report(empty, tmp_path / "out.xlsx", format="xlsx")
    assert str(refused.value).startswith(f"the store {str(empty)!r}: ")
    assert not (tmp_path / "out.xlsx").exists()


def test_each_sheet_equals_its_source_and_keeps_whole_numbers_whole(tmp_path):
    """Per project, the Explanations sheet's rows sum to figures.json's figures; the
    Forecast sheet is `tk.analysis.forecast` at the period's last snapshot; every count
    and credit, on every sheet, is an integer cell shown with a thousands separator."""
    store = trouble(tmp_path / "store")
    shown = json.loads(tk.report(store, tmp_path / "out", format="json").read_text())
    path = tk.report(store, tmp_path / "out", format="xlsx")
    sheets = pd.read_excel(path, sheet_name=None)

    # Per figure and project, its sheet's values sum to figures.json's figure.
    for name in FIGURES:
        found = sheets.get(name, pd.DataFrame(columns=["project", heading(name)]))
        sums = found.groupby("project")[heading(name)].sum()
        for project in shown["projects"]:
            assert int(sums.get(project["project"], 0)) == project[name], (project, name)
    # Every figure explain opens: its sheet holds tk.explain's rows, and the index says
    # the figure they make (recount), as every surface shows it.
    when = {key: pd.Timestamp(shown["period"][key]) for key in ("start", "end")}
    period = tk.reporting.figures.figures(store).period
    index = sheets["explanations"].set_index("figure")
    for name in EXPLAINED:
        rows = tk.explain(store, name, since=period.since, until=period.until)
        assert index.loc[name, "rows"] == len(rows), name
        assert (name in sheets) == bool(len(rows)), name
        if not len(rows):
            continue
        assert len(sheets[name]) == len(rows), name
        made = tk.reporting.recount(rows, name)
        said = index.loc[name, "value"]
        if made is None:
            assert pd.isna(said), name
        elif isinstance(made, pd.Timestamp):
            assert pd.Timestamp(said) == made.tz_convert("UTC").tz_localize(None), name
        else:
            assert float(said) == pytest.approx(float(made)), name
        if HOW[name] == "sum" and made is not None:  # the sheet's values add up to it
            assert float(sheets[name][heading(name)].sum()) == pytest.approx(float(made)), name
    assert when["end"] > when["start"]

    end = pd.Timestamp(shown["period"]["end"])
    expected = tk.analysis.forecast(store, by="project_id", until=end)
    forecast = sheets["forecast"]
    for name in ("open_chapters", "remaining_lines", "needs_action", "needs_action_lines"):
        assert forecast[heading(name)].tolist() == expected[name].astype(int).tolist(), name
    assert forecast[heading("project")].tolist() == expected["project"].tolist()
    for name in ("finish_p10", "finish_p50", "finish_p90"):  # in UTC, to the millisecond
        got = pd.to_datetime(forecast[heading(name)])
        want = expected[name].dt.tz_convert("UTC").dt.tz_localize(None)
        assert got.isna().tolist() == want.isna().tolist(), name
        assert ((got - want).dropna().abs() < pd.Timedelta("1ms")).all(), name
    assert expected["finish_p50"].notna().any()  # a finish to compare

    book = openpyxl.load_workbook(path)
    whole = {
        "figures": [heading(name) for name in FIGURES],
        **{name: [heading(name)] for name in FIGURES if name in sheets},
        "forecast": [heading(n) for n in ("open_chapters", "remaining_lines", "needs_action")],
    }
    for sheet, columns in whole.items():
        headers = [cell.value for cell in book[sheet][1]]
        for column in columns:
            at = headers.index(column) + 1
            cells = [book[sheet].cell(row=r, column=at) for r in range(2, book[sheet].max_row + 1)]
            assert cells, (sheet, column)
            assert all(isinstance(c.value, int) for c in cells), (sheet, column)
            assert {c.number_format for c in cells} == {"#,##0"}, (sheet, column)
    # Every header of a number says its unit.
    assert all("(" in h for columns in whole.values() for h in columns)
    # openpyxl: per project, the credits sheet's cells sum to figures.json's credits.
    sheet = book["credits"]
    headers = [cell.value for cell in sheet[1]]
    at, of = headers.index(heading("credits")), headers.index("project")
    summed: dict[str, int] = {}
    for row in sheet.iter_rows(min_row=2, values_only=True):
        summed[row[of]] = summed.get(row[of], 0) + row[at]
    assert summed == {p["project"]: p["credits"] for p in shown["projects"] if p["credits"]}
    # The index opens each figure's sheet.
    index_sheet = book["explanations"]
    links = {c.value: c.hyperlink.location for c in index_sheet["G"][1:] if c.hyperlink}
    assert links["credits"] == "'credits'!A1"


def test_with_tags_the_workbook_and_figures_json_hold_the_figures_by_each_tag(tmp_path, capsys):
    """`toolkit report --xlsx --config watch.toml` (`tk.report(..., tags=)`): a sheet per
    tag, and figures.json's `by_tag`, each `by_tag` of the figures, adding up to the
    totals."""
    store = trouble(tmp_path / "store")
    tags = {"Moonlit Harbor": {"client": "Acme", "team": "north"}, "p2": {"client": "Brio"}}
    config = tmp_path / "watch.toml"
    config.write_text(
        f'[workspaces.studio]\nbase_url = "https://translate.example.com"\nkey_env = "K"\n'
        f'store = "{store.root}"\n[tags."Moonlit Harbor"]\nclient = "Acme"\nteam = "north"\n'
        '[tags.p2]\nclient = "Brio"\n',
        encoding="utf-8",
    )
    argv = ["report", "--store", str(store.root), "--out", str(tmp_path / "out"), "--config",
            str(config)]  # fmt: skip
    assert main([*argv, "--xlsx"]) == 0
    assert main([*argv, "--json"]) == 0
    capsys.readouterr()
    shown = json.loads((tmp_path / "out" / "figures.json").read_text())
    sheets = pd.read_excel(tmp_path / "out" / "figures.xlsx", sheet_name=None)
    # The service's translation group is a tag too, with no config (here one for both).
    assert list(sheets)[: len(_SHEETS) + 3] == [
        "figures", "by client", "by team", "by translation_group", *_SHEETS[1:]
    ]  # fmt: skip
    groups = tk.analysis.project_groups(store)
    assert not groups["translation_group"].isin(["(unknown)"]).any()
    assert [row["translation_group"] for row in shown["by_tag"]["translation_group"]] == sorted(
        set(groups["translation_group"])
    )
    tags = tk.reporting.with_groups(tags, [store])
    expected = {key: tk.reporting.by_tag(tk.reporting.figures.figures(store), tags, key)
                for key in ("client", "team", "translation_group")}  # fmt: skip
    assert [row["client"] for row in shown["by_tag"]["client"]] == ["Acme", "Brio"]
    assert [row["team"] for row in shown["by_tag"]["team"]] == ["north", "(untagged)"]
    for key, table in expected.items():
        sheet = sheets[f"by {key}"].set_index(key)
        assert sheet.index[-1] == "(all projects)"
        for row, written in zip(table.to_dict("records"), shown["by_tag"][key], strict=True):
            assert written == {k: (int(v) if k != key else v) for k, v in row.items()}
            on_sheet = sheet.loc[row[key]]
            assert [int(on_sheet[heading(n)]) for n in FIGURES] == [row[n] for n in FIGURES]
        assert [int(sheet.loc["(all projects)", heading(n)]) for n in FIGURES] == [
            shown["totals"][n] for n in FIGURES
        ]
        assert heading("credits") in sheet.columns  # the unit in the header
    # Without tags, figures.json is as before (its contract).
    plain = json.loads(tk.report(store, tmp_path / "plain", format="json").read_text())
    assert list(plain) == ["period", "projects", "totals"]


@pytest.mark.slow  # a whole workbook written again for one rule: the default group's time
def test_a_figure_with_more_rows_than_a_sheet_holds_shows_the_first_and_says_so(
    tmp_path, monkeypatch
):
    """Excel stops at 1,048,576 rows: a figure with more (here, a limit of 2) keeps its
    first rows on its sheet, and its index row says how many it has and how to get all."""
    import toolkit.reporting.xlsx as xlsx

    monkeypatch.setattr(xlsx, "SHEET_ROWS", 2)
    store = trouble(tmp_path / "store")
    path = tk.report(store, tmp_path / "out.xlsx", format="xlsx")
    sheets = pd.read_excel(path, sheet_name=None)
    index = sheets["explanations"].set_index("figure")
    assert index.loc["credits", "rows"] == 5 and len(sheets["credits"]) == 2
    assert index.loc["credits", "note"] == (
        "its first 2 rows (a sheet holds no more); every row: toolkit explain credits --csv FILE"
    )
    assert index.loc["rework_credits", "rows"] == 1  # within the limit: all, no note
    assert pd.isna(index.loc["rework_credits", "note"]) and len(sheets["rework_credits"]) == 1

"""The registry of figures: one label per quantity, docs/figures.md generated from it."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from pathlib import Path

import matplotlib.pyplot
import pandas as pd
import pytest
import surfaces
from html_page import Page
from report_stores import needing_people

import toolkit as tk
from toolkit import analysis, formatting, metrics, plots
from toolkit.cli import main
from toolkit.frames.states import STATES
from toolkit.reporting import page
from toolkit.reporting.weekly import gather
from toolkit.store import SnapshotStore
from toolkit.widgets import Dashboard

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs" / "figures.md"
NOTEBOOKS = ROOT / "notebooks"


def test_the_glossary_has_unique_names_and_labels():
    glossary = tk.glossary()
    assert list(glossary.columns) == ["name", "label", "unit", "definition"]
    assert glossary["name"].is_unique and glossary["label"].is_unique
    assert glossary.notna().all().all()
    assert {"open_lines", "open_work_lines", "needs_action", "failure_rate"} <= set(
        glossary["name"]
    )


def test_the_two_kinds_of_open_work_have_two_labels():
    by_itself, everything = metrics.header("open_lines"), metrics.header("open_work_lines")
    assert by_itself != everything
    assert metrics.header("remaining_lines") == by_itself  # the forecast's name for it
    assert "waiting for a person" in everything


def test_a_duration_is_labelled_time_and_shown_in_minutes_or_hours():
    durations = [f for f in metrics.FIGURES.values() if f.format == "duration"]
    assert durations and all("hours" not in f.words for f in durations)
    assert formatting.show("hours_per_page", 0.00728) == "26 s"
    assert formatting.show("median_cycle_hours", 2.5) == "2.5 h"
    assert formatting.show("failure_rate", 0.375) == "38%"
    assert formatting.show("credits", 602.0) == "602"


def test_a_label_carries_its_period_or_its_moment():
    assert metrics.label("runs_failed", "19-26 Nov") == "runs failed, stalls apart, 19-26 Nov"
    assert metrics.label("needs_action", "19-26 Nov", at="26 Nov 12:01 UTC") == (
        "chapters that need a person at 26 Nov 12:01 UTC"
    )
    assert metrics.known("Runs failed, stalls apart, 19-26 Nov")
    assert not metrics.known("lines still to translate")


def test_the_docs_table_is_the_registry():
    page = DOCS.read_text(encoding="utf-8")
    start = page.index("<!-- registry:")
    table = page[page.index("\n", start) + 1 : page.index("<!-- end of registry -->")]
    assert table.strip() == metrics.markdown(), (
        "docs/figures.md's table differs from toolkit/metrics.py: paste "
        "toolkit.metrics.markdown() between the registry markers"
    )


# -- every surface of the demo and the notebooks reads the registry's labels ----------

PERIOD = re.compile(r"^\d{1,2}(-\d{1,2})? \w{3}")  # a period's own label heads a column


def unknown(labels: Iterable[str]) -> list[str]:
    return sorted({text for text in labels if text and not metrics.known(text)})


@pytest.mark.slow
def test_the_demos_files_are_headed_by_registry_names(demo):
    out = demo.out
    headers = [c for f in out.glob("*.csv") for c in pd.read_csv(f, nrows=0).columns]
    figures = json.loads((out / "figures.json").read_text())
    keys = [*figures["totals"], *(k for p in figures["projects"] for k in p)]
    assert headers and unknown([*headers, *keys]) == []
    # Credits and counts are whole in every file, as on every surface: 602, never 602.0.
    spend = (out / "spend_this_month.csv").read_text().splitlines()[1].split(",")
    assert spend[3].isdigit() and spend[6].isdigit()
    models = pd.read_csv(out / "model_comparison.csv")
    assert pd.api.types.is_integer_dtype(models["credits"])
    verdicts = " ".join(models["verdict"].dropna())
    assert "hours per page" not in verdicts and not re.search(r"\d\.\d{3}", verdicts)


@pytest.mark.slow
def test_the_demos_terminal_tables_and_weekly_page_use_registry_labels(demo):
    out, printed = demo.out, demo.printed
    heads = [line for line in printed.splitlines() if re.match(r"(project|kind|workspace)  ", line)]
    assert len(heads) >= 4  # figures, forecast, model comparison, spend this month
    cells = [cell for line in heads for cell in re.split(r"\s{2,}", line.strip())]
    page = Page((out / "weekly-report.html").read_text(encoding="utf-8"))
    headers = [cell for row in page.rows[:1] for cell in row]
    headers += [cell for row in page.rows if row and row[0] in ("Project", "Figure", "Day")
                for cell in row if not PERIOD.match(cell)]  # fmt: skip
    assert unknown(cells) == [] and unknown(headers) == []
    assert "lines still to translate" not in printed


@pytest.mark.slow
def test_the_plots_titles_axes_and_legends_use_registry_labels(demo):
    out = demo.out
    store = SnapshotStore(str(out / "snapshots"))
    draws = (plots.progress, plots.throughput, plots.credit_spend, plots.status_breakdown,
             plots.cycle_times, plots.burn_down)  # fmt: skip
    drawn = [draw(store).figure for draw in draws]
    weekly = gather(store)  # the weekly page's own plots
    drawn += [page.daily_plot(weekly, "lines"), page.daily_plot(weekly, "credits"),
              page._rework_plot(weekly.projects)]  # fmt: skip
    # What a legend may name besides figures: the data drawn.
    data = {*store.latest("projects")["name"], *analysis.throughput(store)["language_code"],
            *(state.replace("_", " ") for state in STATES), plots.OTHER,
            *analysis.cycle_times(store)["kind"].dropna().str.replace("_", " ")}  # fmt: skip
    titles, labels, entries = [], [], []
    for figure in drawn:
        for ax in figure.axes:
            legend = ax.get_legend()
            titles.append(ax.get_title(loc="left") or ax.get_title())
            labels += [ax.get_xlabel(), ax.get_ylabel()]
            if legend is not None:
                labels.append(legend.get_title().get_text())
                entries += [text.get_text() for text in legend.get_texts()]
        matplotlib.pyplot.close(figure)
    assert len(titles) == 9 and all(titles)
    assert [t for t in titles if not metrics.known_title(t)] == []
    assert unknown(labels) == []
    assert [e for e in entries if not metrics.known_entry(e, data)] == []


def test_a_title_names_its_quantity_by_its_label_and_nothing_else():
    assert metrics.known_title("Credits spent in each day (* part-day), by project; "
                               "hatched: credits spent on re-runs")  # fmt: skip
    assert metrics.known_title("Run time, 22 runs finished")
    assert not metrics.known_title("Throughput: lines translated in each hour, by language")
    assert not metrics.known_title("Credits spent in each day; hatched: paid for re-runs")
    assert not metrics.known_title("Burn-down by project")
    assert metrics.known_entry("Seoul Nights: chapters that need a person 2", {"Seoul Nights"})
    assert metrics.known_entry("median run time 3 min", set())
    assert not metrics.known_entry("Seoul Nights, 2 need a person", {"Seoul Nights"})
    assert not metrics.known_entry("re-runs (rework)", set())


# A count in a sentence of the page: "7 chapters finished", "74% of its credits spent ...".
COUNTED = re.compile(r"(?<![\w:])(\d[\d,]*%?|none) (?:of its )?([a-z][a-z -]*?)(?=[;,.)]| and |$)")


def counted_unknown(sentence: str) -> list[str]:
    """The counts in `sentence` not followed by a registry label (its words before any
    comma, one or many: "1 run failed" is "runs failed, stalls apart")."""
    labels = {f.words.split(",")[0] for f in metrics.FIGURES.values()}
    singular = {" ".join([_one(w.split()[0]), *w.split()[1:]]) for w in labels}
    return [
        f"{number} {words}"
        for number, words in COUNTED.findall(sentence)
        if not any(words == label or words.startswith(label + " ") for label in labels | singular)
    ]


def _one(word: str) -> str:
    return word.removesuffix("es") if word.endswith("shes") else word.removesuffix("s")


@pytest.mark.slow
def test_the_weekly_pages_headings_and_sentences_count_by_registry_labels(demo):
    out = demo.out
    page = Page((out / "weekly-report.html").read_text(encoding="utf-8"))
    assert page.items  # the story: one sentence per project with work
    assert [c for sentence in page.items for c in counted_unknown(sentence)] == []
    # A heading that names a quantity names it by its label, as a plot's title does.
    quantities = re.compile(r"\b(credits?|lines?|runs?|re-runs?|chapters?)\b", re.IGNORECASE)
    named = [h for h in page.headings[1:] if quantities.search(h)]
    assert named and [h for h in named if not metrics.known_title(h)] == []
    assert counted_unknown("Moonlit Harbor finished 7 chapters; 74% of its credits paid for "
                           "re-runs") == ["74% credits paid for re-runs"]  # fmt: skip
    # The record's own sentence ("(3 of 4 finishes checked)"); the band's sentence after
    # it is the calibration's (toolkit.analysis), not the page's.
    record = next(text for text in page.texts if text.startswith("Over "))
    assert counted_unknown(record.split(" The band is ")[0]) == []
    assert counted_unknown("(1 of 1 finish checked)") == []
    assert counted_unknown("(3 of 4 checked)") == ["4 checked"]


def test_the_notebooks_name_their_columns_by_the_registry():
    written = []
    for notebook in sorted(NOTEBOOKS.glob("*.ipynb")):
        for cell in json.loads(notebook.read_text(encoding="utf-8"))["cells"]:
            if cell["cell_type"] != "code":
                continue
            source = "".join(cell["source"])
            # Columns a notebook names itself: renamed ones and named aggregates.
            for renamed in re.findall(r"rename\(columns=\{([^}]*)\}", source):
                written += re.findall(r":\s*\"([^\"]+)\"", renamed)
            for aggregate in re.findall(r"\.agg\(([^)]*)\)", source):
                written += re.findall(r"(\w+)=", aggregate)
    assert unknown(written) == []


# -- the same figure reads the same number on every surface that shows it -------------


@pytest.mark.slow
def test_each_figure_reads_the_same_on_every_surface_of_the_demo(demo, tmp_path):
    out, printed = demo.out, demo.printed
    store = SnapshotStore(str(out / "snapshots"))
    readings = {
        "terminal": surfaces.terminal(printed),
        "summary_csv": surfaces.summary_csv(out / "summary.csv"),
        "figures_json": surfaces.figures_json(out / "figures.json"),
        "weekly_page": surfaces.page((out / "weekly-report.html").read_text(encoding="utf-8")),
        "xlsx": surfaces.xlsx(tk.report(store, tmp_path / "week.xlsx", format="xlsx")),
        "analysis": surfaces.from_analysis(store),
    }  # the Dashboard needs the service, gone with the demo: the scenario below reads it
    assert surfaces.disagreements(readings) == []
    shown = {name for reading in readings.values() for name in reading}
    assert shown == {f.name for f in metrics.FIGURES.values() if set(f.shown_on) - {"dashboard"}}


@pytest.mark.slow
def test_each_figure_reads_the_same_with_held_pages_novels_and_stalls(
    emulator, workspace, comic_project, novel_project, client, tmp_path, capsys
):
    root = tmp_path / "store"
    store, waiting = needing_people(emulator, client, comic_project["id"], novel_project["id"],
                                    root)  # fmt: skip
    for _ in range(6):  # two hours more: the stall is one past the default threshold too
        emulator.advance(1200)
        store.take(client)
    capsys.readouterr()
    assert main(["report", "--store", str(root), "--out", str(tmp_path / "report")]) == 0
    printed = capsys.readouterr().out
    page = tk.report(store, tmp_path / "week.html").read_text(encoding="utf-8")
    dash = Dashboard(client, store=store)  # the service's now is the last snapshot's
    readings = {
        "terminal": surfaces.terminal(printed),
        "summary_csv": surfaces.summary_csv(tmp_path / "report" / "summary.csv"),
        "figures_json": surfaces.figures_json(tmp_path / "report" / "figures.json"),
        "weekly_page": surfaces.page(page),
        "xlsx": surfaces.xlsx(tk.report(store, tmp_path / "week.xlsx", format="xlsx")),
        "analysis": surfaces.from_analysis(store),
        "dashboard": surfaces.dashboard(dash),
    }
    assert surfaces.disagreements(readings) == []
    # What the scenario holds shows: five chapters wait for a person, one a novel's.
    assert len(waiting) == 5
    needs = readings["dashboard"]["needs_action"]
    assert needs == {"Moonlit Harbor": ["4"], "River of Stars": ["1"]}
    assert readings["figures_json"]["needs_action"]["total"] == ["5"]
    assert "Held pages (1)" in [label for label, _ in dash.filter.options]


# -- the same scans on the demo at its defaults: 24 simulated hours (the slow group) ---


@pytest.fixture(scope="module")
def full_day(tmp_path_factory):
    """`toolkit demo` at its default length, once for the tests below."""
    from short_demo import run_short_demo

    return run_short_demo(tmp_path_factory.mktemp("full-day") / "demo", hours=24)


@pytest.mark.slow
def test_the_24_hour_demo_reads_the_registry_on_every_surface(full_day, tmp_path):
    # Every scan above, on what a user's first `toolkit demo` writes and prints.
    test_the_demos_files_are_headed_by_registry_names(full_day)
    test_the_demos_terminal_tables_and_weekly_page_use_registry_labels(full_day)
    test_the_plots_titles_axes_and_legends_use_registry_labels(full_day)
    test_the_weekly_pages_headings_and_sentences_count_by_registry_labels(full_day)
    test_each_figure_reads_the_same_on_every_surface_of_the_demo(full_day, tmp_path)

"""The registry of figures: one label per quantity, docs/figures.md generated from it."""

from __future__ import annotations

import contextlib
import io
import json
import re
from collections.abc import Iterable
from pathlib import Path

import matplotlib.pyplot
import pandas as pd
import pytest
from epochs import SUITE_START
from html_page import Page

import toolkit as tk
from toolkit import formatting, metrics, plots
from toolkit.demo import run_demo
from toolkit.store import SnapshotStore

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


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The 6-hour demo's folder and what it printed (the 24-hour one says the same)."""
    out = tmp_path_factory.mktemp("labels") / "demo"
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        run_demo(out=out, hours=6, start=SUITE_START)
    return out, printed.getvalue()


def unknown(labels: Iterable[str]) -> list[str]:
    return sorted({text for text in labels if text and not metrics.known(text)})


def test_the_demos_files_are_headed_by_registry_names(demo):
    out, _ = demo
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


def test_the_demos_terminal_tables_and_weekly_page_use_registry_labels(demo):
    out, printed = demo
    heads = [line for line in printed.splitlines() if re.match(r"(project|kind|workspace)  ", line)]
    assert len(heads) >= 4  # figures, forecast, model comparison, spend this month
    cells = [cell for line in heads for cell in re.split(r"\s{2,}", line.strip())]
    page = Page((out / "weekly-report.html").read_text(encoding="utf-8"))
    headers = [cell for row in page.rows[:1] for cell in row]
    headers += [cell for row in page.rows if row and row[0] in ("Project", "Figure", "Day")
                for cell in row if not PERIOD.match(cell)]  # fmt: skip
    assert unknown(cells) == [] and unknown(headers) == []
    assert "lines still to translate" not in printed


def test_the_plots_axes_and_legends_use_registry_labels(demo):
    out, _ = demo
    store = SnapshotStore(str(out / "snapshots"))
    texts = []
    for draw in (plots.progress, plots.throughput, plots.credit_spend, plots.status_breakdown,
                 plots.cycle_times, plots.burn_down):  # fmt: skip
        ax = draw(store)
        legend = ax.get_legend()
        texts += [ax.get_xlabel(), ax.get_ylabel(), legend.get_title().get_text() if legend else ""]
        matplotlib.pyplot.close(ax.figure)
    assert unknown(texts) == []


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

"""The registry of figures: one label per quantity, docs/figures.md generated from it."""

from __future__ import annotations

from pathlib import Path

import toolkit as tk
from toolkit import formatting, metrics

DOCS = Path(__file__).resolve().parents[1] / "docs" / "figures.md"


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
    assert formatting.show("hours_per_page", 0.00728) == "0 min"
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

"""Each section of the weekly page, and each table the report prints, that has nothing to
show for the data at hand says so in one line while the rest renders (issue 36)."""

from __future__ import annotations

from pathlib import Path

import pytest
from datafakes import FakeService, hours
from html_page import Page

import toolkit as tk
from toolkit.reporting import report, write_report
from toolkit.reporting.summary import _NOTHING
from toolkit.store import SnapshotStore


def _store(root: Path, *, projects: int, chapter: dict[str, object] | None) -> SnapshotStore:
    """Two snapshots an hour apart; `chapter`: one chapter's state at the second."""
    service = FakeService()
    for number in range(1, projects + 1):
        service.add_project(f"p{number}", name=f"Project {number}", languages=("en",))
    store = SnapshotStore(root)
    if chapter is not None:
        service.add_chapter("c1", "p1", pages=2, credits=2, covered=3, languages=("en",),
                            created=hours(0))  # fmt: skip
    store.write(tk.pull(service), at=hours(0))
    if chapter is not None:
        service.update("c1", **chapter)
    store.write(tk.pull(service), at=hours(1))
    return store


def _nothing_lines(path: Path) -> list[str]:
    html = path.read_text(encoding="utf-8")
    return [part.split("</p>")[0] for part in html.split('<p class="nothing">')[1:]]


def test_a_workspace_with_no_project_gets_a_page_of_one_line_sections(tmp_path):
    store = _store(tmp_path / "store", projects=0, chapter=None)
    page = report(store, tmp_path / "week.html")
    assert _nothing_lines(page) == [
        "No project yet: the snapshots have found no project in this workspace.",
        "No credits were paid for re-runs in this period.",
        "No day to show: nothing was translated or charged between this period&#x27;s snapshots.",
        "No chapter yet: the last snapshot found none.",
    ]
    text = page.read_text(encoding="utf-8")
    assert "no finish to check yet" in text  # the track record's own line
    assert "No chapter is waiting for review" in text


def test_a_project_with_no_chapter_has_its_table_and_the_empty_sections_their_lines(tmp_path):
    store = _store(tmp_path / "store", projects=1, chapter=None)
    page = report(store, tmp_path / "week.html")
    lines = _nothing_lines(page)
    assert "No chapter yet: the last snapshot found none." in lines
    assert not any(line.startswith("No project yet") for line in lines)
    rows = Page(page.read_text(encoding="utf-8")).rows
    assert any(row[0] == "Project 1" for row in rows)


def test_a_finished_chapter_draws_every_section_but_the_rework(tmp_path):
    finished = {"processing": False, "status": "needs_review", "covered": 9}
    store = _store(tmp_path / "store", projects=1, chapter=finished)
    page = report(store, tmp_path / "week.html")
    assert _nothing_lines(page) == ["No credits were paid for re-runs in this period."]
    html = page.read_text(encoding="utf-8")
    assert html.count("<img ") == 3  # lines and credits per day, where chapters stand


@pytest.mark.parametrize(
    ("chapter", "empty"),
    [
        (None, ["forecast", "model_comparison"]),
        ({"processing": False, "status": "needs_review", "covered": 9}, ["forecast"]),
    ],
    ids=["no chapter", "one finished chapter"],
)
def test_an_empty_table_of_the_report_is_one_line_in_the_terminal(tmp_path, capsys, chapter, empty):
    store = _store(tmp_path / "store", projects=1, chapter=chapter)
    write_report(store, out=tmp_path / "out")
    printed = capsys.readouterr().out
    for name in empty:
        heading = name.replace("_", " ").capitalize()
        assert f"\n{heading}:\n  ({_NOTHING[name]})\n" in printed
    assert "Spend this month:\nworkspace" in printed  # the others are tables

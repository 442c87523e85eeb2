"""Each section of the weekly page, and each table the report prints, that has nothing to
show for the data at hand says so in one line while the rest renders (issue 36)."""

from __future__ import annotations

import re
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
@pytest.mark.slow
def test_an_empty_table_of_the_report_is_one_line_in_the_terminal(tmp_path, capsys, chapter, empty):
    store = _store(tmp_path / "store", projects=1, chapter=chapter)
    write_report(store, out=tmp_path / "out")
    printed = capsys.readouterr().out
    for name in empty:
        heading = name.replace("_", " ").capitalize()
        assert f"\n{heading}:\n  ({_NOTHING[name]})\n" in printed
    assert "Spend this month:\nworkspace" in printed  # the others are tables


# -- a store of one snapshot, and a period no snapshot falls in ------------------------

ONE_SNAPSHOT = "One snapshot so far: figures over a period need a second one."
EMPTY_PERIOD = "No snapshot was taken in this period after the first, so it has no figures."


def _first_snapshot_only(root: Path) -> SnapshotStore:
    service = FakeService()
    service.add_project("p1", name="Project 1", languages=("en",))
    service.add_chapter("c1", "p1", pages=2, credits=2, covered=3, languages=("en",),
                        created=hours(0))  # fmt: skip
    store = SnapshotStore(root)
    store.write(tk.pull(service), at=hours(0))
    return store


def test_the_page_of_a_first_snapshot_says_once_per_period_section_it_needs_a_second(tmp_path):
    page = report(_first_snapshot_only(tmp_path / "store"), tmp_path / "week.html")
    html = page.read_text(encoding="utf-8")
    # Against the previous period, re-runs, day by day; where chapters stand is drawn.
    assert _nothing_lines(page) == [ONE_SNAPSHOT] * 4  # the explanations' section too
    assert "the first snapshot</p>" in html
    assert "take another (toolkit snapshot) an hour or so after it." in html
    (row,) = [row for row in Page(html).rows if row[0] == "Project 1"]
    # Over the period: no data; at the snapshot: its open lines and chapters needing a person.
    assert row[1:7] == ["–"] * 6 and row[7:9] != ["–", "–"]
    assert html.count("<img ") == 1  # where chapters stand, as of the snapshot
    # A number links only to rows the page carries: none here, so no link dangles.
    assert set(re.findall(r'href="#([^"]+)"', html)) <= set(re.findall(r'id="([^"]+)"', html))


NOT_KNOWN = (
    "No snapshot had been taken by the end of this period, so the chapters&#x27; states "
    "then are not known."
)


def test_the_page_of_a_period_no_snapshot_falls_in_says_so_per_section(tmp_path):
    store = _store(tmp_path / "store", projects=1, chapter={"covered": 9})
    page = report(store, tmp_path / "week.html", since=hours(-72), until=hours(-24))
    # Where chapters stood at its end is not today's: no snapshot had been taken yet.
    assert _nothing_lines(page) == [EMPTY_PERIOD] * 3 + [NOT_KNOWN, EMPTY_PERIOD]
    assert "no snapshot in this period</p>" in page.read_text(encoding="utf-8")


@pytest.mark.slow
def test_a_past_periods_page_draws_the_states_its_last_snapshot_found(tmp_path, monkeypatch):
    store = _store(tmp_path / "store", projects=1, chapter={"covered": 9})
    drawn = []
    draw = tk.plots.status_breakdown
    monkeypatch.setattr(tk.plots, "status_breakdown",
                        lambda *a, **k: drawn.append(k["at"]) or draw(*a, **k))  # fmt: skip
    report(store, tmp_path / "past.html", since=hours(-24), until=hours(1))
    report(store, tmp_path / "week.html")
    assert drawn == [hours(0), hours(1)]  # the period's last snapshot; then the latest


@pytest.mark.parametrize(
    ("option", "written"),
    [
        ("--html", "weekly-report.html"),
        ("--json", "figures.json"),
        ("--xlsx", "figures.xlsx"),
        (None, "summary.csv"),  # the PNG report
    ],
    ids=["html", "json", "xlsx", "png"],
)
@pytest.mark.slow
def test_every_format_of_the_command_writes_a_first_snapshots_report(tmp_path, capsys, option,
                                                                     written):  # fmt: skip
    from toolkit.cli import main

    store = _first_snapshot_only(tmp_path / "store")
    argv = ["report", "--store", str(store.root), "--out", str(tmp_path / "out")]
    assert main(argv + ([option] if option else [])) == 0
    assert capsys.readouterr().err == ""
    assert (tmp_path / "out" / written).stat().st_size > 0


@pytest.mark.parametrize("format", ["html", "json", "xlsx"])
def test_every_format_of_tk_report_writes_a_report_of_an_empty_period(tmp_path, format):
    store = _store(tmp_path / "store", projects=1, chapter={"covered": 9})
    path = report(store, tmp_path / f"r.{format}", format=format,  # type: ignore[arg-type]
                  since=hours(-72), until=hours(-24))  # fmt: skip
    assert path.stat().st_size > 0


def test_a_store_with_no_snapshot_is_refused_in_one_line_saying_what_to_do(tmp_path):
    with pytest.raises(tk.ToolkitError, match=r"needs a snapshot; take one \(`toolkit snapshot`\)"):
        report(tmp_path / "empty", tmp_path / "week.html")


# -- the tables by a tag, with nothing to group ----------------------------------------

NO_PROJECT = "No project yet: the snapshots have found no project in this workspace."


@pytest.mark.parametrize(
    ("case", "line"),
    [("first snapshot", ONE_SNAPSHOT), ("empty period", EMPTY_PERIOD), ("no project", NO_PROJECT)],
    ids=["first snapshot", "empty period", "no project"],
)
def test_a_page_by_a_tag_with_nothing_to_group_says_why_under_each_tag_heading(tmp_path, case,
                                                                               line):  # fmt: skip
    if case == "first snapshot":
        store, period = _first_snapshot_only(tmp_path / "store"), {}
    elif case == "empty period":
        store = _store(tmp_path / "store", projects=1, chapter={"covered": 9})
        period = {"since": hours(-72), "until": hours(-24)}
    else:
        store, period = _store(tmp_path / "store", projects=0, chapter=None), {}
    tags = {"Project 1": {"client": "Acme"}}
    html = report(store, tmp_path / "week.html", tags=tags, **period).read_text(encoding="utf-8")
    # Each tag's heading, then its one line: no table of dashes, or of an empty total.
    headings = re.findall(r"<h2>By ([^<]+)</h2>\n<p class=\"nothing\">([^<]+)</p>", html)
    assert ("client", line) in headings
    assert html.count("<h2>By ") == len(headings)
    assert {said for _, said in headings} == {line}
    assert "Where each number by a tag comes from" not in html
    assert set(re.findall(r'href="#([^"]+)"', html)) <= set(re.findall(r'id="([^"]+)"', html))

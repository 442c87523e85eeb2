"""The weekly HTML report: its figures, its page (parsed), and the page in Chromium."""

from __future__ import annotations

import base64
import shutil
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pandas as pd
import pytest
from datafakes import T0, FakeService
from html_page import Page
from report_stores import three_days, two_days

import toolkit as tk
from toolkit.cli import main
from toolkit.errors import ToolkitError
from toolkit.formatting import show
from toolkit.reporting.weekly import STORY_PROJECTS, gather, sentences, track_record
from toolkit.store import SnapshotStore

# The ninth pass (docs/testing.md): in the slow group, which CI runs as its own step.
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> SnapshotStore:
    """Two days of history, written once for the module's tests: they read it."""
    return two_days(tmp_path_factory.mktemp("two_days") / "store")


@pytest.fixture(scope="module")
def week(store, tmp_path_factory) -> Path:
    """The store's page of its default period, written once for the tests that read it
    (into a folder that did not exist: `tk.report` makes it)."""
    return tk.report(store, tmp_path_factory.mktemp("week") / "out" / "week.html")


def test_the_figures_per_project(store):
    weekly = gather(store)
    table = weekly.projects.set_index("project")
    moon, star, quiet = (
        table.loc["Moonlit Harbor"],
        table.loc["Star Courier"],
        table.loc["Quiet Isles"],
    )
    assert (moon["chapters_finished"], moon["credits"], moon["rework_credits"]) == (2, 14, 4)
    assert (moon["rework_failed"], moon["rework_stalled"], moon["rework_rescan"]) == (4, 0, 0)
    assert (moon["runs_failed"], moon["runs_stalled"]) == (1, 0)
    assert (star["chapters_finished"], star["credits"], star["rework_stalled"]) == (1, 4, 2)
    assert (star["runs_failed"], star["runs_stalled"]) == (0, 1)
    assert quiet[["chapters_finished", "credits", "lines"]].tolist() == [0, 0, 0]
    assert weekly.projects["lines"].sum() == tk.analysis.throughput(store)["lines"].sum()


def test_the_sentences(store):
    assert sentences(gather(store)) == [
        "Moonlit Harbor: 2 chapters finished; 29% of its credits spent went to re-runs, "
        "mostly after failures; 1 run failed.",
        "Star Courier: 1 chapter finished; 50% of its credits spent went to re-runs, "
        "mostly after stalls; 1 run stalled.",
    ]


def test_the_story_names_the_busiest_projects_and_counts_the_rest(tmp_path):
    # An agency's many projects would bury the page's first screen: the ten that spent
    # most are named, busiest first, and one line counts the others.
    service = FakeService()
    for n in range(1, 13):
        service.add_project(f"p{n}", name=f"Series {n:02}", languages=("en",))
    store = SnapshotStore(tmp_path / "store")
    store.write(tk.pull(service), at=T0)
    for n in range(1, 13):
        service.add_chapter(f"c{n}", f"p{n}", pages=n, credits=n, covered=3, created=T0)
    store.write(tk.pull(service), at=T0 + timedelta(hours=1))
    said = sentences(gather(store))
    assert [line.split(":")[0] for line in said[:STORY_PROJECTS]] == [
        f"Series {n:02}" for n in range(12, 2, -1)
    ]
    assert said[STORY_PROJECTS:] == [
        "And 2 more projects with work in this period: each has its row in the table below."
    ]
    page = Page(tk.report(store, tmp_path / "week.html").read_text(encoding="utf-8"))
    assert page.items == said
    assert {"Series 01", "Series 02"} <= {row[0] for row in page.rows}


def test_partial_days_and_the_window(store):
    weekly = gather(store)
    days = weekly.period.days
    assert days["covered"].tolist() == ["from 09:00 UTC", "until 11:00 UTC"]
    assert days["partial"].tolist() == [True, True]
    only_tuesday = gather(store, since="2026-03-03")
    assert only_tuesday.period.start == pd.Timestamp("2026-03-03", tz="UTC")
    assert only_tuesday.projects.set_index("project").loc["Star Courier", "credits"] == 0
    assert only_tuesday.period.snapshots == 1
    assert only_tuesday.period.days["covered"].tolist() == ["until 11:00 UTC"]


def test_the_page_is_self_contained_and_says_what_the_figures_say(store, week):
    page = Page(week.read_text(encoding="utf-8"))
    assert page.title == "Translation week to 03 Mar 2026"
    assert page.outside == []
    assert len(page.images) == 4
    for src in page.images:
        assert base64.b64decode(src.removeprefix("data:image/png;base64,"))[:4] == b"\x89PNG"
    assert page.items == sentences(gather(store))
    rows: dict[str, list[str]] = {}
    for row in page.rows:  # the first table naming a row wins (the summary)
        rows.setdefault(row[0], row[1:])
    # finished, failed, stalled, credits, re-run credits, lines (18 a chapter)
    assert rows["Moonlit Harbor"][:6] == ["2", "1", "0", "14", "4 (29%)", "36"]
    assert rows["All projects"][3:5] == ["18", "6 (33%)"]
    assert rows["Project"][-1] == "Median run time"
    assert rows["Mon 02 Mar *"][-1] == "from 09:00 UTC"
    assert rows["Tue 03 Mar *"][-1] == "until 11:00 UTC"


def test_hours_are_rounded_and_minutes_shown_under_an_hour(week):
    page = Page(week.read_text(encoding="utf-8"))
    cycle = {row[0]: row[-1] for row in page.rows if len(row) == 10}
    # Runs of 2 h and 24 h: a re-scan first seen at 12:00 started after the 11:00
    # snapshot, its earliest possible start (docs/analysis.md, "runs").
    assert cycle["Moonlit Harbor"] == "13.0 h"
    assert cycle["Star Courier"] == "24.0 h"
    assert cycle["Quiet Isles"] == "–"
    assert cycle["All projects"] == "24.0 h"  # the median of 2, 24 and 24 h


def test_tk_report_works_before_and_after_the_module_is_imported(store, tmp_path):
    code = (
        "import sys, toolkit as tk; first = tk.report; import toolkit.reporting; "
        f"tk.report({str(store.root)!r}, {str(tmp_path / 'a.html')!r}); "
        f"first({str(store.root)!r}, {str(tmp_path / 'b.html')!r}); print('ok')"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.strip() == "ok", out.stderr
    assert (tmp_path / "a.html").read_text() != ""
    assert "report" in tk.__all__


def test_the_command_writes_the_page(store, tmp_path, capsys):
    assert main(["report", "--html", "--store", str(store.root), "--out", str(tmp_path)]) == 0
    assert f"Weekly report written to {tmp_path / 'weekly-report.html'}" in capsys.readouterr().out
    assert (tmp_path / "weekly-report.html").stat().st_size > 10_000


def test_a_store_without_history_says_what_to_do(tmp_path, capsys):
    assert (
        main(["report", "--html", "--store", str(tmp_path / "empty"), "--out", str(tmp_path)]) == 1
    )
    assert "the report needs a snapshot; take one" in capsys.readouterr().err
    with pytest.raises(ToolkitError, match="is a folder"):
        tk.report(tmp_path / "empty", tmp_path)


CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


@pytest.mark.skipif(not shutil.which(CHROMIUM), reason="headless Chromium is not installed")
def test_the_page_opens_in_headless_chromium(week, tmp_path):
    playwright = pytest.importorskip("playwright.sync_api")
    path = week
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=CHROMIUM,
            headless=True,
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"],
        )
        try:
            page = browser.new_page(viewport={"width": 1100, "height": 900})
            errors: list[str] = []
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on(
                "request",
                lambda r: None if r.url.startswith(("file:", "data:")) else errors.append(r.url),
            )
            page.goto(path.as_uri())
            loaded = page.evaluate(
                "Array.from(document.images).map(i => i.complete && i.naturalWidth > 0)"
            )
            heading = page.inner_text("h1")
            page.screenshot(path=str(tmp_path / "week.png"), full_page=True)
        finally:
            browser.close()
    assert loaded == [True] * 4
    assert heading == "Translation week to 03 Mar 2026"
    assert errors == []
    assert (tmp_path / "week.png").stat().st_size > 20_000


def test_no_legend_sits_on_the_data(store):
    from toolkit.reporting.page import daily_plot

    for measure in ("lines", "credits"):
        figure = daily_plot(gather(store), measure)
        figure.canvas.draw()
        ax = figure.axes[0]
        legend = ax.get_legend().get_window_extent()
        assert legend.x0 >= ax.get_window_extent().x1, measure  # beside the bars


def test_this_period_against_the_previous_one(store, week, tmp_path):
    # Tuesday against Monday: both have snapshots, so each change is computed.
    tuesday = gather(store, since="2026-03-03")
    assert tuesday.previous.period.label() == "2 Mar 09:00-12:00 UTC"
    page = Page(tk.report(store, tmp_path / "tue.html", since="2026-03-03").read_text())
    changes = {row[0]: row[1:] for row in page.rows if len(row) == 4}
    now, before = tuesday.figures.totals, tuesday.previous.totals
    assert changes["Credits spent"] == [
        str(now["credits"]), str(before["credits"]), f"{now['credits'] - before['credits']:+,}"
    ]  # fmt: skip
    # The whole history against the days before it, which have no snapshot: no change.
    page = Page(week.read_text())
    changes = {row[0]: row[1:] for row in page.rows if len(row) == 4}
    assert changes["Credits spent"] == ["18", "–", "–"]
    assert changes["Lines translated"][1:] == ["–", "–"]


@pytest.fixture(scope="module")
def reviewed(tmp_path_factory) -> SnapshotStore:
    return three_days(tmp_path_factory.mktemp("reviewed") / "store")


def test_the_track_record_and_the_review_backlog_are_the_analysis_figures(reviewed, tmp_path):
    weekly = gather(reviewed)
    when = weekly.period
    record = tk.analysis.forecast_accuracy(reviewed, since=when.since, until=when.until)
    inside, checked = int(record["inside"].sum()), int(record["replays"].sum())
    assert checked > 0  # Steady's finish at hour 48 is checked by the replay a day before
    # How the band was set: calibrated from the same replays the record counts.
    band = tk.analysis.band_calibration(reviewed, since=when.since, until=when.until)
    assert (band.replays, band.held) == (checked, inside)
    line = (f"Over {when.label()}, {inside / checked:.0%} of finishes fell inside the "
            f"forecast's p10-p90 band ({inside} of {checked} "
            f"{'finish' if checked == 1 else 'finishes'} checked). "
            f"The band is {band.says()}.")  # fmt: skip
    assert track_record(weekly) == line
    assert weekly.band == band
    page = Page(tk.report(reviewed, tmp_path / "week.html").read_text(encoding="utf-8"))
    assert line in page.texts
    backlog = tk.analysis.review_backlog(reviewed, window="4D").set_index("project")
    review = {row[0]: row[1:] for row in page.rows if len(row) == 4 and row[0] in backlog.index}
    assert review["Reviewed"] == [
        str(backlog.loc["Reviewed", "waiting"]),
        f"{backlog.loc['Reviewed', 'oldest_wait_hours']:.1f} h",
        show("reviews_per_day", backlog.loc["Reviewed", "reviews_per_day"]),
    ]
    # r2 waits since hour 0; r1 reviewed once in the 68 hours the store saw (0.35 a day).
    assert review["Reviewed"] == ["1", "68.0 h", "0.35"]  # as the registry shows a pace
    assert set(review) == {"Steady", "Reviewed"}


def test_with_no_finish_to_check_the_page_says_so(store, week):
    weekly = gather(store)
    assert tk.analysis.forecast_accuracy(store).empty
    assert track_record(weekly).endswith(
        ", no finish to check yet: the forecast's band is checked once the work it "
        "forecast is done. The band is the model's band: 0 past replays are too few to "
        "calibrate it at 80% (0 held)."
    )
    page = Page(week.read_text(encoding="utf-8"))
    assert track_record(weekly) in page.texts

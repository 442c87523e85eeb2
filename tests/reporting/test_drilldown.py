"""The weekly page's drill-down: every headline number links to a section of the same
page that shows its rows and names the command that prints them all; in a browser,
following a link lands on that section."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from html import unescape
from pathlib import Path

import pytest
from headless import launch, missing
from report_stores import trouble

import toolkit as tk
from toolkit.analysis.observed import Observed
from toolkit.cli import main
from toolkit.formatting import show
from toolkit.reporting.drilldown import LINKED, anchor
from toolkit.reporting.figures import FIGURES, figures
from toolkit.reporting.rework_causes import CAUSES, rework_causes

# The ninth pass (docs/testing.md): in the slow group, which CI runs as its own step.
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def written(tmp_path_factory) -> tuple[tk.SnapshotStore, Path]:
    """A store with re-scans, stalls and held pages, and its weekly page: written once
    for the module's tests, which read them."""
    root = tmp_path_factory.mktemp("drilldown")
    store = trouble(root / "store")
    return store, tk.report(store, root / "weekly.html")


@pytest.fixture
def page(written) -> tuple[tk.SnapshotStore, str]:
    store, path = written
    return store, path.read_text()


def test_every_number_of_the_projects_table_links_to_its_section(page):
    store, html = page
    links = re.findall(r'<a href="#(explain-\w+)"[^>]*>([^<]*)</a>', html)
    sections = set(re.findall(r'<section id="(explain-\w+)">', html))
    assert sections == {anchor(name) for name in LINKED}
    assert {target for target, _ in links} == sections
    figs = figures(store)
    # The total row's numbers link to their figure: one link a figure per project and
    # for all projects in the projects' table, and one in the change table (re-run
    # credits also per project in the re-runs' table).
    for name in FIGURES:
        texts = [text for target, text in links if target == anchor(name)]
        again = len(figs.projects) if name == "rework_credits" else 0
        assert len(texts) == len(figs.projects) + 2 + again, name
        assert f"{figs.totals[name]:,}" in {t.split(" ")[0] for t in texts}, name
    # Re-run credits by cause and their share: each project's cell of the re-runs' table;
    # the review backlog: each project's row that waits or was reviewed (c1 waits).
    for name in (*(f"rework_{cause}" for cause in CAUSES), "rework_share"):
        texts = [text for target, text in links if target == anchor(name)]
        assert len(texts) == len(figs.projects), name
    for name in ("needs_review", "oldest_wait_hours", "reviews_per_day"):
        assert [text for target, text in links if target == anchor(name)] == [
            {"needs_review": "1", "oldest_wait_hours": "6.0 h", "reviews_per_day": "0.00"}[name]
        ], name


def shown_total(store: tk.SnapshotStore, name: str) -> str:
    """The workspace's figure as the page's tables make it."""
    figs = figures(store)
    if name in figs.totals:
        return show(name, figs.totals[name])
    if name == "rework_share":
        return show(name, figs.totals["rework_credits"] / figs.totals["credits"])
    if name.startswith("rework_"):
        return show(name, rework_causes(Observed(store), figs.period)[name].sum())
    when = figs.period
    backlog = tk.analysis.review_backlog(store, window=(when.until - when.since).ceil("D"))
    how = {"needs_review": ("waiting", "sum"), "oldest_wait_hours": ("oldest_wait_hours", "max"),
           "reviews_per_day": ("reviews_per_day", "sum")}[name]  # fmt: skip
    return show(name, getattr(backlog[how[0]], how[1])())


def test_a_section_says_the_figure_and_the_command_that_prints_every_row(page, capsys):
    store, html = page
    for name in LINKED:
        body = html.split(f'<section id="{anchor(name)}">', 1)[1].split("</section>", 1)[0]
        said = re.search(r'<p class="total">In [^:]+: ([^,]+), from', body)
        assert said is not None, name
        assert said.group(1) == shown_total(store, name), name
        command = unescape(re.search(r"<code>(.*?)</code>", body).group(1))
        argv = shlex.split(command)
        assert argv[:3] == ["toolkit", "explain", name]
        assert main(argv[1:]) == 0
        first = capsys.readouterr().out.splitlines()[0]
        assert f": {said.group(1)}" in first, (name, first)


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.skipif(missing("playwright") is not None, reason=str(missing("playwright")))
def test_following_a_number_in_a_browser_lands_on_its_rows(written):
    from playwright.sync_api import sync_playwright

    store, path = written
    total = figures(store).totals["rework_credits"]
    with sync_playwright() as p:
        browser = launch(p)
        try:
            tab = browser.new_page()
            tab.goto(path.as_uri())
            tab.locator("tr.total a[href='#explain-rework_credits']").click()
            assert tab.evaluate("location.hash") == "#explain-rework_credits"
            target = tab.locator("section:target")
            assert target.get_attribute("id") == "explain-rework_credits"
            assert target.is_visible()
            assert f"In credits: {total}," in target.locator("p.total").inner_text()
            assert "c2/2" in target.inner_text() or "Star Courier" in target.inner_text()
        finally:
            browser.close()


def test_the_page_renders_its_rows_where_jinja2_is_not_installed(page, tmp_path):
    # A wheel installs no jinja2 (pandas' Styler needs it): the page's tables are its own
    # HTML. A fresh process, so no earlier import of the Styler hides the gap.
    store, _ = page
    out = tmp_path / "week.html"
    script = (
        "import sys; sys.modules['jinja2'] = None\n"
        "from toolkit.reporting.html import report\n"
        "from toolkit.store import SnapshotStore\n"
        f"report(SnapshotStore({str(store.root)!r}), {str(out)!r})\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    html = out.read_text(encoding="utf-8")
    assert '<section id="explain-credits">' in html and "<td" in html.split("explain-credits")[1]

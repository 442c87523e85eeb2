"""The weekly page by a tag (`tk.report(..., tags=)`, `toolkit report --html --config
watch.toml --store PATH`): one workspace of two projects on its own emulator. Each
tag's table is `toolkit explain FIGURE --by KEY`'s and the agency page's, and agrees
with the emulator's ledger; every number opens rows on the page that add up to it."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from agency_stores import TAGS, Studio, two_studios, watch_config
from epochs import SUITE_START
from headless import launch, missing
from html_page import Page
from linked_pages import numbers, opened, table

import toolkit as tk
from toolkit.cli import main
from toolkit.metrics import header
from toolkit.reporting.agency_page import gather_agency
from toolkit.reporting.figures import FIGURES

# The ninth pass (docs/testing.md): in the slow group, which CI runs as its own step.
pytestmark = pytest.mark.slow

KEYS = ("client", "team")


@pytest.fixture(scope="module")
def studio(tmp_path_factory) -> Studio:
    """studio-a: Moonlit Harbor (client Acme, team north) and Iron Vale (Brio, south)."""
    return two_studios(tmp_path_factory.mktemp("stores"), SUITE_START)["studio-a"]


@pytest.fixture(scope="module")
def config(studio, tmp_path_factory) -> Path:
    return watch_config(tmp_path_factory.mktemp("config") / "watch.toml", {studio.name: studio})


@pytest.fixture(scope="module")
def written(studio, config, tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("page")
    argv = ["report", "--html", "--config", str(config), "--store", str(studio.store.root)]
    assert main([*argv, "--out", str(folder)]) == 0
    return folder / "weekly-report.html"


@pytest.fixture(scope="module")
def page(written) -> Page:
    return Page(written.read_text(encoding="utf-8"))


def by_tag(page: Page, key: str) -> dict[str, list[tuple[int | None, int | None]]]:
    """A tag's table: each value's (and `All projects`') figures, this week's and the
    previous week's."""
    rows = table(page, key.capitalize())[1:]
    assert [header(name).capitalize() for name in FIGURES] == table(page, key.capitalize())[0][2:]
    return {row[0]: [numbers(cell) for cell in row[2:]] for row in rows}


def test_every_number_by_a_tag_opens_rows_on_the_page_that_add_up_to_it(written, page):
    kinds, linked = opened(written, "UTC", marked=True)
    # The config's two tags, then the service's translation group (no config needed).
    assert kinds == {f"explain-F-{week}{scope}" for week in ("now", "was")
                     for scope in ("", "-w1-P", "-t1-V", "-t2-V", "-t3-V")}  # fmt: skip
    # No run failed or stalled and no chapter waits for a person in these two weeks.
    assert linked == set(FIGURES) - {"runs_failed", "runs_stalled", "needs_action"}
    assert [h for h in page.headings if h.startswith("By ")] == [
        "By client", "By team", "By translation group"
    ]  # fmt: skip


def test_each_tag_s_numbers_are_explain_by_s_the_agency_page_s_and_the_ledger_s(
    studio, config, page, tmp_path, capsys
):
    store = studio.store
    agency = gather_agency({"studio-a": store}, tags=TAGS)
    week = agency.workspaces["studio-a"]
    for key in KEYS:
        shown = by_tag(page, key)
        # The agency page's tag numbers, both weeks (the same store alone).
        for week_index, which in enumerate(("figures", "previous")):
            grouped = agency.by_tag(key, which).set_index(key)
            expected = {value: [None if pd.isna(n) else int(n) for n in grouped.loc[value, FIGURES]]
                        for value in grouped.index}  # fmt: skip
            assert {value: [cell[week_index] for cell in cells] for value, cells in shown.items()
                    if value != "All projects"} == expected, (key, which)  # fmt: skip
        # `toolkit explain FIGURE --by KEY` over the same store and week, every figure.
        when = week.figures.period
        bounds = ["--since", when.since.isoformat(), "--until", when.until.isoformat()]
        for column, figure in enumerate(FIGURES):
            sums = tmp_path / f"{key}-{figure}.csv"
            argv = ["explain", figure, "--by", key, "--config", str(config), "--store",
                    str(store.root), *bounds, "--csv", str(sums)]  # fmt: skip
            assert main(argv) == 0, capsys.readouterr().err
            said = pd.read_csv(sums).set_index(key)[figure].to_dict()
            assert {value: cells[column][0] for value, cells in shown.items()} == {
                value: int(number) for value, number in said.items()
            }, (key, figure)
    # Credits and re-run credits per client, against what the emulator charged.
    clients = by_tag(page, "client")
    for week_index, which in enumerate(("figures", "previous")):
        when = getattr(week, which).period
        charges = studio.charges
        inside = charges[(charges["at"] >= when.start) & (charges["at"] < when.until)]
        for client in ("Acme", "Brio"):
            mine = inside[inside["project"].map(lambda p: TAGS[p]["client"]) == client]
            credits = clients[client][FIGURES.index("credits")][week_index]
            rework = clients[client][FIGURES.index("rework_credits")][week_index]
            assert (credits, rework) == (
                int(mine["credits"].sum()),
                int(mine.loc[mine["rework"], "credits"].sum()),
            ), (client, which)
    assert clients["Acme"][FIGURES.index("rework_credits")][0] > 0  # the re-scan


def test_without_tags_the_page_has_no_table_by_tag(studio, tmp_path):
    plain = Page(tk.report(studio.store, tmp_path / "plain.html").read_text(encoding="utf-8"))
    assert not [h for h in plain.headings if h.startswith(("By ", "Where each number by"))]


SHOTS = Path(__file__).resolve().parents[2] / "build" / "browser"


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.skipif(missing("playwright") is not None, reason=str(missing("playwright")))
def test_a_client_s_credits_open_its_projects_in_a_browser(written):
    """Click a client's credits this week: the page lands on the client's projects, whose
    credits add up to the number clicked; then a project's, which lands on its chapters.
    Screenshots (build/browser/weekly-tag-*.png) are kept to look at."""
    from playwright.sync_api import sync_playwright

    SHOTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = launch(p)
        try:
            tab = browser.new_page(viewport={"width": 1100, "height": 900})
            tab.goto(written.as_uri())
            clients = tab.locator("h2:text-is('By client') + table")
            link = clients.locator("a[data-figure='credits'][href*='-now-t']").first
            clicked = int(link.inner_text().replace(",", ""))
            target = link.get_attribute("href")
            link.scroll_into_view_if_needed()
            tab.screenshot(path=str(SHOTS / "weekly-tag-table.png"))
            link.click()
            assert tab.evaluate("location.hash") == target
            group = tab.locator(f"[id='{target[1:]}']")
            assert group.is_visible()
            values = group.locator("td[data-figure='credits']").all_inner_texts()
            assert sum(int(v.replace(",", "")) for v in values) == clicked > 0
            tab.screenshot(path=str(SHOTS / "weekly-tag-projects.png"))
            down = group.locator("a[data-figure='credits']").first
            down.click()
            rows = tab.locator(f"[id='{down.get_attribute('href')[1:]}']")
            assert rows.is_visible()
            tab.screenshot(path=str(SHOTS / "weekly-tag-chapters.png"))
        finally:
            browser.close()

"""The agency page (`toolkit report --html --config watch.toml`): two workspaces, each
its own emulator on a free port and its own store. Its numbers are each workspace's
weekly page's and figures.json's; the groups by a tag add up to the totals and agree
with the emulators' ledgers."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest
from agency_stores import PLAN, SHARED_GROUP, TAGS, Studio, two_studios, watch_config
from epochs import SUITE_START
from headless import launch, missing
from html_page import Page
from linked_pages import numbers, opened, table
from report_stores import trouble, two_days

import toolkit as tk
from toolkit.cli import main
from toolkit.metrics import header, known
from toolkit.reporting.agency_drilldown import FORECAST as OUTLOOK_SHOWN
from toolkit.reporting.agency_drilldown import OUTLOOK
from toolkit.reporting.agency_page import Agency, gather_agency, write_agency_page
from toolkit.reporting.figures import FIGURES, figures
from toolkit.reporting.weekly import previous_figures

# The ninth pass (docs/testing.md): in the slow group, which CI runs as its own step.
pytestmark = pytest.mark.slow

HEADERS = [header(name).capitalize() for name in FIGURES]


@pytest.fixture(scope="module")
def studios(tmp_path_factory) -> dict[str, Studio]:
    return two_studios(tmp_path_factory.mktemp("stores"), SUITE_START)


@pytest.fixture(scope="module")
def written(studios, tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("page")
    config = watch_config(folder / "watch.toml", studios)
    assert main(["report", "--html", "--config", str(config), "--out", str(folder)]) == 0
    return folder / "agency-report.html"


@pytest.fixture(scope="module")
def page(written) -> Page:
    return Page(written.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def agency(studios) -> Agency:
    """The agency page's figures of both workspaces, gathered once for the tests that
    read its periods (read them, never change them)."""
    return gather_agency({n: s.store for n, s in studios.items()}, tags=TAGS)


@pytest.fixture(scope="module")
def this_week(studios, tmp_path_factory) -> dict[str, tuple[dict[str, list[int | None]], dict]]:
    """Each workspace's weekly page of its last week as a reader sees it
    (`weekly_page_figures`), written once for the two tests that read it."""
    folder = tmp_path_factory.mktemp("weekly")
    return {name: weekly_page_figures(s.store, folder / name) for name, s in studios.items()}


def figures_of_workspaces(page: Page) -> list[list[str]]:
    """The rows of the workspaces' figures (the second table headed `Workspace`; the
    first says each one's weeks), the total last."""
    return [row for row in page.rows if len(row) == 1 + len(FIGURES) and row[0] != "Workspace"
            and row[0] in (*PLAN, "All workspaces")]  # fmt: skip


def weekly_page_figures(store, folder: Path, **period) -> tuple[dict[str, list[int | None]], dict]:
    """A workspace's weekly page (of `period`: since, until; by default its last week),
    as a reader sees it: each project's figures (and the total row's, as `All
    projects`), and the totals this period and the previous one."""
    written = tk.report(store, folder / "weekly.html", **period)
    weekly = Page(written.read_text(encoding="utf-8"))
    projects = {}
    for row in table(weekly, header("project").capitalize())[1:]:
        cells = [re.sub(r" \(.*\)$", "", cell) for cell in row[1 : 1 + len(FIGURES)]]
        projects[row[0]] = [None if c == "–" else int(c.replace(",", "")) for c in cells]
    change = {row[0]: row[1:3] for row in table(weekly, header("figure").capitalize())[1:]}
    return projects, change


def test_each_workspace_s_numbers_are_its_weekly_page_s_and_figures_json_s(
    studios, page, this_week, tmp_path
):
    projects = table(page, "Project")
    assert projects[0][2:] == HEADERS
    shown = {(row[1], row[0]): [numbers(c) for c in row[2:]] for row in projects[1:]}
    assert sorted(shown) == sorted((name, p) for name, ps in PLAN.items() for p in ps)
    workspaces = {row[0]: [numbers(c) for c in row[1:]] for row in figures_of_workspaces(page)
                  if row[0] in PLAN}  # fmt: skip
    for name, studio in studios.items():
        weekly, change = this_week[name]
        weekly = dict(weekly)  # the shared page's figures stay whole for the next test
        assert [now for now, _ in workspaces[name]] == weekly.pop("All projects")
        for project, figs in weekly.items():
            assert [now for now, _ in shown[(name, project)]] == figs, (name, project)
        said = json.loads(tk.report(studio.store, tmp_path / name, format="json").read_text())
        assert [now for now, _ in workspaces[name]] == [said["totals"][f] for f in FIGURES]
        for figure, (now, before) in zip(FIGURES, workspaces[name], strict=True):
            on_weekly = change[header(figure).capitalize()]
            assert [now, before] == [None if c == "–" else int(c.replace(",", ""))
                                     for c in on_weekly], (name, figure)  # fmt: skip
    every = [numbers(c) for c in figures_of_workspaces(page)[-1][1:]]
    assert figures_of_workspaces(page)[-1][0] == "All workspaces"
    for column, (now, before) in enumerate(every):
        assert now == sum(w[column][0] for w in workspaces.values())
        assert before == sum(w[column][1] for w in workspaces.values())
    assert page.outside == []  # self-contained: nothing linked or loaded
    # Every header is the registry's words, but the user's own tag names.
    headers = {cell for row in page.rows if row and row[0] in ("Workspace", "Project")
               for cell in row} | set(table(page, "Client")[0][1:])  # fmt: skip
    assert sorted(h for h in headers if not known(h)) == []


def test_each_project_s_and_each_tag_s_numbers_in_both_weeks_are_the_weekly_pages(
    studios, page, agency, this_week, tmp_path
):
    """Each workspace's weekly page of this week and of the previous week (its previous
    period, written as its own page): the agency page's projects, this week and was, are
    those pages' projects; each tag's numbers are the sums of its projects there."""
    pages: dict[tuple[str, str], list[int | None]] = {}  # (workspace, project) -> now+was
    for name, studio in studios.items():
        before = agency.workspaces[name].previous.period
        now, _ = this_week[name]
        was, _ = weekly_page_figures(studio.store, tmp_path / name / "was",
                                     since=before.since, until=before.until)  # fmt: skip
        for project in PLAN[name]:
            pages[(name, project)] = [*now[project], *was[project]]
    shown = {(row[1], row[0]): [number for c in row[2:] for number in numbers(c)]
             for row in table(page, "Project")[1:]}  # fmt: skip
    n = len(FIGURES)
    assert {key: v[0::2] + v[1::2] for key, v in shown.items()} == pages  # now..., was...
    for key in ("client", "team"):
        rows = {
            row[0]: [numbers(c) for c in row[2:]] for row in table(page, key.capitalize())[1:-1]
        }
        for value, cells in rows.items():
            members = [k for k in pages if TAGS.get(k[1], {}).get(key, "(untagged)") == value]
            for column in range(n):
                assert cells[column] == (sum(pages[m][column] for m in members),
                                         sum(pages[m][n + column] for m in members)), (
                    key, value, FIGURES[column])  # fmt: skip


def test_the_groups_by_a_tag_add_up_and_agree_with_the_ledgers(studios, page, agency):
    for key in ("client", "team"):
        rows = table(page, key.capitalize())
        groups = {row[0]: [numbers(c) for c in row[2:]] for row in rows[1:-1]}
        total = [numbers(c) for c in rows[-1][2:]]
        assert rows[-1][0] == "All projects"
        for column in range(len(FIGURES)):
            for week in (0, 1):
                assert sum(g[column][week] for g in groups.values()) == total[column][week]
        assert total == [numbers(c) for c in figures_of_workspaces(page)[-1][1:]]
    assert list(groups) == ["north", "south", "(untagged)"]  # the team's, untagged last
    # Credits and re-run credits per client, against what the emulators charged.
    clients = {row[0]: [numbers(c) for c in row[2:]] for row in table(page, "Client")[1:-1]}
    for which, week in (("figures", 0), ("previous", 1)):
        charged: dict[str, list[int]] = {}
        for name, studio in studios.items():
            when = getattr(agency.workspaces[name], which).period
            inside = studio.charges[(studio.charges["at"] >= when.start)
                                    & (studio.charges["at"] < when.until)]  # fmt: skip
            for project, credits, rework in inside[["project", "credits", "rework"]].itertuples(
                index=False
            ):
                sums = charged.setdefault(TAGS[project]["client"], [0, 0])
                sums[0] += credits
                sums[1] += credits if rework else 0
        for client, (credits, rework) in charged.items():
            shown = clients[client]
            assert shown[FIGURES.index("credits")][week] == credits, (client, which)
            assert shown[FIGURES.index("rework_credits")][week] == rework, (client, which)
    assert clients["Acme"][FIGURES.index("rework_credits")][0] > 0  # the re-scans


def test_the_forecast_per_project_is_the_analysis_forecast(studios, page):
    rows = table(page, "Project")
    forecast = [row for row in page.rows if len(row) == 9 and row[0] != "Project"]
    for name, studio in studios.items():
        end = figures(studio.store).period.end
        expected = tk.analysis.forecast(studio.store, by="project_id", until=end)
        shown = [row for row in forecast if row[1] == name]
        assert [(r[0], int(r[2]), int(r[3].replace(",", ""))) for r in shown] == [
            (p, int(o), int(r)) for p, o, r in expected[["project", "open_chapters",
                                                          "remaining_lines"]].itertuples(index=False)
        ]  # fmt: skip
        assert len(shown) == 1  # the long chapter still running at the last snapshot
    assert rows  # the projects table is there too


def test_the_previous_week_is_the_weekly_page_s_previous_period(studios):
    store = studios["studio-a"].store
    figs = figures(store)
    before = previous_figures(store, figs)
    assert before.period.until == figs.period.since
    assert (figs.period.since - before.period.since) == pd.Timedelta(days=7)


def test_the_command_refuses_a_workspace_not_in_the_config_and_an_empty_store(
    studios, tmp_path, capsys
):
    config = watch_config(tmp_path / "watch.toml", studios)
    argv = ["report", "--html", "--config", str(config), "--out", str(tmp_path)]
    assert main([*argv, "--workspace", "studio-c"]) == 1
    assert "no workspace 'studio-c'" in capsys.readouterr().err
    text = config.read_text().replace(str(studios["studio-b"].store.root), str(tmp_path / "e"))
    config.write_text(text)
    assert main(argv) != 0
    err = capsys.readouterr().err
    assert "workspace 'studio-b'" in err and "no snapshots yet" in err
    assert main([*argv, "--workspace", "studio-a"]) == 0  # the one with snapshots
    assert "(1 workspace)" in capsys.readouterr().out


def test_the_service_s_group_is_a_tag_section_and_the_projects_table_keeps_its_contract(
    studios, page
):
    """translationGroupId is kept apart (the projects table's columns are DESIGN.md's
    contract); the page's tag sections are the config's keys, then the service's
    translation group, whose shared group holds exactly studio-a's two projects: its
    numbers, both weeks, are studio-a's."""
    for studio in studios.values():
        assert "translation_group_id" not in studio.store.latest("projects")
    sections = ("Client", "Team", "Translation group")
    assert [row[0] for row in page.rows if row and row[0] in sections] == list(sections)
    shared = next(row for row in page.rows if row and row[0] == SHARED_GROUP)
    workspace = next(
        row for row in page.rows if row and row[0] == "studio-a" and " was " in row[1]
    )  # its row of the workspaces' figures
    assert shared[1] == "2" and shared[2:] == workspace[1:]


def forecast_open_lines(path: Path) -> list[str]:
    """The open-lines cells of the agency page's forecast table, as HTML."""
    text = path.read_text(encoding="utf-8")
    forecast = text.split("<h2>Forecast per project</h2>", 1)[1].split("</table>", 1)[0]
    rows = forecast.split("<tbody>", 1)[1].split("</tr>")
    column = 2 + list(OUTLOOK_SHOWN).index("remaining_lines")
    return [re.findall(r"<td[^>]*>(.*?)</td>", row)[column] for row in rows if "<td" in row]


def assert_open_lines_open_their_languages(path: Path) -> None:
    """Each project's open lines in the forecast table (a row per project) open that
    project's open lines of this week, one row per chapter and language (`opened`
    checks that they add up to the number)."""
    cells = forecast_open_lines(path)
    linked = [cell for cell in cells if cell not in ("–", "0")]
    assert linked
    for cell in linked:
        assert re.fullmatch(r'<a href="#explain-open_lines-now-w\d-[A-Za-z0-9_-]+" '
                            r'data-figure="open_lines" [^>]*>[\d,]+</a>', cell), cell  # fmt: skip


def test_every_number_opens_rows_on_the_page_that_add_up_to_it(studios, written):
    """The workspaces', the total, each tag's, each project's, in both weeks, and the
    forecast's open chapters (no pace yet: the finishes are unknown, on the next test's
    page)."""
    kinds, linked = opened(written, figures(studios["studio-a"].store).period.tz)
    assert kinds == {f"explain-F-{week}{scope}" for week in ("now", "was")
                     for scope in ("", "-w1", "-w2", "-w1-P", "-w2-P", "-t1-V", "-t2-V",
                                   "-t3-V")  # client, team, and the service's group
                     } | {"explain-outlook-w1-P", "explain-outlook-w2-P"}  # fmt: skip
    assert_open_lines_open_their_languages(written)
    # No run failed or stalled and no chapter waits for a person in these two weeks.
    assert linked == {*FIGURES, "open_chapters"} - {"runs_failed", "runs_stalled",
                                                    "needs_action"}  # fmt: skip


def test_the_forecast_s_finish_and_pace_open_the_chapters_they_are_made_of(tmp_path):
    """Two workspaces with re-scans, stalls, a failure, held pages and a chapter going
    on by itself: every figure kind, the finishes and the pace included."""
    stores = {"east": trouble(tmp_path / "east"), "west": two_days(tmp_path / "west")}
    tags = {"Moonlit Harbor": {"client": "Acme"}, "Star Courier": {"client": "Brio"}}
    path = write_agency_page(gather_agency(stores, tags=tags), tmp_path / "agency.html")
    kinds, linked = opened(path, "UTC")
    assert {"explain-F-now", "explain-F-now-w1", "explain-F-now-w2-P", "explain-F-now-t1-V",
            "explain-outlook-w1-P"} <= kinds  # fmt: skip
    assert linked == {*FIGURES, *OUTLOOK}
    assert_open_lines_open_their_languages(path)


SHOTS = Path(__file__).resolve().parents[2] / "build" / "browser"


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.skipif(missing("playwright") is not None, reason=str(missing("playwright")))
def test_a_project_s_credits_open_its_chapters_in_a_browser(written):
    """Click a project's credits this week: the page lands on that project's rows of the
    workspace's credits, which add up to the number clicked; a screenshot of the page's
    top and of the rows (build/browser/agency-*.png) is kept to look at."""
    from playwright.sync_api import sync_playwright

    SHOTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = launch(p)
        try:
            tab = browser.new_page(viewport={"width": 1320, "height": 900})
            tab.goto(written.as_uri())
            tab.screenshot(path=str(SHOTS / "agency-top.png"))
            projects = tab.locator("h2:text-is('Projects') + table")
            link = projects.locator("a[data-figure='credits'][href*='-now-w']").first
            clicked = int(link.inner_text().replace(",", ""))
            target = link.get_attribute("href")
            link.click()
            assert tab.evaluate("location.hash") == target
            rows = tab.locator(f"[id='{target[1:]}']")
            assert rows.is_visible()
            values = rows.locator("td[data-figure='credits']").all_inner_texts()
            assert sum(int(v.replace(",", "")) for v in values) == clicked > 0
            # The block it lands in names the workspace and the week's credits.
            block = tab.locator(f"div.scope:has([id='{target[1:]}'])")
            assert "credits spent" in block.locator("h4").inner_text()
            tab.screenshot(path=str(SHOTS / "agency-rows.png"))
        finally:
            browser.close()

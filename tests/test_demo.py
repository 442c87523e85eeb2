"""`toolkit demo`: a shortened simulated day, end to end, through the command line."""

from __future__ import annotations

import json
import re
from datetime import timedelta
from pathlib import Path

import pandas as pd
import pytest
from epochs import SUITE_START
from html_page import Page
from short_demo import Demo

from toolkit import analysis
from toolkit.cli import main
from toolkit.demo import MARKER, plan, prepare_out, run_demo
from toolkit.errors import ToolkitError
from toolkit.formatting import count
from toolkit.reporting.figures import FIGURES, WORDS
from toolkit.store import SnapshotStore

# The ninth pass (docs/testing.md): in the slow group, which CI runs as its own step.
pytestmark = pytest.mark.slow


def test_short_demo_writes_report_snapshots_and_events(demo: Demo):
    check_short_demo(demo.out, demo.printed, hours=3)


# The demo at the instants where time is awkward: an hour is enough to cross the clock
# change and the new year, whose midnight is also a day's (the daily merge: so
# "before-midnight" adds nothing here). The morning is the module's three-hour demo. An
# hour of demo costs nearly what three do (the report is most of it): hence one each,
# and two of them (6-9 s each) in the slow group.
@pytest.mark.epochs("summer-time-ends", "new-year", "leap-day", slow=("new-year", "leap-day"))
def test_an_hour_of_demo_at_an_awkward_instant_writes_everything(tmp_path: Path, capsys, epoch):
    out = tmp_path / "demo"
    assert main(["demo", "--out", str(out), "--hours", "1", "--start", epoch.isoformat()]) == 0
    check_short_demo(out, capsys.readouterr().out, hours=1)


def check_short_demo(out: Path, printed: str, *, hours: int) -> None:
    """What a short demo of whole `hours` writes and says."""
    store = SnapshotStore(str(out / "snapshots"))
    snapshots = store.snapshots().sort_values("snapshot_at")
    # The baseline, one per simulated hour, then the closing watch cycle's own.
    assert len(snapshots) == hours + 2
    gaps = snapshots["snapshot_at"].iloc[: hours + 1].diff().dropna().unique().tolist()
    assert gaps == [timedelta(hours=1)]
    assert snapshots["snapshot_at"].iloc[-1] >= snapshots["snapshot_at"].iloc[-2]

    events = store.history("events")
    assert {"chapter.finished", "export.ready"} <= set(events["type"])
    assert events["webhook_id"].is_unique

    chapters = store.latest("chapters")
    assert chapters["credits_spent"].sum() > 0
    baseline = store.as_of("chapters", snapshots["snapshot_at"].iloc[0])
    assert len(chapters) > len(baseline)  # the day's uploads came on top of the seed

    pictures = sorted(out.rglob("*.png"))
    tables = sorted(out.rglob("*.csv"))
    assert len(pictures) >= 3 and tables
    assert all(p.stat().st_size > 1000 for p in pictures)

    lines = printed.strip().splitlines()
    shows = next(line for line in lines if line.startswith(f"It shows {hours} simulated hours ("))
    assert "credits spent" in shows and "webhook events" in shows
    assert (
        lines[-1]
        == f"The weekly page to read and forward: {(out / 'weekly-report.html').resolve()}"
    )
    assert printed.count("summary.csv") == 1  # the files are listed once
    assert "_pages" not in shows and "(s)" not in printed  # words, not codes
    # The closing watch cycle: a budget warning, what waits for a person, where it went.
    watched = lines[lines.index(shows) + 2 : -1]
    assert lines[lines.index(shows) + 1].startswith("One watch cycle (`toolkit watch --once`")
    assert any(w.startswith("  opened: Budget [demo]: demo has spent ") for w in watched)
    failed = "  opened: Failed, waiting for a re-scan [demo]: "
    assert any(w.startswith(failed) and "Re-scan it to retry." in w for w in watched)
    assert not any("_" in w.split("[demo]")[0] for w in watched)  # checks in words
    assert not any("to retry" in w.split("Re-scan it to retry.")[0] for w in watched)
    assert all(w.endswith("(sent to slack)") for w in watched)
    assert (out / "watch" / "alerts" / "_delta_log").is_dir()  # kept: a rerun re-alerts nothing


def test_every_surface_of_the_demo_shows_the_same_figures(demo: Demo):
    out, printed = demo.out, demo.printed
    figures = json.loads((out / "figures.json").read_text())

    # figures.json: the contract's shape; counts and credits are integers.
    store = SnapshotStore(str(out / "snapshots"))
    times = store.snapshots()["snapshot_at"]
    assert figures["period"] == {
        "start": times.iloc[0].isoformat(),
        "end": times.iloc[-1].isoformat(),
        "partial_days": ["2026-11-18"],
    }
    assert [list(p) for p in figures["projects"]] == [["project_id", "project", *FIGURES]] * 4
    assert list(figures["totals"]) == list(FIGURES)
    assert all(isinstance(v, int) for row in values_by(figures) for v in row)
    expected = {p["project"]: [p[k] for k in FIGURES] for p in figures["projects"]}
    expected["total"] = [figures["totals"][k] for k in FIGURES]
    assert expected["total"] == [sum(column) for column in zip(*values_by(figures), strict=True)]
    assert figures["totals"]["credits"] > 0 and figures["totals"]["lines"] > 0

    # summary.csv
    csv = pd.read_csv(out / "summary.csv").set_index("project")
    csv = csv.rename(index={"(all projects)": "total"})
    assert {name: csv.loc[name, list(FIGURES)].tolist() for name in expected} == expected

    # The weekly page's project table (the first table naming a project).
    page = Page((out / "weekly-report.html").read_text(encoding="utf-8"))
    rows: dict[str, list[str]] = {}
    for row in page.rows:
        rows.setdefault("total" if row[0] == "All projects" else row[0], row[1:])
    assert rows["Project"][: len(FIGURES)] == [WORDS[k].capitalize() for k in FIGURES]
    shown = {name: [int(cell.split()[0].replace(",", "")) for cell in rows[name][: len(FIGURES)]]
             for name in expected}  # fmt: skip
    assert shown == expected

    # The terminal's table, and the closing sentence.
    table = printed[printed.index("\nproject ") + 1 :].splitlines()[1:]
    terminal = {}
    for line in table[: len(expected)]:
        cells = re.split(r"\s{2,}", line.strip())
        name = "total" if cells[0] == "(all projects)" else cells[0]
        terminal[name] = [int(cell.replace(",", "")) for cell in cells[1 : len(FIGURES) + 1]]
    assert terminal == expected
    closing = next(line for line in printed.splitlines() if line.startswith("It shows "))
    total = figures["totals"]
    for phrase in (
        f"{count(4, 'project')}:",
        f"{count(total['chapters_finished'], 'chapter')} finished",
        f"{count(total['lines'], 'line')} translated",
        f"{count(total['credits'], 'credit')} spent "
        f"({total['rework_credits']:,} of them on re-runs)",
        f"{count(total['runs_failed'], 'run')} failed and {count(total['runs_stalled'], 'run')} "
        "stalled",
        f"needing a person now: {count(total['needs_action'], 'chapter')}.",
    ):
        assert phrase in closing

    # Every feature at work: the steady project's forecast has a finish and a band.
    forecast = pd.read_csv(out / "forecast.csv").set_index("project")
    steady = forecast.loc["Seoul Nights"]
    assert steady["status"] == "on track" and steady["remaining_lines"] > 0
    as_of, p10, p50, p90 = (
        pd.Timestamp(steady[c]) for c in ("as_of_utc", "finish_p10", "finish_p50", "finish_p90")
    )
    assert as_of < p10 <= p50 < p90
    # Two models on comparable work: the comparison reaches a verdict on each measure.
    models = pd.read_csv(out / "model_comparison.csv")
    compared = models[(models["kind"] == "comic") & (models["process_steps"] == "translate")]
    assert set(compared["model"]) == {"cts-webtoon-mt-2", "cts-emulator-mt-1"}
    verdict = compared["verdict"].iloc[0]
    assert [part.split(":")[0] for part in verdict.split("; ")] == ["price", "speed", "failures"]
    # Work waiting for a person: a comic chapter to re-scan, held pages never started.
    waiting = analysis.stuck(store)
    failed = waiting[waiting["reason"] == "failed"]
    assert (failed["advice"] == "re-scan it to retry").any()
    assert not failed["detail"].str.contains("re-scan").any()  # the advice is said once
    assert (waiting["reason"] == "held_pages").any()
    assert forecast.loc["Moonlit Harbor", "needs_action_reason"].count("waiting for a re-scan")
    assert "held pages never started" in forecast.loc["Seoul Nights", "needs_action_reason"]


def values_by(figures: dict) -> list[list[int]]:
    """Each project's figures as a row, in FIGURES order."""
    return [[p[k] for k in FIGURES] for p in figures["projects"]]


def test_the_day_has_failures_and_rescans(demo: Demo):
    store = SnapshotStore(str(demo.out / "snapshots"))
    day = demo.day
    assert day.rescans > 0
    rescans = [c for c in day.ledger["charges"] if c["reason"] == "rescan"]
    assert len(rescans) == day.rescans
    assert any(e == "chapter.failed" for e in store.history("events")["type"])


def test_plan_spreads_uploads_over_the_day():
    schedule = plan(24)
    assert len(schedule[0]) == 3 and set(schedule) == set(range(24))
    assert all("other_model" in kinds for kinds in schedule.values())  # a run an hour
    assert {"comic", "other_model", "novel", "staged"} <= {
        k for ks in schedule.values() for k in ks
    }
    assert set(plan(2.5)) == {0, 1, 2}


def test_demo_refuses_a_folder_it_did_not_write(tmp_path: Path):
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(ToolkitError, match="not written by an earlier demo"):
        run_demo(out=tmp_path, hours=1, start=SUITE_START)
    assert (tmp_path / "notes.txt").read_text() == "mine"


def test_demo_empties_its_own_earlier_output(tmp_path: Path):
    out = tmp_path / "demo"
    prepare_out(out)
    (out / "old.png").write_bytes(b"x")
    prepare_out(out)
    assert sorted(p.name for p in out.iterdir()) == [MARKER]


def test_demo_refuses_no_time_at_all(tmp_path: Path):
    with pytest.raises(ToolkitError, match="more than 0"):
        run_demo(out=tmp_path / "demo", hours=0, start=SUITE_START)
    assert not (tmp_path / "demo").exists()


def test_projects_are_created_when_the_workspace_lacks_them(emulator, workspace, client):
    from toolkit.demo import pick_projects

    projects = pick_projects(client, emulator, workspace["id"])
    assert (projects.comic.kind, projects.second_comic.kind, projects.novel.kind) == (
        "comic",
        "comic",
        "novel",
    )
    assert projects.comic.process_steps == "full"
    # Comparable work on another model, for the model comparison.
    other, second = projects.other_model, projects.second_comic
    assert (other.kind, other.process_steps) == (second.kind, second.process_steps)
    assert other.language_codes == second.language_codes
    assert other.translation_model != second.translation_model
    assert len(client.list_projects()) == 4

"""`toolkit demo`: a shortened simulated day, end to end, through the command line."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from epochs import SUITE_START

from toolkit.cli import main
from toolkit.demo import MARKER, plan, prepare_out, run_demo, simulate_day
from toolkit.errors import ToolkitError
from toolkit.store import SnapshotStore


@pytest.mark.epochs
def test_short_demo_writes_report_snapshots_and_events(tmp_path: Path, capsys, epoch):
    out = tmp_path / "demo"
    assert main(["demo", "--out", str(out), "--hours", "3", "--start", epoch.isoformat()]) == 0

    store = SnapshotStore(str(out / "snapshots"))
    snapshots = store.snapshots().sort_values("snapshot_at")
    assert len(snapshots) == 4  # the baseline, then one per simulated hour
    gaps = snapshots["snapshot_at"].diff().dropna().unique().tolist()
    assert gaps == [timedelta(hours=1)]

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

    last = capsys.readouterr().out.strip().splitlines()[-2:]
    assert last[0].startswith("It shows 3 simulated hours of ")
    assert "credits spent" in last[0] and "webhook events" in last[0]
    assert last[1].startswith(f"The report is in {out.resolve()}: ")
    assert "summary.csv" in last[1] and "progress.png" in last[1]


def test_the_day_has_failures_and_rescans(tmp_path: Path, epoch):
    store = SnapshotStore(str(tmp_path / "snapshots"))
    day = simulate_day(store, hours=3, progress=False, start=epoch)
    assert day.rescans > 0
    rescans = [c for c in day.ledger["charges"] if c["reason"] == "rescan"]
    assert len(rescans) == day.rescans
    assert any(e == "chapter.failed" for e in store.history("events")["type"])


def test_plan_spreads_uploads_over_the_day():
    schedule = plan(24)
    assert len(schedule[0]) == 3 and set(schedule) == set(range(24))
    assert {"comic", "second_comic", "novel", "staged"} <= {
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
    assert len(client.list_projects()) == 3

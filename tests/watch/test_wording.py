"""An alert names the `toolkit explain` command that shows the rows behind it, and the
command runs: the chapters that need a person, a budget's credits, a due date's finish."""

from __future__ import annotations

import shlex
from datetime import UTC, datetime

import pandas as pd
from report_stores import trouble

from toolkit.cli import main
from toolkit.watch.findings import Finding
from toolkit.watch.notify import headline
from toolkit.watch.outbox import Message
from toolkit.watch.stuck import _stuck_rows
from toolkit.watch.wording import explain_command


def test_a_chapter_alert_names_the_command_that_shows_why_and_it_runs(tmp_path, capsys):
    store = trouble(tmp_path / "store")
    figures = {"chapter_id": "c2", "project_id": "p2", "since": "2026-03-02T12:00:00+00:00"}
    command = explain_command(
        "stalled", figures, scope="chapter", subject="Star Courier: Chapter 1"
    )
    assert command == "toolkit explain needs_action --project p2"
    argv = [*shlex.split(command)[1:], "--store", str(store.root)]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert out.startswith("chapters that need a person at 2 Mar 15:00 UTC: 1 chapters, 1 rows")


def test_a_budget_names_its_project_and_period_and_the_agency_s_names_none():
    figures = {"period_start": "2026-03-01T00:00:00+00:00",
               "period_end": "2026-04-01T00:00:00+00:00"}  # fmt: skip
    assert explain_command("budget", figures, scope="project", subject="Moonlit Harbor") == (
        "toolkit explain credits --project 'Moonlit Harbor' --since 2026-03-01T00:00:00+00:00 "
        "--until 2026-04-01T00:00:00+00:00"
    )
    assert explain_command("budget", figures, scope="workspace", subject="studio").startswith(
        "toolkit explain credits --since"
    )
    assert explain_command("budget", figures, scope="agency", subject="the agency") is None
    assert explain_command("missing_events", {}, scope="chapter") is None
    spike = {"measure": "spend", "bin_start": "2026-03-02T10:00:00+00:00"}
    assert explain_command("anomaly", spike, scope="project", subject="Star Courier") == (
        "toolkit explain credits --project 'Star Courier' --since 2026-03-02T10:00:00+00:00"
    )


def test_the_alert_s_line_carries_the_command():
    finding = Finding("due", "project", "Moonlit Harbor", "studio", "Moonlit Harbor is due",
                      {"project_id": "p1", "finish_p50": "2026-03-09T10:00:00+00:00"})  # fmt: skip
    when = datetime(2026, 3, 2, tzinfo=UTC)
    line = headline(Message("msg_1", "alert_1", "opened", finding, when, ("slack",)))
    assert "The rows behind it: `toolkit explain finish_p50 --project p1` (the studio " in line


def test_a_stuck_chapter_s_time_is_said_once_per_snapshot_and_an_unknown_one_in_words():
    # Times are written once per distinct moment (a quarter of 100,000 chapters may be
    # stuck, at a few hundred snapshots); a time never seen is said, not written as NaT.
    at = pd.Timestamp("2026-03-02 09:00", tz="UTC")
    stuck = pd.DataFrame(
        {
            "chapter_id": ["c1", "c2", "c3"],
            "project_id": ["p1"] * 3,
            "project": ["Moonlit"] * 3,
            "chapter": ["Chapter 1", "Chapter 2", "Chapter 3"],
            "reason": ["failed"] * 3,
            "detail": ["The run failed."] * 3,
            "advice": ["re-scan it"] * 3,
            "since": pd.Series([at, pd.NaT, at], dtype="datetime64[us, UTC]"),
        }
    )
    rows = _stuck_rows(stuck, at + pd.Timedelta(hours=3))
    assert [(r.since, r.since_words) for r in rows] == [
        ("2026-03-02T09:00:00+00:00", "02 Mar 09:00 UTC"),
        (None, "an unknown time"),
        ("2026-03-02T09:00:00+00:00", "02 Mar 09:00 UTC"),
    ]
    assert [r.hours for r in rows][::2] == [3.0, 3.0]

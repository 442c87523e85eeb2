"""An alert names the `toolkit explain` command that shows the rows behind it, and the
command runs: the chapters that need a person, a budget's credits, a due date's finish."""

from __future__ import annotations

import shlex
from datetime import UTC, datetime

from report_stores import trouble

from toolkit.cli import main
from toolkit.watch.findings import Finding
from toolkit.watch.notify import headline
from toolkit.watch.outbox import Message
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

"""The Dashboard lists the open alerts `toolkit watch` keeps for its workspace."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest

from toolkit.store import SnapshotStore
from toolkit.watch import AlertLog, Finding, read_config, run_cycle, wording
from toolkit.watch.alerts import Alert
from toolkit.widgets import Dashboard
from toolkit.widgets._alerts import AlertsLine

CONFIG = """\
store = "{root}"
[workspaces.studio]
base_url = "{url}"
key_env = "WATCH_TEST_KEY"
[[budgets]]
scope = "project"
name = "Moonlit Harbor"
period = "month"
credits = {credits}
[checks]
off = ["anomaly", "snapshots"]
"""


def test_the_open_alerts_of_the_workspace_show_and_go_when_resolved(
    emulator, workspace, comic_project, client, pages, tmp_path, monkeypatch
):
    monkeypatch.setenv("WATCH_TEST_KEY", workspace["apiKey"])
    root = tmp_path / "snapshots"
    store = SnapshotStore(root / "studio", workspace="studio")
    store.take(client)  # the baseline
    client.create_chapter(comic_project["id"], pages=pages)  # 6 credits
    emulator.advance(600)
    path = tmp_path / "watch.toml"
    path.write_text(CONFIG.format(root=root, url=emulator.url, credits=7))
    run_cycle(read_config(path))  # the budget warning opens (no one to tell: recorded)
    elsewhere = Finding("budget", "workspace", "Annex", "annex", "Annex spent it all")
    now = emulator.now()
    AlertLog(str(root)).record([Alert("alert_x", elsewhere, "opened", now, now, now)], now)

    dash = Dashboard(client, store=store, watch=path)
    shown = dash.alerts.value
    assert shown.startswith('<div class="tk-alerts"><b>1 open alert</b>')
    assert "<b>Budget</b>: Moonlit Harbor" in shown and "6 of its 7 credits" in shown
    # Its age is worked out as it is shown, from the time it opened.
    assert re.search(r"\(open since 18 Nov 09:10 UTC, (\d+ (d|h|min)[^;]*|just now) ago;", shown)
    assert "to clear it: raise the budget in the watch config" in shown
    assert "Annex" not in shown  # another workspace's

    path.write_text(CONFIG.format(root=root, url=emulator.url, credits=100))
    emulator.advance(600)
    run_cycle(read_config(path))  # resolved
    dash.refresh()
    assert dash.alerts.value == "<small>No open alerts (toolkit watch).</small>"


def test_without_a_watch_config_there_is_no_alerts_section_and_watch_needs_a_store(
    client, tmp_path
):
    assert Dashboard(client).alerts.value == ""
    with pytest.raises(ValueError, match="give the dashboard store= as well as watch="):
        Dashboard(client, watch=tmp_path / "watch.toml")


def test_a_chapters_alert_says_its_check_in_the_reasons_words_and_the_panel_that_clears_it(
    client, tmp_path
):
    root = tmp_path / "snapshots"
    store = SnapshotStore(root / "studio", workspace="studio")
    path = tmp_path / "watch.toml"
    path.write_text(CONFIG.format(root=root, url="https://cts.example.com", credits=7))
    now = datetime(2026, 11, 18, 9, 0, tzinfo=UTC)
    said = {
        "held_pages": ("Moonlit Harbor: Chapter 2", "comic"),
        "failed_waiting": ("River of Stars: Chapter 1", "novel"),
        "stalled": ("Moonlit Harbor: Chapter 3", "comic"),
    }
    alerts = [
        Alert(
            f"alert_{check}",
            Finding(check, "chapter", subject, "studio", f"{subject} waits", {"kind": kind}),
            "opened",
            now,
            now,
            now,
        )
        for check, (subject, kind) in said.items()
    ]
    AlertLog(str(root)).record(alerts, now)

    shown = AlertsLine(store, path).html()
    assert "<b>Held pages never started</b>" in shown
    assert (
        "start the held pages (the Upload panel&#x27;s &#x27;Add &amp; start pages&#x27;" in shown
    )
    # A novel is never told to re-scan: its title and action are a novel's.
    assert "<b>Failed, waiting for its text to be uploaded again</b>" in shown
    assert "upload its text again as a new chapter (the Upload panel" in shown
    assert "<b>Running with no progress</b>" in shown
    assert shown.count("the Re-scan panel, tk.widgets.RescanPanel") == 1  # the comic's stall
    assert "_" not in re.sub(r"alert_\w+|tk\.widgets\.\w+", "", shown)  # no codes


def test_alert_titles_are_the_reasons_tables_words():
    assert wording.title("held_pages") == "Held pages never started"
    assert wording.title("failed_waiting") == "Failed, waiting for a re-scan"
    assert wording.title("failed_waiting", "novel") == (
        "Failed, waiting for its text to be uploaded again"
    )
    assert wording.title("stalled") == "Running with no progress"
    assert wording.title("missing_events") == "Webhook events missing"
    assert "re-scan" not in wording.action("stalled", "novel")
    assert "re-scan" not in wording.action("failed_waiting", "novel")

"""The Dashboard lists the open alerts `toolkit watch` keeps for its workspace."""

from __future__ import annotations

import pytest

from toolkit.store import SnapshotStore
from toolkit.watch import AlertLog, Finding, read_config, run_cycle
from toolkit.watch.alerts import Alert
from toolkit.widgets import Dashboard

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
    assert "<b>budget</b>: Moonlit Harbor" in shown and "6 of its 7 credits" in shown
    assert "(since 18 Nov 09:10 UTC)" in shown
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


def test_alert_checks_read_in_words_from_the_reasons_table():
    from toolkit.widgets._alerts import check_words

    assert check_words("held_pages") == "held pages never started"
    assert check_words("failed_waiting") == "failed, waiting for a re-scan"
    assert check_words("stalled") == "running with no progress"
    assert check_words("missing_events") == "webhook events missing"

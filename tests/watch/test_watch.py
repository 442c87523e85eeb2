"""`toolkit watch` against the emulator, with real sinks on loopback: an HTTP server for
the webhook and Slack targets, an SMTP server (aiosmtpd) for e-mail."""

from __future__ import annotations

import email
import json
import os
import socket
import subprocess
import sys
import threading
from datetime import timedelta
from email import policy
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from aiosmtpd.controller import Controller
from standardwebhooks import Webhook
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

import toolkit as tk
from toolkit.cli import main
from toolkit.emulator import Emulator
from toolkit.watch import read_config, run_cycle

SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
REPO = Path(__file__).resolve().parents[2]


class Sink:
    """Every POST it got: path, headers, body."""

    def __init__(self) -> None:
        self.got: list[tuple[str, dict[str, str], bytes]] = []

    async def endpoint(self, request: Request) -> Response:
        self.got.append((request.url.path, dict(request.headers), await request.body()))
        return Response(status_code=204)

    def app(self) -> Starlette:
        return Starlette(routes=[Route("/{path:path}", self.endpoint, methods=["POST"])])

    def bodies(self, path: str) -> list[dict]:
        return [json.loads(body) for where, _, body in self.got if where == path]


class Mailbox:
    def __init__(self) -> None:
        self.mail: list[str] = []

    async def handle_DATA(self, server, session, envelope):
        self.mail.append(envelope.content.decode())
        return "250 OK"


@pytest.fixture
def sink(asgi_server):
    found = Sink()
    found.url = asgi_server(found.app())
    return found


@pytest.fixture
def mailbox():
    box = Mailbox()
    with socket.socket() as probe:  # aiosmtpd cannot start on port 0: ask for a free one
        probe.bind(("127.0.0.1", 0))
        box.port = probe.getsockname()[1]
    controller = Controller(box, hostname="127.0.0.1", port=box.port)
    controller.start()
    yield box
    controller.stop()


def config_text(tmp_path, emulator, sink, mailbox, *, credits: int) -> str:
    return f"""\
store = "{tmp_path / "store"}"
interval = "15m"
retries = 2
[workspaces.studio]
base_url = "{emulator.url}"
key_env = "WATCH_TEST_KEY"
[[budgets]]
scope = "project"
name = "Moonlit Harbor"
period = "month"
credits = {credits}
warn_at = 0.8
[checks]
remind = "24h"
off = ["anomaly", "snapshots"]
[notify.webhook]
url = "{sink.url}/hook"
secret_env = "WATCH_TEST_SECRET"
allow_private = true
[notify.slack]
url = "{sink.url}/slack"
allow_private = true
[notify.email]
host = "127.0.0.1"
port = {mailbox.port}
allow_private = true
allow_plaintext = "127.0.0.1"
from = "cts-watch@example.com"
to = ["lead@example.com"]
"""


@pytest.fixture
def watched(
    tmp_path, emulator, workspace, comic_project, client, pages, sink, mailbox, monkeypatch
):
    """A workspace that spent 6 credits this month on Moonlit Harbor, and a watch config
    with a budget of 7 (warning at 80%)."""
    monkeypatch.setenv("WATCH_TEST_KEY", workspace["apiKey"])
    monkeypatch.setenv("WATCH_TEST_SECRET", SECRET)
    tk.SnapshotStore(tmp_path / "store" / "studio").take(client)  # the baseline
    client.create_chapter(comic_project["id"], pages=pages)  # 3 pages x 2 languages
    emulator.advance(600)
    path = tmp_path / "watch.toml"
    path.write_text(config_text(tmp_path, emulator, sink, mailbox, credits=7))
    return path


def test_a_budget_crossed_warns_once_stays_quiet_then_resolves_when_raised(
    watched, sink, mailbox, emulator, tmp_path
):
    first = run_cycle(read_config(watched), retry_wait=0)
    assert [f.check for f in first.findings] == ["budget"]
    (opened,) = sink.bodies("/hook")
    assert opened["type"] == "alert.opened"
    data = opened["data"]
    assert (data["check"], data["scope"], data["subject"], data["workspace"]) == (
        "budget", "project", "Moonlit Harbor", "studio",
    )  # fmt: skip
    assert data["figures"]["spent"] == 6 and data["figures"]["level"] == "warn"
    assert "6 of its 7 credits" in data["message"]
    _, headers, body = sink.got[0]
    Webhook(SECRET).verify(body, headers)  # any Standard Webhooks library verifies it
    assert sink.bodies("/slack")[0]["text"].startswith("[Alert] Budget: ")
    assert len(mailbox.mail) == 1 and "Moonlit Harbor" in mailbox.mail[0]
    assert first.changes[0].sent_to == ["webhook", "slack", "email"]

    emulator.advance(900)
    second = run_cycle(read_config(watched), retry_wait=0)
    assert second.needs_attention and len(sink.got) == 2 and len(mailbox.mail) == 1

    watched.write_text(watched.read_text().replace("credits = 7", "credits = 100"))
    emulator.advance(900)
    third = run_cycle(read_config(watched), retry_wait=0)
    assert not third.needs_attention
    (resolved,) = [b for b in sink.bodies("/hook") if b["type"] == "alert.resolved"]
    assert resolved["data"]["alert_id"] == data["alert_id"]
    assert len(sink.bodies("/hook")) == 2 and len(mailbox.mail) == 2

    rows = tk.watch.AlertLog(str(tmp_path / "store")).rows().to_pylist()
    assert [r["event"] for r in rows] == ["opened", "resolved"]
    assert rows[-1]["status"] == "resolved"
    assert rows[-1]["owed_to"] == ["webhook", "slack", "email"]
    assert third.changes[0].sent_to == ["webhook", "slack", "email"]


def test_a_target_that_fails_is_owed_the_message_and_gets_it_when_it_recovers(
    watched, sink, tmp_path, emulator
):
    good = watched.read_text()
    watched.write_text(good.replace(f"{sink.url}/slack", "http://127.0.0.1:9/slack"))
    cycle = run_cycle(read_config(watched), retry_wait=0)
    (alert,) = cycle.changes
    assert alert.sent_to == ["webhook", "email"]
    assert alert.failed_to and alert.failed_to[0].startswith("slack: ConnectError")
    assert sink.bodies("/slack") == []

    watched.write_text(good)  # Slack answers again
    emulator.advance(900)  # past the first wait (5 minutes)
    later = run_cycle(read_config(watched), retry_wait=0)
    assert [line.endswith("(sent late to slack)") for line in later.lines()] == [True]
    (told,) = sink.bodies("/slack")
    assert alert.alert_id in told["text"] and told["text"].startswith("[Alert] Budget: ")
    assert len(sink.bodies("/hook")) == 1  # the others were told once, in the first cycle


def watch_command(config: Path, *args: str) -> list[str]:
    return [
        sys.executable,  # this venv's, wherever it is
        "-m",
        "toolkit.cli",
        "watch",
        "--config",
        str(config),
        *args,
    ]


@pytest.mark.slow
def test_kill_9_between_cycles_re_alerts_nothing(watched, sink):
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    with subprocess.Popen(
        watch_command(watched, "--interval", "1h"), env=env, stdout=subprocess.PIPE, text=True
    ) as running:
        try:
            line = running.stdout.readline()  # the first cycle runs at once
            assert line.startswith("opened: Budget [studio]: ")
        finally:
            running.kill()  # SIGKILL: no clean-up of any kind
            running.wait(timeout=30)
    assert len(sink.bodies("/hook")) == 1
    again = subprocess.run(watch_command(watched, "--once"), env=env, capture_output=True,
                           text=True, timeout=120)  # fmt: skip
    assert again.returncode == 1, again.stderr  # the warning is still open...
    assert again.stdout == "" and len(sink.bodies("/hook")) == 1  # ...and was told once


def test_a_bad_config_exits_2_naming_the_line(tmp_path, capsys):
    path = tmp_path / "watch.toml"
    path.write_text('store = "s"\n[workspaces.studio]\nbase_url = "https://x.example"\n'
                    'key_env = "K"\n[checks]\nstalled_after = "soon"\n')  # fmt: skip
    assert main(["watch", "--config", str(path), "--once"]) == 2
    err = capsys.readouterr().err
    assert err == (
        f"toolkit watch: {path}, line 6: checks.stalled_after: 'soon' is not a duration "
        "like 15m, 90min, 4h or 2d\n"
    )


def test_an_unreachable_service_exits_2_with_one_line(watched, emulator, capsys, retry_pauses):
    emulator.stop()
    assert main(["watch", "--config", str(watched), "--once"]) == 2
    assert retry_pauses  # the client tried again before saying so (pauses not slept)
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(
        "toolkit watch: studio: no answer from http://127.0.0.1"
    )
    assert f"check its base_url ({watched}, line 5: workspaces.studio.base_url)" in err[0]
    assert "CTS_BASE_URL" not in err[0]


def test_the_loop_carries_on_across_an_outage_told_once_and_resolved_once(
    tmp_path, sink, monkeypatch, epoch, retry_pauses
):
    """The service stops answering for two cycles, then comes back on the same port."""
    state = str(tmp_path / "cts.db")
    emulator = Emulator(state, clock="manual", start=epoch).start()
    studio = emulator.create_workspace(name="Studio", credits=1_000)
    monkeypatch.setenv("WATCH_TEST_KEY", studio["apiKey"])
    monkeypatch.setenv("WATCH_TEST_SECRET", SECRET)
    path = tmp_path / "watch.toml"
    path.write_text(
        f'store = "{tmp_path / "store"}"\n[workspaces.studio]\nbase_url = "{emulator.url}"\n'
        'key_env = "WATCH_TEST_KEY"\n'
        f'[notify.webhook]\nurl = "{sink.url}/hook"\nsecret_env = "WATCH_TEST_SECRET"\n'
        "allow_private = true\n"
    )
    port = urlsplit(emulator.url).port
    cycles: list[tk.watch.Cycle] = []
    stop = threading.Event()

    def between(cycle: tk.watch.Cycle) -> None:
        nonlocal emulator
        cycles.append(cycle)
        count = len(cycles)
        if count == 1:
            emulator.stop()  # the outage: the next two cycles get no answer
        elif count == 3:  # back, on the same port, with its state and clock
            emulator = Emulator(state, clock="manual", start=epoch).start(port=port)
        elif count == 5:
            stop.set()
        if count not in (1, 2):
            emulator.advance(900)

    try:
        tk.watch.run_forever(read_config(path), timedelta(0), stop, between)
    finally:
        emulator.stop()
    assert [bool(c.broken) for c in cycles] == [False, True, True, False, False]
    assert [c.needs_attention for c in cycles] == [False, True, True, False, False]
    assert "no answer from http://127.0.0.1" in cycles[1].findings[0].message
    hooks = sink.bodies("/hook")
    assert [h["type"] for h in hooks] == ["alert.opened", "alert.resolved"]
    assert {h["data"]["check"] for h in hooks} == {"snapshots"}
    assert hooks[0]["data"]["alert_id"] == hooks[1]["data"]["alert_id"]


def test_a_damaged_store_is_one_alert_and_leaves_the_others_open(
    watched, emulator, capsys, tmp_path
):
    watched.write_text(watched.read_text().replace('off = ["anomaly", "snapshots"]', ""))
    assert main(["watch", "--config", str(watched), "--once"]) == 1  # the budget warning
    log = tmp_path / "store" / "studio" / "chapters" / "_delta_log"
    sorted(log.glob("*.json"))[-1].unlink()
    emulator.advance(900)
    capsys.readouterr()
    assert main(["watch", "--config", str(watched), "--once"]) == 2  # no snapshot taken
    out, err = capsys.readouterr()
    assert err.startswith("toolkit watch: studio: the snapshot could not be written: ")
    assert len(err.splitlines()) == 1
    shown = "opened: Snapshots not taken [studio]: `toolkit store check --store "
    assert any(line.startswith(shown) for line in out.splitlines())
    assert "budget" not in out  # neither resolved (its store cannot be read) nor repeated
    rows = tk.watch.AlertLog(str(tmp_path / "store")).open_alerts()
    checks = sorted(a.finding.check for a in rows.values())
    assert checks == ["budget", "snapshots", "snapshots"]  # the store check, the snapshot


def test_e_mail_is_never_sent_in_plain_text_unless_the_config_names_the_host(
    watched, sink, mailbox, monkeypatch, emulator
):
    """aiosmtpd here offers no STARTTLS: without `allow_plaintext` nothing goes to it,
    not the password, not the mail; the other targets are told all the same."""
    monkeypatch.setenv("WATCH_TEST_USER", "watch")
    monkeypatch.setenv("WATCH_TEST_PASSWORD", "PasswordNeverShown")
    plain = watched.read_text()
    watched.write_text(plain.replace('allow_plaintext = "127.0.0.1"\n', 'user_env = '
                       '"WATCH_TEST_USER"\npassword_env = "WATCH_TEST_PASSWORD"\n'))  # fmt: skip
    cycle = run_cycle(read_config(watched), retry_wait=0)
    (alert,) = cycle.changes
    assert alert.sent_to == ["webhook", "slack"] and mailbox.mail == []
    assert alert.failed_to == ["email: the server offers no STARTTLS: nothing sent in plain text"]
    assert "PasswordNeverShown" not in "\n".join(cycle.lines())

    watched.write_text(plain)  # the config names the host: plain text allowed there
    emulator.advance(900)
    later = run_cycle(read_config(watched), retry_wait=0)
    (mail,) = mailbox.mail
    assert alert.alert_id in email.message_from_string(mail, policy=policy.default).get_content()
    assert later.lines()[-1].endswith("(sent late to email)")


def test_a_budget_naming_no_project_is_refused_at_the_first_cycle_with_the_nearest(
    watched, sink, capsys
):
    watched.write_text(watched.read_text().replace('"Moonlit Harbor"', '"Moonlit Harbr"'))
    assert main(["watch", "--config", str(watched), "--once"]) == 2  # a bad config
    out, err = capsys.readouterr()
    assert out == "" and len(err.splitlines()) == 1 and "Traceback" not in err
    assert err.startswith(
        f"toolkit watch: {watched}, line 9: budgets[0].name: no project 'Moonlit Harbr' in "
        "any workspace of the config; the nearest: 'Moonlit Harbor'"
    )
    assert sink.got == []  # nothing was decided, nothing sent

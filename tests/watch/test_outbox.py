"""The outbox: every alert reaches every target exactly once, whatever fails.

The fault test runs `toolkit watch --once` as cron does, in a fresh process per cycle,
against three real sinks on loopback (a Standard Webhooks receiver, a Slack-style
endpoint, SMTP through aiosmtpd), kills it at instants drawn from a seeded generator
(while it sends, right after a receiver took a message, at a random moment), and makes
the sinks go down, answer 500 or 429 with `Retry-After`, or stall past the timeout.
"""

from __future__ import annotations

import asyncio
import email
import email.policy
import json
import os
import random
import re
import socket
import subprocess
import sys
import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from aiosmtpd.controller import Controller
from standardwebhooks import Webhook
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

import toolkit as tk
from toolkit.emulator.serving import BackgroundServer
from toolkit.watch.alerts import Alert
from toolkit.watch.findings import Finding
from toolkit.watch.outbox import _ROUNDS, Message, Outbox, Undelivered, messages

SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
REPO = Path(__file__).resolve().parents[2]
LINE_ID = re.compile(r"^\[(Alert|Still open|Resolved)\] .*\((alert_[0-9a-f]+)\)$")
EVENTS = {"Alert": "opened", "Still open": "reminder", "Resolved": "resolved"}


@dataclass
class Receipt:
    target: str
    message_id: str
    event: str
    alert_id: str


@dataclass
class Faults:
    """What the sinks do this cycle, and the process to kill when one takes a message."""

    mode: dict[str, str] = field(default_factory=dict)  # target -> ok|500|429|stall|down
    kill_on: int | None = None  # kill the watch when this many messages arrived this cycle
    after_answer: bool = False  # ...just after answering 2xx, rather than before
    process: subprocess.Popen | None = None
    taken: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def took(self) -> None:
        """A sink took a message: kill the watch if this is the chosen one."""
        with self.lock:
            self.taken += 1
            if self.kill_on is None or self.taken != self.kill_on or self.process is None:
                return
            process = self.process
        if self.after_answer:
            threading.Timer(0.05, process.kill).start()
        else:
            process.kill()


class Sinks:
    """The three receivers, each recording every message it took, with its id."""

    def __init__(self, faults: Faults) -> None:
        self.faults = faults
        self.receipts: list[Receipt] = []
        self.servers: dict[str, BackgroundServer] = {}
        self.ports: dict[str, int] = {}
        self.smtp: Controller | None = None

    async def http(self, request: Request) -> Response:
        target = request.url.path.strip("/")
        mode = self.faults.mode.get(target, "ok")
        if mode == "stall":
            await asyncio.sleep(2.5)  # past the config's 1 s timeout
            return Response(status_code=504)
        if mode == "500":
            return Response(status_code=500)
        if mode == "429":
            return Response(status_code=429, headers={"retry-after": random.choice(["1", "600"])})
        body = await request.body()
        headers = dict(request.headers)
        if target == "webhook":
            Webhook(SECRET).verify(body, headers)  # every receipt is signed
            data = json.loads(body)
            event, alert = data["type"].removeprefix("alert."), data["data"]["alert_id"]
        else:
            match = LINE_ID.match(json.loads(body)["text"])
            assert match, body
            event, alert = EVENTS[match.group(1)], match.group(2)
        self.receipts.append(Receipt(target, headers["webhook-id"], event, alert))
        self.faults.took()
        return Response(status_code=204)

    async def handle_DATA(self, server, session, envelope):  # aiosmtpd's handler
        mode = self.faults.mode.get("email", "ok")
        if mode == "stall":
            await asyncio.sleep(2.5)
        if mode in ("500", "429", "stall"):
            return "451 4.3.0 try again later"
        mail = email.message_from_bytes(envelope.content, policy=email.policy.default)
        ids = str(mail["X-CTS-Message-Ids"]).split()
        text = mail.get_content()
        lines = [m for m in (LINE_ID.match(line) for line in text.splitlines()) if m]
        assert len(lines) == len(ids), text
        for message_id, match in zip(ids, lines, strict=True):
            self.receipts.append(Receipt("email", message_id, EVENTS[match.group(1)],
                                         match.group(2)))  # fmt: skip
        self.faults.took()
        return "250 OK"

    def app(self) -> Starlette:
        return Starlette(routes=[Route("/{path:path}", self.http, methods=["POST"])])

    def start(self) -> None:
        for target in ("webhook", "slack"):
            self.serve(target)
        with socket.socket() as probe:  # aiosmtpd cannot start on port 0: ask for a free one
            probe.bind(("127.0.0.1", 0))
            self.ports["email"] = probe.getsockname()[1]
        self.smtp_up()

    def smtp_up(self) -> None:
        # A controller's loop closes when it stops: a new one to start again.
        self.smtp = Controller(self, hostname="127.0.0.1", port=self.ports["email"])
        self.smtp.start()

    def serve(self, target: str) -> None:
        server = BackgroundServer(port=self.ports.get(target, 0))
        self.servers[target] = server.start(self.app(), timeout=10)
        self.ports[target] = server.port

    def set_down(self, down: set[str]) -> None:
        """Stop the sinks in `down` (connections refused), start the others again."""
        for target in ("webhook", "slack"):
            running = self.servers[target].running
            if target in down and running:
                self.servers[target].stop(timeout=10)
            elif target not in down and not running:
                self.serve(target)
        if "email" in down and self.smtp is not None:
            self.smtp.stop()
            self.smtp = None
        elif "email" not in down and self.smtp is None:
            self.smtp_up()

    def stop(self) -> None:
        self.set_down({"webhook", "slack", "email"})


def config_text(store: Path, emulator_url: str, ports: dict[str, int], credits: dict) -> str:
    budgets = "".join(
        f'[[budgets]]\nscope = "{scope}"\n{name}period = "month"\ncredits = {credits[scope]}\n'
        "warn_at = [0.5, 0.8]\n"
        for scope, name in (("project", 'name = "Moonlit Harbor"\n'),
                            ("workspace", 'name = "studio"\n'), ("agency", ""))
    )  # fmt: skip
    return f"""\
store = "{store}"
retries = 2
retry_wait = "1s"
[workspaces.studio]
base_url = "{emulator_url}"
key_env = "WATCH_TEST_KEY"
{budgets}
[checks]
off = ["anomaly", "snapshots"]
[notify.webhook]
url = "http://127.0.0.1:{ports["webhook"]}/webhook"
secret_env = "WATCH_TEST_SECRET"
allow_private = true
timeout = "1s"
[notify.slack]
url = "http://127.0.0.1:{ports["slack"]}/slack"
allow_private = true
timeout = "1s"
[notify.email]
host = "127.0.0.1"
port = {ports["email"]}
from = "cts-watch@example.com"
to = ["lead@example.com"]
allow_private = true
allow_plaintext = "127.0.0.1"
timeout = "1s"
"""


def owed(store: Path) -> int:
    """How many (message, target) pairs the store still owes."""
    log = tk.watch.AlertLog(str(store))
    state = Outbox(log).state()
    return sum(state.get((m.message_id, t), {}).get("outcome") not in ("delivered",)
               for m in messages(log.rows()) for t in m.owed_to)  # fmt: skip


@pytest.mark.slow
@pytest.mark.timeout(1800)  # 32 to 40 watch processes, each a fresh Python
def test_every_opened_and_resolved_reaches_every_target_once_through_kills_and_faults(
    tmp_path, emulator, workspace, comic_project, client, pages, monkeypatch
):
    rng = random.Random(37)
    random.seed(37)  # the sinks' choice of Retry-After
    monkeypatch.setenv("WATCH_TEST_KEY", workspace["apiKey"])
    monkeypatch.setenv("WATCH_TEST_SECRET", SECRET)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    store = tmp_path / "store"
    tk.SnapshotStore(store / "studio").take(client)  # the baseline
    client.create_chapter(comic_project["id"], pages=pages)  # 6 credits spent
    emulator.advance(600)
    faults = Faults()
    sinks = Sinks(faults)
    sinks.start()
    path = tmp_path / "watch.toml"
    # 1000: nothing crossed; 10: 50% crossed; 7: 50% and 80%; 5: both and the limit.
    levels = (1000, 10, 7, 5)
    kills = 0
    try:
        for cycle in range(40):
            last = cycle >= 32  # the end: nothing crossed, sinks well, until nothing is owed
            if cycle > 32 and not owed(store):
                break
            credits = {s: 1000 if last else rng.choice(levels)
                       for s in ("project", "workspace", "agency")}  # fmt: skip
            path.write_text(config_text(store, emulator.url, sinks.ports, credits))
            faults.mode = {} if last else {
                t: rng.choice(["ok", "ok", "ok", "ok", "ok", "500", "429", "stall", "down"])
                for t in ("webhook", "slack", "email")
            }  # fmt: skip
            sinks.set_down({t for t, m in faults.mode.items() if m == "down"})
            kinds = ["none", "receipt", "answered", "moment", "receipt", "answered", "moment"]
            how = "none" if last else rng.choice(kinds)
            faults.kill_on = rng.choice([1, 1, 2]) if how in ("receipt", "answered") else None
            faults.after_answer = how == "answered"
            faults.taken = 0
            process = subprocess.Popen(
                [sys.executable, "-m", "toolkit.cli", "watch", "--config", str(path), "--once"],
                env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            )  # fmt: skip
            faults.process = process
            if how == "moment":
                try:
                    process.wait(timeout=rng.uniform(1.0, 12.0))
                except subprocess.TimeoutExpired:
                    process.kill()
            _, err = process.communicate(timeout=300)
            faults.process = None
            killed = process.returncode == -9
            kills += killed
            assert killed or process.returncode in (0, 1), err
            assert "Traceback" not in err and SECRET not in err
            # Every fifth cycle two hours pass (a night of cron runs): the longer waits of
            # targets that failed again and again come due, and their queues drain.
            emulator.advance(6 * 3600 if last else 7200 if cycle % 5 == 4 else 900)
            print(cycle, how, faults.mode, process.returncode, flush=True)
    finally:
        sinks.stop()

    rows = tk.watch.AlertLog(str(store)).rows().to_pylist()
    opened = {r["alert_id"]: r for r in rows if r["event"] == "opened"}
    resolved = {r["alert_id"] for r in rows if r["event"] == "resolved"}
    assert len(opened) >= 6 and set(opened) == resolved  # every condition came and went
    by = defaultdict(set)
    first: dict[tuple[str, str, str], int] = {}
    for n, receipt in enumerate(sinks.receipts):
        key = (receipt.target, receipt.alert_id, receipt.event)
        by[key].add(receipt.message_id)
        first.setdefault(key, n)
    for alert_id in opened:
        for target in ("webhook", "slack", "email"):
            for event in ("opened", "resolved"):
                ids = by[(target, alert_id, event)]
                assert len(ids) == 1, (target, alert_id, event, ids)  # once; repeats same id
            assert first[(target, alert_id, "opened")] < first[(target, alert_id, "resolved")]
    assert {r.alert_id for r in sinks.receipts} == set(opened)  # nothing unknown, no strays
    assert {r.event for r in sinks.receipts} <= {"opened", "resolved"}
    outcomes = Outbox(tk.watch.AlertLog(str(store))).state()
    assert {row["outcome"] for row in outcomes.values()} == {"delivered"}  # none owed at the end
    assert len(outcomes) == 3 * 2 * len(opened)
    assert kills >= 8  # and the kills did land


# The rules of the outbox, with senders that fail as told.
NOW = datetime(2026, 11, 18, 9, 0, tzinfo=UTC)


def finding(subject: str) -> Finding:
    return Finding("stalled", "chapter", subject, "studio", f"{subject} stalled at 08:00 UTC")


def decide(log: tk.watch.AlertLog, alert_id: str, event: str, targets: tuple[str, ...],
           at: datetime) -> None:  # fmt: skip
    alert = Alert(alert_id, finding(alert_id), event, at, at, at,  # type: ignore[arg-type]
                  message_id=f"msg_{alert_id}_{event}", owed_to=list(targets))  # fmt: skip
    log.record([alert], at)


class Flaky:
    """A sender that fails while `down`, recording what it delivered."""

    def __init__(self) -> None:
        self.down = False
        self.got: list[str] = []

    def __call__(self, batch: list[Message]) -> None:
        for done, message in enumerate(batch):
            if self.down:
                raise Undelivered("answered 500", done=done)
            self.got.append(message.message_id)


def test_a_target_down_gets_its_messages_in_order_when_back_and_others_are_not_held(tmp_path):
    log = tk.watch.AlertLog(str(tmp_path))
    outbox, hook, mail = Outbox(log), Flaky(), Flaky()
    hook.down = True
    decide(log, "a1", "opened", ("webhook", "email"), NOW)
    send = dict(retries=1, wait=0)
    outbox.send(messages(log.rows()), {"webhook": hook, "email": mail}, NOW, **send)
    assert (hook.got, mail.got) == ([], ["msg_a1_opened"])
    decide(log, "a1", "resolved", ("webhook", "email"), NOW + timedelta(minutes=1))
    early = outbox.send(messages(log.rows()), {"webhook": hook, "email": mail},
                        NOW + timedelta(minutes=1), **send)  # fmt: skip
    assert mail.got == ["msg_a1_opened", "msg_a1_resolved"]
    assert [o.target for o in early] == ["email"]  # the webhook's next round is not due yet
    hook.down = False
    outbox.send(messages(log.rows()), {"webhook": hook, "email": mail},
                NOW + timedelta(minutes=6), **send)  # fmt: skip
    assert hook.got == ["msg_a1_opened", "msg_a1_resolved"]  # in order, once each
    assert mail.got == ["msg_a1_opened", "msg_a1_resolved"]


def test_a_resolution_is_never_sent_where_the_opening_was_given_up_or_never_owed(tmp_path):
    log = tk.watch.AlertLog(str(tmp_path))
    outbox, hook, slack = Outbox(log), Flaky(), Flaky()
    hook.down = True
    decide(log, "a1", "opened", ("webhook",), NOW)
    at = NOW
    for _ in range(_ROUNDS):
        outbox.send(messages(log.rows()), {"webhook": hook}, at, retries=1, wait=0)
        at += timedelta(hours=11)  # every wait is due
    assert outbox.state()[("msg_a1_opened", "webhook")]["outcome"] == "given_up"
    hook.down = False
    decide(log, "a1", "resolved", ("webhook", "slack"), at)  # Slack added since the opening
    done = outbox.send(messages(log.rows()), {"webhook": hook, "slack": slack}, at,
                       retries=1, wait=0)  # fmt: skip
    assert hook.got == [] and slack.got == []
    assert {(o.target, o.outcome) for o in done} == {("webhook", "skipped"), ("slack", "skipped")}


def test_retry_after_puts_the_next_round_off_and_a_short_one_is_waited_for_in_the_round(tmp_path):
    log = tk.watch.AlertLog(str(tmp_path))
    outbox = Outbox(log)
    calls: list[float] = []

    def limited(batch: list[Message]) -> None:
        calls.append(time.monotonic())
        if len(calls) == 1:
            raise Undelivered("answered 429", retry_after=0)  # retried in the round
        if len(calls) == 2:
            raise Undelivered("answered 429", retry_after=3600)  # longer than a round waits

    decide(log, "a1", "opened", ("webhook",), NOW)
    (failed,) = outbox.send(messages(log.rows()), {"webhook": limited}, NOW, retries=3, wait=0)
    assert len(calls) == 2 and failed.outcome == "failed"
    assert failed.next_at == NOW + timedelta(hours=1)  # Retry-After beats the 5-minute wait


def test_a_target_that_raises_anything_fails_alone_and_the_others_are_told(tmp_path):
    log = tk.watch.AlertLog(str(tmp_path))
    mail = Flaky()

    def broken(batch: list[Message]) -> None:
        raise ValueError("the webhook secret is not 'whsec_' followed by base64")

    decide(log, "a1", "opened", ("webhook", "email"), NOW)
    done = Outbox(log).send(messages(log.rows()), {"webhook": broken, "email": mail}, NOW,
                            retries=1, wait=0)  # fmt: skip
    assert {(o.target, o.outcome, o.why) for o in done} == {
        ("webhook", "failed", "ValueError"), ("email", "delivered", "")
    }  # fmt: skip
    assert mail.got == ["msg_a1_opened"]

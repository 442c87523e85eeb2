"""Webhook deliveries against a real Database and manual Clock, and a receiver on loopback.

Time passes only through `run_due(t)` with chosen clock times; the receivers here are the
test's own apps, scripted to fail, redirect or hang.
"""

from __future__ import annotations

import asyncio
import base64
import json
import socket
import threading
import time
from datetime import UTC, datetime, timedelta

import httpx
import pyarrow.parquet as pq
import pytest
import respx
from emulator_helpers import create_chapter
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from toolkit.emulator.core.clock import Clock, iso
from toolkit.emulator.core.db import Database
from toolkit.emulator.delivery.deliveries import Deliveries
from toolkit.emulator.routes.errors import EmulatorError, error
from toolkit.emulator.routes.webhooks import webhook_routes
from toolkit.store import SnapshotStore
from toolkit.webhooks import Receiver, verify

START = datetime(2025, 3, 1, 9, 0, tzinfo=UTC)
PUBLIC = "93.184.215.14"
FINISHED = {"chapterId": "ch1", "projectId": "p1", "position": 1, "title": None}
# Attempt n falls due this long after the first: 0, +1 min, +5 min, +30 min, +2 h, ...
SCHEDULE = [0, 60, 360, 2160, 9360, 30960, 74160, 160560]
# The core's workspaces table; deliveries only looks workspaces up by id.
WORKSPACES = (
    "CREATE TABLE workspaces (id TEXT PRIMARY KEY); INSERT INTO workspaces VALUES ('ws1'), ('ws2');"
)


class ScriptedReceiver:
    """A receiver app that records every request and answers as scripted."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.requests: list[dict] = []
        self.statuses: list[int] = []  # answered in order; 200 once used up
        self.default = 200
        self.hang = threading.Event()  # while set, requests wait for `release`
        self.release = threading.Event()
        self.barrier: threading.Barrier | None = None
        self.app = Starlette(routes=[Route("/{path:path}", self.handle, methods=["GET", "POST"])])

    async def handle(self, request: Request) -> Response:
        self.requests.append(
            {
                "path": request.url.path,
                "method": request.method,
                "headers": dict(request.headers),
                "body": await request.body(),
                "at": self.clock.now(),
            }
        )
        if self.hang.is_set():
            await asyncio.to_thread(self.release.wait, 10)
        if self.barrier is not None:
            try:
                await asyncio.to_thread(self.barrier.wait, 5)
            except threading.BrokenBarrierError:
                return Response(status_code=599)
        status = self.statuses.pop(0) if self.statuses else self.default
        if 300 <= status < 400:
            return Response(status_code=status, headers={"Location": "/elsewhere"})
        return JSONResponse({"status": status}, status_code=status)


@pytest.fixture
def clock() -> Clock:
    return Clock("manual", start=START)


@pytest.fixture
def db():
    database = Database(":memory:")
    database.executescript(WORKSPACES)
    yield database
    database.close()


@pytest.fixture
def names() -> dict[str, list[str]]:
    """The fake DNS: tests change answers on the fly."""
    return {"receiver.test": ["127.0.0.1"], "hooks.example.com": [PUBLIC]}


@pytest.fixture
def deliveries(db, clock, names):
    def resolver(host: str) -> list[str]:
        if host not in names:
            raise OSError(f"unknown host {host}")
        return names[host]

    subject = Deliveries(db, clock, resolver=resolver, answer_limit=1.0)
    yield subject
    subject.close()


@pytest.fixture
def receiver(clock, asgi_server):
    scripted = ScriptedReceiver(clock)
    scripted.url = asgi_server(scripted.app)
    yield scripted
    scripted.release.set()


@pytest.fixture
def admin(deliveries, asgi_server):
    """The deliveries routes on loopback, mounted the way the core mounts them."""

    async def as_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, EmulatorError)
        return error(exc.status, exc.message)

    app = Starlette(routes=webhook_routes(deliveries), exception_handlers={EmulatorError: as_error})
    with httpx.Client(base_url=asgi_server(app), timeout=10) as client:
        yield client


def add(deliveries, receiver, events=("chapter.finished",), *, workspace="ws1", path="/hook"):
    return deliveries.add_endpoint(workspace, receiver.url + path, list(events), allow_private=True)


def attempts_at(db) -> list[tuple[int, int | None]]:
    rows = db.query("SELECT at_ms, status FROM webhook_attempts ORDER BY delivery_id, number")
    return [(row["at_ms"], row["status"]) for row in rows]


class TestAttempt:
    def test_a_signed_post_with_the_spec_headers_and_body(self, deliveries, receiver, clock):
        endpoint = add(deliveries, receiver)
        deliveries.emit("ws1", "chapter.finished", FINISHED)
        assert deliveries.next_due() == clock.now()
        deliveries.run_due(clock.now())

        (sent,) = receiver.requests
        headers = sent["headers"]
        assert (sent["method"], sent["path"]) == ("POST", "/hook")
        assert headers["content-type"] == "application/json"
        assert headers["user-agent"].endswith("-webhooks/1")
        assert headers["webhook-id"].startswith("msg_")
        assert abs(int(headers["webhook-timestamp"]) - time.time()) < 5  # wall clock
        payload = verify(sent["body"], headers, endpoint["secret"])
        assert payload == {"type": "chapter.finished", "timestamp": iso(START), "data": FINISHED}

        (logged,) = deliveries.log("ws1")
        assert logged == {
            "webhookId": headers["webhook-id"],
            "type": "chapter.finished",
            "endpointId": endpoint["id"],
            "state": "delivered",
            "attempts": 1,
            "lastStatus": 200,
            "body": sent["body"].decode(),
        }
        assert deliveries.next_due() is None

    def test_each_event_goes_only_to_endpoints_that_ticked_it(self, deliveries, receiver, clock):
        both = add(deliveries, receiver, ["chapter.finished", "chapter.failed"], path="/both")
        add(deliveries, receiver, ["chapter.finished"], path="/finished")
        add(deliveries, receiver, ["export.ready"], path="/exports")
        add(deliveries, receiver, ["chapter.failed"], workspace="ws2", path="/other")
        deliveries.emit("ws1", "chapter.finished", FINISHED)
        deliveries.emit("ws1", "chapter.failed", {"chapterId": "ch2"})
        deliveries.run_due(clock.now())

        paths = sorted((r["path"], json.loads(r["body"])["type"]) for r in receiver.requests)
        assert paths == [
            ("/both", "chapter.failed"),
            ("/both", "chapter.finished"),
            ("/finished", "chapter.finished"),
        ]
        ids = {r["headers"]["webhook-id"] for r in receiver.requests if r["path"] != "/both"}
        same = {
            r["headers"]["webhook-id"]
            for r in receiver.requests
            if json.loads(r["body"])["type"] == "chapter.finished"
        }
        assert len(same) == 1 and ids <= same  # one id per event, whatever the endpoint
        assert [d["endpointId"] for d in deliveries.log("ws2")] == []
        assert {d["endpointId"] for d in deliveries.log("ws1")} >= {both["id"]}

    def test_nothing_is_recorded_for_a_workspace_without_endpoints(self, deliveries, clock):
        deliveries.emit("ws1", "chapter.finished", FINISHED)
        assert deliveries.next_due() is None
        assert deliveries.log() == []

    def test_attempts_due_together_are_sent_concurrently(self, deliveries, receiver, clock):
        for path in ("/a", "/b", "/c"):
            add(deliveries, receiver, path=path)
        receiver.barrier = threading.Barrier(3)  # answers only once all three are waiting
        deliveries.emit("ws1", "chapter.finished", FINISHED)
        deliveries.run_due(clock.now())
        assert [d["lastStatus"] for d in deliveries.log()] == [200, 200, 200]


class TestFailures:
    def test_a_non_2xx_answer_fails_and_is_retried(self, deliveries, receiver, clock):
        add(deliveries, receiver)
        receiver.statuses = [500, 404]
        deliveries.emit("ws1", "chapter.finished", FINISHED)
        deliveries.run_due(clock.now())
        (logged,) = deliveries.log()
        assert (logged["state"], logged["attempts"], logged["lastStatus"]) == ("retrying", 1, 500)
        deliveries.run_due(deliveries.next_due())
        assert deliveries.log()[0]["lastStatus"] == 404
        deliveries.run_due(deliveries.next_due())
        assert deliveries.log()[0]["state"] == "delivered"
        assert deliveries.next_due() is None

    def test_a_redirect_fails_and_is_not_followed(self, deliveries, receiver, clock):
        add(deliveries, receiver)
        receiver.statuses = [307]
        deliveries.emit("ws1", "chapter.finished", FINISHED)
        deliveries.run_due(clock.now())
        assert [r["path"] for r in receiver.requests] == ["/hook"]
        assert deliveries.log()[0]["state"] == "retrying"
        assert deliveries.log()[0]["lastStatus"] == 307

    def test_no_answer_within_the_limit_fails(self, deliveries, receiver, clock, db):
        add(deliveries, receiver)
        receiver.hang.set()
        deliveries.emit("ws1", "chapter.finished", FINISHED)
        started = time.monotonic()
        deliveries.run_due(clock.now())
        assert time.monotonic() - started < 5  # the limit is 1 s here, 10 s by default
        (logged,) = deliveries.log()
        assert (logged["state"], logged["lastStatus"]) == ("retrying", None)
        assert "no answer within 1 s" in db.one("SELECT error FROM webhook_attempts")["error"]

    def test_a_refused_connection_fails(self, deliveries, clock, db):
        with socket.socket() as closed:
            closed.bind(("127.0.0.1", 0))
            port = closed.getsockname()[1]
        deliveries.add_endpoint(
            "ws1", f"http://127.0.0.1:{port}/", ["chapter.finished"], allow_private=True
        )
        deliveries.emit("ws1", "chapter.finished", FINISHED)
        deliveries.run_due(clock.now())
        assert deliveries.log()[0]["state"] == "retrying"
        assert "could not connect" in db.one("SELECT error FROM webhook_attempts")["error"]


def test_the_retry_schedule_attempt_by_attempt(deliveries, receiver, clock, db):
    endpoint = add(deliveries, receiver)
    receiver.default = 503
    deliveries.emit("ws1", "chapter.finished", FINISHED)
    for number, offset in enumerate(SCHEDULE, start=1):
        due = START + timedelta(seconds=offset)
        assert deliveries.next_due() == due, f"attempt {number}"
        deliveries.run_due(due - timedelta(milliseconds=1))  # a moment early: nothing
        assert len(receiver.requests) == number - 1
        clock.set(due)
        deliveries.run_due(due)
        assert len(receiver.requests) == number
        assert receiver.requests[-1]["at"] == due
        assert deliveries.log()[0]["attempts"] == number

    (logged,) = deliveries.log()
    assert (logged["state"], logged["attempts"], logged["lastStatus"]) == ("given_up", 8, 503)
    assert deliveries.next_due() is None
    deliveries.run_due(START + timedelta(days=10))
    assert len(receiver.requests) == 8
    expected = [(int((START + timedelta(seconds=s)).timestamp() * 1000), 503) for s in SCHEDULE]
    assert attempts_at(db) == expected
    # Every attempt: the same id and the very same body bytes, each signed afresh.
    assert len({r["headers"]["webhook-id"] for r in receiver.requests}) == 1
    assert len({r["body"] for r in receiver.requests}) == 1
    for sent in receiver.requests:
        verify(sent["body"], sent["headers"], endpoint["secret"])


class TestAddressChecks:
    def test_the_connection_goes_to_the_resolved_address_under_the_host_name(
        self, deliveries, receiver, clock
    ):
        port = httpx.URL(receiver.url).port
        deliveries.add_endpoint(
            "ws1", f"http://receiver.test:{port}/hook", ["chapter.finished"], allow_private=True
        )
        deliveries.emit("ws1", "chapter.finished", FINISHED)
        deliveries.run_due(clock.now())
        (sent,) = receiver.requests  # receiver.test exists only in the fake resolver
        assert sent["headers"]["host"] == f"receiver.test:{port}"

    def test_https_connects_to_the_checked_address_with_the_name_for_tls(self, deliveries, clock):
        deliveries.add_endpoint("ws1", "https://hooks.example.com/in", ["chapter.finished"])
        deliveries.emit("ws1", "chapter.finished", FINISHED)
        with respx.mock(assert_all_called=True) as mock:
            route = mock.post(f"https://{PUBLIC}/in").respond(204)
            deliveries.run_due(clock.now())
        request = route.calls.last.request
        assert request.headers["host"] == "hooks.example.com"
        assert request.extensions["sni_hostname"] == "hooks.example.com"
        assert deliveries.log()[0]["state"] == "delivered"

    def test_a_name_that_turns_private_is_refused_before_the_next_attempt(
        self, deliveries, clock, names, db
    ):
        deliveries.add_endpoint("ws1", "https://hooks.example.com/in", ["chapter.finished"])
        names["hooks.example.com"] = [PUBLIC, "169.254.169.254"]
        deliveries.emit("ws1", "chapter.finished", FINISHED)
        with respx.mock(assert_all_called=False) as mock:
            anything = mock.route().respond(200)
            deliveries.run_due(clock.now())
        assert not anything.called
        (logged,) = deliveries.log()
        assert (logged["state"], logged["lastStatus"]) == ("retrying", None)
        assert "169.254.169.254" in db.one("SELECT error FROM webhook_attempts")["error"]


class TestAdminRoutes:
    def test_adding_an_endpoint_returns_a_fresh_secret(self, admin, receiver):
        answer = admin.post(
            "/_emulator/webhooks",
            json={
                "workspaceId": "ws1",
                "url": receiver.url,
                "events": ["export.ready"],
                "allowPrivate": True,
            },
        )
        assert answer.status_code == 200
        created = answer.json()
        assert set(created) == {"id", "url", "events", "secret"}
        assert created["events"] == ["export.ready"]
        assert created["secret"].startswith("whsec_")
        assert len(base64.b64decode(created["secret"].removeprefix("whsec_"))) >= 24
        other = admin.post(
            "/_emulator/webhooks", json={**created, "workspaceId": "ws1", "allowPrivate": True}
        ).json()
        assert other["secret"] != created["secret"]

    @pytest.mark.parametrize(
        ("body", "status", "message"),
        [
            ({"workspaceId": None, "url": "https://hooks.example.com/"}, 400, "workspaceId"),
            ({"url": "http://hooks.example.com/"}, 400, "https"),
            ({"url": "https://receiver.test/"}, 400, "loopback"),
            ({"url": "https://127.0.0.1/"}, 400, "public addresses"),
            ({"url": "https://unknown.test/"}, 400, "does not resolve"),
            ({"url": "https://hooks.example.com/", "events": []}, 400, "events"),
            ({"url": "https://hooks.example.com/", "events": ["chapter.started"]}, 400, "events"),
            ({"url": "https://hooks.example.com/", "allowPrivate": "yes"}, 400, "allowPrivate"),
            ({"url": "https://hooks.example.com/", "workspaceId": "nope"}, 404, "workspace"),
        ],
    )
    def test_refusals(self, admin, body, status, message):
        sent = {"workspaceId": "ws1", "events": ["chapter.finished"], **body}
        sent = {name: value for name, value in sent.items() if value is not None}
        answer = admin.post("/_emulator/webhooks", json=sent)
        assert answer.status_code == status
        assert message in answer.json()["error"]["message"]

    def test_a_body_that_is_not_a_json_object_is_400(self, admin):
        assert admin.post("/_emulator/webhooks", content=b"[1]").status_code == 400
        assert admin.post("/_emulator/webhooks", content=b"{nope").status_code == 400

    def test_at_most_five_endpoints_and_deleted_ones_do_not_count(self, admin):
        body = {
            "workspaceId": "ws1",
            "url": "https://hooks.example.com/",
            "events": ["chapter.finished"],
        }
        ids = [admin.post("/_emulator/webhooks", json=body).json()["id"] for _ in range(5)]
        sixth = admin.post("/_emulator/webhooks", json=body)
        assert sixth.status_code == 409
        assert "5 webhook endpoints" in sixth.json()["error"]["message"]
        assert admin.post("/_emulator/webhooks", json={**body, "workspaceId": "ws2"}).is_success
        assert admin.delete(f"/_emulator/webhooks/{ids[0]}").json() == {}
        assert admin.post("/_emulator/webhooks", json=body).is_success

    def test_deleting_an_endpoint_gives_up_its_waiting_deliveries(
        self, admin, deliveries, receiver, clock
    ):
        endpoint = add(deliveries, receiver)
        kept = add(deliveries, receiver, path="/kept")
        receiver.default = 500
        deliveries.emit("ws1", "chapter.finished", FINISHED)
        deliveries.run_due(clock.now())
        assert admin.delete(f"/_emulator/webhooks/{endpoint['id']}").status_code == 200
        states = {d["endpointId"]: d["state"] for d in admin.get("/_emulator/deliveries").json()}
        assert states == {endpoint["id"]: "given_up", kept["id"]: "retrying"}
        deliveries.run_due(deliveries.next_due())
        assert [r["path"] for r in receiver.requests].count("/hook") == 1
        deliveries.emit("ws1", "chapter.finished", FINISHED)  # no longer sent to it
        assert len(deliveries.log()) == 3
        assert admin.delete(f"/_emulator/webhooks/{endpoint['id']}").status_code == 404
        assert admin.post(f"/_emulator/webhooks/{endpoint['id']}/test").status_code == 404

    def test_the_test_ping_reports_the_answer_and_is_not_logged(
        self, admin, deliveries, receiver, clock
    ):
        endpoint = add(deliveries, receiver)
        answer = admin.post(f"/_emulator/webhooks/{endpoint['id']}/test")
        assert answer.json() == {"ok": True, "status": 200}
        (sent,) = receiver.requests
        payload = verify(sent["body"], sent["headers"], endpoint["secret"])
        assert payload == {
            "type": "ping",
            "timestamp": iso(START),
            "data": {"endpointId": endpoint["id"]},
        }
        receiver.statuses = [500]
        assert admin.post(f"/_emulator/webhooks/{endpoint['id']}/test").json() == {
            "ok": False,
            "status": 500,
        }
        assert admin.get("/_emulator/deliveries").json() == []
        assert deliveries.next_due() is None
        assert admin.post("/_emulator/webhooks/unknown/test").status_code == 404

    def test_the_log_filters_by_workspace(self, admin, deliveries, receiver, clock):
        add(deliveries, receiver)
        add(deliveries, receiver, workspace="ws2")
        deliveries.emit("ws1", "chapter.finished", FINISHED)
        deliveries.emit("ws2", "chapter.finished", FINISHED)
        assert len(admin.get("/_emulator/deliveries").json()) == 2
        only = admin.get("/_emulator/deliveries", params={"workspaceId": "ws2"}).json()
        assert [json.loads(d["body"])["data"] for d in only] == [FINISHED]
        assert admin.get("/_emulator/deliveries", params={"workspaceId": "x"}).status_code == 404


def test_the_log_keeps_thirty_days(deliveries, receiver, clock, db):
    add(deliveries, receiver)
    deliveries.emit("ws1", "chapter.finished", FINISHED)
    deliveries.run_due(clock.now())
    clock.set(START + timedelta(days=29))
    assert len(deliveries.log()) == 1
    clock.set(START + timedelta(days=30, seconds=1))
    assert deliveries.log() == []
    deliveries.run_due(clock.now())
    assert db.query("SELECT * FROM webhook_events") == []
    assert db.query("SELECT * FROM webhook_attempts") == []


def test_waiting_attempts_resume_after_a_restart(tmp_path, clock, receiver, names):
    path = str(tmp_path / "emulator.sqlite")
    first = Database(path)
    first.executescript(WORKSPACES)
    before = Deliveries(first, clock, resolver=names.__getitem__)
    add(before, receiver)
    receiver.statuses = [500]
    before.emit("ws1", "chapter.finished", FINISHED)
    before.run_due(clock.now())
    before.close()
    first.close()

    again = Database(path)
    after = Deliveries(again, clock, resolver=names.__getitem__)
    assert after.next_due() == START + timedelta(minutes=1)
    after.run_due(after.next_due())
    assert after.log()[0]["state"] == "delivered"
    assert [r["headers"]["webhook-id"] for r in receiver.requests].count(
        receiver.requests[0]["headers"]["webhook-id"]
    ) == 2
    after.close()
    again.close()


class FlakyFront:
    """The test's own front for a Receiver: refuses the first deliveries outright, then
    lets a few through but loses their answers (the receiver acted, the sender saw 500)."""

    def __init__(self, *, refuse: int, lose: int) -> None:
        self.receiver: Receiver | None = None
        self.refuse, self.lose = refuse, lose
        self.answers: list[int] = []

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http" or self.receiver is None:
            await Response(status_code=404)(scope, receive, send)
            return
        if self.refuse:
            self.refuse -= 1
            self.answers.append(503)
            await Response(status_code=503)(scope, receive, send)
            return
        lost = self.lose > 0
        self.lose -= int(lost)

        async def answer(message):
            if message["type"] == "http.response.start":
                self.answers.append(message["status"])
                if lost:
                    message = {**message, "status": 500}
            await send(message)

        await self.receiver(scope, receive, answer)


def test_end_to_end_every_event_lands_in_the_store_exactly_once(
    emulator, workspace, comic_project, api, pages, asgi_server, tmp_path
):
    front = FlakyFront(refuse=3, lose=2)
    url = asgi_server(front)
    kinds = ["chapter.finished", "chapter.failed", "export.ready"]
    endpoint = emulator.add_webhook(workspace["id"], url + "/hooks", kinds, allow_private=True)
    store = SnapshotStore(str(tmp_path / "store"))
    front.receiver = Receiver(endpoint["secret"], store=store, seen_path=tmp_path / "seen.sqlite")

    finished = create_chapter(api, comic_project["id"], pages).json()
    emulator.advance(2 * 3600)
    emulator.set_faults(failure_rate=1.0, seed=3)
    failed = create_chapter(api, comic_project["id"], pages[:1]).json()
    emulator.advance(6 * 3600)  # the retries fall due within minutes

    log = emulator.deliveries(workspace["id"])
    assert log and {d["state"] for d in log} == {"delivered"}
    assert max(d["attempts"] for d in log) > 1  # the front did make the service retry
    assert 503 in front.answers and front.answers.count(200) > len(log)  # and lost answers

    events = store.history("events")
    assert sorted(events["webhook_id"]) == sorted(d["webhookId"] for d in log)
    raw = pq.read_table(tmp_path / "store" / "events", partitioning="hive")
    assert raw.num_rows == len(log)  # handed to the store once each, not only read once
    by_type = events.groupby("type")["chapter_id"].apply(list).to_dict()
    assert by_type["chapter.finished"] == [finished["id"]]
    assert by_type["chapter.failed"] == [failed["id"]]
    assert set(by_type["export.ready"]) == {finished["id"]}
    assert len(by_type["export.ready"]) == 2 * 3  # en and fr, each txt, clean and cbz
    sent = {d["webhookId"]: json.loads(d["body"]) for d in log}
    for row in events.itertuples():
        assert json.loads(row.data) == sent[row.webhook_id]["data"]
        assert row.timestamp == datetime.fromisoformat(sent[row.webhook_id]["timestamp"])
    front.receiver.close()


def test_a_receiver_may_read_the_chapter_while_it_answers(
    emulator, workspace, comic_project, api, pages, asgi_server
):
    seen: list[dict] = []

    async def reads_back(request: Request) -> Response:
        event = json.loads(await request.body())
        if event["type"] == "chapter.finished":
            async with httpx.AsyncClient(
                base_url=api.base_url, headers=api.headers, timeout=5
            ) as client:
                detail = await client.get(f"chapters/{event['data']['chapterId']}")
            seen.append(detail.json())
        return Response(status_code=204)

    url = asgi_server(Starlette(routes=[Route("/", reads_back, methods=["POST"])]))
    emulator.add_webhook(workspace["id"], url + "/", ["chapter.finished"], allow_private=True)
    chapter = create_chapter(api, comic_project["id"], pages[:1]).json()
    emulator.advance(3600)
    assert [d["state"] for d in emulator.deliveries(workspace["id"])] == ["delivered"]
    assert [(d["id"], d["processing"]) for d in seen] == [(chapter["id"], False)]

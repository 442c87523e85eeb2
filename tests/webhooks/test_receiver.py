"""`tk.webhooks.Receiver` over loopback, and `toolkit webhooks serve`."""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import subprocess
import sys
import time
from datetime import UTC, datetime

import httpx
import pytest

from toolkit import _signing
from toolkit.cli import main
from toolkit.errors import ConfigError
from toolkit.store import SnapshotStore
from toolkit.webhooks import Receiver

SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
FINISHED = {
    "chapterId": "ch1",
    "projectId": "p1",
    "position": 3,
    "title": None,
    "pageCount": 2,
    "languages": [{"languageCode": "en", "status": "needs_review", "failed": False}],
}


def event_body(kind: str = "chapter.finished", data: dict | None = None) -> bytes:
    body = {"type": kind, "timestamp": "2025-03-01T09:00:00.000Z", "data": data or FINISHED}
    return json.dumps(body).encode()


def deliver(
    url: str,
    body: bytes,
    *,
    webhook_id: str = "msg_1",
    secret: str = SECRET,
    stamp: int | None = None,
) -> httpx.Response:
    stamp = int(time.time()) if stamp is None else stamp
    headers = {
        "content-type": "application/json",
        "webhook-id": webhook_id,
        "webhook-timestamp": str(stamp),
        "webhook-signature": _signing.sign(secret, webhook_id, stamp, body),
    }
    return httpx.post(url + "/hooks/cts", content=body, headers=headers, timeout=10)


class CountingStore:
    """A store that keeps what it is handed, and can be told to fail."""

    def __init__(self) -> None:
        self.batches: list[list[dict]] = []
        self.failing = False

    def record_events(self, events):
        if self.failing:
            raise OSError("disk full")
        self.batches.append(list(events))
        return len(self.batches[-1])

    @property
    def ids(self) -> list[str]:
        return [event["webhook_id"] for batch in self.batches for event in batch]


@pytest.fixture
def seen(tmp_path):
    return tmp_path / "receiver.sqlite"


@pytest.fixture
def receiver(seen):
    app = Receiver(SECRET, seen_path=seen)
    yield app
    app.close()


class TestAccepting:
    def test_a_verified_event_is_kept_and_answered_2xx(self, receiver, asgi_server):
        url = asgi_server(receiver)
        answer = deliver(url, event_body())
        assert answer.status_code == 200
        (kept,) = receiver.events()
        assert kept["webhook_id"] == "msg_1"
        assert kept["type"] == "chapter.finished"
        assert kept["timestamp"] == datetime(2025, 3, 1, 9, 0, tzinfo=UTC)
        assert kept["data"] == FINISHED
        assert abs((kept["received_at"] - datetime.now(UTC)).total_seconds()) < 60

    def test_a_repeat_is_answered_2xx_without_acting_again(self, receiver, asgi_server):
        url = asgi_server(receiver)
        assert deliver(url, event_body()).json()["repeat"] is False
        again = deliver(url, event_body(), stamp=int(time.time()) + 2)
        assert again.status_code == 200 and again.json()["repeat"] is True
        assert len(receiver.events()) == 1

    def test_handled_ids_survive_a_restart(self, seen, asgi_server):
        first = Receiver(SECRET, seen_path=seen)
        assert deliver(asgi_server(first), event_body()).status_code == 200
        first.close()
        restarted = Receiver(SECRET, seen_path=seen)
        answer = deliver(asgi_server(restarted), event_body())
        assert answer.status_code == 200 and answer.json()["repeat"] is True
        assert [e["webhook_id"] for e in restarted.events()] == ["msg_1"]
        restarted.close()

    def test_the_event_is_on_disk_before_the_answer(self, receiver, seen, asgi_server):
        deliver(asgi_server(receiver), event_body(), webhook_id="msg_durable")
        with sqlite3.connect(seen) as other:  # another connection sees it committed
            rows = other.execute("SELECT webhook_id FROM received").fetchall()
        other.close()
        assert rows == [("msg_durable",)]

    def test_unknown_event_types_are_kept(self, receiver, asgi_server):
        body = event_body("chapter.archived", {"chapterId": "ch9"})
        assert deliver(asgi_server(receiver), body).status_code == 200
        assert [e["type"] for e in receiver.events()] == ["chapter.archived"]

    def test_the_test_ping_is_answered_and_not_kept(self, receiver, asgi_server):
        body = event_body("ping", {"endpointId": "e1"})
        assert deliver(asgi_server(receiver), body).status_code == 200
        assert receiver.events() == []

    def test_ids_are_kept_in_memory_without_a_path(self, asgi_server):
        app = Receiver(SECRET)
        url = asgi_server(app)
        deliver(url, event_body())
        assert deliver(url, event_body()).json()["repeat"] is True
        app.close()


class TestRefusing:
    @pytest.mark.parametrize(
        "change",
        [
            {"secret": "whsec_" + "QUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFB"},
            {"stamp": int(time.time()) - 3600},
        ],
        ids=["wrong secret", "old timestamp"],
    )
    def test_a_bad_signature_is_401_and_nothing_is_kept(self, receiver, asgi_server, change):
        answer = deliver(asgi_server(receiver), event_body(), **change)
        assert answer.status_code == 401
        assert answer.json()["error"]["status"] == 401
        assert receiver.events() == []

    def test_missing_headers_are_401(self, receiver, asgi_server):
        answer = httpx.post(asgi_server(receiver), content=event_body())
        assert answer.status_code == 401
        assert "webhook-id" in answer.json()["error"]["message"]

    @pytest.mark.parametrize(
        "body",
        [
            b"not json",
            b"\xff\xfe",
            b"[1, 2]",
            b'{"timestamp": "2025-03-01T09:00:00Z", "data": {}}',
            b'{"type": "x", "timestamp": "2025-03-01T09:00:00Z", "data": [1]}',
            b'{"type": "x", "timestamp": "yesterday", "data": {}}',
        ],
        ids=["not json", "not utf-8", "array", "no type", "data not object", "bad timestamp"],
    )
    def test_a_verified_body_that_is_not_an_event_is_400(self, receiver, asgi_server, body):
        answer = deliver(asgi_server(receiver), body)
        assert answer.status_code == 400
        assert receiver.events() == []
        # Refused deliveries are not remembered: a corrected retry is taken.
        assert deliver(asgi_server(receiver), event_body()).json()["repeat"] is False

    def test_only_post_is_taken(self, receiver, asgi_server):
        answer = httpx.get(asgi_server(receiver))
        assert answer.status_code == 405
        assert answer.headers["allow"] == "POST"

    def test_an_oversized_body_is_413(self, receiver, asgi_server):
        answer = deliver(asgi_server(receiver), b"{" + b" " * (1 << 20) + b"}")
        assert answer.status_code == 413
        assert receiver.events() == []

    def test_a_bad_secret_is_refused_when_the_receiver_is_built(self):
        with pytest.raises(ConfigError, match="whsec_"):
            Receiver("whsec_not base64!")


class TestStore:
    def test_events_land_in_the_snapshot_store_once(self, seen, tmp_path, asgi_server):
        store = SnapshotStore(str(tmp_path / "store"))
        app = Receiver(SECRET, store=store, seen_path=seen)
        url = asgi_server(app)
        deliver(url, event_body(), webhook_id="msg_a")
        deliver(url, event_body(), webhook_id="msg_a")
        deliver(
            url,
            event_body("export.ready", {"chapterId": "ch1", "format": "cbz"}),
            webhook_id="msg_b",
        )
        events = store.history("events")
        assert list(events["webhook_id"]) == ["msg_a", "msg_b"]
        assert list(events["type"]) == ["chapter.finished", "export.ready"]
        assert list(events["chapter_id"]) == ["ch1", "ch1"]
        assert json.loads(events["data"].iloc[0]) == FINISHED
        assert str(events["timestamp"].iloc[0]) == "2025-03-01 09:00:00+00:00"
        assert len(store.query("SELECT * FROM events")) == 2
        app.close()

    def test_a_repeat_is_not_handed_to_the_store_again(self, seen, asgi_server):
        store = CountingStore()
        app = Receiver(SECRET, store=store, seen_path=seen)
        url = asgi_server(app)
        for _ in range(3):
            deliver(url, event_body())
        assert store.ids == ["msg_1"]
        app.close()

    def test_a_failing_store_still_answers_2xx_and_catches_up_later(self, seen, asgi_server):
        store = CountingStore()
        store.failing = True
        app = Receiver(SECRET, store=store, seen_path=seen)
        url = asgi_server(app)
        assert deliver(url, event_body(), webhook_id="msg_1").status_code == 200
        assert store.ids == []
        store.failing = False
        deliver(url, event_body(), webhook_id="msg_2")  # the next delivery hands both over
        assert store.ids == ["msg_1", "msg_2"]
        assert app.flush() == 0
        app.close()

    def test_events_left_over_are_handed_over_at_start_up(self, seen, asgi_server):
        broken = CountingStore()
        broken.failing = True
        before = Receiver(SECRET, store=broken, seen_path=seen)
        deliver(asgi_server(before), event_body())
        before.close()

        store = CountingStore()
        after = Receiver(SECRET, store=store, seen_path=seen)
        asgi_server(after)  # uvicorn's start-up runs the receiver's lifespan
        assert store.ids == ["msg_1"]
        after.close()

    def test_flush_raises_when_called_by_hand_and_the_store_fails(self, seen, asgi_server):
        store = CountingStore()
        store.failing = True
        app = Receiver(SECRET, store=store, seen_path=seen)
        deliver(asgi_server(app), event_body())
        with pytest.raises(OSError, match="disk full"):
            app.flush()
        app.close()


class TestServe:
    def test_without_a_secret_the_command_says_what_to_set(self, monkeypatch, capsys):
        monkeypatch.delenv("CTS_WEBHOOK_SECRET", raising=False)
        assert main(["webhooks", "serve", "--port", "1"]) == 1
        assert "CTS_WEBHOOK_SECRET" in capsys.readouterr().err

    def test_the_command_serves_a_receiver_into_the_store(self, tmp_path):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        root = tmp_path / "store"
        env = {**os.environ, "CTS_WEBHOOK_SECRET": SECRET, "CTS_STORE": str(root)}
        command = [sys.executable, "-m", "toolkit.cli", "webhooks", "serve", "--port", str(port)]
        server = subprocess.Popen(
            command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        try:
            url = f"http://127.0.0.1:{port}"
            _wait_for(url, server)
            assert deliver(url, event_body(), webhook_id="msg_cli").status_code == 200
        finally:
            server.terminate()
            server.communicate(timeout=20)
        assert list(SnapshotStore(str(root)).history("events")["webhook_id"]) == ["msg_cli"]
        assert (root / "_receiver.sqlite").exists()


def _wait_for(url: str, process: subprocess.Popen) -> None:
    """Poll until the command accepts connections (start-up, not simulated time)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"the command ended: {process.stderr.read().decode()}")
        try:
            httpx.get(url, timeout=1)
            return
        except httpx.TransportError:
            time.sleep(0.05)
    raise AssertionError("the command did not start listening in 30 s")


def test_verifying_does_not_import_starlette_until_a_receiver_is_built():
    code = (
        "import sys, toolkit.webhooks as w; before = 'starlette' in sys.modules; "
        "w.Receiver('whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw').close(); "
        "print(before, 'starlette.applications' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "True"]


def test_events_its_sqlite_cannot_keep_are_503s_and_one_logged_line_until_it_can(
    receiver, asgi_server, monkeypatch, caplog
):
    kept = receiver._inbox.add

    def full(event: dict) -> bool:
        raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr(receiver._inbox, "add", full)
    url = asgi_server(receiver)
    with caplog.at_level("WARNING", logger="toolkit"):
        # The service retries each refused delivery: a full disk refuses them all.
        answers = [deliver(url, event_body(), webhook_id=f"msg_{i}") for i in range(1, 4)]
        monkeypatch.setattr(receiver._inbox, "add", kept)  # space was freed
        assert deliver(url, event_body(), webhook_id="msg_1").status_code == 200
    assert [a.status_code for a in answers] == [503] * 3  # the service sends them again
    assert "database or disk is full" in answers[0].json()["error"]["message"]
    assert [r.getMessage() for r in caplog.records if r.name.startswith("toolkit")] == [
        "the receiver could not keep event msg_1 (database or disk is full); it answers 503 "
        "(the service sends again) until it can: free space where its SQLite is",
        "the receiver keeps events again",
    ]
    assert not [r for r in caplog.records if r.exc_info]

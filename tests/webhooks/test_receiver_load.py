"""The receiver under load: a body arrives whole within the limit or is answered 408; a
sender that disconnects is one line in the log; events reach the store in groups, each
answered 2xx only once its group is on disk, every event exactly once."""

from __future__ import annotations

import asyncio
import logging
import socket
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from deltalake import DeltaTable
from test_receiver import SECRET, CountingStore, deliver, event_body

from toolkit import _signing
from toolkit.store import SnapshotStore
from toolkit.webhooks import Receiver
from toolkit.webhooks.groups import CommitGroups


def signed_head(port: int, body: bytes, webhook_id: str = "msg_slow") -> bytes:
    """A delivery's request line and headers, its body to follow."""
    stamp = int(time.time())
    lines = [
        "POST /hooks/cts HTTP/1.1",
        f"host: 127.0.0.1:{port}",
        "content-type: application/json",
        f"content-length: {len(body)}",
        f"webhook-id: {webhook_id}",
        f"webhook-timestamp: {stamp}",
        f"webhook-signature: {_signing.sign(SECRET, webhook_id, stamp, body)}",
    ]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def port_of(url: str) -> int:
    return int(url.rsplit(":", 1)[1])


class TestSlowSenders:
    def test_a_body_not_whole_within_the_limit_is_408_and_the_connection_closed(self, asgi_server):
        receiver = Receiver(SECRET, body_timeout=0.3)
        port = port_of(asgi_server(receiver))
        body = event_body()
        with socket.create_connection(("127.0.0.1", port), timeout=30) as sender:
            sender.sendall(signed_head(port, body) + body[:10])  # and no more
            answer = b""
            while chunk := sender.recv(65536):  # until the receiver closes
                answer += chunk
        assert answer.startswith(b"HTTP/1.1 408 ")
        assert b"did not arrive whole within 0.3 s" in answer
        assert receiver.events() == []
        receiver.close()

    def test_eight_slow_senders_are_each_answered_408_and_others_are_served_meanwhile(
        self, asgi_server
    ):
        # The test waits out this limit once (it was 2 s); the quick delivery meanwhile
        # takes milliseconds, so 1 s still leaves it room on a loaded machine.
        receiver = Receiver(SECRET, body_timeout=1.0)
        url = asgi_server(receiver)
        port = port_of(url)
        body = event_body()
        senders = [socket.create_connection(("127.0.0.1", port), timeout=30) for _ in range(8)]
        try:
            for number, sender in enumerate(senders):
                sender.sendall(signed_head(port, body, f"msg_slow{number}") + body[:10])
            # While the eight hold their connections, a whole delivery is taken at once.
            assert deliver(url, event_body(), webhook_id="msg_quick").status_code == 200
            for sender in senders:
                assert sender.recv(65536).startswith(b"HTTP/1.1 408 ")
        finally:
            for sender in senders:
                sender.close()
        assert [e["webhook_id"] for e in receiver.events()] == ["msg_quick"]
        receiver.close()


class TestDisconnects:
    def test_a_sender_gone_mid_body_is_one_line_in_the_log(self, asgi_server, caplog):
        receiver = Receiver(SECRET)
        url = asgi_server(receiver)
        port = port_of(url)
        body = event_body()
        with caplog.at_level(logging.WARNING):
            with socket.create_connection(("127.0.0.1", port), timeout=30) as sender:
                sender.sendall(signed_head(port, body) + body[:10])
            deadline = time.monotonic() + 10  # the server's thread logs it: wait for the line
            while not caplog.records and time.monotonic() < deadline:
                time.sleep(0.01)
            # A delivery after it: the server has moved on, and any traceback is logged.
            assert deliver(url, event_body(), webhook_id="msg_after").status_code == 200
        (line,) = [r for r in caplog.records if r.levelno >= logging.WARNING]
        assert "disconnected before its whole body arrived" in line.getMessage()
        assert line.exc_info is None and "\n" not in line.getMessage()
        assert [e["webhook_id"] for e in receiver.events()] == ["msg_after"]
        receiver.close()


class TestGroups:
    def test_deliveries_at_once_land_exactly_once_in_fewer_commits(self, tmp_path, asgi_server):
        store = SnapshotStore(str(tmp_path / "store"))
        receiver = Receiver(SECRET, store=store, seen_path=tmp_path / "inbox.sqlite")
        url = asgi_server(receiver)
        ids = [f"msg_{n:02d}" for n in range(40)]
        sent = [*ids, *ids[:10]]  # ten of them sent twice, at the same time as the rest
        with ThreadPoolExecutor(16) as pool:
            answers = list(pool.map(lambda i: deliver(url, event_body(), webhook_id=i), sent))
        assert all(answer.status_code == 200 for answer in answers)
        assert sorted(store.history("events")["webhook_id"]) == ids
        assert len(store.query("SELECT * FROM events")) == len(ids)  # no copy stored
        commits = DeltaTable(str(tmp_path / "store" / "events")).version() + 1
        assert commits < len(ids)
        receiver.close()

    def test_each_2xx_comes_after_its_group_is_in_the_store(self, seen, asgi_server):
        store = CountingStore()
        receiver = Receiver(SECRET, store=store, seen_path=seen)
        url = asgi_server(receiver)
        early = []

        def send(webhook_id: str) -> None:
            assert deliver(url, event_body(), webhook_id=webhook_id).status_code == 200
            if webhook_id not in store.ids:
                early.append(webhook_id)

        with ThreadPoolExecutor(8) as pool:
            list(pool.map(send, [f"msg_{n}" for n in range(24)]))
        assert early == []
        assert sorted(store.ids) == sorted(f"msg_{n}" for n in range(24))
        assert len(store.batches) < 24
        receiver.close()

    def test_a_repeat_is_2xx_and_not_stored_twice(self, seen, asgi_server):
        store = CountingStore()
        receiver = Receiver(SECRET, store=store, seen_path=seen)
        url = asgi_server(receiver)
        first = deliver(url, event_body(), webhook_id="msg_r")
        again = deliver(url, event_body(), webhook_id="msg_r", stamp=int(time.time()) + 1)
        assert (first.status_code, again.status_code) == (200, 200)
        assert again.json()["repeat"] is True
        assert store.ids == ["msg_r"]
        receiver.close()


@pytest.fixture
def seen(tmp_path):
    return tmp_path / "receiver.sqlite"


class TestCommitGroups:
    def test_callers_within_the_window_share_one_commit_and_later_ones_get_the_next(self):
        commits: list[int] = []

        def commit() -> None:
            commits.append(len(commits))

        async def scenario() -> None:
            groups = CommitGroups(commit, window=0.05)
            await asyncio.gather(*(groups.wait() for _ in range(5)))
            assert commits == [0]
            await groups.wait()  # after the first commit ended: a group of its own
            assert commits == [0, 1]

        asyncio.run(scenario())

    def test_a_caller_that_gives_up_does_not_stop_its_groups_commit(self):
        commits: list[str] = []

        async def scenario() -> None:
            groups = CommitGroups(lambda: commits.append("done"), window=0.05)
            impatient = asyncio.ensure_future(groups.wait())
            await asyncio.sleep(0)
            impatient.cancel()
            await groups.wait()  # joins the same group, still committed
            assert commits == ["done"]

        asyncio.run(scenario())

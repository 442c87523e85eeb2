"""kill -9 of `toolkit webhooks serve` in the middle of 200 deliveries: every delivery it
answered 2xx is kept, and once the service re-sends all 200 to a restarted receiver,
each event is in the store exactly once."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from test_receiver import SECRET, _wait_for, deliver, event_body

from toolkit.store import SnapshotStore

DELIVERIES = 200
KILL_AFTER = 60  # answers 2xx seen before the kill


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def serve(root, port: int) -> subprocess.Popen:
    env = {**os.environ, "CTS_WEBHOOK_SECRET": SECRET, "CTS_STORE": str(root)}
    command = [sys.executable, "-m", "toolkit.cli", "webhooks", "serve", "--port", str(port)]
    server = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _wait_for(f"http://127.0.0.1:{port}", server)
    return server


def send_all(url: str, on_answer=None) -> dict[str, int | None]:
    """Each delivery's status, or None when it got no answer; 8 in flight, like the service."""

    def one(number: int) -> tuple[str, int | None]:
        webhook_id = f"msg_{number:03d}"
        body = event_body(data={"chapterId": f"ch{number}", "projectId": "p1"})
        try:
            status = deliver(url, body, webhook_id=webhook_id).status_code
        except httpx.TransportError:
            return webhook_id, None
        if on_answer is not None:
            on_answer(status)
        return webhook_id, status

    with ThreadPoolExecutor(8) as pool:
        return dict(pool.map(one, range(DELIVERIES)))


@pytest.mark.slow
def test_kill_9_mid_stream_loses_nothing_answered_and_duplicates_nothing(tmp_path):
    root = tmp_path / "store"
    port = free_port()
    server = serve(root, port)
    answered, lock = [0], threading.Lock()

    def kill_at_the_sixtieth(status: int) -> None:
        with lock:
            answered[0] += 1
            if answered[0] == KILL_AFTER:
                os.kill(server.pid, signal.SIGKILL)

    try:
        first = send_all(f"http://127.0.0.1:{port}", kill_at_the_sixtieth)
    finally:
        server.kill()
        server.communicate(timeout=20)
    acknowledged = {webhook_id for webhook_id, status in first.items() if status == 200}
    assert len(acknowledged) >= KILL_AFTER
    assert len(acknowledged) < DELIVERIES, "the kill came too late to test anything"

    port = free_port()
    server = serve(root, port)  # the same store and inbox, as a supervisor would restart it
    try:
        again = send_all(f"http://127.0.0.1:{port}")  # the service re-sends them all
    finally:
        server.terminate()
        server.communicate(timeout=20)
    assert set(again.values()) == {200}

    kept = SnapshotStore(str(root)).history("events")["webhook_id"].tolist()
    assert sorted(kept) == sorted(first), "each of the 200 events exactly once"
    assert acknowledged <= set(kept)

"""What a broken connection says about an upload: a break before the request body was
written whole is "not sent, safe to send again" (and is retried, since the service cannot
have acted); a break after it is "may have acted". Played through a mock transport, then
over loopback against a server that resets the connection after 256 KiB of a 5.5 MB
body."""

from __future__ import annotations

import contextlib
import io
import json
import random
import socket
import struct
import threading
from collections.abc import Iterator

import httpx
import pytest
from page_images import make_page
from scripted import BASE_URL, KEY

import toolkit as tk

PROJECT = {"id": "p1", "kind": "comic"}
CREATED = {"id": "c1", "projectId": "p1", "position": 1, "pages": []}


class BreakMidBody(httpx.BaseTransport):
    """A transport that answers GETs, and takes `keep` bytes of each POST's body before
    the connection breaks; `then` answers the POSTs after `breaks` broken ones. (httpx's
    MockTransport reads the whole body before its handler runs, as no socket does.)"""

    def __init__(self, *, keep: int | None, breaks: int, then: httpx.Response | None = None):
        self.keep, self.breaks, self.then = keep, breaks, then
        self.posts = 0

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if request.method == "GET":
            return httpx.Response(200, json=PROJECT)
        self.posts += 1
        if self.posts > self.breaks and self.then is not None:
            request.read()
            return self.then
        taken = 0
        for chunk in request.stream:  # type: ignore[union-attr]
            taken += len(chunk)
            if self.keep is not None and taken >= self.keep:
                raise httpx.ReadError("connection reset by peer")
        raise httpx.ReadError("connection reset by peer")  # the whole body went


def client_over(handler: BreakMidBody, **options: object) -> tk.Client:
    retry = tk.RetryPolicy(jitter=lambda: 0.0, sleep=lambda seconds: None, **options)  # type: ignore[arg-type]
    return tk.Client(BASE_URL, KEY, transport=handler, retry=retry)


def test_a_break_before_the_body_was_written_says_not_sent_and_safe_to_retry():
    handler = BreakMidBody(keep=1024, breaks=99)
    with client_over(handler, max_retries=2) as client, pytest.raises(tk.TransportError) as caught:
        client.create_chapter("p1", [make_page(1)])
    error = caught.value
    assert error.reason == (
        "the connection broke before the request was completely sent, so it was not sent"
    )
    assert error.advice == "the service cannot have acted on it: it is safe to send it again"
    assert "may have acted" not in str(error)
    assert handler.posts == 3  # not sent, so tried again like a refused connection


def test_a_break_before_the_body_was_written_is_sent_again_and_made_once():
    handler = BreakMidBody(keep=1024, breaks=1, then=httpx.Response(201, json=CREATED))
    with client_over(handler) as client:
        assert client.create_chapter("p1", [make_page(1)]).id == "c1"
    assert handler.posts == 2


def test_a_break_after_the_whole_body_was_written_may_have_acted():
    handler = BreakMidBody(keep=None, breaks=99)
    with client_over(handler) as client, pytest.raises(tk.TransportError) as caught:
        client.create_chapter("p1", [make_page(1)])
    assert "the connection broke after the request was sent" in str(caught.value)
    assert "may have acted" in str(caught.value) and handler.posts == 1


def big_page(megabytes: float) -> bytes:
    """A PNG of noise, which does not compress: `megabytes` of body, give or take."""
    from PIL import Image

    side = int((megabytes * 1e6 / 3) ** 0.5)
    noise = random.Random(7).randbytes(side * side * 3)
    buffer = io.BytesIO()
    Image.frombytes("RGB", (side, side), noise).save(buffer, "PNG", compress_level=0)
    return buffer.getvalue()


@pytest.fixture
def resetting_server() -> Iterator[tuple[str, list[int]]]:
    """A loopback HTTP server that answers GET /projects/p1 and resets every POST's
    connection after reading 256 KiB of its body; yields its URL and the bytes it read of
    each POST."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
    taken: list[int] = []
    stop = threading.Event()

    def serve(conn: socket.socket) -> None:
        with conn:
            data = b""
            while not stop.is_set():
                while b"\r\n\r\n" not in data:
                    more = conn.recv(65536)
                    if not more:
                        return
                    data += more
                head, _, data = data.partition(b"\r\n\r\n")
                if head.startswith(b"GET"):
                    body = json.dumps(PROJECT).encode()
                    conn.sendall(
                        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                        + f"Content-Length: {len(body)}\r\n\r\n".encode()
                        + body
                    )
                    continue
                while len(data) < 256 * 1024:
                    more = conn.recv(65536)
                    if not more:
                        break
                    data += more
                taken.append(len(data))
                # SO_LINGER 0: close with a reset, as a crashed proxy does.
                conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                return

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=serve, args=(conn,), daemon=True).start()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}", taken
    finally:
        stop.set()
        # close() alone leaves accept() blocked in its thread (the join waited 10 s);
        # shutdown wakes it at once.
        with contextlib.suppress(OSError):
            listener.shutdown(socket.SHUT_RDWR)
        listener.close()
        thread.join(timeout=10)


def test_a_reset_after_256_kib_of_a_5_mb_upload_says_it_was_not_sent(resetting_server):
    url, taken = resetting_server
    page = big_page(5.5)
    assert len(page) > 5 * 1024 * 1024
    retry = tk.RetryPolicy(jitter=lambda: 0.0, sleep=lambda seconds: None, max_retries=1)
    with tk.Client(url, KEY, retry=retry) as client, pytest.raises(tk.TransportError) as caught:
        client.create_chapter("p1", [page])
    assert "before the request was completely sent, so it was not sent" in str(caught.value)
    assert "safe to send it again" in str(caught.value)
    assert len(taken) == 2 and all(n < len(page) for n in taken)

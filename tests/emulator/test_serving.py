from __future__ import annotations

import gc
import logging
import socket
import time

import httpx
import pytest
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from toolkit.emulator.serving import BackgroundServer


def _app() -> Starlette:
    return Starlette(routes=[Route("/", lambda request: PlainTextResponse("hello"))])


def test_the_address_is_known_before_the_app_and_served_until_stopped():
    server = BackgroundServer()
    assert server.url == f"http://127.0.0.1:{server.port}" and server.port > 0
    server.start(_app())
    try:
        assert server.running
        assert httpx.get(server.url + "/").text == "hello"
    finally:
        server.stop()
    assert not server.running
    with pytest.raises(httpx.ConnectError):
        httpx.get(server.url + "/")


def test_answers_go_out_without_waiting_for_nagle():
    # Nagle's algorithm holds an answer's second write (uvicorn sends headers and body
    # apart) until the client's delayed ACK: 44 ms a request here, for every emulator
    # call in the tests, the demo and the notebooks. The server's end of a connection
    # must have TCP_NODELAY set (asyncio sets it only on sockets made as TCP).
    server = BackgroundServer().start(_app())
    try:
        with httpx.Client() as client:
            assert client.get(server.url + "/").text == "hello"
            ours = [
                s
                for s in gc.get_objects()
                if isinstance(s, socket.socket)
                and s.fileno() >= 0
                and s.family in (socket.AF_INET, socket.AF_INET6)
                and s.type == socket.SOCK_STREAM
                and _local_port(s) == server.port
                and _has_peer(s)
            ]
            assert ours, "the server's end of the connection was not found"
            assert all(s.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) for s in ours)
    finally:
        server.stop()


def _local_port(sock: socket.socket) -> int | None:
    try:
        return int(sock.getsockname()[1])
    except OSError:
        return None


def _has_peer(sock: socket.socket) -> bool:
    try:
        sock.getpeername()
    except OSError:
        return False
    return True


def test_a_taken_port_is_refused_when_bound():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        with pytest.raises(OSError):
            BackgroundServer(port=taken.getsockname()[1])


def test_a_client_gone_mid_upload_is_one_line_in_the_emulator_log(
    emulator, workspace, comic_project, caplog
):
    port = int(emulator.url.rsplit(":", 1)[1])
    head = (
        f"POST /api/v1/projects/{comic_project['id']}/chapters HTTP/1.1\r\n"
        f"host: 127.0.0.1:{port}\r\nauthorization: Bearer {workspace['apiKey']}\r\n"
        "content-type: multipart/form-data; boundary=cut\r\ncontent-length: 100000\r\n\r\n"
        '--cut\r\ncontent-disposition: form-data; name="pages"; filename="p1.png"\r\n\r\n'
    )
    with caplog.at_level(logging.WARNING):
        with socket.create_connection(("127.0.0.1", port), timeout=30) as client:
            client.sendall(head.encode() + b"\x89PNG")  # and then it is gone
        deadline = time.monotonic() + 10  # the server's thread logs it: wait for the line
        while not caplog.records and time.monotonic() < deadline:
            time.sleep(0.01)
        # A call after it: the server has moved on, and any traceback has been logged.
        chapters = httpx.get(
            f"{emulator.url}/api/v1/projects/{comic_project['id']}/chapters",
            headers={"authorization": f"Bearer {workspace['apiKey']}"},
        )
    (line,) = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert "disconnected before its request was read" in line.getMessage()
    assert line.exc_info is None and "\n" not in line.getMessage()
    assert chapters.json() == []  # nothing was created

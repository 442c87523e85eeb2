from __future__ import annotations

import socket

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


def test_a_taken_port_is_refused_when_bound():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        with pytest.raises(OSError):
            BackgroundServer(port=taken.getsockname()[1])

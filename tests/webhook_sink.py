"""A webhook endpoint that takes every delivery and keeps nothing, for the tests that read
what the emulator sent back from its delivery log (which keeps each body whatever the
answer): tests/conftest.py's `webhook_url` and the seeded histories (tests/histories).

Not a closed port: the emulator retries a refused delivery seven times over a day and a
half of simulated time, each attempt a batch on a fresh event loop and client, and those
retries were half the time of a two-week history (docs/testing.md).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from toolkit.emulator.serving import BackgroundServer


async def _take(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """Answer every request 204, its body read and dropped."""
    if scope["type"] != "http":
        return
    while (await receive()).get("more_body"):
        pass
    await send({"type": "http.response.start", "status": 204, "headers": []})
    await send({"type": "http.response.body", "body": b""})


@contextmanager
def taking_deliveries() -> Iterator[str]:
    """The URL of an endpoint on loopback that answers every delivery 204, while inside."""
    server = BackgroundServer().start(_take, name="webhook-sink", timeout=10)
    try:
        yield f"{server.url}/events"
    finally:
        server.stop(timeout=10)

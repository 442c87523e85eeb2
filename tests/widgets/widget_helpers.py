"""Helpers for the panels' tests: picked files, the emulator's ledger, runs settled."""

from __future__ import annotations

from typing import Any

import httpx

from toolkit.client import Client

SVG = b'<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"/>'


def file_state(files: dict[str, bytes], mime: str = "image/png") -> dict[str, Any]:
    """The state a browser sends when files are picked in a FileUpload."""
    return {
        "value": [
            {
                "name": name,
                "type": mime,
                "size": len(content),
                "last_modified": 1_700_000_000_000,
                "content": memoryview(content),
            }
            for name, content in files.items()
        ]
    }


class Recorder(httpx.BaseTransport):
    """Forwards to the emulator and keeps every request, body included.

    `during` is called as each request goes out, to see what a panel shows meanwhile;
    `seen` keeps `(method, what it returned)`.
    """

    def __init__(self) -> None:
        self.inner = httpx.HTTPTransport()
        self.requests: list[httpx.Request] = []
        self.during: Any = None
        self.seen: list[Any] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        request.read()
        self.requests.append(request)
        if self.during is not None:
            self.seen.append((request.method, self.during(request)))
        return self.inner.handle_request(request)

    def posts(self) -> list[httpx.Request]:
        return [r for r in self.requests if r.method == "POST"]

    def close(self) -> None:
        self.inner.close()


def charges(emulator, workspace, reason: str | None = None) -> list[dict[str, Any]]:
    found = emulator.ledger(workspace["id"])["charges"]
    return [c for c in found if reason is None or c["reason"] == reason]


def settle(emulator, client: Client, project_id: str, *, hours: float = 3) -> None:
    """Advance the clock until no chapter of the project is processing."""
    for _ in range(int(hours * 6)):
        if not any(c.processing for c in client.list_chapters(project_id)):
            return
        emulator.advance(600)
    raise AssertionError("chapters still processing after the clock was advanced")


def failed_chapter(emulator, client: Client, project_id: str, pages: list[bytes]) -> str:
    """A comic chapter whose run failed."""
    emulator.set_faults(failure_rate=1.0, seed=1)
    chapter = client.create_chapter(project_id, pages=pages)
    settle(emulator, client, project_id)
    emulator.set_faults(failure_rate=0.0)
    assert client.get_chapter(chapter.id).failed
    return chapter.id

"""A client whose first POST reaches the service and acts, and whose answer is lost: the
case a create reconciles (tests/client/test_reconcile.py, tests/batch/test_send.py)."""

from __future__ import annotations

import httpx

import toolkit as tk


class LoseOneAnswer(httpx.HTTPTransport):
    """Sends every request to the service; the first create's answer, once the service has
    acted and answered, is read and thrown away, and the client sees a broken connection."""

    def __init__(self) -> None:
        super().__init__()
        self.lost: list[int] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = super().handle_request(request)
        if request.method == "POST" and not self.lost:
            response.read()
            self.lost.append(response.status_code)
            raise httpx.ReadError("the connection broke before the answer came back")
        return response


def lossy_client(emulator: object, workspace: dict) -> tuple[tk.Client, LoseOneAnswer]:
    """A client of `workspace` on `emulator` that loses its first POST's answer."""
    transport = LoseOneAnswer()
    retry = tk.RetryPolicy(jitter=lambda: 0.0, sleep=lambda seconds: None)
    url = emulator.url  # type: ignore[attr-defined]
    client = tk.Client(url, workspace["apiKey"], transport=transport, retry=retry)
    return client, transport

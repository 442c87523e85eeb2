"""A scripted transport for client tests: plays answers in order, records requests."""

from __future__ import annotations

from collections.abc import Callable

import httpx

from toolkit.client import AsyncClient, Client, RetryPolicy

KEY = "sk-scripted-secret-123"
BASE_URL = "https://cts.example.com"
Answer = httpx.Response | Exception | Callable[[httpx.Request], httpx.Response]


class Script:
    """A transport handler that plays answers in order and records every request."""

    def __init__(self, *answers: Answer) -> None:
        self.answers = list(answers)
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        request.read()  # a multipart body is a stream: read it so tests can look at it
        self.requests.append(request)
        if not self.answers:
            raise AssertionError(f"unexpected request {request.method} {request.url}")
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer(request) if callable(answer) else answer

    @property
    def methods(self) -> list[str]:
        return [f"{r.method} {r.url.path.removeprefix('/api/v1')}" for r in self.requests]


def scripted_client(script: Script, **options: object) -> tuple[Client, list[float]]:
    """A Client over `script` whose sleeps are recorded, not slept, with no jitter."""
    sleeps: list[float] = []
    retry = RetryPolicy(jitter=lambda: 0.0, sleep=sleeps.append)
    client = Client(BASE_URL, KEY, transport=httpx.MockTransport(script), retry=retry, **options)  # type: ignore[arg-type]
    return client, sleeps


def scripted_async_client(script: Script, **options: object) -> tuple[AsyncClient, list[float]]:
    sleeps: list[float] = []

    async def record(seconds: float) -> None:
        sleeps.append(seconds)

    retry = RetryPolicy(jitter=lambda: 0.0, sleep=record)
    client = AsyncClient(
        BASE_URL,
        KEY,
        transport=httpx.MockTransport(script),
        retry=retry,
        **options,  # type: ignore[arg-type]
    )
    return client, sleeps

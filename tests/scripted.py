"""A scripted transport for client tests: plays answers in order, records requests."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import httpx

from toolkit.client import AsyncClient, Client

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
    client = Client(BASE_URL, KEY, transport=httpx.MockTransport(script), **options)  # type: ignore[arg-type]
    sleeps: list[float] = []
    client._sleep = sleeps.append
    client._retry = dataclasses.replace(client._retry, jitter=lambda: 0.0)
    return client, sleeps


def scripted_async_client(script: Script, **options: object) -> tuple[AsyncClient, list[float]]:
    client = AsyncClient(BASE_URL, KEY, transport=httpx.MockTransport(script), **options)  # type: ignore[arg-type]
    sleeps: list[float] = []

    async def record(seconds: float) -> None:
        sleeps.append(seconds)

    client._sleep = record
    client._retry = dataclasses.replace(client._retry, jitter=lambda: 0.0)
    return client, sleeps

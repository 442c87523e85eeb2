"""Fixtures that put the service's emulator in your tests: a pytest plugin.

Installed with the toolkit and registered under `pytest11`, so pytest loads it wherever
the toolkit is installed. It is inert until a test asks for one of its fixtures: this
module imports nothing heavy, and each fixture imports what it needs when it runs.

```python
def test_a_chapter_is_translated(cts_client, cts_project, cts_pages, cts_advance):
    project = cts_project(kind="comic", target_languages=["en", "fr"])
    chapter = cts_client.create_chapter(project.id, pages=cts_pages(3))
    cts_advance(3600)                                   # an hour of simulated time
    assert cts_client.get_chapter(chapter.id).status == "needs_review"
```

Every fixture is function-scoped, so tests share nothing and run in any order. The
emulator's clock is manual and starts at `cts_start` (2026-01-07 09:00 UTC unless you
define your own `cts_start` fixture), never at the wall-clock time, so a test passes or
fails the same at any hour: time passes only through `cts_advance(seconds)`, which
returns once every run step and webhook delivery due by then has happened.

| fixture | gives |
|---|---|
| `cts_start` | the instant the emulator's clock starts at; override it to name yours |
| `cts_emulator` | a running `toolkit.emulator.Emulator` on loopback (manual clock) |
| `cts_workspace` | a fresh workspace: `.id`, `.name`, `.api_key`, `.base_url` |
| `cts_credits` | the workspace's starting credits (10,000); override it to change them |
| `cts_project` | a factory: `cts_project(kind="comic", target_languages=["en"], ...)` |
| `cts_client` | a `tk.Client` bound to the workspace; its retries wait on the emulator's clock |
| `cts_async_client` | a `tk.AsyncClient` bound to it; use it as `async with cts_async_client:` |
| `cts_advance` | `cts_advance(seconds)`: move the clock on; returns the new time |
| `cts_faults` | `cts_faults(failure_rate=, stall_rate=, latency_ms=, error_rate=, seed=)` |
| `cts_chaos` | `cts_chaos(method, route, kind, ...)`: a fault for one route (docs/emulator.md) |
| `cts_webhooks` | a receiver on loopback for every event kind; `.events` holds what verified |
| `cts_pages` | `cts_pages(count)`: that many distinct PNG page images, as bytes |
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from toolkit.client import AsyncClient, Client, RetryPolicy
    from toolkit.emulator import Emulator
    from toolkit.models import Project
    from toolkit.webhooks import Receiver

__all__ = [
    "cts_advance",
    "cts_async_client",
    "cts_chaos",
    "cts_client",
    "cts_credits",
    "cts_emulator",
    "cts_faults",
    "cts_pages",
    "cts_project",
    "cts_start",
    "cts_webhooks",
    "cts_workspace",
]

_EVENT_TYPES = ("chapter.finished", "chapter.failed", "export.ready")


@dataclass(frozen=True)
class _EmulatedWorkspace:
    """A workspace of the test's emulator; its key stays out of the repr."""

    id: str
    name: str
    api_key: str = field(repr=False)
    base_url: str


# A Wednesday morning: a test that lets a few hours pass crosses no day, week or month.
_DEFAULT_START = datetime(2026, 1, 7, 9, 0, tzinfo=UTC)


@pytest.fixture
def cts_start() -> datetime:
    """The instant `cts_emulator`'s clock starts at; define your own to name another."""
    return _DEFAULT_START


@pytest.fixture
def cts_emulator(cts_start: datetime) -> Iterator[Emulator]:
    """An emulator on a manual clock starting at `cts_start`, stopped after the test."""
    from toolkit.emulator import Emulator

    with Emulator(clock="manual", start=cts_start) as emulator:
        yield emulator


@pytest.fixture
def cts_credits() -> int:
    """The credits `cts_workspace` starts with; define your own `cts_credits` to change them."""
    return 10_000


@pytest.fixture
def cts_workspace(cts_emulator: Emulator, cts_credits: int) -> _EmulatedWorkspace:
    """A workspace in `cts_emulator` with `cts_credits` credits."""
    made = cts_emulator.create_workspace("Test workspace", credits=cts_credits)
    return _EmulatedWorkspace(made["id"], made["name"], made["apiKey"], cts_emulator.url)


@pytest.fixture
def cts_project(
    cts_emulator: Emulator, cts_workspace: _EmulatedWorkspace
) -> Callable[..., Project]:
    """`cts_project(...)` creates a project in the workspace (as the dashboard would)."""
    from toolkit.models import Project

    def create(
        name: str = "Test project",
        *,
        kind: str = "comic",
        target_languages: list[str] | tuple[str, ...] = ("en",),
        source_language: str = "ja",
        reading_direction: str = "rtl",
        process_steps: str | None = None,
        translation_model: str | None = None,
    ) -> Project:
        made = cts_emulator.create_project(
            cts_workspace.id,
            name=name,
            kind=kind,
            source_language=source_language,
            reading_direction=reading_direction,
            # A novel project only takes "translate"; "full" shows every comic phase.
            process_steps=process_steps or ("translate" if kind == "novel" else "full"),
            target_languages=list(target_languages),
            translation_model=translation_model,
        )
        return Project.from_json(made)

    return create


def _on_the_emulators_clock(emulator: Emulator) -> RetryPolicy:
    """Retries and waits that pass on the emulator's clock: a wait moves simulated time
    on at once (as a test would with `cts_advance`), never the test's real time."""
    from toolkit.client import RetryPolicy

    return RetryPolicy(
        jitter=lambda: 0.5,  # the same waits on every run
        sleep=emulator.advance,
        monotonic=lambda: emulator.clock.now().timestamp(),
    )


@pytest.fixture
def cts_client(cts_emulator: Emulator, cts_workspace: _EmulatedWorkspace) -> Iterator[Client]:
    """A `Client` of the workspace; its retries and `wait_for_chapter` wait on the
    emulator's clock."""
    from toolkit.client import Client

    with Client(
        base_url=cts_workspace.base_url,
        api_key=cts_workspace.api_key,
        retry=_on_the_emulators_clock(cts_emulator),
    ) as client:
        yield client


@pytest.fixture
def cts_async_client(
    cts_emulator: Emulator, cts_workspace: _EmulatedWorkspace
) -> Iterator[AsyncClient]:
    """An `AsyncClient`; `async with cts_async_client as client:` in your test's loop.

    It is made here, outside any loop, and binds to the loop that first uses it. It
    keeps no connection open between requests, so a test that never closes it leaves
    no socket behind (pytest cannot close one in the test's loop once that has ended);
    it is closed after the test all the same. Its waits pass on the emulator's clock.
    """
    import asyncio

    import httpx

    from toolkit.client import AsyncClient

    client = AsyncClient(
        base_url=cts_workspace.base_url,
        api_key=cts_workspace.api_key,
        retry=_on_the_emulators_clock(cts_emulator),
        transport=httpx.AsyncHTTPTransport(limits=httpx.Limits(max_keepalive_connections=0)),
    )
    yield client
    # A no-op for a client already closed; one bound to a finished loop may refuse a
    # new loop, and holds no connection then.
    with contextlib.suppress(RuntimeError):
        asyncio.run(client.aclose())


@pytest.fixture
def cts_advance(cts_emulator: Emulator) -> Callable[[float], datetime]:
    """`cts_advance(seconds)` moves the emulator's clock on and returns the new time."""
    return cts_emulator.advance


@pytest.fixture
def cts_faults(cts_emulator: Emulator) -> Callable[..., dict[str, Any]]:
    """`cts_faults(failure_rate=0.5, seed=1)`: shares of runs that fail or stall, latency,
    share of requests answered 503. Unnamed settings are 0."""
    return cts_emulator.set_faults


@pytest.fixture
def cts_chaos(cts_emulator: Emulator) -> Callable[..., dict[str, Any]]:
    """`cts_chaos("POST", "/projects/{id}/chapters", "drop", count=1)`: a chaos rule for one
    route (kinds status, latency, drop, cut, reset, trickle); `cts_emulator.chaos_rules()`
    lists what each did."""
    return cts_emulator.add_chaos


@pytest.fixture
def cts_pages() -> Callable[[int], list[bytes]]:
    """`cts_pages(count)`: distinct comic pages (PNG bytes) drawn like the samples."""
    from toolkit.samples import page_png

    def pages(count: int, *, chapter: int = 1) -> list[bytes]:
        return [page_png(chapter, number) for number in range(1, count + 1)]

    return pages


class _WebhookSink:
    """A `tk.webhooks.Receiver` served on loopback and registered for every event kind.

    `events` lists the deliveries that verified, once each (repeats are dropped), as the
    receiver keeps them: dicts with `webhook_id`, `type`, `timestamp`, `data`,
    `received_at`. The test ping is answered but not kept.
    """

    def __init__(self, receiver: Receiver, url: str, endpoint_id: str) -> None:
        self.receiver = receiver
        self.url = url
        self.endpoint_id = endpoint_id

    @property
    def events(self) -> list[dict[str, Any]]:
        return self.receiver.events()

    def of_type(self, event_type: str) -> list[dict[str, Any]]:
        return [event for event in self.events if event["type"] == event_type]

    def __repr__(self) -> str:
        return f"WebhookSink(url={self.url!r}, events={len(self.events)})"


@pytest.fixture
def cts_webhooks(
    cts_emulator: Emulator, cts_workspace: _EmulatedWorkspace
) -> Iterator[_WebhookSink]:
    """A loopback receiver subscribed to every event of `cts_workspace`."""
    from toolkit.emulator.serving import BackgroundServer
    from toolkit.webhooks import Receiver

    server = BackgroundServer()
    # The port comes first: the endpoint's URL names it, and its secret makes the receiver.
    endpoint = cts_emulator.add_webhook(
        cts_workspace.id, f"{server.url}/webhooks", list(_EVENT_TYPES), allow_private=True
    )
    receiver = Receiver(endpoint["secret"])
    try:
        server.start(receiver, name="cts-webhooks")
        yield _WebhookSink(receiver, server.url, endpoint["id"])
    finally:
        server.stop()
        receiver.close()

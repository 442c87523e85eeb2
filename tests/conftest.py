"""Fixtures shared by the suite: an emulator on loopback, a workspace, projects, pages.

Every fixture is function-scoped, so no test depends on another's state or order; the
emulator's clock is manual, so time passes only through `emulator.advance(seconds)`.
Every emulator starts at `epoch`, never at the wall-clock time: a test marked
`@pytest.mark.epochs` runs once at each instant of `EPOCHS`, or at those it names
(docs/testing.md).
"""

from __future__ import annotations

from datetime import datetime

import pytest
from epochs import EPOCHS, SUITE_START
from page_images import make_page


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    marker = metafunc.definition.get_closest_marker("epochs")
    if marker and "epoch" in metafunc.fixturenames:
        names = list(marker.args) or list(EPOCHS)  # `epochs("before-midnight")`: some
        metafunc.parametrize("epoch", [EPOCHS[n] for n in names], ids=names, indirect=True)


@pytest.fixture
def epoch(request: pytest.FixtureRequest) -> datetime:
    """The instant every emulator of the test starts at (several with `mark.epochs`)."""
    return getattr(request, "param", SUITE_START)


@pytest.fixture
def cts_start(epoch: datetime) -> datetime:
    """The plugin's emulators start at the suite's instant too."""
    return epoch


@pytest.fixture(name="make_page")
def make_page_fixture():
    """The `make_page` function as a fixture."""
    return make_page


@pytest.fixture
def pages() -> list[bytes]:
    """Three distinct PNG pages."""
    return [make_page(seed) for seed in range(3)]


@pytest.fixture
def emulator(epoch):
    from toolkit.emulator import Emulator

    with Emulator(clock="manual", start=epoch) as emu:
        yield emu


@pytest.fixture
def workspace(emulator) -> dict:
    return emulator.create_workspace(name="Test workspace", credits=10_000)


@pytest.fixture
def comic_project(emulator, workspace) -> dict:
    return emulator.create_project(
        workspace["id"],
        name="Moonlit Harbor",
        kind="comic",
        source_language="ja",
        reading_direction="rtl",
        process_steps="full",
        target_languages=["en", "fr"],
    )


@pytest.fixture
def novel_project(emulator, workspace) -> dict:
    return emulator.create_project(
        workspace["id"],
        name="River of Stars",
        kind="novel",
        source_language="zh",
        reading_direction="ltr",
        process_steps="translate",
        target_languages=["en", "es"],
    )


@pytest.fixture
def client(emulator, workspace):
    from toolkit.client import Client

    with Client(base_url=emulator.url, api_key=workspace["apiKey"]) as c:
        yield c


@pytest.fixture
def asgi_server():
    """Serve ASGI apps with uvicorn on loopback: `url = asgi_server(app)`, a free port each.

    Each server runs in a thread and is shut down when the test ends.
    """
    from toolkit.emulator.serving import BackgroundServer

    running: list[BackgroundServer] = []

    def start(app) -> str:
        server = BackgroundServer()
        running.append(server)
        return server.start(app, timeout=10).url

    yield start
    for server in running:
        server.stop(timeout=10)

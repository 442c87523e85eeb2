"""Fixtures shared by the suite: an emulator on loopback, a workspace, projects, pages.

Every fixture is function-scoped, so no test depends on another's state or order, but
read-only ones made once per process: `webhook_url`, an endpoint that keeps nothing, and
`demo_day` and `demo`, a simulated store and the short demo's output no test writes to
(those two once per run: xdist's workers share them).
The emulator's clock is manual, so time passes only through `emulator.advance(seconds)`.
Every emulator starts at `epoch`, never at the wall-clock time: a test marked
`@pytest.mark.epochs` runs once at each instant of `EPOCHS`, or at those it names
(docs/testing.md).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import datetime

import pytest
from epochs import EPOCHS, SUITE_START
from page_images import make_page


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    marker = metafunc.definition.get_closest_marker("epochs")
    if marker and "epoch" in metafunc.fixturenames:
        names = list(marker.args) or list(EPOCHS)  # `epochs("before-midnight")`: some
        # `epochs(..., slow=("new-year",))`: those instants in the slow group alone (the
        # default group's budget), which CI runs as well.
        slow = set(marker.kwargs.get("slow", ()))
        metafunc.parametrize(
            "epoch",
            [pytest.param(EPOCHS[n], marks=pytest.mark.slow) if n in slow else EPOCHS[n]
             for n in names],
            ids=names,
            indirect=True,
        )  # fmt: skip


# The longest files, longest first (measured: docs/testing.md, "How long it takes"). Under
# `--dist loadfile` a file runs on one worker, and xdist hands files out in the order it
# gets them: left to itself it orders them by their number of tests, which put these (few
# tests, a long simulation or a subprocess each) last, where one of them alone kept a
# worker busy after the other had finished. Started first, they overlap the many short
# files instead. The short demo (`demo`, below) is made by the first file that asks for it
# and read by the others: test_demo.py, first, makes it (all its askers are in the slow
# group); test_metrics.py and test_explanations.py, later, come when it is made, and a
# worker other than its maker reads it instead of waiting for it. A file not listed keeps
# its place; a name that no longer exists is ignored, so the list can only be out of
# date, never wrong.
LONGEST_FIRST = (
    "tests/test_demo.py",
    "tests/test_metrics.py",
    "tests/test_types.py",
    "tests/analysis/test_run_store.py",
    "tests/store/test_store_damage.py",
    "tests/reporting/test_report_html.py",
    "tests/store/test_snapshot_store.py",
    "tests/store/test_store_foreign.py",
    "tests/analysis/test_histories.py",
    "tests/emulator/test_fuzz.py",
    "tests/test_cli_errors.py",
    "tests/test_cli_explain.py",
    "tests/analysis/test_runs.py",
    "tests/store/test_store_latest.py",
    "tests/store/test_store_migrate.py",
    "tests/watch/test_checks_history.py",
    "tests/analysis/test_reference_runs.py",
    "tests/test_conformance.py",
    "tests/store/test_store_diff.py",
    "tests/reporting/test_report_xlsx.py",
    "tests/reporting/test_linked_tables.py",
    "tests/analysis/test_forecast_families.py",
    "tests/test_pytest_plugin.py",
    "tests/reporting/test_explanations.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Run the files of `LONGEST_FIRST` first (pyproject's addopts turn xdist's own
    reordering off, `--no-loadscope-reorder`, so that this order is the one it uses)."""
    rank = {path: n for n, path in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::")[0], len(rank)))


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


@pytest.fixture(scope="session")
def webhook_url() -> Iterator[str]:
    """An endpoint on loopback that takes every delivery and keeps nothing
    (tests/webhook_sink.py), for the tests that read what the emulator sent back from its
    delivery log. One per process: it keeps nothing, so tests cannot see each other
    through it."""
    from webhook_sink import taking_deliveries

    with taking_deliveries() as url:
        yield url


@pytest.fixture(scope="session")
def demo_day(tmp_path_factory):
    """A store of `simulate_day`'s three hours at the suite's instant (the demo's seeded
    projects, uploads, re-scans, failures, held pages and events), simulated once per
    run (tests/once_per_run.py) for the tests that read such a store: read it, never
    write to it."""
    from once_per_run import made_once

    from toolkit.store import SnapshotStore

    def simulated() -> str:
        from toolkit.demo import simulate_day

        store = SnapshotStore(tmp_path_factory.mktemp("demo-day") / "store")
        simulate_day(store, hours=3, progress=False, start=SUITE_START)
        return str(store.root)

    return SnapshotStore(made_once(tmp_path_factory, "demo-day", simulated))


@pytest.fixture(scope="session")
def demo(tmp_path_factory):
    """`toolkit demo --hours 3` at the suite's instant (tests/short_demo.py), run once per
    run (tests/once_per_run.py) for the tests of what it wrote and printed: read it,
    never write to it."""
    from once_per_run import made_once
    from short_demo import run_short_demo

    own = tmp_path_factory.mktemp("demo") / "demo"
    return made_once(tmp_path_factory, "short-demo", lambda: run_short_demo(own))


class _Paused:
    """The `time` module as the client module sees it, with its sleeps recorded, not slept."""

    def __init__(self) -> None:
        self.pauses: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.pauses.append(seconds)

    def __getattr__(self, name: str) -> object:
        return getattr(time, name)


@pytest.fixture
def retry_pauses(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The pauses a `Client` at its default retries takes between tries, kept in this list
    instead of slept: for the tests of a service that never answers, whose retries
    would wait 4-7 s of real time. Assert the bound on the list, not on a clock."""
    from toolkit.client import clients

    paused = _Paused()
    monkeypatch.setattr(clients, "time", paused)
    return paused.pauses


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

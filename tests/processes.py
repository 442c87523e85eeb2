"""Processes started together, for the tests that write one store from two at once."""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Sequence
from typing import Any


def run_together(
    target: Callable[..., None], arguments: Sequence[tuple[Any, ...]], *, timeout: float
) -> None:
    """Run `target(*args, start)` in a spawned process per `args`, released at once by the
    `start` event (so they really overlap), and fail unless every one ends cleanly."""
    context = multiprocessing.get_context("spawn")
    start = context.Event()
    workers = [context.Process(target=target, args=(*args, start)) for args in arguments]
    for worker in workers:
        worker.start()
    start.set()
    for worker in workers:
        worker.join(timeout=timeout)
        assert worker.exitcode == 0


def take_as_writer(
    root: str, options: dict[str, str] | None, name: str, count: int, start: Any
) -> None:
    """One of the writers sharing a store (run it with `run_together`): its own project
    `proj-<name>`, one chapter more at each take, takes eight hours apart (so days go by
    and each process also compacts as it goes)."""
    from datafakes import FakeService, hours

    from toolkit.store import SnapshotStore

    service = FakeService()
    service.add_project(f"proj-{name}", languages=("en",))
    start.wait()
    store = SnapshotStore(root, storage_options=options)
    for step in range(count):
        service.add_chapter(f"{name}-{step}", f"proj-{name}", position=step + 1, languages=("en",))
        store.take(service, details="none", at=hours(8 * step))


def assert_every_snapshot_is_its_writers(store: Any, writers: int, count: int) -> None:
    """Every take of every `take_as_writer` is there once, and each snapshot shows
    exactly what its own process saw, though they wrote at once."""
    from datafakes import T0

    manifest = store.snapshots()
    assert len(manifest) == writers * count and manifest["snapshot_id"].is_unique
    history = store.history("chapters")
    for row in manifest.itertuples():
        shown = history[history["snapshot_id"] == row.snapshot_id]
        name = shown["project_id"].iloc[0].removeprefix("proj-")
        step = int((row.snapshot_at - T0).total_seconds() // (8 * 3600))
        assert sorted(shown["chapter_id"]) == [f"{name}-{i}" for i in range(step + 1)]

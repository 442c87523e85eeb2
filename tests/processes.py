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

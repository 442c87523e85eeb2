"""`made_once`: a read-only fixture's value made once per run, shared by xdist's workers.

Under `--dist loadfile` a session-scoped fixture is made once per worker that asks for
it. For the few that take seconds (the short demo, the demo day) the first worker to
make one publishes it in the run's folder above the workers' own; a worker that asks
later reads it. No worker waits for another: two that ask at once each make one.
"""

from __future__ import annotations

import os
import pickle
from collections.abc import Callable
from typing import TypeVar

import pytest

T = TypeVar("T")


def made_once(factory: pytest.TempPathFactory, name: str, make: Callable[[], T]) -> T:
    """`make()`, or the value another worker of this run published under `name`.

    Outside xdist (`-n 0`) it is simply `make()`: the fixture's scope makes it once.
    The value is pickled; publish paths and plain data, not open stores.
    """
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return make()
    shared = factory.getbasetemp().parent  # the run's folder, above each worker's own
    published = shared / f"{name}.pickle"
    if published.exists():
        value: T = pickle.loads(published.read_bytes())
        return value
    value = make()
    partial = shared / f"{name}.{os.getpid()}.partial"
    partial.write_bytes(pickle.dumps(value))
    os.replace(partial, published)  # whole or absent: a reader never sees half of it
    return value

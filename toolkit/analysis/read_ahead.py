"""What a view will need later, read meanwhile on a thread of its own.

A page knows early what it reads later (the tables at the previous period's end, each
period's lines): `read_ahead` starts such a read on the reading thread and keeps its
future in the view's memo; the question that needs it takes it with `remembered`, which
waits for it, or raises what the read raised. The store's queries and Arrow's
conversions let go of the interpreter, so the read goes on on the machine's second core
while the caller works out something else (the weekly page: about a second of its ten
at 100,000 chapters x a year).

A read ahead uses the store alone, never the view's stages: those are built and kept on
the caller's thread.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from functools import cache, partial
from typing import TYPE_CHECKING

import pandas as pd

if TYPE_CHECKING:
    from toolkit.analysis.observed import Observed

__all__ = ["at_key", "read_ahead", "remembered", "tables_ahead", "used_once"]


def read_ahead(obs: Observed, key: str, read: Callable[[], object]) -> None:
    """Start `read` on the reading thread, its answer to be `obs.memo[key]` (unless the
    view has one already)."""
    if key not in obs.memo:
        obs.memo[key] = _reader().submit(read)


def remembered(obs: Observed, key: str) -> object | None:
    """`obs.memo[key]` (None when absent), once a read ahead of it is done."""
    found = obs.memo.get(key)
    if isinstance(found, Future):
        found = obs.memo[key] = found.result()
    return found


def used_once(obs: Observed, key: str) -> object | None:
    """`remembered(obs, key)`, let go by the view: a read used once is not held."""
    found = remembered(obs, key)
    obs.memo.pop(key, None)
    return found


def tables_ahead(obs: Observed, tables: Sequence[str], moment: pd.Timestamp) -> None:
    """Read `tables` at the snapshot `moment` ahead, for `obs.at`; the latest snapshot's
    are the view's own reads, not read again."""
    for table in tables:
        if not obs.reads_latest(table, moment):
            read_ahead(obs, at_key(table, moment), partial(obs.store.as_of, table, moment))


def at_key(table: str, moment: pd.Timestamp) -> str:
    """The memo's key of `table` at the snapshot `moment` (`Observed.at`)."""
    return f"at:{table}:{moment.isoformat()}"


@cache
def _reader() -> ThreadPoolExecutor:
    """The one thread reads ahead run on, in turn (made when first asked: a process that
    reads nothing ahead starts none)."""
    return ThreadPoolExecutor(max_workers=1, thread_name_prefix="toolkit-read-ahead")

"""`CommitGroups`: the events that arrive within a short window go to the store in one commit.

A Delta commit per delivery leaves a file per event (900 files for 1,500 events), and
the store's reads slow down with its file count. So the first delivery of a group opens
a window; when it closes, one call hands the store everything waiting, and every
delivery of the group is answered once that call has returned: a 2xx still means the
event is on disk. Why the window is 0.1 s: docs/webhooks.md.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

__all__ = ["WINDOW", "CommitGroups"]

WINDOW = 0.1


class CommitGroups:
    """Runs `commit` (blocking; in a worker thread) once per group of `wait()` callers:
    those that called within `window` seconds of the group's first."""

    def __init__(self, commit: Callable[[], object], *, window: float = WINDOW) -> None:
        if window < 0:
            raise ValueError(f"the commit window must be 0 s or more, not {window}")
        self._commit = commit
        self.window = window
        self._open: asyncio.Future[None] | None = None
        self._closing: set[asyncio.Task[None]] = set()  # held: the loop keeps weak refs only

    async def wait(self) -> None:
        """Returns once a commit that began after this call has ended (a caller that gives
        up, a disconnected sender, does not stop its group's commit)."""
        loop = asyncio.get_running_loop()
        group = self._open
        if group is None or group.get_loop() is not loop:
            group = self._open = loop.create_future()
            task = loop.create_task(self._close(group))
            self._closing.add(task)
            task.add_done_callback(self._closing.discard)
        await asyncio.shield(group)

    async def _close(self, group: asyncio.Future[None]) -> None:
        from starlette.concurrency import run_in_threadpool

        try:
            await asyncio.sleep(self.window)
            if self._open is group:
                self._open = None  # later callers open the next group
            await run_in_threadpool(self._commit)
        except asyncio.CancelledError:  # the server stops: no answer says "committed"
            group.cancel()
            raise
        except Exception as exc:  # every waiter raises it: none is answered as committed
            group.set_exception(exc)
        else:
            group.set_result(None)
        finally:
            if self._open is group:
                self._open = None

"""The coded values of a run: its kind, outcome and the sources of its times.

The pipeline keeps them as small integers in numpy arrays (a year has some 200,000
runs) and makes their words once, for the runs frame. `NULL` (-1) is a value the store
cannot tell; the frame shows it as null.
"""

from __future__ import annotations

from enum import IntEnum
from typing import Final

__all__ = ["NULL", "Coded", "EndReason", "EndSource", "Kind", "Outcome", "Slot", "StartSource"]

NULL: Final = -1


class Coded(IntEnum):
    """A code whose word in the runs frame is its name in lower case."""

    @classmethod
    def words(cls) -> tuple[str, ...]:
        """The words by code, for the frame's text column."""
        return tuple(member.name.lower() for member in cls)


class Kind(Coded):
    """What a run's charge paid for (DESIGN.md, "Runs")."""

    FIRST = 0
    RESCAN = 1
    ADDED_PAGES = 2
    HELD_START = 3


class Slot(IntEnum):
    """The order of the runs one rise paid for between two snapshots: re-scans may come
    before the new pages or after them."""

    FIRST = 0
    RESCAN_BEFORE = 1
    ADDED_PAGES = 2
    HELD_START = 3
    RESCAN_AFTER = 4

    @property
    def kind(self) -> Kind:
        return Kind.RESCAN if self is Slot.RESCAN_AFTER else Kind(int(self))


class Outcome(Coded):
    """How a run ended: finished, failed, stalled, or still running."""

    FINISHED = 0
    FAILED = 1
    STALLED = 2
    RUNNING = 3


class StartSource(Coded):
    """Where a run's start comes from: the chapter's creation or a snapshot."""

    CREATED = 0
    SNAPSHOT = 1


class EndSource(Coded):
    """Where a run's end comes from: its end event, the chapter's last activity, or a snapshot."""

    EVENT = 0
    LAST_ACTIVITY = 1
    SNAPSHOT = 2


class EndReason(IntEnum):
    """How the run open after a transition row ended, as the later rows show it."""

    SETTLED = 0  # a row shows the chapter no longer processing
    NEXT_RUN = 1  # another run started before any row showed it settled
    TRASHED = 2  # the chapter was deleted while it ran
    STILL_RUNNING = 3  # processing at the last snapshot

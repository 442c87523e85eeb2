"""The Dashboard's spend line: credits spent today and this week, live.

The service keeps no spend history that a key can read, so the line adds two parts:

- up to the store's latest snapshot, the figure every report shows
  (`toolkit.reporting.figures`), workspace-wide;
- since that snapshot, the rise of each chapter's `creditsSpent` as the service lists
  the chapters now (every project's, not only the one shown; a chapter the snapshot did
  not have counts from 0). Like a snapshot taken now, the whole rise counts today.

Days are UTC days on the service's clock and weeks start on Monday. "As of" is the
service's time of the chapter listing (its `Date` header, to the second), not this
machine's: the emulator's clock and a remote service's may differ from it. One snapshot
is enough (the baseline); a day the store has no snapshot of counts only the live part.
The store's part is computed again only when a new snapshot or a new day comes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import TYPE_CHECKING, Any

from toolkit.errors import NotFound
from toolkit.formatting import whole

if TYPE_CHECKING:
    import pandas as pd

    from toolkit.client import Client
    from toolkit.models import ChapterListItem
    from toolkit.store import SnapshotStore

NO_STORE = (
    "Credits spent today and this week show here when the dashboard is given the "
    "workspace's snapshot history (a snapshot store)."
)
NO_SNAPSHOT = (
    "Credits spent today and this week show once the store has a snapshot to count from "
    "(Take snapshot)."
)
CONCURRENCY = 8


@dataclass(frozen=True)
class _Stored:
    """What the store says, up to its latest snapshot (one row of this per snapshot and day)."""

    today: float
    week: float
    first: pd.Timestamp  # the baseline: nothing before it is known
    last: pd.Timestamp  # the latest snapshot
    credits_at_last: dict[str, float]  # chapter_id -> credits_spent at the latest snapshot


class SpendLine:
    def __init__(self, store: SnapshotStore | None) -> None:
        self.store = store
        self._key: tuple[Any, ...] | None = None
        self._stored: _Stored | None = None

    def text(self, chapters: Iterable[ChapterListItem], now: datetime | None) -> str:
        """The line's HTML: `chapters` are every chapter of the workspace as listed at
        `now` (the service's clock; this machine's when the service did not say)."""
        if self.store is None:
            return NO_STORE
        snapshots = self.store.snapshots()
        if not len(snapshots):
            return NO_SNAPSHOT
        now = now or datetime.now(UTC)
        today = now.astimezone(UTC).date()
        key = (snapshots["snapshot_id"].iloc[-1], today)
        if key != self._key or self._stored is None:
            self._stored, self._key = self._compute(today), key
        stored = self._stored
        live = since_snapshot(chapters, stored.credits_at_last)
        monday = today - timedelta(days=today.weekday())
        since = f"{whole(live)} of it since the latest snapshot, {stored.last:%a %d %b %H:%M} UTC"
        if stored.first.date() >= monday:  # the week is counted from the store's first snapshot
            since += (
                ", the store's first: nothing before it counts"
                if stored.first == stored.last
                else f"; counted from the first, {stored.first:%a %d %b %H:%M} UTC"
            )
        return (
            f"Spent today: <b>{whole(stored.today + live)}</b> credits; "
            f"this week: <b>{whole(stored.week + live)}</b> credits, "
            f"as of {now.astimezone(UTC):%H:%M} UTC (whole workspace, UTC days; {since})."
        )

    def _compute(self, today: date) -> _Stored:
        import pandas as pd

        from toolkit.reporting import period, spend

        assert self.store is not None

        def credits(since: date) -> float:
            assert self.store is not None
            when = period(self.store, since=pd.Timestamp(since, tz="UTC"))
            # No snapshot in the period yet: all of it is in the live part.
            return float(spend(self.store, when)["credits"].sum()) if when.has_data else 0.0

        monday = today - timedelta(days=today.weekday())
        snapshots = self.store.snapshots()
        latest = self.store.latest("chapters")
        return _Stored(
            today=credits(today),
            week=credits(monday),
            first=snapshots["snapshot_at"].iloc[0],
            last=snapshots["snapshot_at"].iloc[-1],
            credits_at_last={
                str(chapter): float(spent)
                for chapter, spent in zip(
                    latest["chapter_id"], latest["credits_spent"].fillna(0), strict=True
                )
            },
        )


def since_snapshot(chapters: Iterable[ChapterListItem], at_snapshot: Mapping[str, float]) -> float:
    """Credits the chapters show now beyond what the snapshot saw (never negative)."""
    return sum(max(0.0, float(c.credits_spent or 0) - at_snapshot.get(c.id, 0.0)) for c in chapters)


def workspace_chapters(
    client: Client, project_ids: Iterable[str], listed: Mapping[str, list[ChapterListItem]]
) -> list[ChapterListItem]:
    """Every chapter of these projects: those `listed` already, the rest listed now,
    concurrently (one request per project)."""

    def one(project_id: str) -> list[ChapterListItem]:
        try:
            return client.list_chapters(project_id)
        except NotFound:
            return []  # moved to the trash since the projects were read

    missing = [p for p in project_ids if p not in listed]
    found = dict(listed)
    if missing:
        workers = min(CONCURRENCY, len(missing))
        with ThreadPoolExecutor(workers, thread_name_prefix="toolkit-dashboard") as pool:
            found.update(zip(missing, pool.map(one, missing), strict=True))
    return [chapter for chapters in found.values() for chapter in chapters]

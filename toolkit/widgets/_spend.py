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

"Rows behind it" opens this week's count (`explained`): the store's part as
`tk.explain(store, "credits", since=monday)` gives it, one row per run's charge, and the
live part as one row per chapter whose credits rose since the snapshot; the rows sum to
the week's count the line shows.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import TYPE_CHECKING, Any

from toolkit.errors import NotFound
from toolkit.formatting import count, escape, whole

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
SHOWN_ROWS = 25  # the rows behind the week's count shown, largest first


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
        self._shown: tuple[list[ChapterListItem], datetime] | None = None  # the line's inputs

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
        chapters = list(chapters)
        self._shown = (chapters, now)
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

    def explained(self) -> str:
        """The rows behind the week's count the line shows last, as HTML: the store's charges
        since Monday and the chapters' rises since the latest snapshot, largest first."""
        import pandas as pd

        from toolkit.formatting import table
        from toolkit.reporting import explain

        if self.store is None or self._stored is None or self._shown is None:
            return "<small>No count to open yet: the store has no snapshot.</small>"
        chapters, now = self._shown
        today = now.astimezone(UTC).date()
        monday = today - timedelta(days=today.weekday())
        stored = explain(self.store, "credits", since=pd.Timestamp(monday, tz="UTC"))
        rows = stored[["project", "chapter", "source", "source_id", "at", "detail", "value"]]
        risen = [(c, rise) for c, rise in rises(chapters, self._stored.credits_at_last) if rise]
        rises_now = pd.DataFrame(
            {
                "chapter": [c.title or c.id for c, _ in risen],
                "source": "live",
                "source_id": [c.id for c, _ in risen],
                "at": pd.Timestamp(now).tz_convert("UTC"),
                "detail": "its credits' rise since the latest snapshot",
                "value": [rise for _, rise in risen],
            }
        )
        both = pd.concat([rows.astype({"value": "float64"}), rises_now], ignore_index=True)
        total = float(both["value"].sum())
        said = (
            f"This week's {whole(total)} credits: {count(len(rows), 'charge')} in the store "
            f'(tk.explain(store, "credits", since="{monday}")) and '
            f"{count(len(rises_now), 'chapter')} risen since its latest snapshot"
        )
        largest = both.sort_values("value", ascending=False, kind="stable").head(SHOWN_ROWS)
        more = len(both) - len(largest)
        note = f" The largest {len(largest)} of {len(both)} rows." if more else ""
        shown = largest.rename(columns={"value": "credits"}).reset_index(drop=True)
        return f"<small>{escape(said)}.{note}</small>" + table(shown).to_html()


def rises(
    chapters: Iterable[ChapterListItem], at_snapshot: Mapping[str, float]
) -> list[tuple[ChapterListItem, float]]:
    """Each chapter's credits now beyond what the snapshot saw (never negative)."""
    return [
        (c, max(0.0, float(c.credits_spent or 0) - at_snapshot.get(c.id, 0.0))) for c in chapters
    ]


def since_snapshot(chapters: Iterable[ChapterListItem], at_snapshot: Mapping[str, float]) -> float:
    """Credits the chapters show now beyond what the snapshot saw, summed."""
    return sum(rise for _, rise in rises(chapters, at_snapshot))


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

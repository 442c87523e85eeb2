"""The Dashboard's spend line: credits spent today and this week, from the snapshot store.

The service keeps no spend history that a key can read, so the figures come from the
store's snapshots, counted as every report counts them (`toolkit.reporting.figures`),
workspace-wide, up to the latest snapshot; the line says how recent that is. Days are
UTC days and weeks start on Monday; "today" is the service's today when its clock is
known. A day or week with no snapshot after the store's first says "no data", not 0.
The figure is computed again only when a new snapshot or a new day comes.
"""

from __future__ import annotations

from datetime import date, datetime, timedelta
from typing import TYPE_CHECKING, Any

from toolkit.formatting import whole

if TYPE_CHECKING:
    from toolkit.store import SnapshotStore

NO_STORE = (
    "Credits spent today and this week show here when the dashboard is given the "
    "workspace's snapshot history (a snapshot store)."
)


class SpendLine:
    def __init__(self, store: SnapshotStore | None) -> None:
        self.store = store
        self._key: tuple[Any, ...] | None = None
        self._text = NO_STORE

    def text(self, now: datetime | None) -> str:
        if self.store is None:
            return NO_STORE
        snapshots = self.store.snapshots()
        if len(snapshots) < 2:
            return (
                "Credits spent today and this week show once the store has two snapshots "
                "(Take snapshot now and again later)."
            )
        last = snapshots["snapshot_at"].iloc[-1].to_pydatetime()
        today = (now or last).date()
        key = (snapshots["snapshot_id"].iloc[-1], today)
        if key != self._key:
            self._text, self._key = self._compute(today, last), key
        return self._text

    def _compute(self, today: date, last: datetime) -> str:
        assert self.store is not None
        monday = today - timedelta(days=today.weekday())
        on_day, in_week = (self._credits(day) for day in (today, monday))
        return (
            f"Spent today: {on_day}; this week: {in_week} "
            f"(whole workspace, UTC days, up to the snapshot of {last:%Y-%m-%d %H:%M} UTC)."
        )

    def _credits(self, since: date) -> str:
        import pandas as pd

        from toolkit.reporting import period, spend

        assert self.store is not None
        when = period(self.store, since=pd.Timestamp(since, tz="UTC"))
        if not when.has_data:
            return "no data (no snapshot yet)"
        return f"<b>{whole(spend(self.store, when)['credits'].sum())}</b> credits"

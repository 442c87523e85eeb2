"""The Dashboard's spend line: credits spent today and this week, from the snapshot store.

The service keeps no spend history that a key can read, so the figures come from the
store's snapshots (`tk.analysis.credit_spend`), workspace-wide, up to the latest
snapshot; the line says how recent that is. Days are UTC days and weeks start on
Monday (the analysis' periods); "today" is the service's today when its clock is known.
The figure is computed again only when a new snapshot or a new day comes.
"""

from __future__ import annotations

from datetime import datetime, timedelta
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

    def _compute(self, today: Any, last: datetime) -> str:
        from toolkit import analysis

        assert self.store is not None
        spend = analysis.credit_spend(self.store, freq="1D", by="project_id")
        days = spend["period"].dt.date
        monday = today - timedelta(days=today.weekday())
        on_day = spend.loc[days == today, "credits"].sum()
        in_week = spend.loc[(days >= monday) & (days <= today), "credits"].sum()
        return (
            f"Spent today: <b>{whole(on_day)}</b> credits; this week: <b>{whole(in_week)}</b> "
            f"credits (whole workspace, UTC days, up to the snapshot of "
            f"{last:%Y-%m-%d %H:%M} UTC)."
        )

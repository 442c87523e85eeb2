"""The Dashboard's alerts: the open alerts `toolkit watch` keeps for its workspace.

They are read from the watch's `alerts` table, not worked out again here: the dashboard
shows what people were told (and since when), for the workspace of the dashboard's
store and the agency's budgets. Given no watch config, the section stays empty.
"""

from __future__ import annotations

import html
import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from toolkit.store import SnapshotStore
    from toolkit.watch import WatchConfig


# Each watch check in a reader's words; those about a chapter that needs a person say
# it in the words of the one reasons table (`tk.analysis.reason_words`).
_CHECK_WORDS = {
    "budget": "budget",
    "anomaly": "unusual pace",
    "due": "due date at risk",
    "missing_events": "webhook events missing",
    "snapshots": "snapshots",
}
_CHECK_REASONS = {"stalled": "stalled", "failed_waiting": "failed", "held_pages": "held_pages"}


def check_words(check: str) -> str:
    """A watch check's name in words: `held_pages` -> "held pages never started"."""
    if check in _CHECK_REASONS:
        from toolkit import analysis

        return analysis.reason_words(_CHECK_REASONS[check])
    return _CHECK_WORDS.get(check, check.replace("_", " "))


class AlertsLine:
    def __init__(
        self, store: SnapshotStore | None, watch: WatchConfig | str | os.PathLike[str] | None
    ) -> None:
        if watch is not None and store is None:
            raise ValueError(
                "the open alerts are those of the store's workspace: give the dashboard "
                "store= as well as watch="
            )
        from toolkit.watch import WatchConfig, read_config  # the watch and pandas: when asked

        self.store = store
        # Read now, so a mistake in the file is said when the dashboard is made.
        self.config = None if watch is None else (
            watch if isinstance(watch, WatchConfig) else read_config(watch)
        )  # fmt: skip

    def html(self) -> str:
        if self.store is None or self.config is None:
            return ""
        from toolkit.watch import open_alerts

        alerts = open_alerts(self.store, self.config)
        if alerts.empty:
            return "<small>No open alerts (toolkit watch).</small>"
        items = "".join(
            f"<li><b>{html.escape(check_words(str(row.check)))}</b>: "
            f"{html.escape(str(row.message))} "
            f"<small>(since {row.first_seen:%d %b %H:%M} UTC)</small></li>"
            for row in alerts.itertuples(index=False)
        )
        plural = "s" if len(alerts) != 1 else ""
        return (
            f'<div class="tk-alerts"><b>{len(alerts)} open alert{plural}</b><ul>{items}</ul></div>'
        )

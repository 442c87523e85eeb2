"""The Dashboard's alerts: the open alerts `toolkit watch` keeps for its workspace.

They are read from the watch's `alerts` table, not worked out again here: the dashboard
shows what people were told, for the workspace of the dashboard's store and the
agency's budgets: each alert's title in words, since when and how long ago (worked out
as it is shown), and the action that clears it with the panel that does it
(`tk.watch.open_alerts`). Given no watch config, the section stays empty.
"""

from __future__ import annotations

import html
import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from toolkit.store import SnapshotStore
    from toolkit.watch import WatchConfig


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
        # Title and action in words, the age as of now (`open_alerts` works it out when
        # called): the message keeps the times it was written with.
        items = "".join(
            f"<li><b>{html.escape(str(row.title))}</b>: {html.escape(str(row.message))} "
            f"<small>(open since {row.first_seen:%d %b %H:%M} UTC, {html.escape(str(row.age))}; "
            f"to clear it: {html.escape(str(row.action))})</small></li>"
            for row in alerts.itertuples(index=False)
        )
        plural = "s" if len(alerts) != 1 else ""
        return (
            f'<div class="tk-alerts"><b>{len(alerts)} open alert{plural}</b><ul>{items}</ul></div>'
        )

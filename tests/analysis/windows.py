"""A figure asked for a window equals the same figure over the whole history, cut to
the window: the check that a question reading only its period and the state before it
(`SnapshotStore.query(window=)`) loses nothing at the window's edges (runs that started
before it, re-scans, gaps between snapshots)."""

from __future__ import annotations

import pandas as pd

from toolkit import analysis
from toolkit.store import SnapshotStore

# Hours, so that each snapshot's period is the hour it lies in and a window that starts
# and ends on whole hours holds exactly the periods of the whole figure between them.
FREQ = "1h"
BY = ("language_code", "project_id")


def window_starts(store: SnapshotStore, most: int = 8) -> list[pd.Timestamp]:
    """The hours holding up to `most` snapshots spread over the history (the first and
    the last among them): each window then starts right before a snapshot."""
    times = store.snapshots()["snapshot_at"]
    if times.empty:
        return []
    step = max(1, len(times) // most)
    chosen = [*times.iloc[::step], times.iloc[-1]]
    return sorted({t.floor(FREQ) for t in chosen})


def assert_windows_equal_the_whole(store: SnapshotStore, where: str) -> None:
    """`throughput` by hour for windows starting before each chosen snapshot (a day
    long, and to the end) equals its whole-history frame's rows in the window."""
    for by in BY:
        whole = analysis.throughput(store, FREQ, by)
        for since in window_starts(store):
            for until in (since + pd.Timedelta(days=1), None):
                inside = whole["period"] >= since
                if until is not None:
                    inside &= whole["period"] < until
                window = analysis.throughput(store, FREQ, by, since=since, until=until)
                pd.testing.assert_frame_equal(
                    window,
                    whole[inside].reset_index(drop=True),
                    check_exact=True,
                    obj=f"{where}: throughput by {by} from {since} to {until}",
                )

"""A figure asked for a window equals the same figure over the whole history, cut to
the window: the check that a question reading only its period and the state before it
(`SnapshotStore.query(window=)`) loses nothing at the window's edges (runs that started
before it, re-scans, gaps between snapshots)."""

from __future__ import annotations

import pandas as pd

import toolkit as tk
from toolkit import analysis
from toolkit.analysis.forecast import seen_at
from toolkit.analysis.observed import Observed
from toolkit.frames import schema
from toolkit.store import SnapshotStore

# Hours, so that each snapshot's period is the hour it lies in and a window that starts
# and ends on whole hours holds exactly the periods of the whole figure between them.
FREQ = "1h"
BY = ("language_code", "project_id")
# By model too: its window also reads, for the chapters re-scanned in it, the last row
# before it whose lines changed. Half as long again; the seeded histories (their
# group at its time limit) check the first two.
ALL_BY = (*BY, "model")


def chosen_snapshots(store: SnapshotStore, most: int = 8) -> list[pd.Timestamp]:
    """The times of up to `most` snapshots spread over the history, the last among them."""
    times = store.snapshots()["snapshot_at"]
    if times.empty:
        return []
    step = max(1, len(times) // most)
    return sorted({*times.iloc[::step], times.iloc[-1]})


def window_starts(store: SnapshotStore) -> list[pd.Timestamp]:
    """The hours holding the chosen snapshots: each window then starts right before one."""
    return sorted({t.floor(FREQ) for t in chosen_snapshots(store)})


def assert_seen_reads_the_workspace(store: SnapshotStore, where: str) -> None:
    """The forecast's read of a snapshot (the three tables it needs; the latest from the
    view) equals the snapshot's whole workspace, table for table."""
    manifest = store.snapshots()
    for at in chosen_snapshots(store):
        seen = seen_at(Observed(store), at, stall_after=pd.Timedelta(hours=2))
        workspace = store.workspace(manifest["snapshot_id"][manifest["snapshot_at"] == at].iloc[-1])
        assert workspace is not None
        for name in ("chapters", "languages", "projects"):
            whole = workspace.table(name).sort_values(list(schema.KEYS[name]), ignore_index=True)
            pd.testing.assert_frame_equal(
                getattr(seen, name), whole, check_exact=True, obj=f"{where}: {name} at {at}"
            )


def assert_windows_equal_the_whole(
    store: SnapshotStore, where: str, by_all: tuple[str, ...] = BY
) -> None:
    """`throughput` by hour for windows starting before each chosen snapshot (a day
    long, and to the end) equals its whole-history frame's rows in the window."""
    for by in by_all:
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


def assert_explained_lines_equal_the_whole(store: SnapshotStore, where: str) -> None:
    """`tk.explain`'s lines rows of a period starting before each chosen snapshot (a day
    long, and to the end) equal the rows of the period from the first snapshot, which
    reads the whole log, cut to it."""
    times = store.snapshots()["snapshot_at"]
    end = times.iloc[-1] + pd.Timedelta(hours=1)
    whole = tk.explain(store, "lines", since=times.iloc[0], until=end)
    for since in window_starts(store):
        for until in (since + pd.Timedelta(days=1), end):
            inside = (whole["at"] >= since) & (whole["at"] < until)
            pd.testing.assert_frame_equal(
                tk.explain(store, "lines", since=since, until=until),
                whole[inside].reset_index(drop=True),
                check_exact=True,
                obj=f"{where}: the lines rows from {since} to {until}",
            )


def assert_finished_windows_equal_the_whole(store: SnapshotStore, where: str) -> None:
    """`finished` by hour (by project and by model) and `cycle_times` for windows
    starting before each chosen snapshot equal the whole history's rows in the window:
    the period's runs are picked before they are sorted and joined."""
    runs = analysis.cycle_times(store)
    for by in ("project_id", "model"):
        whole = analysis.finished(store, freq=FREQ, by=by)
        for since in window_starts(store):
            for until in (since + pd.Timedelta(days=1), None):
                inside = whole["period"] >= since
                done = runs["finished_at"] >= since
                if until is not None:
                    inside &= whole["period"] < until
                    done &= runs["finished_at"] < until
                pd.testing.assert_frame_equal(
                    analysis.finished(store, freq=FREQ, by=by, since=since, until=until),
                    whole[inside].reset_index(drop=True),
                    check_exact=True,
                    obj=f"{where}: finished by {by} from {since} to {until}",
                )
                pd.testing.assert_frame_equal(
                    analysis.cycle_times(store, since=since, until=until),
                    runs[done].reset_index(drop=True),
                    check_exact=True,
                    obj=f"{where}: cycle_times from {since} to {until}",
                )

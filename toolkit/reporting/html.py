"""The weekly report: one self-contained HTML page a lead can mail (docs/weekly-report.md)."""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd

from toolkit.analysis.observed import Observed
from toolkit.errors import ToolkitError
from toolkit.reporting.page import render
from toolkit.reporting.weekly import gather
from toolkit.store import SnapshotStore


def report(
    store: SnapshotStore | str | os.PathLike[str],
    out: str | os.PathLike[str] = "weekly-report.html",
    *,
    since: pd.Timestamp | str | None = None,
    until: pd.Timestamp | str | None = None,
    days: int = 7,
    title: str | None = None,
) -> Path:
    """Write the weekly report as one self-contained HTML page; returns its path.

    The window is the `days` days up to the last snapshot, or `since`..`until` (UTC
    when no zone is given). `out` is the page's path; its folder is made if need be.
    """
    source = store if isinstance(store, SnapshotStore) else SnapshotStore(store)
    path = Path(out)
    if path.is_dir():
        raise ToolkitError(
            f"{str(path)!r} is a folder; give the page's file name, such as "
            f"{str(path / 'weekly-report.html')!r}"
        )
    try:
        weekly = gather(Observed(source), since=since, until=until, days=days)
    except ValueError as exc:
        raise ToolkitError(f"the store {source.root!r}: {exc}") from exc
    page = render(weekly, title=title or f"Translation week to {weekly.end:%d %b %Y}")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(page, encoding="utf-8")
    return path

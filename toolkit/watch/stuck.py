"""The chapter checks: `stalled` (running with no progress), `failed_waiting` (failed,
waiting for a re-scan) and `held_pages` (pages held, never started), one finding per
chapter of `toolkit.analysis.stuck`'s rows past its project's threshold.

A quarter of 100,000 chapters may be stuck at once: the rows are taken as Python values
column by column, and each project's settings looked up once (the caller's `settings`
is cached), not a pandas row and a lookup each. docs/watch.md says what each finds.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, NamedTuple

import pandas as pd

from toolkit import analysis
from toolkit.analysis.observed import observe
from toolkit.watch.config import CheckSettings
from toolkit.watch.findings import Finding

if TYPE_CHECKING:
    from toolkit.store import SnapshotStore

__all__ = ["evaluate"]


def evaluate(
    store: SnapshotStore,
    label: str,
    now: pd.Timestamp,
    settings: Callable[[object, object], CheckSettings],
    everyone: list[CheckSettings],
) -> list[Finding]:
    """The chapter checks of one workspace's store: `analysis.stuck`'s rows past each
    project's threshold (`settings`: a project's, by its id and name; `everyone`: every
    project's, the shortest threshold read)."""
    shortest = min(s.stalled_after for s in everyone)
    stuck = analysis.stuck(store, threshold=pd.Timedelta(shortest))
    if stuck.empty:
        return []
    projects = observe(store).latest_projects
    # Recorded with the alert: its title and action are said for the chapter's kind.
    kinds = dict(zip(projects["project_id"], projects["kind"], strict=True))
    found = []
    for row in _stuck_rows(stuck, now):
        own = settings(row.project_id, row.project)
        subject = f"{row.project}: {row.chapter}"
        since = row.since_words
        figures = {"chapter_id": row.chapter_id, "project_id": row.project_id,
                   "since": row.since, "hours": row.hours,
                   "kind": kinds.get(row.project_id)}  # fmt: skip
        if row.reason == "stalled" and row.waited >= own.stalled_after:
            # Times, not ages: the text is read hours later (an age is worked out then).
            message = f"{subject} is running with no progress since {since}; {row.advice}"
            check = "stalled"
        elif row.reason == "failed" and row.waited >= own.failed_waiting_after:
            message = f"{subject} failed at {since} and waits: {row.detail} {_do(row.advice)}"
            check = "failed_waiting"
        elif row.reason == "held_pages":
            message = f"{subject}: {row.detail}; {row.advice}"
            check = "held_pages"
        else:
            continue
        if check not in own.off:
            found.append(
                Finding(check, "chapter", subject, label, message, figures, row.chapter_id)
            )
    return found


class _Stuck(NamedTuple):
    """A row of `analysis.stuck` as Python values, with how long it has waited by `now`."""

    chapter_id: str
    project_id: str
    project: str
    chapter: str
    reason: str
    detail: str
    advice: str
    since: str | None  # ISO 8601; None where unknown
    since_words: str  # "%d %b %H:%M UTC"
    waited: pd.Timedelta
    hours: float  # `waited` in hours, to a tenth


def _stuck_rows(stuck: pd.DataFrame, now: pd.Timestamp) -> list[_Stuck]:
    """`stuck`'s rows, each column made Python values at once: a quarter of 100,000
    chapters may be stuck, and pandas' rows and time texts cost a call a value. The
    times are snapshots' (a few hundred): each written once."""
    waited = now - stuck["since"]
    columns = [stuck[name].tolist() for name in _Stuck._fields[:7]]
    codes, times = pd.factorize(stuck["since"], use_na_sentinel=False)
    written = [_written(time) for time in times]
    since = [written[code] for code in codes.tolist()]
    columns += [
        [iso for iso, _ in since],
        [words for _, words in since],
        waited.tolist(),
        [round(seconds / 3600, 1) for seconds in waited.dt.total_seconds().tolist()],
    ]
    return [_Stuck(*values) for values in zip(*columns, strict=True)]


def _written(time: pd.Timestamp) -> tuple[str | None, str]:
    """A time as the finding's figures and its message say it."""
    if pd.isna(time):  # never seen so far; said, not a text of NaT
        return None, "an unknown time"
    return time.isoformat(), f"{time:%d %b %H:%M} UTC"


def _do(advice: object) -> str:
    """The reasons table's advice for the chapter's kind, as a sentence."""
    return f"{str(advice)[0].upper()}{str(advice)[1:]}."

"""Runs seen in a store: how long finished ones took, which ones failed, which are stuck.

Read from the chapters' change log, one chapter at a time in snapshot order, and from
webhook events when the store has them (`chapter.finished`, `chapter.failed`), which
give exact times where snapshots only bound them.

A chapter is *running* while `processing` is true; a run *finished* when the chapter
shows `processing` false, `failed` false and a status of `needs_review` or later; it
*failed* when it shows `processing` false with `failed` true.

Decisions the design leaves open:

- A chapter already running at the baseline snapshot is on its first run, which
  started at its `created_at`; one already settled there finished before the window and
  has no cycle time.
- A re-scan that started and finished between two snapshots was never seen running:
  its start is unknown, so it has no row (unless it is the chapter's first run).
- A failure matches a `chapter.failed` event of the same chapter sent between the
  snapshot before and the one that showed it; the row then takes the event's time.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import pandas as pd

from toolkit.analysis.observed import Observed, flag, observe, records, with_previous

if TYPE_CHECKING:
    from toolkit.store import SnapshotStore

TEXT = pd.StringDtype()
TIME = "datetime64[us, UTC]"
DONE = ("needs_review", "reviewed")


def _event_times(obs: Observed, kind: str) -> dict[str, list[pd.Timestamp]]:
    events = obs.events[obs.events["type"] == kind]
    times: dict[str, list[pd.Timestamp]] = {}
    for chapter, when in zip(events["chapter_id"], events["timestamp"], strict=True):
        if not pd.isna(chapter):
            times.setdefault(str(chapter), []).append(when)
    return {chapter: sorted(found) for chapter, found in times.items()}


def _last_between(times: list[pd.Timestamp], low: Any, high: Any) -> pd.Timestamp | None:
    """The latest time in (low, high]; either bound may be None for open."""
    inside = [t for t in times if (low is None or t > low) and (high is None or t <= high)]
    return inside[-1] if inside else None


def cycle_times(store: SnapshotStore | Observed) -> pd.DataFrame:
    """One row per finished run: `chapter_id, project_id, started_at, finished_at, hours`.

    A first run starts at the chapter's `created_at`, a later one at the first snapshot
    that saw it running; it finishes at its `chapter.finished` event when the store has
    one, else at the first snapshot that shows it settled.
    """
    obs = observe(store)
    finished = _event_times(obs, "chapter.finished")
    log = obs.chapters.sort_values(["chapter_id", "idx"], ignore_index=True)
    columns = ["chapter_id", "project_id", "idx", "deleted", "processing", "failed", "status",
               "created_at"]  # fmt: skip
    by_chapter: dict[str, list[tuple[Any, ...]]] = {}
    for record in records(log, columns):
        by_chapter.setdefault(record[0], []).append(record)
    rows: list[tuple[Any, ...]] = []
    for chapter, history in by_chapter.items():
        rows.extend(_chapter_runs(chapter, history, obs.times, finished.get(chapter, [])))
    frame = pd.DataFrame(rows, columns=["chapter_id", "project_id", "started_at", "finished_at"])
    for column in ("chapter_id", "project_id"):
        frame[column] = frame[column].astype(TEXT)
    for column in ("started_at", "finished_at"):
        frame[column] = frame[column].astype(TIME)
    seconds = (frame["finished_at"] - frame["started_at"]).dt.total_seconds()
    frame["hours"] = (seconds / 3600).astype("Float64")
    return frame.sort_values(["finished_at", "chapter_id"], ignore_index=True)


def _chapter_runs(
    chapter: str,
    history: list[tuple[Any, ...]],
    times: list[pd.Timestamp],
    events: list[pd.Timestamp],
) -> list[tuple[Any, ...]]:
    """The finished runs of one chapter, from its change rows in snapshot order."""
    runs: list[tuple[Any, ...]] = []
    running_since: pd.Timestamp | None = None
    had_run, seen = False, False
    project = None
    for _, project_id, idx, deleted, processing, failed, status, created_at in history:
        if deleted:
            running_since, seen = None, False
            continue
        project = project_id
        at, before = times[idx], times[idx - 1] if idx > 0 else None
        processing, failed = _true(processing), _true(failed)
        done = not processing and not failed and isinstance(status, str) and status in DONE
        stopped = not processing and failed
        first_sight, seen = not seen, True
        if running_since is None and processing:
            running_since = created_at if not had_run else at
        elif running_since is None and done and first_sight and idx > 0:
            running_since = created_at  # created and finished between two snapshots
        if running_since is not None and done:
            end = _last_between(events, max(before, running_since) if before else None, at)
            runs.append((chapter, project, running_since, end or at))
        if done or stopped:
            running_since, had_run = None, True
    if running_since is not None:
        # Still running at the last snapshot: an event may tell when it finished since.
        end = _last_between(events, max(times[-1], running_since), None)
        if end is not None:
            runs.append((chapter, project, running_since, end))
    return [r for r in runs if r[2] is not None]


def _true(value: Any) -> bool:
    return not pd.isna(value) and bool(value)


def failures(store: SnapshotStore | Observed) -> pd.DataFrame:
    """One row per failed run: `chapter_id, project_id, seen_at, failure_reason`.

    A failed run is `failed` turning true, or `failure_reason` changing, between two
    snapshots, or a `chapter.failed` event: one row however many snapshots show it.
    """
    obs = observe(store)
    log = with_previous(obs.chapters, ["chapter_id"], ["failed", "failure_reason"])
    reason, previous_reason = log["failure_reason"].fillna(""), log["prev_failure_reason"]
    turned = (
        log["is_new"]
        | ~flag(log["prev_failed"])
        | (previous_reason.fillna("").astype(str) != reason.astype(str))
    )
    seen = log[(log["idx"] > 0) & ~log["deleted"] & flag(log["failed"]) & turned]

    events = obs.events[obs.events["type"] == "chapter.failed"]
    pool = [
        (str(e.chapter_id), e.timestamp, e.project_id, _reason(e.data))
        for e in events.itertuples(index=False)
        if not pd.isna(e.chapter_id)
    ]
    rows = []
    for row in seen.itertuples(index=False):
        low, high = obs.times[row.idx - 1], obs.times[row.idx]
        match = [e for e in pool if e[0] == row.chapter_id and low < e[1] <= high]
        when = high
        if match:
            pool.remove(match[-1])
            when = match[-1][1]
        text = row.failure_reason if not pd.isna(row.failure_reason) else None
        rows.append(
            (row.chapter_id, row.project_id, when, text or (match[-1][3] if match else None))
        )
    rows.extend((c, p if not pd.isna(p) else None, t, r) for c, t, p, r in pool)
    frame = pd.DataFrame(rows, columns=["chapter_id", "project_id", "seen_at", "failure_reason"])
    for column in ("chapter_id", "project_id", "failure_reason"):
        frame[column] = frame[column].astype(TEXT)
    frame["seen_at"] = frame["seen_at"].astype(TIME)
    return frame.sort_values(["seen_at", "chapter_id"], ignore_index=True)


def _reason(data: Any) -> str | None:
    try:
        parsed = json.loads(data) if isinstance(data, str) else {}
    except ValueError:
        return None
    value = parsed.get("failureReason") if isinstance(parsed, dict) else None
    return str(value) if value is not None else None


def stalled(store: SnapshotStore | Observed, threshold: str | pd.Timedelta = "2h") -> pd.DataFrame:
    """Chapters processing at the latest snapshot that have shown no progress (no change
    to the chapter or any of its languages) for at least `threshold`:
    `chapter_id, project_id, position, title, last_progress_at, stalled_hours`."""
    obs = observe(store)
    limit = pd.Timedelta(threshold)
    columns = ["chapter_id", "project_id", "position", "title", "last_progress_at"]
    rows = []
    if obs.times:
        chapters = obs.chapters.sort_values("idx")
        current = chapters.groupby("chapter_id").tail(1)
        running = current[~current["deleted"] & flag(current["processing"])]
        moved = pd.concat([chapters[["chapter_id", "idx"]], obs.languages[["chapter_id", "idx"]]])
        last_change = moved.groupby("chapter_id")["idx"].max()
        for row in running.itertuples(index=False):
            since = obs.times[int(last_change[row.chapter_id])]
            if obs.times[-1] - since >= limit:
                rows.append((row.chapter_id, row.project_id, row.position, row.title, since))
    frame = pd.DataFrame(rows, columns=columns)
    for column in ("chapter_id", "project_id", "title"):
        frame[column] = frame[column].astype(TEXT)
    frame["position"] = frame["position"].astype("Int64")
    frame["last_progress_at"] = frame["last_progress_at"].astype(TIME)
    latest = obs.times[-1] if obs.times else pd.Timestamp(0, tz="UTC")
    hours = (latest - frame["last_progress_at"]).dt.total_seconds() / 3600
    frame["stalled_hours"] = hours.astype("Float64")
    return frame.sort_values("stalled_hours", ascending=False, ignore_index=True)

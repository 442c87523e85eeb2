"""The pipeline's fourth stage: the runs as arrays, with their times and outcomes.

`charges` says which runs each rise paid for; this stage gives each run its credits,
start, end and outcome by the rules of `run_rules.py`, in three steps that each return
their arrays: the runs the charges paid for (`_charged`), how the snapshots show each
ended (`_seen_ends`), and the end events the store holds (`_event_ends`). The texts of
the runs frame are made later, by `runs.py`, only for the runs a figure keeps.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from toolkit.analysis import run_rules as rules
from toolkit.analysis._arrays import (
    FAR,
    NO_TIME,
    category_codes,
    is_true,
    rank_within,
    texts_at,
    to_float,
    to_micros,
)
from toolkit.analysis.charges import SLOTS, Charges
from toolkit.analysis.run_codes import EndReason, EndSource, Kind, Outcome, Slot
from toolkit.analysis.transitions import Transitions

if TYPE_CHECKING:
    from toolkit.analysis.observed import Observed

__all__ = ["RunTable", "terminal_events"]

_SLOT_KINDS = np.array([int(slot.kind) for slot in Slot])


@dataclass(frozen=True)
class RunTable:
    """One element per run, in the order of the runs frame (`run_rules.run_order`),
    before its texts are made (a figure that sums runs needs none: a year has some
    200,000). Codes as in `run_codes` (`NULL`: the store cannot tell); times in int64
    microseconds, `NO_TIME` for none."""

    row: np.ndarray  # the transition row whose snapshot first showed the run
    number: np.ndarray  # its place among its chapter's runs, from 0
    kind: np.ndarray  # Kind
    pages: np.ndarray
    languages: np.ndarray
    credits: np.ndarray
    rework: np.ndarray
    started: np.ndarray
    from_creation: np.ndarray
    finished: np.ndarray
    finished_source: np.ndarray  # EndSource
    outcome: np.ndarray  # Outcome
    failure_reason: np.ndarray  # texts, None for none
    seen_idx: np.ndarray
    created: np.ndarray

    @classmethod
    def build(cls, obs: Observed) -> RunTable:
        found = obs.stage(Transitions)
        if found.empty:
            return cls(*(np.zeros(0, "int64") for _ in dataclasses.fields(cls)))
        runs = _charged(found, obs.stage(Charges))
        ends = _seen_ends(found, runs)
        ends, started = _event_ends(found, runs, ends, terminal_events(obs))
        return _in_order(found, runs, ends, rules.ran_in_turn(started, runs.ordinal))

    def take(self, keep: np.ndarray) -> RunTable:
        """The runs `keep` (a mask or positions) selects."""
        return RunTable(*(getattr(self, f.name)[keep] for f in dataclasses.fields(self)))


@dataclass(frozen=True)
class _Charged:
    """One element per run a rise paid for, in transition row order, then in the order
    they ran between the two snapshots (`Slot`)."""

    row: np.ndarray
    ordinal: np.ndarray  # its place among its row's runs
    last: np.ndarray  # the last of its row's runs
    kind: np.ndarray
    pages: np.ndarray
    languages: np.ndarray
    credits: np.ndarray
    from_creation: np.ndarray
    started: np.ndarray
    created: np.ndarray
    end_row: np.ndarray  # the row that shows how the run open after its row ended
    end_reason: np.ndarray  # EndReason


def _charged(found: Transitions, charges: Charges) -> _Charged:
    rows = found.rows
    # One run per (row, slot, repeat), in the order they ran between the two snapshots.
    counts = charges.count.ravel()
    paying = np.flatnonzero(counts)  # (row, slot) pairs with runs: a few in twenty
    repeats = counts[paying]
    row = np.repeat(paying // SLOTS, repeats)
    slot = np.repeat(paying % SLOTS, repeats)
    pages = np.repeat(charges.pages.ravel()[paying], repeats)
    ordinal = rank_within(row)
    last = ordinal == np.bincount(row, minlength=len(rows))[row] - 1
    idx = rows["idx"].to_numpy("int64")
    at_baseline = idx[row] == 0
    per_page = charges.per_page[row]
    kind = rules.kind_at_baseline(
        _SLOT_KINDS[slot],
        at_baseline=at_baseline,
        novel=found.novel()[row],
        spent=to_float(rows["credits_spent"])[row],
        pages=pages,
        per_page=per_page,
    )
    created = to_micros(rows["created_at"])[row]
    from_creation = rules.starts_at_creation(
        kind, new=is_true(rows["is_new"])[row], created=created
    )
    started = rules.start_time(
        from_creation,
        created=created,
        at_baseline=at_baseline,
        snapshot_before=found.times[np.maximum(idx[row] - 1, 0)],
    )
    end_row, end_reason = rules.end_rows(
        is_true(rows["processing"]),
        is_true(rows["deleted"]),
        rows["chapter_code"].to_numpy("int64"),
        starts_runs=charges.count.sum(axis=1) > 0,
    )
    return _Charged(
        row=row,
        ordinal=ordinal,
        last=last,
        kind=kind,
        pages=pages,
        languages=found.languages()[row],
        credits=rules.run_credits(
            pages, per_page, row=row, last=last, rise=charges.rise, at_baseline=at_baseline
        ),
        from_creation=from_creation,
        started=started,
        created=created,
        end_row=end_row[row],
        end_reason=end_reason[row],
    )


@dataclass(frozen=True)
class _Ends:
    """How each run (of `_Charged`) ended, and where its end event may lie."""

    outcome: np.ndarray
    finished: np.ndarray
    finished_source: np.ndarray
    failure_reason: np.ndarray  # texts, None for none
    window_low: np.ndarray
    window_high: np.ndarray
    skip: np.ndarray  # the chapter's events in the window that belong to runs before it


def _seen_ends(found: Transitions, runs: _Charged) -> _Ends:
    """The end each run shows in the snapshots, before events are looked at."""
    rows, times = found.rows, found.times
    idx = rows["idx"].to_numpy("int64")
    start, end = runs.row, np.maximum(runs.end_row, 0)
    settled = runs.last & (runs.end_reason == EndReason.SETTLED)
    reason = texts_at(rows["failure_reason"], end)
    failed = rules.run_failed(
        settled,
        failed_at_end=is_true(rows["failed"])[end],
        kind=runs.kind,
        failed_before=is_true(rows["prev_failed"])[start],
        reason_changed=category_codes(rows["failure_reason"])[end]
        != category_codes(rows["prev_reason"])[start],
    )
    snapshot_at = times[idx[end]]
    activity = to_micros(rows["last_activity_at"])[end]
    activity_ends = rules.activity_is_end(
        reviewed=(is_true(rows["reviewed"]) & ~is_true(rows["prev_reviewed"]))[end],
        grew_unpaid=(to_float(rows["page_count"]) > to_float(rows["prev_pages"]))[end]
        & (to_float(rows["credits_spent"]) == to_float(rows["prev_credits"]))[end],
        activity=activity,
        snapshot_before=times[np.maximum(idx[end] - 1, 0)],
        snapshot_at=snapshot_at,
    )
    open_at_row = runs.last & is_true(rows["processing"])[start] & ~is_true(rows["deleted"])[start]
    low, high = rules.event_window(
        open_at_row,
        snapshot_before=times[np.maximum(idx[start] - 1, 0)],
        snapshot_at=times[idx[start]],
        end_at=np.where(runs.end_row >= 0, snapshot_at, FAR),
    )
    # A run open at the snapshot before (one of ours, or one going at the baseline).
    open_before = is_true(rows["prev_processing"])[start] & ~is_true(rows["is_new"])[start]
    return _Ends(
        outcome=rules.outcome(
            settled,
            failed=failed,
            stalled=rules.stalls(reason),
            still_running=runs.last & (runs.end_reason == EndReason.STILL_RUNNING),
        ),
        finished=rules.finish_time(
            settled, activity_ends, activity=activity, snapshot_at=snapshot_at
        ),
        finished_source=rules.finish_source(settled, activity_ends),
        failure_reason=np.where(failed, reason, np.array(None)),
        window_low=low,
        window_high=high,
        skip=rules.events_to_skip(open_at_row, ordinal=runs.ordinal, open_before=open_before),
    )


def _event_ends(
    found: Transitions, runs: _Charged, ends: _Ends, events: pd.DataFrame
) -> tuple[_Ends, np.ndarray]:
    """The ends with each run's `chapter.finished` / `chapter.failed` event where the
    store has it, and the runs' starts moved after the events of the runs before them."""
    chapters = found.rows["chapter_id"].cat.categories
    event_chapter = chapters.get_indexer(pd.Index(events["chapter_id"]))
    events = events[event_chapter >= 0].reset_index(drop=True)
    event_chapter = event_chapter[event_chapter >= 0]
    if events.empty or not len(runs.row):
        return ends, runs.started
    chosen = _match_events(
        events["at"].to_numpy(),
        event_chapter,
        run_chapter=found.rows["chapter_id"].cat.codes.to_numpy("int64")[runs.row],
        ends=ends,
        n_chapters=len(chapters),
    )
    hit = chosen >= 0
    event = np.maximum(chosen, 0)
    finished = np.where(hit, events["at"].to_numpy()[event], ends.finished)
    failed = hit & (events["type"].to_numpy(object)[event] == "chapter.failed")
    # A failure's reason is the event's, else what the snapshot showed.
    event_reason = events["reason"].to_numpy(object)[event]
    reason = np.where(failed & ~pd.isna(event_reason), event_reason, ends.failure_reason)
    reason = np.where(hit & ~failed, np.array(None), reason)
    outcome = np.where(hit & ~failed, Outcome.FINISHED, ends.outcome)
    outcome = np.where(
        failed, np.where(rules.stalls(reason), Outcome.STALLED, Outcome.FAILED), outcome
    )
    started = rules.after_previous_end(
        runs.started,
        row=runs.row,
        from_creation=runs.from_creation,
        event_end=np.where(hit, finished, NO_TIME),
    )
    by_events = dataclasses.replace(
        ends,
        outcome=outcome,
        finished=finished,
        finished_source=np.where(hit, EndSource.EVENT, ends.finished_source),
        failure_reason=np.asarray(reason, object),
    )
    return by_events, started


def _match_events(
    stamp: np.ndarray,
    event_chapter: np.ndarray,
    *,
    run_chapter: np.ndarray,
    ends: _Ends,
    n_chapters: int,
) -> np.ndarray:
    """Each run's end event (a position in the events; -1 none): its chapter's events in
    its window, in time order, after the `skip` that belong to runs before it. The
    events are sorted once by (chapter, time) as one int64 key, and each window is two
    binary searches. (Reference: CTEs `numbered_events`, `event_of`, `matched`.)"""
    low_time = int(min(stamp.min(), ends.window_low.min())) - 1
    high_time = int(max(stamp.max(), ends.window_high.clip(max=stamp.max() + 1).max()))
    span = high_time - low_time + 2
    if span * (n_chapters + 1) >= FAR:
        raise OverflowError("too many chapters and too long a history to match events")

    def key(chapter: np.ndarray, when: np.ndarray) -> np.ndarray:
        clipped = np.clip(when, low_time, low_time + span - 1)
        keyed: np.ndarray = chapter.astype("int64") * span + (clipped - low_time)
        return keyed

    order = np.lexsort((stamp, event_chapter))
    keys = key(event_chapter[order], stamp[order])
    position = np.searchsorted(keys, key(run_chapter, ends.window_low), side="right") + ends.skip
    limit = np.searchsorted(keys, key(run_chapter, ends.window_high), side="right")
    return np.where(position < limit, order[np.minimum(position, len(order) - 1)], -1)


def terminal_events(obs: Observed) -> pd.DataFrame:
    """The store's `chapter.finished` and `chapter.failed` events of a chapter, as the
    runs match them: `chapter_id`, `type`, `at` (int64 microseconds), `reason`."""
    events = obs.events
    kept = events[events["type"].isin(["chapter.finished", "chapter.failed"])]
    kept = kept[kept["chapter_id"].notna()]
    return pd.DataFrame(
        {
            "chapter_id": kept["chapter_id"].astype(object).to_numpy(),
            "type": kept["type"].astype(object).to_numpy(),
            "at": to_micros(kept["timestamp"]),
            "reason": [_reason(d) for d in kept["data"]],
        }
    )


def _reason(data: Any) -> str | None:
    try:
        parsed = json.loads(data) if isinstance(data, str) else {}
    except ValueError:
        return None
    value = parsed.get("failureReason") if isinstance(parsed, dict) else None
    return str(value) if value is not None else None


def _in_order(found: Transitions, runs: _Charged, ends: _Ends, started: np.ndarray) -> RunTable:
    """The runs in the order of the result, numbered within their chapter, with their
    rework."""
    rows = found.rows
    run_chapter = rows["chapter_code"].to_numpy("int64")[runs.row]
    number = rank_within(run_chapter)
    # Permuting numpy columns is cheap, the finished frame's texts are not.
    order = rules.run_order(started, run_chapter, number)
    kind, credits = runs.kind[order], np.asarray(runs.credits[order], "float64")
    table = RunTable(
        row=runs.row[order],
        number=number[order],
        kind=kind,
        pages=runs.pages[order],
        languages=runs.languages[order],
        credits=credits,
        rework=np.where(rules.is_rework(kind), credits, 0.0),
        started=started[order],
        from_creation=runs.from_creation[order],
        finished=ends.finished[order],
        finished_source=ends.finished_source[order],
        outcome=ends.outcome[order],
        failure_reason=np.asarray(ends.failure_reason[order], object),
        seen_idx=rows["idx"].to_numpy("int64")[runs.row][order],
        created=runs.created[order],
    )
    retried = _novel_retries(table, found)
    return dataclasses.replace(table, rework=np.where(retried, credits, table.rework))


def _novel_retries(table: RunTable, found: Transitions) -> np.ndarray:
    """Which runs are a novel chapter's text uploaded again (a new chapter, since a novel
    cannot be re-scanned) at the position of one whose last run failed and ended before
    it started: its charge is rework. The store holds no text, so an upload at another
    position is not recognised. (Reference: CTEs `novel_place`, `failed_last`,
    `retried`.)"""
    retried = np.zeros(len(table.row), bool)
    novel = found.novel()
    if not novel.any():
        return retried
    rows = found.rows
    # observed=True: the chapters seen (pandas 3's default; 2.2 warns without it)
    place = (
        rows[novel]
        .groupby("chapter_id", sort=False, observed=True)[["project_id", "position"]]
        .last()
    )
    # The runs of novel chapters, in the runs' order, as a small frame.
    chapter_ids = rows["chapter_id"].astype(object).to_numpy()[table.row]
    mine = np.flatnonzero(pd.Index(place.index).get_indexer(chapter_ids) >= 0)
    out = pd.DataFrame(
        {
            "chapter_id": chapter_ids[mine],
            "first": table.kind[mine] == Kind.FIRST,
            "failed": np.isin(table.outcome[mine], [Outcome.FAILED, Outcome.STALLED]),
            "finished": table.finished[mine],
            "started": table.started[mine],
        }
    )
    last_runs = out.groupby("chapter_id", sort=False).tail(1).set_index("chapter_id")
    for i in np.flatnonzero(out["first"].to_numpy()):
        run = out.iloc[i]
        project, position = place.loc[run["chapter_id"]]
        earlier = place[
            (place["project_id"] == project)
            & (place["position"] == position)
            & (place.index != run["chapter_id"])
        ]
        for other in earlier.index:
            if other in last_runs.index and last_runs.loc[other, "failed"]:
                ended = last_runs.loc[other, "finished"]
                if ended == NO_TIME or ended <= run["started"]:
                    retried[mine[i]] = True
                    break
    return retried

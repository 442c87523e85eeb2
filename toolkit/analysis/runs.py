"""Runs: one row per run of a chapter, from everything the store holds.

A run is what one charge starts (DESIGN.md, "What the analysis counts"). `charges`
tells which runs a rise of `credits_spent` paid for; this module gives each its times
and outcome:

- **start**: a first run of a chapter that appeared since the snapshot before starts at
  its `created_at` (source `created`); any other run started after the snapshot before
  (and after the run before it ended, when an event says when): the earliest moment
  the store allows (source `snapshot`).
- **end**: its `chapter.finished` or `chapter.failed` event when the store has one
  (source `event`); else `last_activity_at` of the first snapshot that shows the chapter
  settled (source `last_activity`: the service's last step of the run), unless
  something else touched the chapter there (a review, held pages added), when it is
  that snapshot's time (source `snapshot`).
- **outcome**: `finished`, `failed`, `stalled` (abandoned by the service: its reason
  says it stalled), `running` (processing at the last snapshot); null when the store
  cannot tell: a run followed by another between the same two snapshots without an
  event, or a chapter trashed while it ran.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final, NamedTuple, cast

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from toolkit.analysis.calendar import When, within
from toolkit.analysis.charges import KINDS, SLOTS, Split, learn_prices, split_charges
from toolkit.analysis.observed import Observed, observe
from toolkit.analysis.transitions import (
    NO_TIME,
    Transitions,
    as_column,
    codes,
    flag,
    is_novel,
    last_of_chapter,
    micros,
    number,
    rank_within,
    read_transitions,
    texts,
    unconsolidated,
)
from toolkit.analysis.workspaces import across
from toolkit.frames import says_stalled

if TYPE_CHECKING:
    from toolkit.store import SnapshotStore

TEXT = pd.StringDtype()
TIME: Final = "datetime64[us, UTC]"
FAR = np.iinfo("int64").max
# The words of the coded columns, by code (-1: null): a year has some 200,000 runs, and
# codes are what numpy handles fast; the texts are made once, for the result.
OUTCOMES = ("finished", "failed", "stalled", "running")
FINISHED, FAILED, STALLED, RUNNING = range(len(OUTCOMES))
END_SOURCES = ("event", "last_activity", "snapshot")
EVENT, LAST_ACTIVITY, SNAPSHOT = range(len(END_SOURCES))
START_SOURCES = ("created", "snapshot")
SLOT_KINDS = np.array([KINDS.index(slot) for slot in SLOTS])
FIRST, RESCAN = KINDS.index("first"), KINDS.index("rescan")
COLUMNS = [
    "run_id", "chapter_id", "chapter", "project_id", "project", "kind", "pages", "languages",
    "models", "credits", "rework", "started_at", "started_source", "finished_at",
    "finished_source", "outcome", "failure_reason",
]  # fmt: skip


@across
def runs(
    store: SnapshotStore | Observed,
    *,
    since: When | None = None,
    until: When | None = None,
    tz: str | None = None,
) -> pd.DataFrame:
    """One row per run of a chapter that started after the store's first snapshot, and
    per run already going at it (charged before the store's history: `credits` 0).

    Columns: `run_id` (`<chapter_id>/<n>`, the chapter's n-th run seen: stable across
    calls), `chapter_id`, `chapter` (title), `project_id`, `project` (name), `kind`
    (`first`, `rescan`, `added_pages`, `held_start`), `pages` and `languages` it ran,
    `models` (the service's model name), `credits` charged at its start, `rework`
    (credits paid again for pages already paid: a re-scan's whole charge, and a novel
    chapter uploaded again at the position of one that failed), `started_at`,
    `started_source` (`created` or `snapshot`), `finished_at` (when it finished or
    failed), `finished_source` (`event`, `last_activity` or `snapshot`), `outcome`
    (`finished`, `failed`, `stalled`, `running`; null where the store cannot tell) and
    `failure_reason`. `since`/`until` keep runs that started in [since, until).
    Sorted by start (unknown starts last), then chapter, then run number.
    docs/analysis.md says how each field is derived and what the store cannot know.

    Args:
        store: A store (or its `Observed` view); several workspaces' stores at once (a
            mapping of label to store, or a list) answer with a `workspace` column
            first.
        since: The window's start, included, on the runs' start (a naive time is read in
            `tz`); by default the beginning.
        until: The window's end, excluded; by default no end.
        tz: The time zone of the window's naive times; UTC by default.

    Returns:
        One row per run.
    """
    frame = all_runs(observe(store))
    return within(frame[COLUMNS], "started_at", since=since, until=until, tz=tz)


def all_runs(obs: Observed) -> pd.DataFrame:
    """The runs with the snapshot that first showed each (`seen_idx`, `seen_at`)."""
    if "runs" not in obs.memo:
        table = run_table(obs)
        obs.memo["runs"] = _frame_of(table, transitions(obs)) if len(table.row) else _empty()
    return cast(pd.DataFrame, obs.memo["runs"])


class RunTable(NamedTuple):
    """The runs as numpy arrays in the order of `runs`' frame, before their texts are
    made (a figure that sums them needs none: a year has some 200,000 runs). Codes as
    in `KINDS`, `OUTCOMES`, `END_SOURCES`; times in microseconds, `NO_TIME` for none."""

    row: np.ndarray  # the transition row whose snapshot first showed the run
    number: np.ndarray  # its place among its chapter's runs, from 0
    kind: np.ndarray
    pages: np.ndarray
    languages: np.ndarray
    credits: np.ndarray
    rework: np.ndarray
    started: np.ndarray
    from_creation: np.ndarray
    finished: np.ndarray
    finished_source: np.ndarray
    outcome: np.ndarray
    failure_reason: np.ndarray  # texts, None for none
    seen_idx: np.ndarray
    created: np.ndarray


def runs_kept(obs: Observed, keep: np.ndarray) -> pd.DataFrame:
    """The rows of `all_runs` that `keep` (a mask over `run_table`) selects, with texts
    made only for them when the whole frame is not at hand: a figure on a few of a
    year's 200,000 runs (its failures, the chapters whose first run was seen) then costs
    the runs, not their texts."""
    if "runs" in obs.memo:
        return all_runs(obs)[keep].reset_index(drop=True)
    if not keep.any():
        return _empty()
    table = run_table(obs)
    return _frame_of(RunTable(*(column[keep] for column in table)), transitions(obs))


def run_chapters(obs: Observed) -> np.ndarray:
    """Each run's chapter (of `run_table`), as a code: equal chapters, equal codes."""
    table = run_table(obs)
    if not len(table.row):
        return table.row
    return np.asarray(transitions(obs).rows["chapter_code"].to_numpy()[table.row], "int64")


def run_table(obs: Observed) -> RunTable:
    if "run_table" not in obs.memo:
        obs.memo["run_table"] = _build(obs)
    return cast(RunTable, obs.memo["run_table"])


def transitions(obs: Observed) -> Transitions:
    if "transitions" not in obs.memo:
        obs.memo["transitions"] = read_transitions(obs)
    return cast(Transitions, obs.memo["transitions"])


def prices(obs: Observed) -> dict[str | None, float]:
    """The learned price per page and language by project id (`None`: the workspace)."""
    if "prices" not in obs.memo:
        found = transitions(obs)
        rows = found.rows
        obs.memo["prices"] = learn_prices(rows, n_languages=_languages(rows)) if len(rows) else {}
    return cast(dict[str | None, float], obs.memo["prices"])


def _languages(rows: pd.DataFrame) -> np.ndarray:
    return np.asarray(np.maximum(number(rows["n_languages"]), 1.0), "float64")


class Charges(NamedTuple):
    """The transition rows' rises split into runs (`split_charges`), with the price per
    page (all target languages) each row was read at."""

    split: Split
    rise: np.ndarray
    per_page: np.ndarray


def charges(obs: Observed) -> Charges:
    if "charges" not in obs.memo:
        rows = transitions(obs).rows
        n_languages = _languages(rows)
        learned = prices(obs)
        workspace_price = learned.get(None, np.nan)
        own = {k: v for k, v in learned.items() if k is not None}
        # By project code: a price per project, then one take for the rows.
        projects = rows["project_id"].cat
        price = np.array(
            [own.get(str(p), workspace_price) for p in projects.categories] + [workspace_price]
        )[projects.codes.to_numpy()]
        split, rise = split_charges(rows, n_languages=n_languages, price=price)
        obs.memo["charges"] = Charges(split, rise, n_languages * price)
    return cast(Charges, obs.memo["charges"])


def paid_pages(obs: Observed) -> pd.Series:
    """Pages each chapter (by id) has paid for at the last snapshot: run at least once;
    held pages not yet."""
    found = transitions(obs)
    if found.empty:
        return pd.Series(dtype="float64")
    rows = found.rows
    last = last_of_chapter(rows)
    ids = rows["chapter_id"].astype(object).to_numpy()[last]
    return pd.Series(charges(obs).split.paid[last], index=ids)


def rescans_seen(obs: Observed) -> pd.DataFrame:
    """`chapter_id, idx`: where a re-scan of a chapter was seen (the snapshot position
    whose rise paid for it), without building the runs."""
    found = transitions(obs)
    if found.empty:
        return pd.DataFrame({"chapter_id": pd.Series(dtype=object), "idx": np.zeros(0, "int64")})
    rescan_slots = np.array(SLOTS) == "rescan"  # before and after new pages
    seen = charges(obs).split.count[:, rescan_slots].sum(axis=1) > 0
    rows = found.rows
    return pd.DataFrame(
        {
            "chapter_id": rows["chapter_id"].astype(object).to_numpy()[seen],
            "idx": rows["idx"].to_numpy("int64")[seen],
        }
    )


def _build(obs: Observed) -> RunTable:
    found = transitions(obs)
    if found.empty:
        return RunTable(*(np.zeros(0, "int64") for _ in RunTable._fields))
    rows = found.rows
    n_languages = _languages(rows)
    split, rise, per_page = charges(obs)

    # One run per (row, slot, repeat), in the order they ran between the two snapshots.
    counts = split.count.ravel()
    paying = np.flatnonzero(counts)  # (row, slot) pairs with runs: a few in twenty
    repeats = counts[paying]
    row = np.repeat(paying // len(SLOTS), repeats)
    slot = np.repeat(paying % len(SLOTS), repeats)
    pages = np.repeat(split.pages.ravel()[paying], repeats)
    n_in_row = np.bincount(row, minlength=len(rows))
    ordinal = rank_within(row)
    last = ordinal == n_in_row[row] - 1

    # Whole credits: each run's share by its pages; the rise's remainder to its last run.
    with np.errstate(invalid="ignore"):
        credits = np.nan_to_num(np.round(pages * per_page[row]))
    spent = np.bincount(row, weights=credits, minlength=len(rows))
    credits = credits + np.where(last, (rise - spent)[row], 0.0)

    kind = SLOT_KINDS[slot]
    times = found.times
    idx = rows["idx"].to_numpy("int64")
    # A run going at the first snapshot was charged before it: a first run if what the
    # chapter had spent pays for its pages once, else of a kind the store cannot tell.
    at_baseline = idx[row] == 0
    spent_so_far = number(rows["credits_spent"])[row]
    novel = is_novel(rows)[row]
    once = novel | ~(spent_so_far > pages * per_page[row] + 1e-6)
    kind = np.where(at_baseline & ~once, -1, kind)
    credits = np.where(at_baseline, 0.0, credits)
    at = times[idx[row]]
    before = times[np.maximum(idx[row] - 1, 0)]
    new = flag(rows["is_new"])[row]
    created = micros(rows["created_at"])[row]
    from_creation = (kind == FIRST) & new & (created != NO_TIME)
    started = np.where(from_creation, created, np.where(at_baseline, NO_TIME, before))

    end_row, end_kind = _end_rows(rows, n_in_row)
    frame = unconsolidated(
        {
            "chapter": rows["chapter_id"].cat.codes.to_numpy("int64")[row],
            "kind": kind,
            "pages": pages,
            "languages": n_languages[row],
            "credits": credits,
            "seen_idx": idx[row],
            "row": row,
            "ordinal": ordinal,
            "last": last,
            "started": started,
            "from_creation": from_creation,
            "created": created,
            "window_low": before,
            "window_high": at,
        },
        len(row),
    )
    _ends(frame, rows, times, end_row[row], end_kind[row])
    _match_events(frame, obs, rows["chapter_id"].cat.categories)
    # Runs between the same two snapshots ran one after another.
    frame["started"] = frame.groupby("row", sort=False)["started"].cummax()
    return _in_order(frame, rows)


def _end_rows(rows: pd.DataFrame, n_in_row: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row: the row (of the same chapter, this one or later) that shows how the run
    open after it ended, and why: 0 settled, 1 a new run began first, 2 trashed, 3 still
    running at the last snapshot."""
    processing = flag(rows["processing"])
    deleted = flag(rows["deleted"])
    chapter = rows["chapter_code"].to_numpy("int64")
    ends = ~processing | deleted
    # Later rows that start runs end the one open before them.
    started_here = n_in_row > 0
    n = len(rows)
    position = np.arange(n)
    candidate = np.where(ends, position, n)
    # For a row still processing: the next row (after it) that ends or starts a run.
    nxt = np.where(ends | started_here, position, n)
    following = np.minimum.accumulate(nxt[::-1])[::-1]  # first at or after each row
    after = np.append(following[1:], n)
    end = np.where(ends, candidate, after)
    same = (end < n) & (chapter[np.minimum(end, n - 1)] == chapter)
    end = np.where(same, end, -1)
    why = np.full(n, 3)
    safe = np.maximum(end, 0)
    why = np.where(same & deleted[safe], 2, why)
    why = np.where(same & ~deleted[safe] & (end != position) & started_here[safe], 1, why)
    why = np.where(same & ~deleted[safe] & ((end == position) | ~started_here[safe]), 0, why)
    return end, why


def _ends(
    frame: pd.DataFrame, rows: pd.DataFrame, times: np.ndarray, end: np.ndarray, why: np.ndarray
) -> None:
    """The end each run shows in the snapshots, before events are looked at."""
    last = frame["last"].to_numpy()
    settled = last & (why == 0)
    k = np.maximum(end, 0)
    start_row = frame["row"].to_numpy()
    kind = frame["kind"].to_numpy()
    failed = flag(rows["failed"])
    # The reasons where runs end, as Python texts (taken by code).
    reason = texts(rows["failure_reason"], k)
    prev_failed = flag(rows["prev_failed"])
    fresh = np.isin(kind, [FIRST, RESCAN])
    reason_changed = codes(rows["failure_reason"])[k] != codes(rows["prev_reason"])[start_row]
    run_failed = settled & failed[k] & (fresh | ~prev_failed[start_row] | reason_changed)
    stall = stalls(reason)
    outcome = np.full(len(frame), -1)
    outcome[settled] = FINISHED
    outcome[run_failed] = np.where(stall[run_failed], STALLED, FAILED)
    outcome[last & (why == 3)] = RUNNING
    # last_activity_at is the run's last step unless something touched the chapter after.
    became_reviewed = flag(rows["reviewed"]) & ~flag(rows["prev_reviewed"])
    reviewed = became_reviewed[k]
    grew_unpaid = (number(rows["page_count"])[k] > number(rows["prev_pages"])[k]) & (
        number(rows["credits_spent"])[k] == number(rows["prev_credits"])[k]
    )
    idx = rows["idx"].to_numpy("int64")
    activity = micros(rows["last_activity_at"])[k]
    # The run ended between the snapshot that showed it settled and the one before; a
    # last_activity_at outside that interval is not its end.
    inside = (activity > times[np.maximum(idx[k] - 1, 0)]) & (activity <= times[idx[k]])
    touched = reviewed | grew_unpaid | ~inside
    frame["outcome"] = outcome
    frame["finished"] = np.where(settled, np.where(touched, times[idx[k]], activity), NO_TIME)
    frame["finished_source"] = np.where(settled, np.where(touched, SNAPSHOT, LAST_ACTIVITY), -1)
    frame["failure_reason"] = as_column(np.where(run_failed, reason, np.array(None)))
    # Where the end may lie, for matching events: a run that ended before its row's
    # snapshot, between it and the one before; the last run of a row still processing,
    # between that snapshot and the one that showed how it ended.
    open_at_row = last & flag(rows["processing"])[start_row] & ~flag(rows["deleted"])[start_row]
    in_row = ~open_at_row
    later = np.where(end >= 0, times[idx[k]], FAR)
    frame["window_low"] = np.where(in_row, frame["window_low"], times[idx[start_row]])
    frame["window_high"] = np.where(in_row, frame["window_high"], later)
    # A run open at the snapshot before (one of ours, or one running at the baseline)
    # ended first: its event comes before those of the runs started after it.
    prev_open = flag(rows["prev_processing"])[start_row] & ~flag(rows["is_new"])[start_row]
    frame["skip"] = np.where(in_row, frame["ordinal"] + prev_open, 0)


def _match_events(frame: pd.DataFrame, obs: Observed, chapters: pd.Index) -> None:
    """Each run's `chapter.finished` / `chapter.failed` event, where the store has it:
    the chapter's events in the run's window, in order, one per run. `frame["chapter"]`
    is each run's chapter as a position in `chapters`."""
    events = _terminal_events(obs)
    frame["event"] = -1
    event_code = chapters.get_indexer(pd.Index(events["chapter_id"]))
    events = events[event_code >= 0].reset_index(drop=True)
    event_code = event_code[event_code >= 0]
    if events.empty or frame.empty:
        return
    run_code = frame["chapter"].to_numpy("int64")
    stamp = events["at"].to_numpy()
    low_time = int(min(stamp.min(), frame["window_low"].min())) - 1
    span = (
        int(max(stamp.max(), frame["window_high"].clip(upper=stamp.max() + 1).max())) - low_time + 2
    )
    if span * (len(chapters) + 1) >= FAR:
        raise OverflowError("too many chapters and too long a history to match events")

    def key(code: np.ndarray, when: np.ndarray) -> np.ndarray:
        clipped = np.clip(when, low_time, low_time + span - 1)
        keyed: np.ndarray = code.astype("int64") * span + (clipped - low_time)
        return keyed

    order = np.lexsort((stamp, event_code))
    keys = key(event_code[order], stamp[order])
    low = frame["window_low"].to_numpy("int64")
    high = frame["window_high"].to_numpy("int64")
    position = np.searchsorted(keys, key(run_code, low), side="right") + frame["skip"].to_numpy()
    limit = np.searchsorted(keys, key(run_code, high), side="right")
    found = position < limit
    frame["event"] = np.where(found, order[np.minimum(position, len(order) - 1)], -1)
    chosen = frame["event"].to_numpy()
    hit = chosen >= 0
    kinds = events["type"].to_numpy(object)
    reasons = events["reason"].to_numpy(object)
    finished = frame["finished"].to_numpy().copy()
    source = frame["finished_source"].to_numpy().copy()
    outcome = frame["outcome"].to_numpy().copy()
    reason = frame["failure_reason"].to_numpy(object).copy()
    finished[hit] = stamp[chosen[hit]]
    source[hit] = EVENT
    failed = hit & (kinds[np.maximum(chosen, 0)] == "chapter.failed")
    ok = hit & ~failed
    outcome[ok] = FINISHED
    reason[ok] = None
    text = reasons[np.maximum(chosen, 0)]
    reason[failed] = np.where(pd.isna(text[failed]), reason[failed], text[failed])
    outcome[failed] = np.where(stalls(reason)[failed], STALLED, FAILED)
    frame["finished"], frame["finished_source"] = finished, source
    frame["outcome"], frame["failure_reason"] = outcome, as_column(reason)
    # The run after an event started no earlier than it.
    same_row = frame["row"].to_numpy()
    previous_end = np.roll(np.where(hit, finished, NO_TIME), 1)
    follows = np.zeros(len(frame), bool)
    follows[1:] = same_row[1:] == same_row[:-1]
    started = frame["started"].to_numpy()
    frame["started"] = np.where(
        follows & ~frame["from_creation"].to_numpy(), np.maximum(started, previous_end), started
    )


def stalls(reasons: np.ndarray) -> np.ndarray:
    """Whether each failure reason (None for none) says the run stalled: the distinct
    reasons are few, so each is matched once."""
    codes, distinct = pd.factorize(pd.Series(reasons, dtype=object), use_na_sentinel=True)
    matched = np.array([says_stalled(str(r)) for r in distinct] + [False], bool)
    return np.asarray(matched[codes], bool)


def _terminal_events(obs: Observed) -> pd.DataFrame:
    events = obs.events
    kept = events[events["type"].isin(["chapter.finished", "chapter.failed"])]
    kept = kept[kept["chapter_id"].notna()]
    return pd.DataFrame(
        {
            "chapter_id": kept["chapter_id"].astype(object).to_numpy(),
            "type": kept["type"].astype(object).to_numpy(),
            "at": micros(kept["timestamp"]),
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


def _in_order(frame: pd.DataFrame, rows: pd.DataFrame) -> RunTable:
    """The runs sorted by start (unknown starts last), then chapter and run number,
    with their rework (a re-scan's whole charge; a novel uploaded again after failing)."""
    row = frame["row"].to_numpy("int64")
    run_chapter = rows["chapter_code"].to_numpy("int64")[row]
    number = rank_within(run_chapter)
    # In the order of the result from here on: permuting numpy columns is cheap, the
    # finished frame's texts are not.
    started = frame["started"].to_numpy()
    order = np.lexsort((number, run_chapter, np.where(started == NO_TIME, FAR, started)))

    def ordered(name: str) -> np.ndarray:
        return np.asarray(frame[name].to_numpy()[order])

    kind = ordered("kind")
    credits = np.asarray(ordered("credits"), "float64")
    table = RunTable(
        row=row[order],
        number=number[order],
        kind=kind,
        pages=ordered("pages"),
        languages=ordered("languages"),
        credits=credits,
        rework=np.where(kind == RESCAN, credits, 0.0),
        started=ordered("started"),
        from_creation=ordered("from_creation").astype(bool),
        finished=ordered("finished"),
        finished_source=ordered("finished_source"),
        outcome=ordered("outcome"),
        failure_reason=np.asarray(ordered("failure_reason"), object),
        seen_idx=ordered("seen_idx").astype("int64"),
        created=ordered("created"),
    )
    _novel_retries(table, rows)
    return table


def _frame_of(table: RunTable, found: Transitions) -> pd.DataFrame:
    """The runs frame: texts taken from the rows' categories by code, in Arrow (maps of
    Python strings would cost a second on a year's runs)."""
    rows, row, number = found.rows, table.row, table.number
    chapter = rows["chapter_code"].to_numpy("int64")
    last = last_of_chapter(rows)
    titles, positions = rows["title"][last], rows["position"][last]
    labels = pa.array(  # by chapter code
        titles.astype(object).where(titles.notna(), "Chapter " + positions.astype(str)),
        pa.large_string(),
    )
    models = _text_of(rows["model"], row, null=found.default_model)
    chapter_ids = _text_of(rows["chapter_id"], row)
    # `<chapter_id>/<n>`: the "/<n>" taken by number (few), not made per run.
    endings = _by_code(number, [f"/{n}" for n in range(1, int(number.max(initial=0)) + 2)])
    run_ids = pc.binary_join_element_wise(chapter_ids, endings, pa.scalar("", pa.large_string()))
    started = table.started
    return pd.DataFrame(
        {
            "run_id": _text(run_ids),
            "chapter_id": _text(chapter_ids),
            "chapter": _text(labels.take(pa.array(chapter[row]))),
            "project_id": _text(_text_of(rows["project_id"], row)),
            "project": _text(_text_of(rows["project"], row)),
            "kind": _coded(table.kind, KINDS),
            "pages": pd.array(np.round(table.pages).astype("int64"), dtype="Int64"),
            "languages": pd.array(table.languages.astype("int64"), dtype="Int64"),
            "models": _text(models),
            "credits": pd.array(table.credits, dtype="Float64"),
            "rework": pd.array(table.rework, dtype="Float64"),
            "started_at": _times(started),
            "started_source": _coded(
                np.where(
                    table.from_creation,
                    START_SOURCES.index("created"),
                    np.where(started == NO_TIME, -1, START_SOURCES.index("snapshot")),
                ),
                START_SOURCES,
            ),
            "finished_at": _times(table.finished),
            "finished_source": _coded(table.finished_source, END_SOURCES),
            "outcome": _coded(table.outcome, OUTCOMES),
            "failure_reason": _text(table.failure_reason),
            "seen_idx": pd.array(table.seen_idx, dtype="Int64"),
            "seen_at": _times(found.times[table.seen_idx]),
            "created_at": _times(table.created),
        }
    )


def _text_of(column: pd.Series, at: np.ndarray, *, null: str | None = None) -> pa.Array:
    """A categorical column's texts at rows `at`, as Arrow strings; nulls as `null`."""
    coded, words = codes(column)[at], list(column.cat.categories)
    if null is not None:
        coded = np.where(coded < 0, len(words), coded)
        words.append(null)
    return _by_code(coded, words)


def _coded(coded: np.ndarray, words: tuple[str, ...]) -> pd.arrays.ArrowStringArray:
    """Texts from codes into `words` (-1: null)."""
    return _text(_by_code(coded, words))


def _by_code(coded: np.ndarray, words: Sequence[str] | pd.Index) -> pa.Array:
    """Each code's word as Arrow large strings (-1: null): the words are few, the codes
    many, and a take copies each text once."""
    vocabulary = pa.array(list(words), pa.large_string())
    return vocabulary.take(pa.array(coded, pa.int64(), mask=np.asarray(coded) < 0))


def _text(values: pa.Array | np.ndarray) -> pd.arrays.ArrowStringArray:
    """Texts as the toolkit's string dtype, straight from Arrow (as large strings, which
    pandas keeps them as: no second copy)."""
    if isinstance(values, np.ndarray):
        values = pa.array(values, pa.large_string(), from_pandas=True)
    return pd.arrays.ArrowStringArray(values)


def _novel_retries(table: RunTable, rows: pd.DataFrame) -> None:
    """A novel chapter whose text is uploaded again (a new chapter, since a novel cannot
    be re-scanned) at the position of one whose last run failed: its charge is rework.
    The store holds no text, so an upload at another position is not recognised."""
    novel = is_novel(rows)
    if not novel.any():
        return
    novels = rows[novel]
    place = novels.groupby("chapter_id", sort=False)[["project_id", "position"]].last()
    # The runs of novel chapters, in the runs' order, as a small frame.
    chapter_ids = rows["chapter_id"].astype(object).to_numpy()[table.row]
    mine = np.flatnonzero(pd.Index(place.index).get_indexer(chapter_ids) >= 0)
    out = pd.DataFrame(
        {
            "chapter_id": chapter_ids[mine],
            "first": table.kind[mine] == KINDS.index("first"),
            "failed": np.isin(table.outcome[mine], [FAILED, STALLED]),
            "finished_at": _times(table.finished[mine]),
            "started_at": _times(table.started[mine]),
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
                ended = last_runs.loc[other, "finished_at"]
                if pd.isna(ended) or ended <= run["started_at"]:
                    table.rework[mine[i]] = table.credits[mine[i]]
                    break


def _times(values: np.ndarray) -> pd.Series:
    # NO_TIME is numpy's NaT: the microseconds are the times, with no float detour.
    stamped = pd.Series(np.asarray(values, "int64").view("datetime64[us]"))
    return stamped.dt.tz_localize("UTC")


def _empty() -> pd.DataFrame:
    frame = pd.DataFrame(
        {c: pd.Series(dtype=TEXT) for c in [*COLUMNS, "seen_idx", "seen_at", "created_at"]}
    )
    for column in ("pages", "languages", "seen_idx"):
        frame[column] = frame[column].astype("Int64")
    for column in ("credits", "rework"):
        frame[column] = frame[column].astype("Float64")
    for column in ("started_at", "finished_at", "seen_at", "created_at"):
        frame[column] = frame[column].astype(TIME)
    return frame

"""The pipeline's third stage: charges told apart, which runs one rise of
`credits_spent` paid for.

A snapshot sees a chapter's credits rise; between two snapshots the service may have
started several runs of it (created, failed, re-scanned; pages added; held pages
started). Each kind of run pays for a known set of pages in every target language:

- the first run: every page the chapter has when it starts;
- pages added to a chapter that ran (`added_pages`): the new pages;
- held pages started (`held_start`): those pages;
- a re-scan: every page that has run before (held pages keep waiting).

So with the price per page and language, a rise is a sum of page counts, and the
chapter's page count before and after, and how many pages it had paid for, say which
sum it is. Where two readings fit, the one the flags support wins (only a re-scan clears
`failed`). A first run and added pages pay for pages known without what was paid before;
only a rise that holds more (re-scans, held pages started) is read against how many pages
the chapter had paid for, which carries from one charge to the next. So the rises are
read all at once, what was paid is a running sum per chapter, and only those other
rises are walked in order: each chapter's k-th of them at once, some twenty numpy steps
for a year.

The price is learned from first runs only (see `learn_prices`).

Where two readings of a rise take as many runs, the store can still tell them apart
later: the files a finished run packaged count the pages not held, and the chapter's
next rise reads as whole runs under one of them only (`held_seen_later`).

Past 400 lines on purpose: the readings of a rise (first run and added pages, then the
rest: re-scans, held pages, new pages kept held, some held as later rows show) are one
rule, checked against one CTE chain of toolkit/analysis/sql/runs.py; split, the walk's
state would cross modules.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

import numpy as np
import pandas as pd

from toolkit.analysis._arrays import carried, category_codes, is_true, rank_within, to_float
from toolkit.analysis.prices import Prices
from toolkit.analysis.run_codes import Slot
from toolkit.analysis.transitions import Transitions

if TYPE_CHECKING:
    from toolkit.analysis.observed import Observed

__all__ = ["SLOTS", "Charges"]

_EPS = 1e-6
SLOTS = len(Slot)


@dataclass(frozen=True)
class Charges:
    """Per transition row: its rise split into runs. `count[row, slot]` is how many runs
    of that slot (`Slot`) the rise paid for (several re-scans fit in one slot) and
    `pages[row, slot]` the pages each of them paid for; `paid` the pages the chapter has
    paid for after the row (run at least once; held pages not yet); `rise` the credits
    the row's rise holds; `per_page` the price of one page in all its languages."""

    count: np.ndarray
    pages: np.ndarray
    paid: np.ndarray
    rise: np.ndarray
    per_page: np.ndarray

    @classmethod
    def build(cls, obs: Observed) -> Charges:
        return _split_charges(obs.stage(Transitions), per_page=obs.stage(Prices).per_page)


@dataclass(frozen=True)
class _Rows:
    """What of each transition row the split reads, as arrays."""

    chapter: np.ndarray
    baseline: np.ndarray
    new: np.ndarray
    deleted: np.ndarray
    credits: np.ndarray
    rise: np.ndarray
    pages: np.ndarray
    pages_before: np.ndarray
    started_before: np.ndarray
    cleared: np.ndarray
    may_retry: np.ndarray
    exported: np.ndarray

    @classmethod
    def of(cls, found: Transitions) -> _Rows:
        rows = found.rows
        new = is_true(rows["is_new"])
        baseline = rows["idx"].to_numpy() == 0
        credits = to_float(rows["credits_spent"])
        return cls(
            chapter=rows["chapter_code"].to_numpy("int64"),
            baseline=baseline,
            new=new,
            deleted=is_true(rows["deleted"]),
            credits=credits,
            rise=_rise_of(credits, to_float(rows["prev_credits"]), new=new, baseline=baseline),
            pages=to_float(rows["page_count"]),
            pages_before=np.where(new, 0.0, to_float(rows["prev_pages"])),
            started_before=~new & is_true(rows["prev_started"]),
            cleared=~new & is_true(rows["prev_failed"]) & ~is_true(rows["failed"]),
            may_retry=_may_retry(
                new=new,
                failed_before=is_true(rows["prev_failed"]),
                failed=is_true(rows["failed"]),
                processing=is_true(rows["processing"]),
            ),
            exported=_exported_pages(
                to_float(rows["exported_pages"]),
                processing=is_true(rows["processing"]),
                failed=is_true(rows["failed"]),
            ),
        )


def _exported_pages(pages: np.ndarray, *, processing: np.ndarray, failed: np.ndarray) -> np.ndarray:
    """The pages a chapter holds unheld at a snapshot, by its files (NaN: not known): a
    finished run packages every page not held (`pageCount`), so the most a file prepared
    since the snapshot before counts is them when the chapter is settled and not failed
    (its last run finished, after every page that ran was added). (Reference: CTE `s`,
    `exported`.)"""
    return np.where(~processing & ~failed, pages, np.nan)


def _reason_changed(rows: pd.DataFrame) -> np.ndarray:
    """Whether the failure reason changed, both known (a new failure)."""
    reason, before = category_codes(rows["failure_reason"]), category_codes(rows["prev_reason"])
    return np.asarray((reason >= 0) & (before >= 0) & (reason != before), bool)


def _may_retry(
    *, new: np.ndarray, failed_before: np.ndarray, failed: np.ndarray, processing: np.ndarray
) -> np.ndarray:
    """Whether a rise can hold a re-scan that retried a failure: the chapter was failed,
    and is not both failed and processing at the snapshot (a re-scan clears `failed` at
    once, so such a chapter runs something else: pages held or added). A chapter failed
    again and settled may have been re-scanned and failed at the same place, or have run
    held pages and kept its flag: the store cannot tell, and reads a retry, what a
    failed chapter is re-scanned for. (Reference: CTE `s`, `may_retry`.)"""
    return np.asarray(~new & failed_before & ~(failed & processing), bool)


def _rise_of(
    credits: np.ndarray, before: np.ndarray, *, new: np.ndarray, baseline: np.ndarray
) -> np.ndarray:
    """Spend is the rise of `credits_spent` since the snapshot before; a chapter absent
    from it counts from 0; the baseline counts for nothing. (Reference: CTE `s`, `rise`.)"""
    return np.where(baseline, 0.0, np.maximum(credits - np.where(new, 0.0, before), 0.0))


def _split_charges(found: Transitions, *, per_page: np.ndarray) -> Charges:
    """Split each transition row's rise into runs (see the module's docstring)."""
    if found.empty:
        none = np.zeros(0)
        return Charges(np.zeros((0, SLOTS), "int64"), np.zeros((0, SLOTS)), none, none, none)
    rows = _Rows.of(found)
    count = np.zeros((len(rows.rise), SLOTS), dtype="int64")
    pages = np.zeros((len(rows.rise), SLOTS))
    # Only a rise, a new chapter, a trashed one and the baseline change what was paid;
    # the rows between carry what the row before them left.
    moves = rows.baseline | rows.new | rows.deleted | (rows.rise > 0)
    at = np.flatnonzero(moves)  # in chapter order, then snapshot order
    with np.errstate(invalid="ignore", divide="ignore"):
        units = rows.rise[at] / per_page[at]
    units = np.where(np.isnan(units), 0.0, units)  # no price: read by the flags below
    first, added, rest = _known_part(
        units,
        pages=rows.pages[at],
        pages_before=rows.pages_before[at],
        started_before=rows.started_before[at],
    )
    pages[at, Slot.FIRST], count[at, Slot.FIRST] = first, first > _EPS
    reset = np.where(
        rows.baseline[at], _paid_at_baseline(rows.pages[at], rows.credits[at], per_page[at]), 0.0
    )
    segments = _Segments.of(rows, at, reset)
    # Rows that hold more than that, walked in order: each chapter's k-th such row at
    # once (a few a chapter, where the walk over every row took some 40 steps a year).
    known = segments.paid_before(first + added)
    held = np.zeros(len(at))
    held_so_far = np.zeros(segments.segment[-1] + 1 if len(at) else 0)
    # ...and rows that paid for some of their new pages only: the others held, or all of
    # them held and the rise a re-scan (`new_pages_held`).
    grown = np.where(
        rows.started_before[at], np.maximum(rows.pages[at] - rows.pages_before[at], 0.0), 0.0
    )
    more = (rest > _EPS) | ((added > _EPS) & (added < grown - _EPS))
    # ...and rows whose rise is their new pages run, where the files say some were held
    # (`shown_held_by_files`).
    by_files = _shown_held_by_files(
        added, more=more, exported=rows.exported[at], pages=rows.pages[at]
    )
    read = np.flatnonzero(more | by_files)
    rank = rank_within(rows.chapter[at][read])
    # Each row's next one of its chapter's segment that holds more than new pages (-1:
    # none): what it reads as paid can tell held pages from run ones (`held_seen_later`).
    following = np.full(len(read), -1)
    told = read[more[read]]
    same = (rows.chapter[at][told][1:] == rows.chapter[at][told][:-1]) & (
        segments.segment[told][1:] == segments.segment[told][:-1]
    )
    nexts = np.full(len(told), -1)
    nexts[:-1][same] = told[1:][same]
    following[more[read]] = nexts

    def state(i: np.ndarray, paid: np.ndarray) -> dict[str, np.ndarray]:
        j = at[i]
        return {
            "paid": paid,
            "pages_before": rows.pages_before[j],
            "started_before": rows.started_before[j],
            "cleared": rows.cleared[j],
            "may_retry": rows.may_retry[j],
        }

    def fits(i: np.ndarray, *paid: np.ndarray) -> list[np.ndarray]:
        """For each of `paid`, whether rows `i`'s rests read as whole runs, their new
        pages run or held."""
        none = np.zeros(len(i))
        readings = _read_rests(state(i, none), [
            {"added": a, "rest": r, "paid": p}
            for p in paid for a, r in ((added[i], rest[i]), (none, rest[i] + added[i]))
        ])  # fmt: skip
        return [np.asarray(run.fits | held.fits, bool)
                for run, held in zip(readings[::2], readings[1::2], strict=True)]  # fmt: skip

    for k in range(rank.max() + 1 if len(rank) else 0):
        i = read[rank == k]
        j = at[i]
        chapter_state = state(i, known[i] + held_so_far[segments.segment[i]] + first[i])
        paid = chapter_state["paid"]
        alone = by_files[i]  # the new pages run are the whole rise: a reading that fits
        # Some new pages run, a re-scan, the others held ((c)), against the same number of
        # runs read with them all run (`held_seen_later`).
        some = _some_kept_held(paid, added=added[i], rest=rest[i], alone=alone)
        as_run, as_held, split = _read_rests(chapter_state, [
            {"added": added[i], "rest": rest[i]},
            {"added": np.zeros(len(i)), "rest": rest[i] + added[i]},
            {"added": added[i] - some, "rest": rest[i] + some},
        ])  # fmt: skip
        kept = _new_pages_held(added[i], fits_as_run=as_run.fits | alone, fits_as_held=as_held.fits)
        reading = _RestReading(
            *(np.where(kept, h, r) for h, r in zip(as_held, as_run, strict=True))
        )
        dropped = np.where(kept, added[i], 0.0)
        paid_after = paid + added[i] - dropped + reading.held
        paid_split = paid + added[i] - some + split.held
        nxt = following[rank == k]
        has_next = nxt >= 0
        to = np.maximum(nxt, 0)
        next_paid = known[to] + held_so_far[segments.segment[i]] + first[to]
        next_fits, next_fits_split = (has_next & f for f in fits(
            to, next_paid + paid_after - paid - added[i], next_paid + paid_split - paid - added[i]
        ))  # fmt: skip
        seen = _held_seen_later(
            np.where(kept, 0.0, some),
            fits_split=split.fits,
            exported=rows.exported[j],
            paid_after=paid_after,
            paid_split=paid_split,
            next_fits=next_fits,
            next_fits_split=next_fits_split,
        )
        reading = _RestReading(*(np.where(seen, s, r) for s, r in zip(split, reading, strict=True)))
        dropped = np.where(seen, some, dropped)
        # Pages kept held were not paid for: later rises read them as held, not paid.
        held_so_far[segments.segment[i]] -= dropped
        added[i] = added[i] - dropped
        pages[j, Slot.HELD_START], count[j, Slot.HELD_START] = reading.held, reading.held > _EPS
        pages[j, Slot.RESCAN_BEFORE] = reading.before_pages
        count[j, Slot.RESCAN_BEFORE] = reading.before_count
        pages[j, Slot.RESCAN_AFTER] = reading.after_pages
        count[j, Slot.RESCAN_AFTER] = reading.after_count
        held[i] = reading.held
        held_so_far[segments.segment[i]] += reading.held
    pages[at, Slot.ADDED_PAGES], count[at, Slot.ADDED_PAGES] = added, added > _EPS
    grown = first + added + held
    paid = np.zeros(len(rows.rise))
    paid[at] = np.where(segments.ends, reset, segments.paid_before(grown) + grown)
    paid = carried(paid, moves, rows.chapter)
    _one_run_by_flags(found, rows, per_page, count, pages)
    # A run already going at the first snapshot: its end is seen, its charge was not.
    going = rows.baseline & ~rows.deleted & is_true(found.rows["processing"])
    count[going, Slot.FIRST] = 1
    pages[going, Slot.FIRST] = rows.pages[going]
    return Charges(count, pages, paid, rows.rise, per_page)


def _paid_at_baseline(pages: np.ndarray, credits: np.ndarray, per_page: np.ndarray) -> np.ndarray:
    """At the baseline, what a chapter had spent paid for the pages it could (all of
    them when no price is known and it spent anything). (Reference: CTE `m1`, `reset`.)"""
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(
            np.isnan(per_page),
            pages * (credits > 0),
            np.minimum(pages, np.floor(credits / per_page + _EPS)),
        )


@dataclass(frozen=True)
class _Segments:
    """The rows that move what was paid (`at`), cut where it restarts: at a new chapter
    (from nothing), after the baseline (from what it had spent) and after a deletion
    (nothing); between restarts it grows by each row's first run, added pages and held
    pages started. (Reference: CTEs `m3` and `m`.)"""

    segment: np.ndarray  # each row's segment, numbered from 0 in row order
    starts: np.ndarray  # whether a row starts its segment
    start_value: np.ndarray  # what was paid at its segment's start
    ends: np.ndarray  # whether a row ends its segment (the baseline, a deletion)

    @classmethod
    def of(cls, rows: _Rows, at: np.ndarray, reset: np.ndarray) -> _Segments:
        chapter, new = rows.chapter[at], rows.new[at]
        ends = rows.baseline[at] | rows.deleted[at]
        chapter_first = np.ones(len(at), bool)
        chapter_first[1:] = chapter[1:] != chapter[:-1]
        after_reset = np.append(False, ends[:-1])
        starts = chapter_first | new | after_reset
        segment = np.cumsum(starts) - 1
        reset_before = np.append(0.0, reset[:-1])
        start_value = np.where(after_reset & ~chapter_first & ~new, reset_before, 0.0)
        return cls(segment, starts, start_value[starts][segment], ends)

    def paid_before(self, increments: np.ndarray) -> np.ndarray:
        """What was paid before each row, the segment's rows before it adding these."""
        grown = np.cumsum(increments) - increments
        offset: np.ndarray = self.start_value + grown - grown[self.starts][self.segment]
        return offset


def _one_run_by_flags(
    found: Transitions, rows: _Rows, per_page: np.ndarray, count: np.ndarray, pages: np.ndarray
) -> None:
    """Set the rows whose rise is read as one run, its kind by the flags: a novel's rise
    (a novel cannot be re-scanned), a rise without a price to read it by, and a sign of
    a run without a rise (a store whose rows carry no charges). (Reference: CTEs `slots`
    and `counted`, `guess` and `one_slot`.)"""
    frame = found.rows
    live = ~rows.baseline & ~rows.deleted
    novel = (rows.pages == 0) & found.novel()
    unpriced = live & (rows.rise > 0) & (np.isnan(per_page) | novel)
    failed_again = _failed_anew(
        new=rows.new,
        failed=is_true(frame["failed"]),
        failed_before=is_true(frame["prev_failed"]),
        reason_changed=_reason_changed(frame),
        processing_before=is_true(frame["prev_processing"]),
    )
    turned_on = ~rows.new & ~is_true(frame["prev_processing"]) & is_true(frame["processing"])
    started_now = rows.new & is_true(frame["started"])
    signed = live & (rows.rise == 0) & (turned_on | rows.cleared | started_now | failed_again)
    guess = unpriced | signed
    slot = np.select(
        [~rows.started_before | novel, rows.cleared, rows.pages > rows.pages_before],
        [Slot.FIRST, Slot.RESCAN_BEFORE, Slot.ADDED_PAGES],
        Slot.RESCAN_BEFORE,
    )
    count[guess] = 0
    pages[guess] = 0.0
    count[guess, slot[guess]] = 1
    grown = np.maximum(rows.pages - rows.pages_before, 0.0)
    pages[guess, slot[guess]] = np.where(slot == Slot.ADDED_PAGES, grown, rows.pages)[guess]


def _failed_anew(
    *,
    new: np.ndarray,
    failed: np.ndarray,
    failed_before: np.ndarray,
    reason_changed: np.ndarray,
    processing_before: np.ndarray,
) -> np.ndarray:
    """A failed chapter failed again for another reason, with no rise, is a sign of a
    run of its own only when nothing was running at the snapshot before: a run open
    there that ended failed (a stall, 2 h later) changes the reason itself, and read as
    a new run it restarted the chapter's lines (seed 83). (Reference: CTE `slots`,
    `guess`.)"""
    return np.asarray(~new & failed & failed_before & reason_changed & ~processing_before, bool)


def _known_part(
    units: np.ndarray, *, pages: np.ndarray, pages_before: np.ndarray, started_before: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A rise (in pages x languages) pays first for what is known without what was paid
    before: a first run, every page the chapter has; pages added to a chapter that ran,
    the new pages. Returns those two parts and the rest. (Reference: CTEs `m1`, `m2`,
    `m3`: `first`, `added`, `rest`.)"""
    # The first run pays for every page the chapter has.
    first = np.where(~started_before & (units > _EPS), np.minimum(units, pages), 0.0)
    # Pages added since the snapshot before run at once unless held.
    grown = np.where(started_before, np.maximum(pages - pages_before, 0.0), 0.0)
    added = np.minimum(units - first, grown)
    return first, added, units - first - added


class _RestReading(NamedTuple):
    """How the rest of a rise splits: held pages started, the re-scans before them
    (pages each, how many) and the re-scans after them; `fits`: whether a reading fits
    (else the rest is one run of its own)."""

    held: np.ndarray
    before_pages: np.ndarray
    before_count: np.ndarray
    after_pages: np.ndarray
    after_count: np.ndarray
    fits: np.ndarray


def _read_rests(
    state: dict[str, np.ndarray], readings: list[dict[str, np.ndarray]]
) -> list[_RestReading]:
    """`_read_rest` of the same rows (`state`) for each of `readings` (its `added`, `rest`
    and any of `state` in place of the rows'), read in one call: the walk reads each row
    several ways, and on a late step's few rows numpy costs by the call, not the row."""
    size = len(state["paid"])
    names = {*state, "added", "rest"}
    whole = _read_rest(**{
        name: np.concatenate([reading.get(name, state.get(name)) for reading in readings])
        for name in names
    })  # fmt: skip
    return [
        _RestReading(*(part[k * size : (k + 1) * size] for part in whole))
        for k in range(len(readings))
    ]


def _whole_multiple(value: np.ndarray, size: np.ndarray) -> np.ndarray:
    """Whether `value` is a whole number (at least one) of `size`."""
    with np.errstate(invalid="ignore", divide="ignore"):
        count = np.round(value / size)
        fits: np.ndarray = (size > _EPS) & (count >= 1) & (np.abs(value - count * size) < _EPS)
        return fits


def _read_rest(
    *,
    paid: np.ndarray,
    added: np.ndarray,
    rest: np.ndarray,
    pages_before: np.ndarray,
    started_before: np.ndarray,
    cleared: np.ndarray,
    may_retry: np.ndarray,
) -> _RestReading:
    """The rest of a rise is re-scans (each pays for every page that ran), held pages
    started, or both: the reading with the fewest runs wins, ties in the order below,
    except that all the held pages started win a tie with a re-scan unless the chapter
    had a failure to retry (`may_retry`); only a re-scan clears `failed`; a rest no
    reading fits is one run of its own. `paid`: the pages paid for up to and with the
    rise's first run. (Reference: `_readings`, `_best` and CTEs `walk`, `rest_split`,
    `rest_runs`.)"""
    held_before = np.maximum(pages_before - paid, 0.0) * started_before
    paid_after_added = paid + added
    # What is left is re-scans (of the pages paid before the new ones, or after), held
    # pages started, or both. The readings, each with how many runs it takes; the one
    # with the fewest runs wins (several re-scans between two snapshots are rare), ties
    # in this order. Held pages started cannot explain a cleared `failed` on their own.
    with np.errstate(invalid="ignore", divide="ignore"):
        readings = np.stack(
            [
                np.where(_whole_multiple(rest, paid), np.round(rest / paid), np.inf),
                np.where(
                    _whole_multiple(rest, paid_after_added),
                    np.round(rest / paid_after_added),
                    np.inf,
                ),
                np.where((rest > _EPS) & (rest <= held_before + _EPS) & ~cleared, 1.0, np.inf),
                np.where(
                    (held_before > _EPS)
                    & _whole_multiple(rest - held_before, paid_after_added + held_before),
                    1 + np.round((rest - held_before) / (paid_after_added + held_before)),
                    np.inf,
                ),
                np.where(
                    (held_before > _EPS) & _whole_multiple(rest - held_before, paid),
                    1 + np.round((rest - held_before) / paid),
                    np.inf,
                ),
                np.where(_some_held_after_a_rescan(rest, paid, held_before), 2.0, np.inf),
            ]
        )
    # Run counts are whole: half a run more only breaks a tie.
    retry = np.where(may_retry | (np.abs(rest - held_before) > _EPS), 0.0, 0.5)
    best = np.argmin(readings + np.stack([retry, retry, *np.zeros((4, len(rest)))]), axis=0)
    readable = np.isfinite(readings.min(axis=0)) & (rest > _EPS)
    rescan_before = readable & (best == 0)
    rescan_after = readable & (best == 1)
    held_only = readable & (best == 2)
    held_then_rescan = readable & (best == 3)
    rescan_then_held = readable & (best == 4)
    rescan_then_some = readable & (best == 5)
    odd = (rest > _EPS) & ~readable  # a rest no reading fits: one run of its own
    held = np.select(
        [held_only, held_then_rescan | rescan_then_held, rescan_then_some],
        [rest, held_before, rest - paid],
        0.0,
    )
    rescans_first = rescan_before | rescan_then_held | rescan_then_some
    after_size = paid_after_added + held
    with np.errstate(invalid="ignore", divide="ignore"):
        before_count = np.where(
            rescans_first,
            np.round(
                (rest - held * (rescan_then_held | rescan_then_some))
                / np.where(paid > _EPS, paid, 1)
            ),
            0,
        )
        after_count = np.select(
            [rescan_after, held_then_rescan],
            [np.round(rest / np.where(after_size > _EPS, after_size, 1)),
             np.round((rest - held) / np.where(after_size > _EPS, after_size, 1))],
            0,
        )  # fmt: skip
    return _RestReading(
        held=np.asarray(held, "float64"),
        before_pages=np.where(rescans_first, paid, 0.0),
        before_count=before_count.astype("int64"),
        after_pages=np.select([rescan_after | held_then_rescan, odd], [after_size, rest], 0.0),
        after_count=np.where(odd, 1, after_count).astype("int64"),
        fits=np.asarray(readable, bool),
    )


def _some_held_after_a_rescan(
    rest: np.ndarray, paid: np.ndarray, held_before: np.ndarray
) -> np.ndarray:
    """Whether the rest is one re-scan of the pages paid for and then some, not all, of
    the held pages started (whole pages). (Reference: `_readings`, the sixth.)"""
    some = rest - paid
    whole_pages = np.abs(some - np.round(some)) < _EPS
    fits: np.ndarray = (paid > _EPS) & (some > _EPS) & (some < held_before - _EPS) & whole_pages
    return fits


def _some_kept_held(
    paid: np.ndarray, *, added: np.ndarray, rest: np.ndarray, alone: np.ndarray
) -> np.ndarray:
    """How many new pages (0: none) were kept held if some ran, then one re-scan paid
    for the pages that had run and them, and the others were added held: the rest with
    those held is that re-scan, `rest + k = paid + added - k`. With no rest, only where
    the new pages run are the whole rise (`alone`, `shown_held_by_files`): a re-scan of
    3 pages and 3 new pages held pay for as much as 3 new pages run (seed 111).
    (Reference: CTE `walk`, `some_held`.)"""
    some = (paid + added - rest) / 2
    whole = (np.abs(some - np.round(some)) < _EPS) & (some > 1 - _EPS) & (some < added + _EPS)
    return np.where((added > _EPS) & ((rest > _EPS) | alone) & whole, np.round(some), 0.0)


def _shown_held_by_files(
    added: np.ndarray, *, more: np.ndarray, exported: np.ndarray, pages: np.ndarray
) -> np.ndarray:
    """A rise that is its new pages run, no more (not `more`: no rest, every new page
    paid), is walked too when the files count fewer pages than the chapter has: it may
    be a re-scan with some or all new pages held (seed 111: a re-scan of 3 pages and 3
    new pages held pay for as much as 3 new pages run). The files, known wherever such
    a row is walked, tell (`held_seen_later`, by the files alone: the next rise adds
    nothing they do not say). Its new pages run are a reading that fits: they are not
    read as held for want of a rest (that read seeds 4 and 82, pages held before the
    rise, as re-scans). (Reference: CTE `rest_rows`, `files_only`.)"""
    return np.asarray((added > _EPS) & ~more & (exported < pages - _EPS), bool)


def _held_seen_later(
    some: np.ndarray,
    *,
    fits_split: np.ndarray,
    exported: np.ndarray,
    paid_after: np.ndarray,
    paid_split: np.ndarray,
    next_fits: np.ndarray,
    next_fits_split: np.ndarray,
) -> np.ndarray:
    """Where a rise reads as well as (d) a re-scan of the pages paid, then every new
    page run, and as (c) some new pages run, a re-scan of those and the pages paid, the
    others (`some`) added held (docs/analysis.md, "Splitting a rise into runs": the same
    rows, as many runs), the store tells them apart later: (c) when a file the chapter's
    last run packaged counts the pages (c) leaves not held (`exported`), or when the
    chapter's next rise reads as whole runs only with them held (a later re-scan pays
    for the pages not held: `next_fits_split`, not `next_fits`). Otherwise (d), new pages
    run first. `paid_after`, `paid_split`: pages paid after the rise by (d) and by (c).
    (Reference: CTE `walk`, `held_later`.)"""
    by_files = (np.abs(exported - paid_split) < _EPS) & (np.abs(exported - paid_after) > _EPS)
    by_next_rise = next_fits_split & ~next_fits
    return np.asarray((some > _EPS) & fits_split & (by_files | by_next_rise), bool)


def _new_pages_held(
    added: np.ndarray, *, fits_as_run: np.ndarray, fits_as_held: np.ndarray
) -> np.ndarray:
    """Pages that appeared in an interval were kept held (sent with `hold`), not run,
    when the rise reads as whole runs only without them: a re-scan of 3 paid pages and 2
    new pages held pays for 3, which `3 = 2 added + 1` cannot explain. A rise smaller
    than the new pages (3 of 4 run, one held, in two calls) is read so too when a
    re-scan with all of them held fits (seed 33). Otherwise they ran. `fits_as_run`,
    `fits_as_held`: whether `read_rest` fits the rest (none: no fit) with the new pages
    run, and with them held (their pages in the rest). (Reference: CTE `walk`,
    `keep_held`.)"""
    return np.asarray((added > _EPS) & ~fits_as_run & fits_as_held, bool)

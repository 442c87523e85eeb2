"""Charges told apart: which runs one rise of `credits_spent` paid for.

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
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from toolkit.analysis.transitions import codes, flag, is_novel, number, rank_within

KINDS = ("first", "rescan", "added_pages", "held_start")
# The order of a rise's runs between two snapshots, as columns of `Split.pages`.
SLOTS = ("first", "rescan", "added_pages", "held_start", "rescan")
EPS = 1e-6


def learn_prices(rows: pd.DataFrame, *, n_languages: np.ndarray) -> dict[str | None, float]:
    """The price per page and target language, per project id; `None`: the workspace.

    Learned from first charges seen after the baseline (a chapter that had not run
    before, paying for its pages): the most common credits / (pages x languages). A
    project's own price needs two first charges: one alone may hide a second run started
    between the same two snapshots, so a project with one uses the workspace's price.
    """
    credits, before = number(rows["credits_spent"]), number(rows["prev_credits"])
    pages = number(rows["page_count"])
    first = (
        (rows["idx"].to_numpy() > 0)
        & ~flag(rows["deleted"])
        & ~flag(rows["prev_started"])
        & (before == 0)
        & (credits > 0)
        & (pages > 0)
    )
    if not first.any():
        # No first run seen since the baseline: what chapters that ran had spent by then.
        first = (rows["idx"].to_numpy() == 0) & flag(rows["started"]) & (credits > 0) & (pages > 0)
    if not first.any():
        return {}
    price = np.round(credits[first] / (pages[first] * n_languages[first]), 9)
    seen = pd.DataFrame({"project_id": rows["project_id"].to_numpy(object)[first], "price": price})
    workspace = _typical(seen.assign(project_id=""))[""]
    prices: dict[str | None, float] = {None: workspace}
    samples = seen["project_id"].value_counts().to_dict()
    for project, typical in _typical(seen).items():
        prices[str(project)] = typical if samples[project] >= 2 else workspace
    return prices


def _typical(seen: pd.DataFrame) -> dict[object, float]:
    """Per project id, the most common price, the lowest of equally common ones: a first
    charge that also paid for a re-run between the same two snapshots shows a multiple
    of it. (One count of every project and price, not a count per project.)"""
    counts = seen.groupby(["project_id", "price"]).size().rename("n").reset_index()
    counts = counts.sort_values(["project_id", "n", "price"], ascending=[True, False, True])
    best = counts.drop_duplicates("project_id")
    return dict(zip(best["project_id"], best["price"].astype(float), strict=True))


class Split:
    """Per transition row and slot (`SLOTS`): how many runs (`count`; several re-scans
    fit in one slot) and how many pages each of them paid for."""

    def __init__(self, n: int) -> None:
        self.count = np.zeros((n, len(SLOTS)), dtype="int64")
        self.pages = np.zeros((n, len(SLOTS)))
        # Pages paid for after the row (run at least once; held ones not yet).
        self.paid = np.zeros(n)


def split_charges(
    rows: pd.DataFrame, *, n_languages: np.ndarray, price: np.ndarray
) -> tuple[Split, np.ndarray]:
    """Split each row's rise into runs; also returns the rise itself (credits)."""
    chapter = rows["chapter_code"].to_numpy("int64")  # k-th chapter, k-th row of it
    credits, before = number(rows["credits_spent"]), number(rows["prev_credits"])
    new = flag(rows["is_new"])
    baseline = rows["idx"].to_numpy() == 0
    rise = np.where(baseline, 0.0, np.maximum(credits - np.where(new, 0.0, before), 0.0))
    pages = number(rows["page_count"])
    pages_before = np.where(new, 0.0, number(rows["prev_pages"]))
    started_before = ~new & flag(rows["prev_started"])
    cleared = ~new & flag(rows["prev_failed"]) & ~flag(rows["failed"])
    turned_on = ~new & ~flag(rows["prev_processing"]) & flag(rows["processing"])
    deleted = flag(rows["deleted"])
    novel = (pages == 0) & is_novel(rows)
    per_page = n_languages * price

    split = Split(len(rows))
    # Only a rise, a new chapter, a trashed one and the baseline change what was paid;
    # the rows between carry what the row before them left.
    moves = baseline | new | deleted | (rise > 0)
    at = np.flatnonzero(moves)  # in chapter order, then snapshot order
    with np.errstate(invalid="ignore", divide="ignore"):
        units = rise[at] / per_page[at]
        units = np.where(np.isnan(units), 0.0, units)  # no price: read by the flags below
        # The baseline: what was spent paid for the pages it could.
        at_start = np.where(
            np.isnan(per_page[at]),
            pages[at] * (credits[at] > 0),
            np.minimum(pages[at], np.floor(credits[at] / per_page[at] + EPS)),
        )
    # A first run and added pages pay for pages known without what was paid before;
    # what a rise holds beyond them (re-scans, held pages started) is read against it.
    first, added, rest = _known_part(
        units, pages=pages[at], pages_before=pages_before[at], started_before=started_before[at]
    )
    s, c = split.pages, split.count
    s[at, 0], c[at, 0] = first, first > EPS
    s[at, 2], c[at, 2] = added, added > EPS
    # Within a chapter, what was paid restarts at a new chapter (from nothing), after the
    # baseline (what it had spent) and after a deletion (nothing); between restarts it
    # grows by each row's first run, added pages and held pages started.
    chapter_at = chapter[at]
    reset = np.where(baseline[at], at_start, 0.0)
    ends_segment = baseline[at] | deleted[at]
    chapter_first = np.ones(len(at), bool)
    chapter_first[1:] = chapter_at[1:] != chapter_at[:-1]
    after_reset = np.append(False, ends_segment[:-1])
    starts = chapter_first | new[at] | after_reset
    segment = np.cumsum(starts) - 1
    reset_before = np.append(0.0, reset[:-1])
    start_value = np.where(after_reset & ~chapter_first & ~new[at], reset_before, 0.0)
    start_value = start_value[starts][segment]
    held = np.zeros(len(at))

    def paid_before(increments: np.ndarray) -> np.ndarray:
        grown = np.cumsum(increments) - increments
        offset: np.ndarray = start_value + grown - grown[starts][segment]
        return offset

    # Rows that hold more than that, walked in order: each chapter's k-th such row at
    # once (a few a chapter, where the walk over every row took some 40 steps a year).
    known = paid_before(first + added)
    held_so_far = np.zeros(segment[-1] + 1 if len(at) else 0)
    read = np.flatnonzero(rest > EPS)
    rank = rank_within(chapter_at[read])
    for k in range(rank.max() + 1 if len(rank) else 0):
        i = read[rank == k]
        before = known[i] + held_so_far[segment[i]]
        held[i] = _split_rows(
            split,
            at[i],
            paid=before,
            first=first[i],
            added=added[i],
            rest=rest[i],
            pages_before=pages_before[at[i]],
            started_before=started_before[at[i]],
            cleared=cleared[at[i]],
        )
        held_so_far[segment[i]] += held[i]
    after = paid_before(first + added + held) + first + added + held
    split.paid[at] = np.where(ends_segment, reset, after)
    split.paid = _carried(split.paid, moves, chapter)

    # A novel's rise is its one run (a novel cannot be re-scanned); a rise without a
    # price to read it by is one run; so is a sign of a run without a rise (a store
    # whose rows carry no charges): the kind then follows the flags.
    live = ~baseline & ~deleted
    unpriced = live & (rise > 0) & (np.isnan(per_page) | novel)
    reason, prev_reason = codes(rows["failure_reason"]), codes(rows["prev_reason"])
    failed_again = (
        ~new
        & flag(rows["failed"])
        & flag(rows["prev_failed"])
        & (reason >= 0)
        & (prev_reason >= 0)
        & (reason != prev_reason)
    )
    started_now = new & flag(rows["started"])
    signed = live & (rise == 0) & (turned_on | cleared | started_now | failed_again)
    guess = unpriced | signed
    slot = np.select([~started_before | novel, cleared, pages > pages_before], [0, 1, 2], 1)
    split.count[guess] = 0
    split.pages[guess] = 0.0
    split.count[guess, slot[guess]] = 1
    grown = np.maximum(pages - pages_before, 0.0)
    split.pages[guess, slot[guess]] = np.where(slot == 2, grown, pages)[guess]
    # A run already going at the first snapshot: its end is seen, its charge was not.
    going = baseline & ~deleted & flag(rows["processing"])
    split.count[going, 0] = 1
    split.pages[going, 0] = pages[going]
    return split, rise


def _carried(values: np.ndarray, set_at: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """`values` where `set_at`, elsewhere the value of the last row set before in the
    same group (0 when none); rows are in group order."""
    last = np.maximum.accumulate(np.where(set_at, np.arange(len(values)), -1))
    found = last >= 0
    same = found & (groups[np.maximum(last, 0)] == groups)
    carried: np.ndarray = np.where(same, values[np.maximum(last, 0)], 0.0)
    return carried


def _known_part(
    units: np.ndarray, *, pages: np.ndarray, pages_before: np.ndarray, started_before: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """What of each rise (in page units) pays for a first run and for added pages, and
    the rest."""
    # The first run pays for every page the chapter has.
    first = np.where(~started_before & (units > EPS), np.minimum(units, pages), 0.0)
    # Pages added since the snapshot before run at once unless held.
    grown = np.where(started_before, np.maximum(pages - pages_before, 0.0), 0.0)
    added = np.minimum(units - first, grown)
    return first, added, units - first - added


def _split_rows(
    split: Split,
    at: np.ndarray,
    *,
    paid: np.ndarray,
    first: np.ndarray,
    added: np.ndarray,
    rest: np.ndarray,
    pages_before: np.ndarray,
    started_before: np.ndarray,
    cleared: np.ndarray,
) -> np.ndarray:
    """Fill `split` for rows `at` (one per chapter) whose rise holds more than a first
    run and added pages (`rest`), with `paid` the pages paid before the first run;
    returns the held pages started."""
    paid = paid + first
    held_before = np.maximum(pages_before - paid, 0.0) * started_before

    # What is left is re-scans (of the pages paid before the new ones, or after), held
    # pages started, or both; only a re-scan clears `failed`.
    def whole(value: np.ndarray, size: np.ndarray) -> np.ndarray:
        with np.errstate(invalid="ignore", divide="ignore"):
            count = np.round(value / size)
            fits: np.ndarray = (size > EPS) & (count >= 1) & (np.abs(value - count * size) < EPS)
            return fits

    paid_after_added = paid + added
    # The readings of what is left, each with how many runs it takes; the one with the
    # fewest runs wins (several re-scans between two snapshots are rare), ties in this
    # order. Held pages started cannot explain a cleared `failed` on their own.
    with np.errstate(invalid="ignore", divide="ignore"):
        readings = np.stack(
            [
                np.where(whole(rest, paid), np.round(rest / paid), np.inf),
                np.where(whole(rest, paid_after_added), np.round(rest / paid_after_added), np.inf),
                np.where((rest > EPS) & (rest <= held_before + EPS) & ~cleared, 1.0, np.inf),
                np.where(
                    (held_before > EPS) & whole(rest - held_before, paid_after_added + held_before),
                    1 + np.round((rest - held_before) / (paid_after_added + held_before)),
                    np.inf,
                ),
                np.where(
                    (held_before > EPS) & whole(rest - held_before, paid),
                    1 + np.round((rest - held_before) / paid),
                    np.inf,
                ),
            ]
        )
    best = np.argmin(readings, axis=0)
    readable = np.isfinite(readings.min(axis=0)) & (rest > EPS)
    rescan_before = readable & (best == 0)
    rescan_after = readable & (best == 1)
    held_only = readable & (best == 2)
    held_then_rescan = readable & (best == 3)
    rescan_then_held = readable & (best == 4)
    odd = (rest > EPS) & ~readable
    held = np.select([held_only, held_then_rescan | rescan_then_held], [rest, held_before], 0.0)
    rescans_first = rescan_before | rescan_then_held

    s, c = split.pages, split.count
    s[at, 3], c[at, 3] = held, held > EPS
    with np.errstate(invalid="ignore", divide="ignore"):
        k_before = np.where(
            rescans_first,
            np.round((rest - held * rescan_then_held) / np.where(paid > EPS, paid, 1)),
            0,
        )
        after_size = paid_after_added + held
        k_after = np.select(
            [rescan_after, held_then_rescan],
            [np.round(rest / np.where(after_size > EPS, after_size, 1)),
             np.round((rest - held) / np.where(after_size > EPS, after_size, 1))],
            0,
        )  # fmt: skip
    s[at, 1] = np.where(rescans_first, paid, 0.0)
    s[at, 4] = np.select([rescan_after | held_then_rescan, odd], [after_size, rest], 0.0)
    c[at, 1] = k_before.astype("int64")
    c[at, 4] = np.where(odd, 1, k_after).astype("int64")
    return np.asarray(held, "float64")

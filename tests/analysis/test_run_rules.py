"""Each run rule on a few hand-made elements: the sentence of DESIGN.md ("What the
analysis counts") or docs/analysis.md it implements, arrays in, arrays out."""

from __future__ import annotations

import numpy as np
from numpy.testing import assert_array_equal

from toolkit.analysis import run_rules as rules
from toolkit.analysis._arrays import NO_TIME
from toolkit.analysis.charges import (
    _exported_pages,
    _failed_anew,
    _held_seen_later,
    _known_part,
    _may_retry,
    _new_pages_held,
    _read_rest,
    _rise_of,
    _shown_held_by_files,
    _some_kept_held,
)
from toolkit.analysis.run_codes import NULL, EndReason, EndSource, Kind, Outcome

T, F = True, False
NONE = np.zeros(0, bool)


def test_spend_is_the_rise_of_credits_new_chapters_count_from_zero_the_baseline_for_nothing():
    rise = _rise_of(
        np.array([30.0, 30.0, 30.0, 10.0]),
        np.array([10.0, 10.0, 10.0, 20.0]),
        new=np.array([F, T, F, F]),
        baseline=np.array([F, F, T, F]),
    )
    assert_array_equal(rise, [20.0, 30.0, 0.0, 0.0])  # never negative


def test_a_rise_is_split_by_pages_in_whole_credits_with_the_remainder_to_the_last_run():
    credits = rules.run_credits(
        np.array([3.0, 3.0, 2.0]),
        np.array([3.3, 3.3, 4.0]),
        row=np.array([0, 0, 1]),
        last=np.array([F, T, T]),
        rise=np.array([21.0, 8.0]),
        at_baseline=np.array([F, F, F]),
    )
    assert_array_equal(credits, [10.0, 11.0, 8.0])  # round(9.9) = 10, the rest 11


def test_a_run_going_at_the_baseline_costs_nothing_it_was_charged_before_the_history():
    credits = rules.run_credits(
        np.array([2.0]), np.array([4.0]), row=np.array([0]), last=np.array([T]),
        rise=np.array([0.0]), at_baseline=np.array([T]),
    )  # fmt: skip
    assert_array_equal(credits, [0.0])


def test_a_run_going_at_the_baseline_is_a_first_run_only_when_the_spend_paid_its_pages_once():
    kind = rules.kind_at_baseline(
        np.array([Kind.FIRST, Kind.FIRST, Kind.FIRST, Kind.RESCAN]),
        at_baseline=np.array([T, T, T, F]),
        novel=np.array([F, F, T, F]),
        spent=np.array([8.0, 16.0, 16.0, 16.0]),
        pages=np.full(4, 2.0),
        per_page=np.full(4, 4.0),
    )
    assert_array_equal(kind, [Kind.FIRST, NULL, Kind.FIRST, Kind.RESCAN])


def test_a_first_run_of_a_chapter_new_since_the_snapshot_before_starts_at_its_creation():
    created = np.array([100, 100, NO_TIME, 100])
    from_creation = rules.starts_at_creation(
        np.array([Kind.FIRST, Kind.RESCAN, Kind.FIRST, Kind.FIRST]),
        new=np.array([T, T, T, F]),
        created=created,
    )
    assert_array_equal(from_creation, [T, F, F, F])
    started = rules.start_time(
        from_creation,
        created=created,
        at_baseline=np.array([F, F, T, F]),
        snapshot_before=np.array([50, 50, 50, 50]),
    )
    # Else the snapshot before, the earliest moment; a run going at the baseline: unknown.
    assert_array_equal(started, [100, 50, NO_TIME, 50])


def test_runs_between_the_same_two_snapshots_ran_one_after_another():
    started = rules.ran_in_turn(np.array([50, 40, 60, 10, 5]), np.array([0, 1, 2, 0, 1]))
    assert_array_equal(started, [50, 50, 60, 10, 10])


def test_a_run_starts_no_earlier_than_the_event_that_ended_the_run_before_it():
    started = rules.after_previous_end(
        np.array([10, 10, 10, 10]),
        row=np.array([0, 0, 1, 1]),
        from_creation=np.array([F, F, F, F]),
        event_end=np.array([30, NO_TIME, 40, NO_TIME]),
    )
    assert_array_equal(started, [10, 30, 10, 40])


def test_a_run_ends_where_its_chapter_settles_or_is_trashed_or_another_run_starts():
    # Chapter 0: processing, still, settled. Chapter 1: processing, a new run. Chapter 2:
    # processing, trashed. Chapter 3: processing at the last snapshot.
    end, reason = rules.end_rows(
        processing=np.array([T, T, F, T, T, T, T, T]),
        deleted=np.array([F, F, F, F, F, F, T, F]),
        chapter=np.array([0, 0, 0, 1, 1, 2, 2, 3]),
        starts_runs=np.array([T, F, F, T, T, T, F, T]),
    )
    assert_array_equal(end, [2, 2, 2, 4, -1, 6, 6, -1])
    assert_array_equal(
        reason,
        [EndReason.SETTLED, EndReason.SETTLED, EndReason.SETTLED, EndReason.NEXT_RUN,
         EndReason.STILL_RUNNING, EndReason.TRASHED, EndReason.TRASHED,
         EndReason.STILL_RUNNING],
    )  # fmt: skip


def test_a_run_fails_at_the_first_snapshot_showing_failed_turn_true_or_its_reason_change():
    failed = rules.run_failed(
        np.array([T, T, T, T, F]),
        failed_at_end=np.array([T, T, T, F, T]),
        kind=np.array([Kind.ADDED_PAGES, Kind.ADDED_PAGES, Kind.RESCAN, Kind.FIRST, Kind.FIRST]),
        failed_before=np.array([F, T, T, F, F]),
        reason_changed=np.array([F, F, F, F, F]),
    )
    # Added pages on a chapter failed before, same reason: not this run's failure.
    assert_array_equal(failed, [T, F, T, F, F])


def test_a_stall_abandoned_by_the_service_is_stalled_and_running_means_processing_at_the_end():
    reasons = np.array(["Stalled: no progress for 2 h", "ocr error", None], object)
    assert_array_equal(rules.stalls(reasons), [T, F, F])
    outcome = rules.outcome(
        np.array([T, T, T, F, F]),
        failed=np.array([T, T, F, F, F]),
        stalled=np.array([T, F, F, F, F]),
        still_running=np.array([F, F, F, T, F]),
    )
    assert_array_equal(
        outcome, [Outcome.STALLED, Outcome.FAILED, Outcome.FINISHED, Outcome.RUNNING, NULL]
    )


def test_it_finishes_at_last_activity_of_the_snapshot_that_shows_it_settled():
    activity_ends = rules.activity_is_end(
        reviewed=np.array([F, T, F, F]),
        grew_unpaid=np.array([F, F, T, F]),
        activity=np.array([150, 150, 150, 90]),
        snapshot_before=np.full(4, 100),
        snapshot_at=np.full(4, 200),
    )
    # Unless a review or unpaid pages touched the chapter, or it lies outside the interval.
    assert_array_equal(activity_ends, [T, F, F, F])
    settled = np.array([T, T, T, F])
    finished = rules.finish_time(
        settled, activity_ends, activity=np.full(4, 150), snapshot_at=np.full(4, 200)
    )
    assert_array_equal(finished, [150, 200, 200, NO_TIME])
    assert_array_equal(
        rules.finish_source(settled, activity_ends),
        [EndSource.LAST_ACTIVITY, EndSource.SNAPSHOT, EndSource.SNAPSHOT, NULL],
    )


def test_an_end_event_is_looked_for_where_the_run_can_have_ended():
    open_at_row = np.array([F, T])
    low, high = rules.event_window(
        open_at_row,
        snapshot_before=np.array([100, 100]),
        snapshot_at=np.array([200, 200]),
        end_at=np.array([300, 300]),
    )
    assert_array_equal(low, [100, 200])
    assert_array_equal(high, [200, 300])
    skip = rules.events_to_skip(
        np.array([F, F, T]), ordinal=np.array([0, 1, 1]), open_before=np.array([T, F, T])
    )
    assert_array_equal(skip, [1, 1, 0])


def test_a_rescan_pays_again_for_pages_that_ran_its_whole_charge_is_rework():
    kinds = np.array([Kind.FIRST, Kind.RESCAN, Kind.ADDED_PAGES, Kind.HELD_START, NULL])
    assert_array_equal(rules.is_rework(kinds), [F, T, F, F, F])


def test_runs_are_sorted_by_start_unknown_last_then_chapter_then_number():
    order = rules.run_order(
        np.array([NO_TIME, 20, 10, 10]), np.array([0, 1, 2, 1]), np.array([0, 0, 0, 1])
    )
    assert_array_equal(order, [3, 2, 1, 0])


def test_a_rise_pays_first_for_a_first_run_then_for_pages_added_then_the_rest():
    first, added, rest = _known_part(
        np.array([5.0, 8.0, 6.0]),  # the rise, in pages x languages
        pages=np.array([5.0, 6.0, 4.0]),
        pages_before=np.array([0.0, 4.0, 4.0]),
        started_before=np.array([F, T, T]),
    )
    assert_array_equal(first, [5.0, 0.0, 0.0])
    assert_array_equal(added, [0.0, 2.0, 0.0])
    assert_array_equal(rest, [0.0, 6.0, 6.0])


def test_the_rest_of_a_rise_is_read_with_the_fewest_runs_and_only_a_rescan_clears_failed():
    # 4 pages paid; 2 added. Rests: a re-scan of all 6; of the 4 before; held pages (2 of
    # 6 held) started; the same with `failed` cleared: no reading fits, one run of its own.
    reading = _read_rest(
        paid=np.array([4.0, 4.0, 4.0, 4.0]),
        added=np.array([2.0, 2.0, 0.0, 0.0]),
        rest=np.array([6.0, 4.0, 2.0, 2.0]),
        pages_before=np.array([4.0, 4.0, 6.0, 6.0]),
        started_before=np.array([T, T, T, T]),
        cleared=np.array([F, F, F, T]),
        may_retry=np.array([F, F, F, T]),
    )
    assert_array_equal(reading.held, [0.0, 0.0, 2.0, 0.0])
    assert_array_equal(reading.before_pages, [0.0, 4.0, 0.0, 0.0])
    assert_array_equal(reading.before_count, [0, 1, 0, 0])
    assert_array_equal(reading.after_pages, [6.0, 0.0, 0.0, 2.0])
    assert_array_equal(reading.after_count, [1, 0, 0, 1])


def test_new_pages_were_held_when_the_rise_reads_as_whole_runs_only_without_them():
    # 3 pages paid, 2 new: a rise of 3 is a re-scan with the new pages held (2 added
    # would leave 1, no run); a rise of 5, 2 added and a re-scan of the 3 before.
    args = {"paid": np.array([3.0, 3.0]), "pages_before": np.array([3.0, 3.0]),
            "started_before": np.array([T, T]), "cleared": np.array([F, F]),
            "may_retry": np.array([F, F])}  # fmt: skip
    added = np.array([2.0, 2.0])
    as_run = _read_rest(added=added, rest=np.array([1.0, 3.0]), **args)
    as_held = _read_rest(added=np.zeros(2), rest=np.array([3.0, 5.0]), **args)
    assert_array_equal(as_run.fits, [F, T])
    assert_array_equal(as_held.fits, [T, F])
    held = _new_pages_held(added, fits_as_run=as_run.fits, fits_as_held=as_held.fits)
    assert_array_equal(held, [T, F])
    # No new pages: nothing to keep held, whatever fits.
    assert_array_equal(
        _new_pages_held(np.zeros(1), fits_as_run=np.array([F]), fits_as_held=np.array([T])), [F]
    )


def test_all_held_pages_started_win_a_tie_with_a_rescan_unless_a_failure_was_retried():
    # 2 pages paid: a rise of 2 is held pages started, or a re-scan of the 2 that ran.
    # All 2 held pages, nothing to retry: the held pages; a failure to retry: the
    # re-scan; 2 of 3 held pages: the re-scan (starting some of them is the rarer).
    reading = _read_rest(
        paid=np.array([2.0, 2.0, 2.0]),
        added=np.zeros(3),
        rest=np.array([2.0, 2.0, 2.0]),
        pages_before=np.array([4.0, 4.0, 5.0]),
        started_before=np.array([T, T, T]),
        cleared=np.array([F, F, F]),
        may_retry=np.array([F, T, F]),
    )
    assert_array_equal(reading.held, [2.0, 0.0, 0.0])
    assert_array_equal(reading.before_count, [0, 1, 1])


def test_a_rescan_retries_a_failure_unless_the_chapter_is_failed_and_processing():
    # Failed before: cleared now, or failed again and settled (a re-scan can fail at the
    # same place); failed and processing: something else runs (a re-scan clears it).
    retry = _may_retry(
        new=np.array([F, F, F, F, T]),
        failed_before=np.array([T, T, T, F, F]),
        failed=np.array([F, T, T, F, F]),
        processing=np.array([F, F, T, F, F]),
    )
    assert_array_equal(retry, [T, T, F, F, F])


def test_a_rescan_then_some_of_the_held_pages_is_two_runs():
    # 3 pages paid, 3 held: a rise of 5 is a re-scan of the 3 and 2 held pages started.
    reading = _read_rest(
        paid=np.array([3.0]),
        added=np.zeros(1),
        rest=np.array([5.0]),
        pages_before=np.array([6.0]),
        started_before=np.array([T]),
        cleared=np.array([F]),
        may_retry=np.array([T]),
    )
    assert_array_equal(reading.held, [2.0])
    assert_array_equal(reading.before_pages, [3.0])
    assert_array_equal(reading.before_count, [1])
    assert_array_equal(reading.after_count, [0])


def test_a_new_failure_reason_without_a_rise_is_a_run_only_when_none_was_running_before():
    # Failed, then failed for another reason with no charge: a run of its own (a store
    # without charges) unless a run was open at the snapshot before, whose stall (2 h
    # later) changed the reason (seed 83: read as a re-scan, its lines counted twice).
    found = _failed_anew(
        new=np.array([F, F, F, T]),
        failed=np.array([T, T, T, T]),
        failed_before=np.array([T, T, T, F]),
        reason_changed=np.array([T, T, F, F]),
        processing_before=np.array([F, T, F, F]),
    )
    assert_array_equal(found, [T, F, F, F])


def test_new_pages_run_a_rescan_and_new_pages_held_against_a_rescan_then_pages_run():
    # 3 pages paid, 4 new, a rise of 7 pages: (d) a re-scan of the 3, then the 4 run;
    # (c) 2 run, a re-scan of those 5, 2 added held. As many runs: the reading of the
    # rise alone is (d), 7 pages paid after it; (c) leaves 5 paid, 2 held.
    paid, added, rest = (
        np.array([3.0, 3.0, 3.0]),
        np.array([4.0, 4.0, 1.0]),
        np.array([3.0, 3.0, 3.0]),
    )
    some = _some_kept_held(paid, added=added, rest=rest, alone=np.array([F, F, F]))
    assert_array_equal(some, [2.0, 2.0, 0.0])  # 1 new page: no whole split
    args = {"paid": paid, "pages_before": paid, "started_before": np.array([T, T, T]),
            "cleared": np.array([F, F, F]), "may_retry": np.array([F, F, F])}  # fmt: skip
    whole = _read_rest(added=added, rest=rest, **args)
    split = _read_rest(added=added - some, rest=rest + some, **args)
    assert_array_equal(whole.before_count, [1, 1, 1])  # (d): a re-scan of the 3 first
    assert_array_equal(split.after_count, [1, 1, 0])  # (c): a re-scan of 5 after 2 ran
    assert_array_equal(split.after_pages[:2], [5.0, 5.0])


def test_a_rise_of_new_pages_run_alone_is_tried_as_a_rescan_with_them_held_by_its_files():
    # Seed 111: 3 paid, 3 new, a rise of 3 pages: the new pages run, or a re-scan of the
    # 3 with all 3 new ones held, tried only where the files count fewer pages than the
    # chapter has (6), and only on a rise that is its new pages alone; with a rest (a
    # rise of 4), no whole split.
    walked = _shown_held_by_files(
        np.array([3.0, 3.0, 3.0, 0.0]),
        more=np.array([F, F, T, F]),
        exported=np.array([3.0, 6.0, 3.0, 3.0]),
        pages=np.full(4, 6.0),
    )
    assert_array_equal(walked, [T, F, F, F])
    some = _some_kept_held(np.full(3, 3.0), added=np.full(3, 3.0),
                           rest=np.array([0.0, 0.0, 1.0]), alone=np.array([T, F, F]))  # fmt: skip
    assert_array_equal(some, [3.0, 0.0, 0.0])


def test_pages_held_seen_later_in_the_files_or_the_next_rise_tell_c_from_d():
    # Three rises read as above ((d) leaves 7 pages paid, (c) 5): the chapter's files
    # count 5 pages (c); the next rise, a re-scan of 5, reads only with 2 held (c); no
    # file, and the next rise reads either way: (d), new pages run first.
    seen = _held_seen_later(
        np.array([2.0, 2.0, 2.0, 2.0]),
        fits_split=np.array([T, T, T, F]),
        exported=np.array([5.0, np.nan, 7.0, 5.0]),
        paid_after=np.full(4, 7.0),
        paid_split=np.full(4, 5.0),
        next_fits=np.array([F, F, T, F]),
        next_fits_split=np.array([F, T, T, T]),
    )
    assert_array_equal(seen, [T, T, F, F])
    # No pages to hold: nothing to tell.
    assert_array_equal(
        _held_seen_later(np.zeros(1), fits_split=np.array([T]), exported=np.array([5.0]),
                        paid_after=np.array([7.0]), paid_split=np.array([5.0]),
                        next_fits=np.array([F]), next_fits_split=np.array([T])),
        [F],
    )  # fmt: skip


def test_files_count_the_pages_not_held_only_where_the_chapter_settled_not_failed():
    # A failed run packages nothing, so a failed chapter's newest files may predate
    # pages that ran; a running chapter's run has not packaged yet.
    found = _exported_pages(
        np.array([5.0, 5.0, 5.0, np.nan]),
        processing=np.array([F, T, F, F]),
        failed=np.array([F, F, T, F]),
    )
    assert_array_equal(found, [5.0, np.nan, np.nan, np.nan])

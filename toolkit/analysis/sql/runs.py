"""The runs as one DuckDB query: the readable definition of the run rules, which the
numpy path (`toolkit/analysis/run_rules.py`, `charges.py`) is checked against, and the
reference the history benchmark holds the run figures against (issue 11: each within
1.2x of the best single DuckDB query for the same figure). Each numpy rule names the CTE
here that says the same (docs/analysis.md, "How the run rules are defined and checked").

`analysis.runs` reads the transitions in one query and builds the runs with numpy.
This does all of it in DuckDB, over the same change logs, to the same result: the
learned price per page and language, each rise of `credits_spent` split into the runs
it paid for (the held pages carried from rise to rise in a recursive CTE), each run's
start, end and outcome, and the `chapter.finished` / `chapter.failed` event that ended
it. `tests/analysis/test_reference_runs.py` checks that it is the same figure as
`analysis.runs` on the awkward cases (held pages, re-scans and added pages inside one
interval, events, trash, novels uploaded again, gaps), so the comparison is like for
like. The figures on the runs (`REFERENCES`) are this query with their own last step.

Two tables come from Python, as the analysis reads them too: `snapshot_times` (`idx`,
`at_us`: microseconds since the epoch) and, when the store holds any, `terminal_events`
(`chapter_id`, `type`, `at_us`, `reason`, `ord`: the order the store holds them in).
(`toolkit.analysis.sql.engines` defines both as SQL over the store's Delta tables, for
engines that read the store without the toolkit.)

Past 400 lines on purpose: it is one query, its CTEs in the order a reader follows a
row; split, a reader would lose the thread from a rise to the run it paid for.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from toolkit.analysis.lines import LINES_KEYS, LINES_SQL
from toolkit.analysis.transitions import MOVING, transitions_ctes
from toolkit.frames.schema import TIME_DTYPE
from toolkit.store import SnapshotStore

__all__ = [
    "ASKED_WITH",
    "REFERENCES",
    "figure_frame",
    "figure_sql",
    "reference_runs",
    "runs_sql",
]

EPS = "1e-6"
# Microseconds past any time the store holds: "no end yet".
FAR = "9223372036854775807"


def _whole(value: str, size: str) -> str:
    """Whether `value` is a whole number (at least one) of `size`."""
    return (
        f"(({size}) > {EPS} AND round_even(({value}) / ({size}), 0) >= 1"
        f" AND abs(({value}) - round_even(({value}) / ({size}), 0) * ({size})) < {EPS})"
    )


def _readings(
    paid: str,
    held: str,
    *,
    rest: str = "rest",
    added: str = "added",
    prefix: str = "r",
    cleared: str = "cleared",
) -> str:
    """What is left of a rise after a first run and added pages (`rest`), read as runs:
    each reading with the runs it takes (null: it does not fit). `cleared`: the row's
    flag; `paid`: pages paid for before the rise's re-scans (the first run's
    included); `held`: pages the chapter held unpaid; `prefix` names the readings."""
    after = f"({paid} + {added})"
    r = prefix
    return f"""
        CASE WHEN {_whole(rest, paid)} THEN round_even(({rest}) / ({paid}), 0) END AS {r}0,
        CASE WHEN {_whole(rest, after)} THEN round_even(({rest}) / {after}, 0) END AS {r}1,
        CASE WHEN ({rest}) > {EPS} AND ({rest}) <= ({held}) + {EPS} AND NOT {cleared}
             THEN 1 END AS {r}2,
        CASE WHEN ({held}) > {EPS}
             AND {_whole(f"{rest} - ({held})", f"{after} + ({held})")}
             THEN 1 + round_even((({rest}) - ({held})) / ({after} + ({held})), 0) END AS {r}3,
        CASE WHEN ({held}) > {EPS} AND {_whole(f"{rest} - ({held})", paid)}
             THEN 1 + round_even((({rest}) - ({held})) / ({paid}), 0) END AS {r}4,
        CASE WHEN ({paid}) > {EPS} AND ({rest}) - ({paid}) > {EPS}
             AND ({rest}) - ({paid}) < ({held}) - {EPS}
             AND abs(({rest}) - ({paid}) - round_even(({rest}) - ({paid}), 0)) < {EPS}
             THEN 2 END AS {r}5"""


def _best(rest: str, r: str) -> str:
    """The reading with the fewest runs wins, ties in the order of the readings, except
    that all the held pages started (2) win a tie with a re-scan (0, 1) unless the
    chapter had a failure to retry (`may_retry`): half a run more breaks it; -1 no rest,
    6 none fits."""
    retry = f"CASE WHEN may_retry OR abs(({rest}) - held_before) > {EPS} THEN 0 ELSE 0.5 END"
    runs = [f"{r}0 + {retry}", f"{r}1 + {retry}", f"{r}2", f"{r}3", f"{r}4", f"{r}5"]
    least = f"least({', '.join(runs)})"
    cases = "".join(
        f"\n                WHEN {run} = {least} THEN {n}" for n, run in enumerate(runs)
    )
    return f"CASE WHEN ({rest}) <= {EPS} THEN -1{cases}\n                ELSE 6 END"


def _read(source: str) -> str:
    """The rows of `source` (with `paid`, `held_before`, `rest`, `added`, `cleared`,
    `may_retry`, `acc_before`, `exported`, `files_only` and the next walk row's `next_*`,
    null on a `files_only` row: the files alone tell its held pages) with their
    rest read (`best`), once with the new pages run and once with them kept held
    (`keep_held`: only the second fits), and once with some of them held (`held_later`,
    the store shows them held later); `added` and `rest` as read, and `dropped` says
    how many new pages were not paid for after all."""
    return f"""
        SELECT * REPLACE (added - dropped AS added, rest + dropped AS rest)
        FROM (SELECT *, CASE WHEN held_later THEN best_split ELSE best_whole END AS best,
                     CASE WHEN held_later THEN some_held ELSE dropped_whole END AS dropped
              FROM ({_held_later(_read_whole(source))}))"""


def _read_whole(source: str) -> str:
    """`source` with its rest read with all the new pages run or all held: `best_whole`,
    `dropped_whole` (Reference for `new_pages_held`)."""
    return f"""
        SELECT *, CASE WHEN keep_held THEN best_held ELSE best_run END AS best_whole,
               CASE WHEN keep_held THEN added ELSE 0 END AS dropped_whole
        FROM (SELECT *, added > {EPS} AND best_run IN (-1, 6) AND NOT files_only
                        AND best_held BETWEEN 0 AND 5 AS keep_held
              FROM (SELECT *, {_best("rest", "r")} AS best_run,
                           {_best("rest + added", "h")} AS best_held
                    FROM (SELECT *, {_readings("paid", "held_before")},
                                 {
        _readings("paid", "held_before", rest="rest + added", added="0", prefix="h")
    }
                          FROM ({source}))))"""


def _next_fits(paid: str, prefix: str) -> str:
    """Whether the next walk row's rest reads as whole runs (its new pages run or held)
    when the pages paid before it are `paid`."""
    held = (
        f"CASE WHEN next_started_before THEN greatest(next_pages_before - ({paid}), 0) ELSE 0 END"
    )
    run = _readings(paid, held, rest="next_rest", added="next_added", prefix=prefix,
                    cleared="next_cleared")  # fmt: skip
    kept = _readings(paid, held, rest="next_rest + next_added", added="0",
                     prefix=f"{prefix}h", cleared="next_cleared")  # fmt: skip
    fit = f"""coalesce(next_segment = segment AND (
                (next_rest > {EPS} AND coalesce({", ".join(f"{prefix}{n}" for n in range(6))})
                    IS NOT NULL)
                OR (next_rest + next_added > {EPS}
                    AND coalesce({", ".join(f"{prefix}h{n}" for n in range(6))}) IS NOT NULL)),
              false)"""
    return f"SELECT *, {fit} AS {prefix}_fits FROM (SELECT *, {run}, {kept} FROM ({{}}))"


def _held_later(source: str) -> str:
    """(c) some new pages run, a re-scan of them and the pages paid, the others held
    (`some_held`), where the whole reading says (d) a re-scan, then every new page run:
    (c) when a file the row's last run packaged counts the pages (c) leaves not held,
    or the next walk row reads as whole runs only with them held. (Reference for
    `_some_kept_held` and `_held_seen_later`.)"""
    half = "(paid + added - rest) / 2"
    some = f"""CASE WHEN added > {EPS} AND (rest > {EPS} OR files_only)
                     AND abs({half} - round_even({half}, 0)) < {EPS}
                     AND {half} > 1 - {EPS} AND {half} < added + {EPS}
                     AND NOT keep_held
                THEN round_even({half}, 0) ELSE 0 END"""
    split = _readings("paid", "held_before", rest="rest + some_held",
                      added="added - some_held", prefix="a")  # fmt: skip
    after = f"paid + added - dropped_whole + {_held_of('best_whole', 'rest + dropped_whole')}"
    after_split = f"paid + added - some_held + {_held_of('best_split', 'rest + some_held')}"
    nexts = _next_fits("next_known + acc_before + next_first + paid_after - paid - added", "n")
    nexts_split = _next_fits(
        "next_known + acc_before + next_first + paid_split - paid - added", "s"
    )
    return f"""
        SELECT *, some_held > {EPS} AND best_split BETWEEN 0 AND 5 AND (
                      coalesce(abs(exported - paid_split) < {EPS}
                               AND abs(exported - paid_after) > {EPS}, false)
                      OR (s_fits AND NOT n_fits)) AS held_later
        FROM ({
        nexts_split.format(
            nexts.format(f'''
            SELECT *, {after} AS paid_after, {after_split} AS paid_split
            FROM (SELECT *, {_best("rest + some_held", "a")} AS best_split
                  FROM (SELECT *, {split} FROM (SELECT *, {some} AS some_held
                                                FROM ({source}))))''')
        )
    })"""


def _held_of(best: str = "best", rest: str = "rest") -> str:
    """Held pages started by a reading (2: they alone; 3 and 4: with re-scans; 5: some
    of them after a re-scan)."""
    return f"""CASE {best} WHEN 2 THEN {rest} WHEN 3 THEN held_before WHEN 4 THEN held_before
                      WHEN 5 THEN ({rest}) - paid ELSE 0 END"""


_HELD = _held_of()


def runs_sql(*, events: bool) -> str:
    """The query; `events`: the `terminal_events` table is registered (and has rows)."""
    return _RUNS.format(
        transitions=transitions_ctes(),
        moving=MOVING,
        held=_HELD,
        eps=EPS,
        far=FAR,
        walk_first=_read(_WALK_FIRST),
        walk_next=_read(_WALK_NEXT),
        rest_read=_read(_REST),
        ended=_EVENTS if events else _NO_EVENTS,
        # With events the runs are read twice after it (`event_of`, `with_event`).
        ends_materialized="MATERIALIZED " if events else "",
    )


_WALK_FIRST = """
    SELECT *, known + first AS paid,
           CASE WHEN started_before THEN greatest(pages_before - known - first, 0)
                ELSE 0 END AS held_before
    FROM (SELECT *, 0::DOUBLE AS acc_before FROM walk_rows WHERE k = 0)"""
_WALK_NEXT = """
    SELECT *, known + acc_before + first AS paid,
           CASE WHEN started_before
                THEN greatest(pages_before - known - acc_before - first, 0)
                ELSE 0 END AS held_before
    FROM (SELECT x.*, CASE WHEN x.segment = w.segment THEN w.acc ELSE 0 END AS acc_before
          FROM walk_rows x JOIN walk w ON x.chapter_id = w.chapter_id AND x.k = w.k + 1)"""
_REST = """
    SELECT x.*, coalesce(w.acc_before, 0) AS acc_before,
           x.known + coalesce(w.acc_before, 0) + x.first AS paid,
           CASE WHEN x.started_before THEN greatest(x.pages_before
                - (x.known + coalesce(w.acc_before, 0) + x.first), 0)
                ELSE 0 END AS held_before
    FROM rest_rows x LEFT JOIN walk w USING (chapter_id, idx)"""

# The CTEs read more than once (and, for `row_runs` and `windows`, the first CTE below
# them that joins) are MATERIALIZED: newer DuckDB (2.0) chooses these by itself, with the
# same plans as without the word, but DuckDB 1.1 inlines a CTE at every read, so each
# read of `t`, `s` or `m` planned everything beneath it again (16,500 operators: 36 s
# for the awkward cases' runs, 1.2 s with them). Spark's steps drop the word.
_RUNS = """
WITH RECURSIVE {transitions},
t AS MATERIALIZED (
    -- One row per transition with nulls read as the analysis reads them.
    SELECT idx, log.chapter_id, project_id, p.project, p.model, title, position,
           coalesce(page_count, 0)::DOUBLE AS pages,
           coalesce(started, false) AS started,
           coalesce(processing, false) AS processing,
           coalesce(failed, false) AS failed,
           failure_reason,
           coalesce(credits_spent, 0)::DOUBLE AS credits,
           epoch_us(last_activity_at) AS activity,
           epoch_us(created_at) AS created,
           coalesce(deleted, false) AS deleted,
           coalesce(is_new, false) AS is_new,
           coalesce(prev_credits, 0)::DOUBLE AS prev_credits,
           coalesce(prev_pages, 0)::DOUBLE AS prev_pages,
           coalesce(prev_started, false) AS prev_started,
           coalesce(prev_processing, false) AS prev_processing,
           coalesce(prev_failed, false) AS prev_failed,
           prev_reason,
           coalesce(status = 'reviewed', false) AS reviewed,
           coalesce(prev_status = 'reviewed', false) AS prev_reviewed,
           coalesce(p.project_kind = 'novel', false) AS novel,
           greatest(coalesce(l.n_chapter_languages, p.n_languages, 0), 1)::DOUBLE AS languages,
           x.exported_pages
    FROM log LEFT JOIN by_project p USING (project_id)
             LEFT JOIN chapter_languages l USING (chapter_id)
             LEFT JOIN exported x USING (chapter_id, idx)
    WHERE {moving}
),
first_charges AS (
    -- The price is learned from first charges seen after the baseline...
    SELECT project_id, round(credits / (pages * languages), 9) AS price FROM t
    WHERE idx > 0 AND NOT deleted AND NOT prev_started AND prev_credits = 0
      AND credits > 0 AND pages > 0
),
samples AS (
    SELECT * FROM first_charges
    UNION ALL
    -- ...or, when there is none, from what chapters that ran had spent by then.
    SELECT project_id, round(credits / (pages * languages), 9) FROM t
    WHERE idx = 0 AND started AND credits > 0 AND pages > 0
      AND NOT EXISTS (SELECT 1 FROM first_charges)
),
price_counts AS MATERIALIZED (
    SELECT project_id, price, count(*) AS n FROM samples GROUP BY ALL
),
workspace_price AS (
    -- The most common price, the lowest of equally common ones.
    SELECT first(price ORDER BY n DESC, price) AS price
    FROM (SELECT price, sum(n) AS n FROM price_counts GROUP BY price)
),
project_price AS (
    -- A project's own price needs two first charges: one alone may hide a re-run.
    SELECT project_id, first(price ORDER BY n DESC, price) AS price
    FROM price_counts WHERE project_id IS NOT NULL GROUP BY project_id HAVING sum(n) >= 2
),
s AS MATERIALIZED (
    SELECT t.*,
           t.idx = 0 AS baseline,
           CASE WHEN t.idx = 0 THEN 0
                ELSE greatest(credits - CASE WHEN is_new THEN 0 ELSE prev_credits END, 0)
           END AS rise,
           CASE WHEN is_new THEN 0 ELSE prev_pages END AS pages_before,
           NOT is_new AND prev_started AS started_before,
           NOT is_new AND prev_failed AND NOT failed AS cleared,
           NOT is_new AND prev_failed AND NOT (failed AND processing) AS may_retry,
           NOT is_new AND NOT prev_processing AND processing AS turned_on,
           -- A settled chapter not failed: its files count the pages not held.
           CASE WHEN NOT processing AND NOT failed THEN exported_pages END AS exported,
           languages * coalesce(pp.price, (SELECT price FROM workspace_price)) AS per_page,
           ta.at_us AS at_us, tb.at_us AS before_us
    FROM t LEFT JOIN project_price pp USING (project_id)
           JOIN snapshot_times ta ON ta.idx = t.idx
           JOIN snapshot_times tb ON tb.idx = greatest(t.idx - 1, 0)
),
m0 AS (
    -- The rows that change what a chapter has paid for: the baseline, a new chapter, a
    -- deletion, a rise. A first run and added pages pay for pages known without what
    -- was paid before; the rest of a rise (re-scans, held pages) is read against it.
    SELECT chapter_id, idx, baseline, is_new, deleted, pages, pages_before,
           started_before, cleared, may_retry, credits, per_page, exported,
           CASE WHEN per_page IS NULL OR isnan(rise / per_page) THEN 0
                ELSE rise / per_page END AS units
    FROM s WHERE baseline OR is_new OR deleted OR rise > 0
),
m1 AS (
    SELECT *,
           CASE WHEN NOT started_before AND units > {eps} THEN least(units, pages) ELSE 0
           END AS first,
           CASE WHEN baseline THEN
                CASE WHEN per_page IS NULL THEN pages * (credits > 0)::INT
                     ELSE least(pages, floor(credits / per_page + {eps})) END
                ELSE 0 END AS reset,
           baseline OR deleted AS ends_segment
    FROM m0
),
m2 AS (
    SELECT *,
           least(units - first,
                 CASE WHEN started_before THEN greatest(pages - pages_before, 0) ELSE 0 END)
               AS added
    FROM m1
),
m3 AS (
    -- What was paid restarts at a new chapter (from nothing), after the baseline (what
    -- it had spent) and after a deletion (nothing): a segment of the chapter's rows.
    SELECT *, units - first - added AS rest,
           coalesce(lag(ends_segment) OVER paid, false) AS after_reset,
           coalesce(lag(reset) OVER paid, 0) AS reset_before,
           row_number() OVER paid = 1 AS chapter_first,
           sum(is_new::INT) OVER (paid ROWS UNBOUNDED PRECEDING)
             + coalesce(sum(ends_segment::INT) OVER (
                   paid ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS segment,
           coalesce(sum(first + added) OVER (
               paid ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS grown_before
    FROM m2 WINDOW paid AS (PARTITION BY chapter_id ORDER BY idx)
),
m AS MATERIALIZED (
    -- `known`: pages paid before the row by its segment's start and by the first runs
    -- and added pages since.
    SELECT *,
           first_value(CASE WHEN after_reset AND NOT chapter_first AND NOT is_new
                            THEN reset_before ELSE 0 END) OVER seg
             + grown_before - first_value(grown_before) OVER seg AS known
    FROM m3 WINDOW seg AS (PARTITION BY chapter_id, segment ORDER BY idx)
),
m_read AS (
    -- Rows with a rest, and rows that paid for some of their new pages only (`more`);
    -- and rows that are their new pages run, no more, whose files count fewer pages
    -- than the chapter has: a re-scan with new pages held, told by the files alone
    -- (`files_only`, seed 111).
    SELECT *, NOT more AND added > {eps} AND coalesce(exported < pages - {eps}, false)
                  AS files_only
    FROM (SELECT *, rest > {eps} OR (added > {eps} AND added < CASE WHEN started_before
                     THEN greatest(pages - pages_before, 0) ELSE 0 END - {eps}) AS more
          FROM m)
),
rest_rows AS MATERIALIZED (
    SELECT chapter_id, idx, segment, known, first, added, rest, cleared, may_retry,
           pages_before, started_before, exported, files_only,
           CASE WHEN started_before THEN greatest(pages_before - known - first, 0) ELSE 0
           END AS held_alone,
           -- The next row with more than new pages, which may tell held pages from run
           -- ones.
           lead(segment) OVER n AS next_segment, lead(known) OVER n AS next_known,
           lead(first) OVER n AS next_first, lead(added) OVER n AS next_added,
           lead(rest) OVER n AS next_rest, lead(pages_before) OVER n AS next_pages_before,
           lead(started_before) OVER n AS next_started_before,
           lead(cleared) OVER n AS next_cleared
    FROM m_read WHERE more
    WINDOW n AS (PARTITION BY chapter_id ORDER BY idx)
    UNION ALL BY NAME
    SELECT chapter_id, idx, segment, known, first, added, rest, cleared, may_retry,
           pages_before, started_before, exported, files_only,
           CASE WHEN started_before THEN greatest(pages_before - known - first, 0) ELSE 0
           END AS held_alone
    FROM m_read WHERE files_only
),
walk_rows AS MATERIALIZED (
    -- Held pages started by one rise change what later rises read as paid, and so do
    -- new pages found kept held: only chapters that held pages at a rise, or got new
    -- ones at a rise with more in it, need the walk, each chapter's k-th rise at once
    -- (otherwise what was paid is known without it).
    SELECT *, row_number() OVER (PARTITION BY chapter_id ORDER BY idx) - 1 AS k
    FROM rest_rows
    WHERE chapter_id IN (SELECT chapter_id FROM rest_rows
                         WHERE held_alone > {eps} OR added > {eps})
),
walk AS (
    SELECT chapter_id, idx, k, segment, acc_before, acc_before + {held} - dropped AS acc
    FROM ({walk_first})
    UNION ALL
    SELECT chapter_id, idx, k, segment, acc_before, acc_before + {held} - dropped AS acc
    FROM ({walk_next})
),
rest_split AS (
    SELECT *, {held} AS held FROM ({rest_read})
),
rest_runs AS (
    -- Pages and counts of the re-scans before new pages (1), held pages started (3),
    -- re-scans after them (4); a rest no reading fits is one run of its own.
    SELECT chapter_id, idx, held, added,
           CASE WHEN best IN (0, 4, 5) THEN paid ELSE 0 END AS p1,
           CASE WHEN best IN (0, 4, 5) THEN round_even((rest - CASE WHEN best IN (4, 5) THEN held
                ELSE 0 END) / CASE WHEN paid > {eps} THEN paid ELSE 1 END, 0)
                ELSE 0 END::BIGINT AS c1,
           CASE WHEN best IN (1, 3) THEN paid + added + held
                WHEN best = 6 THEN rest ELSE 0 END AS p4,
           CASE WHEN best = 1 THEN round_even(rest / CASE WHEN paid + added + held > {eps}
                    THEN paid + added + held ELSE 1 END, 0)
                WHEN best = 3 THEN round_even((rest - held) / CASE WHEN paid + added + held
                    > {eps} THEN paid + added + held ELSE 1 END, 0)
                WHEN best = 6 THEN 1 ELSE 0 END::BIGINT AS c4
    FROM rest_split
),
slots AS MATERIALIZED (
    -- Per row, the runs of each slot (first, re-scans, added pages, held pages,
    -- re-scans), in the order they ran between the two snapshots. A rise no price
    -- reads (or a novel's), and a sign of a run without a rise, are one run whose kind
    -- follows the flags; a run going at the first snapshot is a first run seen late.
    SELECT s.*,
           (NOT baseline AND NOT s.deleted) AND (
               (rise > 0 AND (s.per_page IS NULL OR (s.pages = 0 AND novel)))
               OR (rise = 0 AND (turned_on OR s.cleared OR (s.is_new AND started)
                   OR (NOT s.is_new AND failed AND prev_failed AND NOT prev_processing
                       AND failure_reason IS NOT NULL
                       AND prev_reason IS NOT NULL AND failure_reason <> prev_reason))))
               AS guess,
           baseline AND NOT s.deleted AND processing AS going,
           coalesce(m.first, 0) AS p0, coalesce(x.added, m.added, 0) AS p2,
           coalesce(x.held, 0) AS p3, coalesce(x.p1, 0) AS p1, coalesce(x.c1, 0) AS c1,
           coalesce(x.p4, 0) AS p4, coalesce(x.c4, 0) AS c4
    FROM s LEFT JOIN (SELECT chapter_id, idx, first, added FROM m) m USING (chapter_id, idx)
           LEFT JOIN rest_runs x USING (chapter_id, idx)
),
counted AS (
    SELECT *,
           CASE WHEN going OR guess THEN 0 ELSE (p0 > {eps})::BIGINT END AS n0,
           CASE WHEN going OR guess THEN 0 ELSE (p2 > {eps})::BIGINT END AS n2,
           CASE WHEN going OR guess THEN 0 ELSE (p3 > {eps})::BIGINT END AS n3,
           CASE WHEN going OR guess THEN 0 ELSE c1 END AS n1,
           CASE WHEN going OR guess THEN 0 ELSE c4 END AS n4,
           CASE WHEN going THEN 0
                WHEN guess THEN CASE WHEN NOT started_before OR (pages = 0 AND novel) THEN 0
                                     WHEN cleared THEN 1 WHEN pages > pages_before THEN 2
                                     ELSE 1 END
           END AS one_slot
    FROM slots
),
row_runs AS (
    SELECT *,
           CASE WHEN one_slot IS NOT NULL THEN 1 ELSE n0 + n1 + n2 + n3 + n4 END AS n_runs,
           CASE WHEN one_slot IS NOT NULL THEN
                [{{'slot': one_slot, 'n': 1, 'from': 0,
                   'pages': CASE WHEN one_slot = 2 THEN greatest(pages - pages_before, 0)
                                 ELSE pages END}}]
                ELSE [{{'slot': 0, 'n': n0, 'from': 0, 'pages': p0}},
                      {{'slot': 1, 'n': n1, 'from': n0, 'pages': p1}},
                      {{'slot': 2, 'n': n2, 'from': n0 + n1, 'pages': p2}},
                      {{'slot': 3, 'n': n3, 'from': n0 + n1 + n2, 'pages': p3}},
                      {{'slot': 4, 'n': n4, 'from': n0 + n1 + n2 + n3, 'pages': p4}}]
           END AS runs_of_row
    FROM counted
),
row_marks AS (
    -- The row that shows how the run open after a row ended: the row itself when it is
    -- not processing (or trashed), else the next row that is, or that starts a run.
    -- Also the runs of the chapter before the row (to number them) and its label, from
    -- its last row. (Over the few columns they need: a window carries what it reads.)
    SELECT chapter_id, idx,
           CASE WHEN NOT processing OR deleted THEN idx
                ELSE min(CASE WHEN stops THEN idx END) OVER (
                     marks ROWS BETWEEN 1 FOLLOWING AND UNBOUNDED FOLLOWING) END AS end_idx,
           coalesce(sum(n_runs) OVER (
               marks ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS runs_before,
           last_value(label) OVER (
               marks ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING) AS chapter
    FROM (SELECT chapter_id, idx, processing, deleted, n_runs,
                 NOT processing OR deleted OR n_runs > 0 AS stops,
                 coalesce(title, 'Chapter ' || position::VARCHAR) AS label
          FROM row_runs)
    -- Each window of the query has a name of its own: DuckDB 1.1 refuses a name twice.
    WINDOW marks AS (PARTITION BY chapter_id ORDER BY idx)
),
row_ends AS {ends_materialized}(
    -- What a run needs of the row where it ended rides along.
    SELECT r.*, k.end_idx, k.runs_before, k.chapter, e.end_of_row AS ended,
           list_sum([coalesce(round_even(y.pages * per_page, 0), 0) * y.n
                     FOR y IN runs_of_row]) AS spent
    FROM row_runs r JOIN row_marks k USING (chapter_id, idx)
    LEFT JOIN (SELECT chapter_id, idx,
                      {{'deleted': deleted, 'runs': n_runs > 0, 'failed': failed,
                        'reason': failure_reason, 'reviewed': reviewed AND NOT prev_reviewed,
                        'grew_unpaid': pages > prev_pages AND credits = prev_credits,
                        'activity': activity, 'at': at_us, 'before': before_us}}
                          AS end_of_row
               FROM row_runs) e
      ON e.chapter_id = r.chapter_id AND e.idx = k.end_idx
    WHERE r.n_runs > 0
),
each_run AS (
    SELECT * EXCLUDE (x, runs_of_row),
           x.from + unnest(range(x.n)) AS ordinal, x.slot AS slot, x.pages AS run_pages
    FROM (SELECT *, unnest(runs_of_row) AS x FROM row_ends)
),
started AS (
    -- Whole credits: each run's share by its pages, the rise's remainder to its last.
    -- A run going at the first snapshot was charged before it: a first run if what the
    -- chapter had spent pays for its pages once, else of a kind the store cannot tell.
    SELECT *,
           ordinal = n_runs - 1 AS last,
           CASE WHEN baseline THEN 0
                ELSE coalesce(round_even(run_pages * per_page, 0), 0)
                     + CASE WHEN ordinal = n_runs - 1 THEN rise - spent ELSE 0 END
           END AS run_credits,
           CASE WHEN unknown_kind THEN NULL WHEN slot = 4 THEN 1 ELSE slot END AS kind,
           slot = 0 AND NOT unknown_kind AND is_new AND created IS NOT NULL
               AS from_creation
    FROM (SELECT *,
                 baseline AND NOT novel
                     AND coalesce(credits > run_pages * per_page + 1e-6, false)
                     AS unknown_kind
          FROM each_run)
),
seen AS (
    SELECT *,
           last AND ended IS NOT NULL AND NOT ended.deleted
               AND (ended.at = at_us OR NOT ended.runs) AS settled,
           last AND ended IS NULL AS still_running
    FROM started
),
outcomes AS (
    SELECT *,
           settled AND ended.failed AND (kind IN (0, 1) OR NOT prev_failed
               OR ended.reason IS DISTINCT FROM prev_reason) AS run_failed,
           coalesce(ended.activity > ended.before AND ended.activity <= ended.at, false)
               AS inside
    FROM seen
),
windows AS (
    SELECT *,
           CASE WHEN run_failed THEN
                    CASE WHEN regexp_matches(ended.reason, '(?i)\\bstall') THEN 2 ELSE 1 END
                WHEN settled THEN 0
                WHEN still_running THEN 3 END AS outcome0,
           CASE WHEN settled THEN
                CASE WHEN ended.reviewed OR ended.grew_unpaid OR NOT inside THEN ended.at
                     ELSE ended.activity END END AS finished0,
           CASE WHEN settled THEN
                CASE WHEN ended.reviewed OR ended.grew_unpaid OR NOT inside THEN 2 ELSE 1 END
           END AS finished_source0,
           CASE WHEN run_failed THEN ended.reason END AS reason0,
           CASE WHEN from_creation THEN created WHEN baseline THEN NULL ELSE before_us END
               AS started0,
           -- Where the end may lie, for matching events: a run that ended before its
           -- row's snapshot, between it and the one before; the last run of a row still
           -- processing, between that snapshot and the one that showed how it ended.
           CASE WHEN last AND processing AND NOT deleted THEN at_us ELSE before_us END
               AS window_low,
           CASE WHEN last AND processing AND NOT deleted THEN coalesce(ended.at, {far})
                ELSE at_us END AS window_high,
           -- A run open at the snapshot before ended first: its event comes before those
           -- of the runs started after it.
           CASE WHEN last AND processing AND NOT deleted THEN 0
                ELSE ordinal + (prev_processing AND NOT is_new)::INT END AS skip
    FROM outcomes
),
{ended},
labelled AS MATERIALIZED (
    SELECT *, runs_before + ordinal + 1 AS number FROM matched
),
novel_place AS MATERIALIZED (
    SELECT chapter_id, arg_max_null(project_id, idx) AS project_id,
           arg_max_null(position, idx) AS position
    FROM t WHERE novel GROUP BY chapter_id
),
failed_last AS (
    -- Novel chapters whose last run failed, and when it ended.
    SELECT l.chapter_id, np.project_id, np.position, l.finished
    FROM (SELECT chapter_id,
                 arg_max_null(outcome, (coalesce(started_at, {far}), number)) AS outcome_n,
                 arg_max_null(finished, (coalesce(started_at, {far}), number)) AS finished
          FROM labelled WHERE chapter_id IN (SELECT chapter_id FROM novel_place)
          GROUP BY chapter_id) l
    JOIN novel_place np USING (chapter_id)
    WHERE l.outcome_n IN (1, 2)
),
retried AS (
    -- A novel chapter uploaded again at the position of one whose last run failed.
    SELECT DISTINCT x.chapter_id, x.number
    FROM labelled x JOIN novel_place np USING (chapter_id)
         JOIN failed_last f ON f.project_id = np.project_id AND f.position = np.position
                           AND f.chapter_id <> x.chapter_id
    WHERE x.kind = 0 AND (f.finished IS NULL OR f.finished <= x.started_at)
)
SELECT x.chapter_id || '/' || x.number::VARCHAR AS run_id,
       x.chapter_id, x.chapter, x.project_id, x.project,
       ['first', 'rescan', 'added_pages', 'held_start'][x.kind + 1] AS kind,
       round_even(x.run_pages, 0)::BIGINT AS pages, x.languages::BIGINT AS languages,
       coalesce(x.model, (SELECT name FROM default_model)) AS models,
       x.run_credits AS credits,
       CASE WHEN x.kind = 1 OR rt.number IS NOT NULL THEN x.run_credits ELSE 0 END
           AS rework,
       x.started_at,
       CASE WHEN x.from_creation THEN 'created' WHEN x.started_at IS NOT NULL
            THEN 'snapshot' END AS started_source,
       x.finished AS finished_at,
       ['event', 'last_activity', 'snapshot'][x.finished_source + 1] AS finished_source,
       ['finished', 'failed', 'stalled', 'running'][x.outcome + 1] AS outcome,
       x.reason AS failure_reason,
       x.idx AS seen_idx, x.at_us AS seen_at, x.created AS created_at
FROM labelled x LEFT JOIN retried rt USING (chapter_id, number)
ORDER BY x.started_at NULLS LAST, x.chapter_id, x.number
"""

# Without events no run's start moves after an end: the runs between two snapshots ran
# one after another, so each started no earlier than the first of them.
_NO_EVENTS = """matched AS (
    SELECT *, finished0 AS finished, finished_source0 AS finished_source,
           outcome0 AS outcome, reason0 AS reason,
           CASE WHEN ordinal = 0 THEN started0
                ELSE greatest(started0, CASE WHEN n0 = 1 AND is_new
                                             THEN created END) END AS started_at
    FROM windows
)"""

_EVENTS = """numbered_events AS MATERIALIZED (
    SELECT chapter_id, type, at_us, reason,
           row_number() OVER (PARTITION BY chapter_id ORDER BY at_us, ord) AS n
    FROM terminal_events
),
event_of AS (
    -- Each run's event: the chapter's events in its window, in order, one per run (the
    -- `skip` runs before it in the window take the ones before).
    SELECT w.chapter_id, w.idx, w.ordinal, e.type, e.at_us, e.reason
    FROM (SELECT w.chapter_id, w.idx, w.ordinal, w.window_high,
                 coalesce(b.n, 0) + w.skip + 1 AS wanted
          FROM windows w ASOF LEFT JOIN numbered_events b
            ON b.chapter_id = w.chapter_id AND w.window_low >= b.at_us) w
    JOIN numbered_events e
      ON e.chapter_id = w.chapter_id AND e.n = w.wanted AND e.at_us <= w.window_high
),
with_event AS (
    SELECT w.*, ev.type AS event_type, ev.at_us AS event_at,
           CASE WHEN ev.type = 'chapter.failed' THEN coalesce(ev.reason, w.reason0)
                WHEN ev.type IS NOT NULL THEN NULL ELSE w.reason0 END AS reason
    FROM windows w LEFT JOIN event_of ev USING (chapter_id, idx, ordinal)
),
matched AS (
    -- The run after an event started no earlier than it; runs between the same two
    -- snapshots ran one after another.
    SELECT * EXCLUDE (previous_end),
           max(CASE WHEN ordinal > 0 AND NOT from_creation
                    THEN greatest(started0, previous_end) ELSE started0 END) OVER (
               PARTITION BY chapter_id, idx ORDER BY ordinal ROWS UNBOUNDED PRECEDING)
               AS started_at
    FROM (SELECT * EXCLUDE (event_type, event_at),
                 coalesce(event_at, finished0) AS finished,
                 CASE WHEN event_type IS NOT NULL THEN 0 ELSE finished_source0 END
                     AS finished_source,
                 CASE WHEN event_type = 'chapter.failed' THEN
                          CASE WHEN coalesce(regexp_matches(reason, '(?i)\\bstall'), false)
                               THEN 2 ELSE 1 END
                      WHEN event_type IS NOT NULL THEN 0
                      ELSE outcome0 END AS outcome,
                 lag(event_at) OVER (PARTITION BY chapter_id, idx ORDER BY ordinal)
                     AS previous_end
          FROM with_event)
)"""


def figure_sql(figure: str, *, events: bool) -> str:
    """The query of a figure of `REFERENCES` ("runs": all the runs as `analysis.runs`
    gives them, in its order); `events`: the `terminal_events` table is registered."""
    return _with_last(runs_sql(events=events), REFERENCES[figure])


def _with_last(sql: str, last: str) -> str:
    """The runs' query with `last` (SQL over the view `runs`) as its last step."""
    if last.startswith(","):  # more CTEs, then the figure
        return f"WITH runs AS ({sql}){last}"
    if last:
        return f"WITH runs AS ({sql})\n{last}"
    return sql


def reference_runs(store: SnapshotStore, *, last: str = "") -> pd.DataFrame:
    """The runs as `analysis.runs` gives them (all of them, in its order), from one
    query through the toolkit's reader (`store.query_arrow`); `last`: SQL over the view
    `runs` for a figure on them instead (see `REFERENCES`)."""
    manifest = store.snapshots()
    times = pd.to_datetime(manifest["snapshot_at"], utc=True).astype(TIME_DTYPE)
    frames: dict[str, pa.Table] = {
        "snapshot_times": pa.table(
            {
                "idx": pa.array(np.arange(len(times)), pa.int64()),
                "at_us": pa.array(times.to_numpy("datetime64[us]").astype("int64")),
            }
        )
    }
    events = _terminal_events(store)
    if events is not None:
        frames["terminal_events"] = events
    sql = _with_last(runs_sql(events=events is not None), last)
    table = store.query_arrow(sql, frames=frames)
    return figure_frame(table)


def _terminal_events(store: SnapshotStore) -> pa.Table | None:
    events = store.history("events")
    kept = events[events["type"].isin(["chapter.finished", "chapter.failed"])]
    kept = kept[kept["chapter_id"].notna()]
    if kept.empty:
        return None

    def reason(data: object) -> str | None:
        parsed = json.loads(data) if isinstance(data, str) else {}
        value = parsed.get("failureReason") if isinstance(parsed, dict) else None
        return None if value is None else str(value)

    stamps = pd.to_datetime(kept["timestamp"], utc=True).astype(TIME_DTYPE)
    return pa.table(
        {
            "chapter_id": pa.array(kept["chapter_id"].astype(object).tolist(), pa.string()),
            "type": pa.array(kept["type"].astype(object).tolist(), pa.string()),
            "at_us": pa.array(stamps.to_numpy("datetime64[us]").astype("int64")),
            "reason": pa.array([reason(d) for d in kept["data"]], pa.string()),
            "ord": pa.array(np.arange(len(kept)), pa.int64()),
        }
    )


NOT_A_TIME = np.iinfo("int64").min
TIMES = (
    "started_at",
    "finished_at",
    "seen_at",
    "created_at",
    "reviewable_at",
    "uploaded_at",
    "period",
)


def figure_frame(table: pa.Table) -> pd.DataFrame:
    """The result with the toolkit's dtypes: texts as strings, counts as Int64, credits
    as Float64, microseconds as UTC times."""
    columns: dict[str, object] = {}
    for name in table.column_names:
        column = table.column(name).combine_chunks()
        if name in TIMES:
            # Null as the smallest int64, which is numpy's NaT.
            values = pc.fill_null(column.cast(pa.int64()), NOT_A_TIME).to_numpy()
            columns[name] = pd.Series(values.view("datetime64[us]")).dt.tz_localize("UTC")
        elif pa.types.is_string(column.type) or pa.types.is_large_string(column.type):
            columns[name] = pd.arrays.ArrowStringArray(column.cast(pa.large_string()))
        elif pa.types.is_floating(column.type):
            columns[name] = pd.array(column.to_numpy(zero_copy_only=False), dtype="Float64")
        else:
            columns[name] = column.to_pandas().astype("Int64")
    return pd.DataFrame(columns)


_LINES_CTES, _LINES_SUM = (
    LINES_SQL.format(key=LINES_KEYS["language_code"]).strip().removeprefix("WITH")
).rsplit("\nSELECT p.period", 1)

# How each figure is asked of the analysis, to match its reference (whose periods are
# days: `date_trunc('day', ...)` below).
ASKED_WITH: dict[str, dict[str, str]] = {
    "credit_spend": {"freq": "1D"},
    "throughput": {"freq": "1D"},
}

# Each run figure as its last step over the runs: the rows, columns and order of the
# analysis function's frame on a store (the time bounds left out, as the benchmark asks).
REFERENCES = {
    "runs": """
        SELECT run_id, chapter_id, chapter, project_id, project, kind, pages, languages,
               models, credits, rework, started_at, started_source, finished_at,
               finished_source, outcome, failure_reason
        FROM runs""",
    "cycle_times": """
        SELECT chapter_id, chapter, project_id, project, kind, started_at, finished_at,
               (finished_at - started_at) / 3.6e9 AS hours, run_id, started_source,
               finished_source
        FROM runs WHERE outcome = 'finished' AND finished_at IS NOT NULL
        ORDER BY finished_at, run_id""",
    "failures": """
        SELECT chapter_id, chapter, project_id, project, outcome AS kind,
               coalesce(finished_at, seen_at) AS seen_at, failure_reason, run_id,
               kind AS run_kind
        FROM runs WHERE outcome IN ('failed', 'stalled')
        ORDER BY coalesce(finished_at, seen_at), run_id""",
    "lead_times": """
        SELECT chapter_id, chapter, project_id, project, uploaded_at, reviewable_at,
               (reviewable_at - uploaded_at) / 3.6e9 AS hours, runs, failed_runs
        FROM (
            SELECT chapter_id,
                   first(chapter ORDER BY started_at NULLS LAST) FILTER (kind = 'first')
                       AS chapter,
                   first(project_id ORDER BY started_at NULLS LAST) FILTER (kind = 'first')
                       AS project_id,
                   first(project ORDER BY started_at NULLS LAST) FILTER (kind = 'first')
                       AS project,
                   first(coalesce(created_at, started_at) ORDER BY started_at NULLS LAST)
                       FILTER (kind = 'first') AS uploaded_at,
                   min(finished_at) FILTER (outcome = 'finished') AS reviewable_at,
                   list(struct_pack(started_at, outcome)) AS all_runs
            FROM runs GROUP BY chapter_id HAVING count(*) FILTER (kind = 'first') > 0
        ), LATERAL (
            SELECT count(*) AS runs,
                   count(*) FILTER (x.outcome IN ('failed', 'stalled')) AS failed_runs
            FROM (SELECT unnest(all_runs) AS x) WHERE x.started_at <= reviewable_at
        )
        WHERE reviewable_at IS NOT NULL
        ORDER BY reviewable_at, chapter_id""",
    "credit_spend": """
        SELECT epoch_us(date_trunc('day', make_timestamp(seen_at))) AS period, project_id,
               any_value(project) AS project, sum(credits) AS credits,
               sum(rework) AS rework_credits
        FROM runs GROUP BY ALL HAVING sum(credits) <> 0 OR sum(rework) <> 0
        ORDER BY period, project_id""",
    # The lines query of `analysis.throughput`, its re-scans taken from the runs.
    "throughput": """,
        resets AS (SELECT DISTINCT chapter_id, seen_idx AS idx FROM runs WHERE kind = 'rescan'),
        periods AS (
            SELECT idx, epoch_us(date_trunc('day', make_timestamp(at_us))) AS period
            FROM snapshot_times
        ),"""
    + _LINES_CTES
    + """,
        figure AS (SELECT p.period"""
    + _LINES_SUM
    + """)
        SELECT period, key AS language_code, lines FROM figure WHERE lines <> 0
        ORDER BY period, language_code""",
}

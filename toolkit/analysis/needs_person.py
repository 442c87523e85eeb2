"""Which chapters need a person, and why: the one rule that `stuck` (the trouble tables,
the watch, the Dashboard), the forecast and its burn-down and replays all read.

The reasons are the codes of the one reason vocabulary (`trouble.REASONS`, which says
them in words and gives the advice); this module only decides who qualifies.
"""

from __future__ import annotations

from typing import Final, cast

import numpy as np
import pandas as pd

from toolkit.analysis._arrays import category_codes, positions_in
from toolkit.analysis.observed import Observed, answer, flag
from toolkit.analysis.run_codes import Kind
from toolkit.analysis.run_table import RunTable
from toolkit.analysis.runs import charge_column, paid_pages, seen_times, transition_rows
from toolkit.frames.schema import TEXT_DTYPE

__all__ = [
    "ORDER",
    "is_novel",
    "needing_person",
    "needs_person",
    "pages_at_last_run",
    "project_kinds",
    "run_pages_logged",
]


# The reasons in the order a chapter's first one is chosen when only one is said (the
# forecast's `needs_action_reason`): what a person must do first comes first.
ORDER: Final = ("failed", "stalled", "no_pages", "not_started", "held_pages")


def needs_person(
    obs: Observed,
    *,
    as_of: pd.Timestamp,
    stall_after: pd.Timedelta,
    chapters: pd.DataFrame | None = None,
    first: bool = False,
) -> pd.DataFrame:
    """One row per chapter at the snapshot `as_of` and reason it waits for a person:
    `chapter_id, reason, held` (the pages held and never started; 0 for other reasons),
    indexed like the `chapters` rows it came from, in `ORDER` then the chapters' order.

    - `failed`: its last run failed and it is not running again;
    - `stalled`: running with no progress (`last_activity_at`) for `stall_after`;
    - `no_pages`: a staged chapter of pages with none yet;
    - `not_started`: a staged chapter with pages, or a staged novel, never started;
    - `held_pages`: a chapter that ran, is not running, and has more pages than its runs
      paid for (pages sent with hold, never started).

    Args:
        obs: The store's view.
        as_of: The snapshot asked about (one of the store's snapshot times).
        stall_after: How long without progress makes a running chapter stalled.
        chapters: The chapters at `as_of`, when the caller read them already.
        first: Only each chapter's first reason in `ORDER` (when one is said).

    Returns:
        The chapters that need a person, one row per reason.
    """
    if chapters is None:
        chapters = obs.at("chapters", as_of)
    ids = chapters["chapter_id"]
    pages = chapters["page_count"].fillna(0).astype("int64")
    # Only a chapter that ran and rests can hold pages; only those need what runs paid.
    rests = (flag(chapters["started"]) & ~flag(chapters["processing"]) & (pages > 0)).to_numpy()
    asked = pd.Index(ids[rests])  # in the ids' dtype: Arrow's texts are not made again
    ran = pages_at_last_run(obs, as_of, asked) if rests.any() else pd.Series(dtype="int64")
    at = positions_in(ids, ran.index)
    paid = pages.copy()  # what a chapter whose runs paid nothing known shows
    paid[at >= 0] = ran.to_numpy("int64")[at[at >= 0]]
    return needing_person(chapters, as_of=as_of, stall_after=stall_after,
                          kinds=project_kinds(obs), paid=paid, first=first)  # fmt: skip


def needing_person(
    chapters: pd.DataFrame,
    *,
    kinds: pd.Series,
    as_of: pd.Timestamp | None = None,
    stall_after: pd.Timedelta | None = None,
    paid: pd.Series | None = None,
    first: bool = False,
) -> pd.DataFrame:
    """The one rule of who needs a person, on `chapters` as they stand at `as_of` (a
    snapshot's, or the service's answer now: the Dashboard asks so): one row per chapter
    and reason, `chapter_id, reason, held`, indexed like `chapters`, in `ORDER`.

    Args:
        chapters: `chapter_id, project_id, page_count, failed, processing, started,
            last_activity_at` (a null flag counts as false).
        kinds: The project kind by project id (a staged novel is "not started").
        as_of: The moment the chapters stand at; with `stall_after`, what tells a stall.
        stall_after: How long without progress makes a running chapter stalled; None:
            no stall is told (the caller reads stalls elsewhere).
        paid: The pages each row's runs paid for, indexed like `chapters`; None: none
            held.
        first: Only each chapter's first reason in `ORDER` (when one is said).

    Returns:
        The chapters that need a person, one row per reason.
    """
    ids = chapters["chapter_id"].to_numpy(object)
    pages = chapters["page_count"].fillna(0).astype("int64").to_numpy()
    failed, started = flag(chapters["failed"]).to_numpy(), flag(chapters["started"]).to_numpy()
    processing = flag(chapters["processing"]).to_numpy()
    # A novel has no pages: staged, it is never started, not short of pages.
    novel = is_novel(chapters["project_id"], kinds)
    if as_of is None or stall_after is None:
        stalled = np.zeros(len(chapters), dtype=bool)
    else:  # A chapter never active has no quiet spell (a null time compares false).
        quiet = (as_of - chapters["last_activity_at"]).to_numpy()
        stalled = processing & (quiet >= stall_after.to_timedelta64())
    resting = started & ~processing & (pages > 0)
    ran = pages if paid is None else paid.to_numpy("int64")
    held = np.where(resting, np.maximum(pages - ran, 0), 0)
    found = {
        "failed": failed & ~processing,
        "stalled": stalled,
        "no_pages": ~started & (pages == 0) & ~novel,
        "not_started": ~started & ((pages > 0) | novel),
        "held_pages": held > 0,
    }
    parts = [
        pd.DataFrame(
            {
                "chapter_id": pd.array(ids[mask], dtype=TEXT_DTYPE),
                "reason": pd.array([reason] * int(mask.sum()), dtype=TEXT_DTYPE),
                "held": np.where(reason == "held_pages", held[mask], 0).astype("int64"),
            },
            index=chapters.index[mask],
        )
        for reason, mask in ((reason, found[reason]) for reason in ORDER)
    ]
    frame = pd.concat(parts)
    return frame[~frame["chapter_id"].duplicated()] if first else frame


def is_novel(project_ids: pd.Series, kinds: pd.Series) -> np.ndarray:
    """Whether each row's project (`kinds`: `project_kinds`) is a novel: looked up once
    per project, not per row (the replays of a page ask 100,000 chapters at each)."""
    codes, projects = pd.factorize(project_ids)
    novel = kinds.reindex(pd.Index(np.asarray(projects, object))).eq("novel").to_numpy(bool)
    return np.append(novel, False)[codes]  # code -1, no project: not a novel


def project_kinds(obs: Observed) -> pd.Series:
    """Each project's kind (`novel`, or one of pages) by project id."""
    projects = obs.latest_projects
    return projects.set_index(projects["project_id"].astype(object))["kind"].astype(object)


# Per chapter and change, up to the last snapshot: its page count at each change that
# showed it running or paying (a rise of `credits_spent`). Both are followed columns:
# only rows flagged `_changed` can show them, and the rows left out repeat the page
# count of the one before. A question at an earlier snapshot takes the last row by then.
_RUN_PAGES = """
SELECT chapter_id, snapshot_at, pages FROM (
    SELECT idx, chapter_id, snapshot_at, coalesce(page_count, 0) AS pages, processing,
           coalesce(credits_spent, 0) > coalesce(lag(credits_spent) OVER (
               PARTITION BY chapter_id ORDER BY idx), 0) AS paid
    FROM chapters_changes
    WHERE _changed IS NOT false AND snapshot_at <= '{until}'::TIMESTAMPTZ
)
WHERE coalesce(processing, false) OR paid
ORDER BY idx, chapter_id
"""


def run_pages_logged(obs: Observed, until: pd.Timestamp) -> pd.DataFrame:
    """`chapter_id, snapshot_at, pages`: each chapter's page count at every change up to
    `until` that showed it running or paying, in time order."""
    # Read once per view, up to its latest snapshot, and cut at each moment asked: a
    # row's page count and whether it paid look only at the rows before it, so the rows
    # up to a moment are the same read to it or to the end. `stuck`, the forecast at
    # each of the weekly page's period ends and its replays all ask it, and each read
    # is the whole log. Its callers only filter it.
    latest = obs.times[-1] if obs.times else until
    if "run_pages_logged" not in obs.memo:
        obs.memo["run_pages_logged"] = answer(obs, _RUN_PAGES.format(until=latest.isoformat()))
    logged = cast(pd.DataFrame, obs.memo["run_pages_logged"])
    if until >= latest:
        return logged
    return logged[(logged["snapshot_at"] <= until).to_numpy(bool)].reset_index(drop=True)


def pages_at_last_run(obs: Observed, as_of: pd.Timestamp, asked: pd.Index) -> pd.Series:
    """Pages each chapter (by id) has paid to run by `as_of`, at least of those `asked`
    for. At the latest snapshot, the pages the runs' charges paid for; at an earlier one,
    the pages of the runs other than re-scans seen by then (a first run seen after held
    pages were added counts them as run). A chapter with no run in the store (it ran
    before the first snapshot): its page count at the last change that showed it running
    or paying (`run_pages_logged`, read only when such a chapter is asked for)."""
    if asked.empty:
        return pd.Series(dtype="int64")
    if as_of == obs.times[-1]:
        from_runs = paid_pages(obs).dropna()
        pages = pd.Series(from_runs.to_numpy("int64"), index=from_runs.index.astype(object))
    else:
        pages = _paged_by(obs, as_of)
    if (positions_in(asked, pages.index) >= 0).all():  # in Arrow: pandas took 0.04 s here
        return pages
    last = run_pages_logged(obs, as_of).drop_duplicates("chapter_id", keep="last")
    logged_pages = pd.Series(
        last["pages"].to_numpy("int64"), index=last["chapter_id"].astype(object)
    )
    return pd.concat([logged_pages[~logged_pages.index.isin(pages.index)], pages])


def _paged_by(obs: Observed, as_of: pd.Timestamp) -> pd.Series:
    """The pages each chapter (by id) had paid for at the store's first snapshot, as the
    charges read its credits then (work before the store, a run going then included),
    and those of its runs other than re-scans seen after it and by `as_of`: counted by
    chapter code from the run stages, as the replays of a page ask at each of their
    snapshots (grouped by the runs frame's ids, 0.5 s a week at 100,000 chapters)."""
    table = obs.stage(RunTable)
    if not len(table.row):
        return pd.Series(dtype="int64")
    if "runs_paging" not in obs.memo:
        # Three columns of the stages: read whole they were 1.5 s of a page's 2 s here.
        rows = cast(pd.DataFrame, transition_rows(obs, ["chapter_id", "idx"]))
        ids = rows["chapter_id"]
        # The ids as Arrow texts, once: each snapshot's answer is looked up among them.
        codes, words = category_codes(ids), pd.Index(ids.cat.categories, dtype=TEXT_DTYPE)
        first = np.flatnonzero(rows["idx"].to_numpy("int64") == 0)
        before = np.zeros(len(words))
        before[codes[first]] = charge_column(obs, "paid")[first]
        # A run seen at the first snapshot was paid before it: in `before` already.
        kept = (table.kind != Kind.RESCAN) & (table.seen_idx > 0)
        obs.memo["runs_paging"] = (
            codes[table.row[kept]],
            words,
            seen_times(obs)[kept],
            np.round(table.pages[kept]).astype("int64"),
            np.round(before).astype("int64"),
            np.bincount(codes[first], minlength=len(words)) > 0,
        )
    chapter, words, seen_at, pages, before, at_first = cast(
        tuple[np.ndarray, pd.Index, np.ndarray, np.ndarray, np.ndarray, np.ndarray],
        obs.memo["runs_paging"],
    )
    seen = seen_at <= as_of.to_datetime64()
    known = at_first | (np.bincount(chapter[seen], minlength=len(words)) > 0)
    paid = before + np.bincount(chapter[seen], weights=pages[seen], minlength=len(words))
    return pd.Series(paid[known].astype("int64"), index=words[known])

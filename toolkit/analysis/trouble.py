"""What went wrong and what needs a person: failures, their rates, stalls, stuck work."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, cast

import numpy as np
import pandas as pd

from toolkit.analysis.calendar import sorted_by, within
from toolkit.analysis.needs_person import needs_person, project_kinds
from toolkit.analysis.observed import Observed, observe
from toolkit.analysis.run_codes import Outcome
from toolkit.analysis.run_table import RunTable
from toolkit.analysis.runs import all_runs, runs_kept
from toolkit.analysis.timing import RunsBy, check_by
from toolkit.analysis.workspaces import across
from toolkit.frames.schema import TEXT_DTYPE, TIME_DTYPE
from toolkit.timestamps import When

if TYPE_CHECKING:
    from toolkit.store import SnapshotStore

__all__ = [
    "REASONS",
    "STALL_AFTER",
    "advice",
    "failed_runs",
    "failure_rates",
    "failures",
    "reason_words",
    "stalled",
    "stuck",
]

# How long a running chapter may show no progress before it counts as stalled: the one
# default of `stalled`, `stuck`, the forecast, the watch and the Dashboard.
STALL_AFTER: Final = pd.Timedelta(minutes=90)


@dataclass(frozen=True)
class _Reason:
    """Why a chapter needs a person, in words, and what to do, per kind of chapter: a
    novel (text, no pages: it cannot be re-scanned) or one of pages (comics)."""

    words: str
    advice: str
    novel_words: str | None = None  # when a novel's differ
    novel_advice: str | None = None


# The one reason vocabulary: `stuck`'s `reason` codes, the forecast's counts, the watch's
# alerts and the Dashboard read their words and advice here (`reason_words`, `advice`).
REASONS: Final[dict[str, _Reason]] = {
    "stalled": _Reason(
        "running with no progress",
        "wait: the service abandons a run after 2 hours without progress; then re-scan it",
        novel_advice="wait: the service abandons a run after 2 hours without progress; "
        "then upload its text again as a new chapter",
    ),
    "failed": _Reason(
        "failed, waiting for a re-scan",
        "re-scan it to retry",
        novel_words="failed, waiting for its text to be uploaded again",
        novel_advice="upload its text again as a new chapter (a novel cannot be re-scanned)",
    ),
    "held_pages": _Reason("held pages never started", "start its held pages or remove them"),
    "no_pages": _Reason("staged with no pages", "add its pages, then start it"),
    "not_started": _Reason("staged, never started", "start it"),
}


def reason_words(reason: str, kind: str | None = None) -> str:
    """A reason code of `stuck` in words, for a chapter of project `kind` ("novel", or
    one of pages): `failed` -> "failed, waiting for a re-scan"."""
    entry = REASONS[reason]
    return entry.novel_words if kind == "novel" and entry.novel_words else entry.words


def advice(reason: str, kind: str | None = None) -> str:
    """What a person does about `reason` for a chapter of project `kind`; a novel is
    never told to re-scan."""
    entry = REASONS[reason]
    return entry.novel_advice if kind == "novel" and entry.novel_advice else entry.advice


# A failure reason's own closing advice ("..., so re-scan the chapter to retry."): the
# reasons table gives the advice, per kind, so it is not said twice or contradicted.
_SERVICE_ADVICE = re.compile(r"[,;]\s*(so\s+)?[^,;]*\b(re-scan|retr)\w*[^,;]*\.?\s*$")


def _without_advice(reason: str) -> str:
    """A service's failure reason without its own retry advice: `The run failed ...: the
    model returned no usable text, so re-scan the chapter to retry.` -> `... text.`"""
    stripped = _SERVICE_ADVICE.sub("", reason).rstrip()
    return stripped if stripped.endswith(".") else stripped + "."


@across
def failures(
    store: SnapshotStore | Observed,
    *,
    since: When | None = None,
    until: When | None = None,
    tz: str | None = None,
) -> pd.DataFrame:
    """One row per failed run, however many snapshots show it: `chapter_id, chapter,
    project_id, project, kind` (`failed`, or `stalled`: abandoned by the service after
    it stopped progressing), `seen_at` (its `chapter.failed` event, else the chapter's
    `last_activity_at` when a snapshot first showed it failed), `failure_reason`,
    `run_id`, `run_kind` (the run's kind). `since`/`until` bound `seen_at`.

    Args:
        store: A `SnapshotStore` or its `Observed` view; or several workspaces' stores at
            once (a mapping of label to store, or a list), and then the answer has a
            `workspace` column first, or is one dict per label where the call answers with a
            dict (`toolkit.analysis.workspaces`).
        since: The window's start, included, on `seen_at` (a naive time is read in
            `tz`); by default the beginning.
        until: The window's end, excluded; by default no end.
        tz: The time zone a naive `since` or `until` is read in; UTC by default.

    Returns:
        The failed and stalled runs.
    """
    bad = failed_runs(observe(store))
    frame = pd.DataFrame(
        {
            "chapter_id": bad["chapter_id"],
            "chapter": bad["chapter"],
            "project_id": bad["project_id"],
            "project": bad["project"],
            "kind": bad["outcome"],
            "seen_at": bad["finished_at"].fillna(bad["seen_at"]),
            "failure_reason": bad["failure_reason"],
            "run_id": bad["run_id"],
            "run_kind": bad["kind"],
        }
    )
    frame = sorted_by(frame, ["seen_at", "run_id"])
    return within(frame, "seen_at", since=since, until=until, tz=tz)


def failed_runs(obs: Observed) -> pd.DataFrame:
    """The runs that failed or stalled, with every column of the runs frame: made once
    per view (a page asks its failures some eight times); callers only read it."""
    if "failed_runs" not in obs.memo:
        table = obs.stage(RunTable)
        obs.memo["failed_runs"] = runs_kept(
            obs, np.isin(table.outcome, [Outcome.FAILED, Outcome.STALLED])
        )
    return cast(pd.DataFrame, obs.memo["failed_runs"])


@across
def failure_rates(
    store: SnapshotStore | Observed,
    by: RunsBy | None = "project_id",
    *,
    since: When | None = None,
    until: When | None = None,
    tz: str | None = None,
) -> pd.DataFrame:
    """Failed and stalled runs over the runs that ended, per `by` (None: the whole
    workspace): `<by>[, project], runs, finished, failed, stalled, failure_rate,
    stalled_rate`. `runs` counts runs started in the window whose outcome is known (a
    run still going, or one the store cannot tell, is left out of both counts).

    Args:
        store: A `SnapshotStore` or its `Observed` view; or several workspaces' stores at
            once (a mapping of label to store, or a list), and then the answer has a
            `workspace` column first, or is one dict per label where the call answers with a
            dict (`toolkit.analysis.workspaces`).
        by: Group by "project_id" (its name in `project`), "model" or "kind" (of run);
            None for one row for the whole workspace.
        since: The window's start, included, on the runs' start (a naive time is read in
            `tz`); by default the beginning.
        until: The window's end, excluded; by default no end.
        tz: The time zone a naive `since` or `until` is read in; UTC by default.

    Returns:
        The counts and rates, one row per group.

    Raises:
        ValueError: `by` is not one this function takes.
    """
    runs = all_runs(observe(store))
    runs = within(runs, "started_at", since=since, until=until, tz=tz)
    ended = runs[runs["outcome"].isin(["finished", "failed", "stalled"]).fillna(False)]
    column = check_by(by) if by is not None else None
    keys = ended[column] if column else pd.Series("all", index=ended.index)
    table = pd.crosstab(keys, ended["outcome"])
    table = table.reindex(columns=["finished", "failed", "stalled"], fill_value=0)
    frame = table.rename_axis(by or "scope").reset_index()
    frame.columns.name = None
    frame.insert(1, "runs", frame[["finished", "failed", "stalled"]].sum(axis=1))
    with np.errstate(invalid="ignore", divide="ignore"):
        frame["failure_rate"] = ((frame["failed"] + frame["stalled"]) / frame["runs"]).astype(
            "Float64"
        )
        frame["stalled_rate"] = (frame["stalled"] / frame["runs"]).astype("Float64")
    for count in ("runs", "finished", "failed", "stalled"):
        frame[count] = frame[count].astype("Int64")
    key = by or "scope"
    frame[key] = frame[key].astype(TEXT_DTYPE)
    if by == "project_id":
        names = runs.drop_duplicates("project_id").set_index("project_id")["project"]
        frame.insert(1, "project", frame["project_id"].map(names).astype(TEXT_DTYPE))
    return frame


@across
def stalled(
    store: SnapshotStore | Observed,
    threshold: str | pd.Timedelta = STALL_AFTER,
    *,
    since: When | None = None,
    until: When | None = None,
    tz: str | None = None,
) -> pd.DataFrame:
    """Chapters processing at the latest snapshot with no progress for at least
    `threshold`, measured from their last progress (`last_activity_at`, which the
    service moves at every step of a run) to the latest snapshot: `chapter_id, chapter,
    project_id, project, position, last_progress_at, stalled_hours`. `since`/`until`
    bound `last_progress_at`.

    Args:
        store: A `SnapshotStore` or its `Observed` view; or several workspaces' stores at
            once (a mapping of label to store, or a list), and then the answer has a
            `workspace` column first, or is one dict per label where the call answers with a
            dict (`toolkit.analysis.workspaces`).
        threshold: How long without progress makes a running chapter stalled (a pandas
            Timedelta or its text, e.g. "90min").
        since: The window's start, included, on `last_progress_at` (a naive time is read
            in `tz`); by default the beginning.
        until: The window's end, excluded; by default no end.
        tz: The time zone a naive `since` or `until` is read in; UTC by default.

    Returns:
        The stalled chapters.
    """
    obs = observe(store)
    limit = pd.Timedelta(threshold)
    latest = obs.latest_chapters
    running = latest[latest["processing"].fillna(False).astype(bool)]
    now = obs.times[-1] if obs.times else pd.Timestamp(0, tz="UTC")
    progress = running["last_activity_at"].astype(TIME_DTYPE)
    frame = pd.DataFrame(
        {
            "chapter_id": running["chapter_id"].astype(TEXT_DTYPE),
            "chapter": _labels(running),
            "project_id": running["project_id"].astype(TEXT_DTYPE),
            "project": running["project_id"].map(obs.project_names).astype(TEXT_DTYPE),
            "position": running["position"].astype("Int64"),
            "last_progress_at": progress,
            "stalled_hours": ((now - progress).dt.total_seconds() / 3600).astype("Float64"),
        }
    )
    frame = frame[(now - frame["last_progress_at"]) >= limit]
    frame = frame.sort_values(["stalled_hours", "chapter_id"], ascending=[False, True])
    frame = frame.reset_index(drop=True)
    return within(frame, "last_progress_at", since=since, until=until, tz=tz)


@across
def stuck(
    store: SnapshotStore | Observed,
    *,
    threshold: str | pd.Timedelta = STALL_AFTER,
    since: When | None = None,
    until: When | None = None,
    tz: str | None = None,
) -> pd.DataFrame:
    """What needs a person now, one row per chapter and reason: `chapter_id, chapter,
    project_id, project, reason, detail, since, advice`. Reasons (`REASONS`, in words by
    `reason_words`): `stalled` (running without progress for `threshold`), `failed` (its
    last run failed and it waits for a re-scan, or a novel for its text to be uploaded
    again), `held_pages` (pages sent with hold that never started), `no_pages` (a staged
    chapter of pages with none yet), `not_started` (a staged chapter with pages, or a
    staged novel, never started), decided by the one rule the forecast reads too
    (`needs_person`). `detail` says what was seen (a failure's reason without the
    service's own retry advice); `advice` what to do, for the chapter's kind (a novel is
    never told to re-scan). `since`/`until` bound `since`.

    Args:
        store: A `SnapshotStore` or its `Observed` view; or several workspaces' stores at
            once (a mapping of label to store, or a list), and then the answer has a
            `workspace` column first, or is one dict per label where the call answers with a
            dict (`toolkit.analysis.workspaces`).
        threshold: How long without progress makes a running chapter stalled (a pandas
            Timedelta or its text, e.g. "90min").
        since: The window's start, included, on the `since` column (a naive time is read
            in `tz`); by default the beginning.
        until: The window's end, excluded; by default no end.
        tz: The time zone a naive `since` or `until` is read in; UTC by default.

    Returns:
        One row per chapter and reason.
    """
    obs = observe(store)
    latest = obs.latest_chapters
    names = obs.project_names
    rows: list[pd.DataFrame] = []

    kinds = project_kinds(obs)

    def add(part: pd.DataFrame, reason: str, detail: pd.Series, when: pd.Series) -> None:
        kind = part["project_id"].map(kinds)
        rows.append(
            pd.DataFrame(
                {
                    "chapter_id": part["chapter_id"].astype(TEXT_DTYPE),
                    "chapter": _labels(part),
                    "project_id": part["project_id"].astype(TEXT_DTYPE),
                    "project": part["project_id"].map(names).astype(TEXT_DTYPE),
                    "reason": reason,
                    "detail": detail.astype(TEXT_DTYPE),
                    "since": when.astype(TIME_DTYPE),
                    "advice": pd.array([advice(reason, k) for k in kind], dtype=TEXT_DTYPE),
                }
            )
        )

    now = obs.times[-1] if obs.times else pd.Timestamp(0, tz="UTC")
    found = needs_person(obs, as_of=now, stall_after=pd.Timedelta(threshold), chapters=latest)

    def of(reason: str) -> pd.DataFrame:
        return latest.loc[found.index[found["reason"] == reason]]

    part = of("stalled")
    quiet = (now - part["last_activity_at"].astype(TIME_DTYPE)).dt.total_seconds()
    add(part, "stalled", "running, no progress for " + (quiet / 3600).round(1).astype(str) + " h",
        part["last_activity_at"])  # fmt: skip
    failed = of("failed")
    reasons = failed["failure_reason"].fillna("The run failed.").astype(str)
    told = reasons.map({reason: _without_advice(reason) for reason in reasons.unique()})
    add(failed, "failed", told, failed["last_activity_at"])
    held = of("held_pages")
    unpaid = pd.Series(
        found.loc[found["reason"] == "held_pages", "held"].to_numpy(), index=held.index
    )
    add(held, "held_pages", _pages(unpaid) + " held, never started", held["last_activity_at"])
    empty = of("no_pages")
    add(empty, "no_pages", pd.Series("staged, no pages yet", index=empty.index),
        empty["created_at"])  # fmt: skip
    waiting = of("not_started")
    novel = waiting["project_id"].map(kinds) == "novel"
    what = np.where(novel, "its text", _pages(waiting["page_count"].fillna(0).astype("int64")))
    staged = pd.Series([f"{w} staged, never started" for w in what], index=waiting.index)
    add(waiting, "not_started", staged, waiting["last_activity_at"])
    frame = pd.concat(rows, ignore_index=True)
    frame = frame.sort_values(["reason", "since", "chapter_id"], ignore_index=True)
    return within(frame, "since", since=since, until=until, tz=tz)


def _labels(chapters: pd.DataFrame) -> pd.Series:
    titles = chapters["title"].astype(object)
    fallback = "Chapter " + chapters["position"].astype(str)
    return titles.where(titles.notna(), fallback).astype(TEXT_DTYPE)


def _pages(counts: pd.Series) -> pd.Series:
    """`1 page`, `3 pages`: counts in words, as `toolkit.formatting.count` says them."""
    words = np.where(counts == 1, " page", " pages")
    return pd.Series(counts.astype(str).to_numpy() + words, index=counts.index, dtype=object)

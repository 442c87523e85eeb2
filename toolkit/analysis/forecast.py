"""Forecasts: when the open work will be done, and which work waits for a person.

Past 400 lines on purpose: the forecast and the burn-down read the same open work and
the reasons some of it waits for a person; the work model they use is in `work`.

```python
tk.analysis.forecast(store, by="project_id", window="7D")   # p10 / p50 / p90 finish times
tk.analysis.burn_down(store, by="project_id")                # all open lines per snapshot
```

The method, in the words a production lead would use (docs/analysis.md has the rest):

- *Open work* is the lines still untranslated (`untranslated`) in the chapters of the
  snapshot the forecast is made at (the latest, or the latest at or before `until`).
- Some open work will not finish without a person, so it gets a reason and never an
  ETA: a failed chapter waiting for a re-scan, a run that shows no progress for
  `stall_after`, held pages never started, a staged chapter never started (with or
  without pages).
- Each open chapter is run forward as the service runs it (`work`: reading, each target
  language in turn, then cleaning, lettering and packaging per `processSteps`), with
  each phase's duration learned from the history up to that snapshot: the pace of a
  translating chapter over the `window`, in `freq` bins (the spread), reading and the
  work after the last line from the chapters that did them. A language is done when
  its files are packaged, a chapter when its last language is, a group when its last
  chapter is: p10, p50 and p90 are each the latest of its parts' (a good or bad spell
  taken to last for all of them, which is what makes the band honest for a backlog).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import date
from functools import cached_property, partial
from typing import TYPE_CHECKING, Final, Literal, cast

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from toolkit.analysis._arrays import looked_up
from toolkit.analysis.calendar import utc_bound
from toolkit.analysis.due import with_due
from toolkit.analysis.measures import price_per_chapter
from toolkit.analysis.needs_person import (
    is_novel,
    needs_person,
    pages_at_last_run,
    project_kinds,
)
from toolkit.analysis.observed import Observed, flag, observe, with_previous
from toolkit.analysis.prices import Prices
from toolkit.analysis.review import review_lag_hours
from toolkit.analysis.trouble import STALL_AFTER, reason_words
from toolkit.analysis.waiting import UnitPrices, waiting_work
from toolkit.analysis.work import BANDS, Model, OpenChapter, learn
from toolkit.analysis.workspaces import across
from toolkit.frames.schema import TEXT_DTYPE, TIME_DTYPE
from toolkit.timestamps import When

if TYPE_CHECKING:
    from pandas.api.typing import NAType

    from toolkit.analysis.calibration import Calibration
    from toolkit.store import SnapshotStore

__all__ = [
    "DONE",
    "FREQ",
    "WINDOW",
    "ForecastBy",
    "Seen",
    "burn_down",
    "forecast",
    "forecast_seen",
    "is_open",
    "needs_action",
    "seen_at",
    "window_positions",
]

ForecastBy = Literal["project_id", "language_code", "chapter_id"]
DONE = ("needs_review", "reviewed")
# How far back and in what bins a forecast reads the pace, by default.
WINDOW: Final = "7D"
FREQ: Final = "1D"

_COLUMNS = ["open_chapters", "remaining_lines", "lines_per_hour", "bins", "finish_p10",
           "finish_p50", "finish_p90", "hours_p50", "reviewed_p50", "needs_action",
           "needs_action_lines", "needs_action_reason", "waiting_since", "unblocked_p10",
           "unblocked_p50", "unblocked_p90", "credits_to_finish_p10", "credits_to_finish",
           "credits_to_finish_p90", "status", "band", "as_of"]  # fmt: skip


@across
def forecast(
    store: SnapshotStore | Observed,
    *,
    by: ForecastBy = "project_id",
    window: str | pd.Timedelta = WINDOW,
    freq: str = FREQ,
    until: When | None = None,
    stall_after: str | pd.Timedelta = STALL_AFTER,
    tz: str | None = None,
    due: Mapping[str, date | str] | None = None,
    calibration: Calibration | None = None,
) -> pd.DataFrame:
    """When the open work of each group will be done, with a spread; one row per group
    that has open work or work waiting for a person.

    Columns: `<by>` (and `project` or `chapter` names beside the ids), `open_chapters`,
    `remaining_lines` (not counting work that needs action), `lines_per_hour` (the pace
    of one translating chapter, averaged over the group's open chapters), `bins` (the
    fewest pace samples, chapter by bin, behind one of them), `finish_p10`,
    `finish_p50`, `finish_p90`, `hours_p50` (from `as_of`), `reviewed_p50`
    (`finish_p50` plus the project's median review lag, `analysis.review`; null before
    any review was seen), `needs_action` (chapters), `needs_action_lines` (their
    untranslated lines: the burn-down's last point is `remaining_lines` plus these),
    `needs_action_reason`,
    `status` (`on track`, `finishing`: no line left but still open, `needs action`,
    `no recent throughput`: no pace learned, or a chapter with no activity in the
    window, `remaining unknown`)
    and `as_of` (the snapshot the forecast is made at).

    Args:
        store: A `SnapshotStore` or its `Observed` view; or several workspaces' stores at
            once (a mapping of label to store, or a list), and then the answer has a
            `workspace` column first, or is one dict per label where the call answers with a
            dict (`toolkit.analysis.workspaces`).
        by: the groups: `project_id`, `language_code` or `chapter_id`.
        window: how far back the pace is read.
        freq: the pace's bins (at least three in the window give a spread).
        until: forecast as seen at the latest snapshot at or before this time (to check
            a forecast against what happened next; a naive time is read in `tz`).
        stall_after: a running chapter with no activity for this long needs action.
        tz: The time zone a naive `since` or `until` is read in; UTC by default; also the
            zone of the bins and of the times shown.
        due: due dates by project name or id (by project only): adds `due`,
            `will_miss`, `late_hours_p50` and `late_hours_p90` (`toolkit.analysis.due`).
        calibration: the band's width from the forecast's own record
            (`band_calibration` for the same `by`): p10 and p90 moved by it, and
            `band` says so.

    Returns:
        One row per group, with the columns above.

    Raises:
        ValueError: `by` is not one of the three groups, or `calibration` was made for
            other groups.
    """
    if by not in ("project_id", "language_code", "chapter_id"):
        raise ValueError(f"by must be project_id, language_code or chapter_id, not {by!r}")
    if calibration is not None and calibration.by != by:
        raise ValueError(
            f"the calibration is of groups by {calibration.by}, the forecast by {by}: "
            f"make it with band_calibration(store, by={by!r})"
        )
    obs = observe(store)
    manifest = obs.manifest
    if until is not None:
        manifest = manifest[manifest["snapshot_at"] <= utc_bound(until, tz)]
    if manifest.empty:
        frame = _shape(pd.DataFrame(), by, tz)
    else:
        as_of = manifest["snapshot_at"].iloc[-1]
        # The same forecast asked again of one view (a page explaining its finish, pace
        # and chapters asks it once a figure) is answered from `obs.memo`, as a copy.
        key = repr(("forecast", by, str(window), freq, tz, as_of, str(stall_after)))
        if key not in obs.memo:
            seen = seen_at(obs, as_of, stall_after=pd.Timedelta(stall_after))
            obs.memo[key] = forecast_seen(obs, seen, by=by, window=window, freq=freq, tz=tz)
        frame = cast(pd.DataFrame, obs.memo[key]).copy()
    if calibration is not None:
        frame = calibration.apply(frame)
    return with_due(frame, due, tz=tz) if due is not None else frame


@dataclass(frozen=True)
class Seen:
    """The store as a forecast made at the snapshot `as_of` sees it: that snapshot's
    chapters, languages and projects, and why each chapter that waits for a person
    does (`needs_action`). The languages and projects are read when first asked
    (`read_languages`, `read_projects`): a replay with nothing open makes no forecast,
    and asks only the chapters (a week's replays of 300,000 languages were 1.7 s)."""

    as_of: pd.Timestamp
    chapters: pd.DataFrame
    read_languages: Callable[[], pd.DataFrame]
    read_projects: Callable[[], pd.DataFrame]
    reasons: pd.Series

    @cached_property
    def languages(self) -> pd.DataFrame:
        return self.read_languages()

    @cached_property
    def projects(self) -> pd.DataFrame:
        return self.read_projects()


def seen_at(obs: Observed, as_of: pd.Timestamp, *, stall_after: pd.Timedelta) -> Seen:
    """The store at the snapshot `as_of`, read for one forecast: the three tables it
    reads, each in key order (not the whole workspace: its exports, the largest table,
    are half the read and no forecast looks at them)."""
    # Once per view and moment: the page's figures (the forecast at each period's end)
    # and the rows that explain its open lines, chapters needing a person, pace and
    # finishes all see the same snapshot. Callers read a `Seen`, never change it.
    key = repr(("seen_at", as_of, str(stall_after)))
    if key not in obs.memo:
        chapters = _read_at(obs, "chapters", as_of)
        reasons = needs_action(obs, as_of=as_of, stall_after=stall_after, current=chapters)
        obs.memo[key] = Seen(as_of, chapters, partial(_read_at, obs, "languages", as_of),
                             partial(_read_at, obs, "projects", as_of), reasons)  # fmt: skip
    return cast(Seen, obs.memo[key])


def _read_at(obs: Observed, table: str, as_of: pd.Timestamp) -> pd.DataFrame:
    """A table at the snapshot `as_of`, without its snapshot's columns."""
    return obs.at(table, as_of).drop(columns=["snapshot_id", "snapshot_at"])


def forecast_seen(
    obs: Observed,
    seen: Seen,
    *,
    by: ForecastBy,
    window: str | pd.Timedelta = WINDOW,
    freq: str = FREQ,
    tz: str | None = None,
    reviewed: bool = True,
    dated_waits: bool = True,
) -> pd.DataFrame:
    """`forecast` at the snapshot `seen` holds (the replays of `forecast_accuracy` read
    theirs together); `reviewed=False` leaves `reviewed_p50` null, which the track
    record does not check, for the review lags' query; `dated_waits=False` leaves the
    work waiting for a person undated (`waiting`), which it does not check either."""
    as_of, current, languages, projects = seen.as_of, seen.chapters, seen.languages, seen.projects
    first, last = window_positions(obs, as_of, window)
    times = obs.manifest["snapshot_at"].iloc[: last + 1]
    open_rows = _open_work(current, languages, seen.reasons, by)
    spans = times.iloc[first : last + 1].diff().dropna()
    # pandas-stubs type a median as float | Timedelta; of time differences it is a Timedelta.
    interval = cast(pd.Timedelta, spans.median()) if len(spans) else pd.Timedelta(0)
    going = current[is_open(current, seen.reasons)]
    held = current[_among(current["chapter_id"], seen.reasons.index)] if dated_waits else None
    moving = open_rows[open_rows["open_chapters"] > 0]
    # Learning reads the whole history (seconds on a year): only for open work with
    # known lines to time. Work that waits for a person is dated with what that taught.
    if moving["remaining_lines"].notna().any():
        model = learn(obs, projects, first=first, last=last, freq=freq, tz=tz)
    else:  # nothing to time (no open work, or none with known lines): nothing to learn
        going, model = going.iloc[:0], Model({}, {}, {}, {}, {})
    finishes = _finishes(
        model, going, languages, projects, as_of, since=times.iloc[first], slack=interval
    )
    waits = None
    if held is not None and len(held):
        waits = waiting_work(model, held, languages, projects, as_of, since=times.iloc[first],
                             slack=interval, unpaid_pages=_unpaid(obs, as_of, held, seen.reasons),
                             prices=_unit_prices(obs, held, projects))  # fmt: skip
    # The lags are read only when there is a finish to add them to.
    lags = review_lag_hours(obs, as_of) if reviewed and len(finishes) else pd.Series(dtype=float)
    finishes["reviewed_p50"] = finishes["finish_p50"] + pd.to_timedelta(
        finishes["project_id"].map(lags), unit="h"
    )
    frame = _estimate(open_rows, finishes, by, as_of)
    frame = _with_waits(frame, finishes, waits, by)
    return _shape(_named(frame, by, current, projects), by, tz)


def window_positions(
    obs: Observed, as_of: pd.Timestamp, window: str | pd.Timedelta
) -> tuple[int, int]:
    """The positions (idx) of the last snapshot before the pace's `window` and of the
    snapshot at `as_of`: the history a forecast at `as_of` learns from."""
    times = obs.manifest["snapshot_at"]
    last = int(times.searchsorted(as_of, side="right")) - 1
    before = times.iloc[: last + 1][times.iloc[: last + 1] < as_of - pd.Timedelta(window)]
    return (len(before) - 1 if len(before) else 0), last


@across
def burn_down(
    store: SnapshotStore | Observed,
    *,
    by: ForecastBy = "project_id",
    since: When | None = None,
    until: When | None = None,
    tz: str | None = None,
) -> pd.DataFrame:
    """Lines still untranslated at each snapshot, per group, all open work (what waits
    for a person included; the forecast's `remaining_lines` is only the work that goes
    on by itself): long frame `snapshot_at, <by>, open_work_lines` (the registry's
    figure; a line that was never fetched counts as 0),
    for the snapshots in [since, until) (a naive bound is read in `tz`; times shown in it)."""
    if by not in ("project_id", "language_code", "chapter_id"):
        raise ValueError(f"by must be project_id, language_code or chapter_id, not {by!r}")
    obs = observe(store)
    log = with_previous(obs.languages, ["chapter_id", "language_code"], ["untranslated"])
    now = log["untranslated"].fillna(0).where(~flag(log["deleted"]), 0).astype(float)
    log["delta"] = now - log["prev_untranslated"].fillna(0).astype(float)
    per = log.groupby(["idx", by])["delta"].sum().unstack(fill_value=0)
    per = per.reindex(range(len(obs.times)), fill_value=0.0).cumsum()
    per.index = pd.DatetimeIndex(obs.times, name="snapshot_at")
    low, high = utc_bound(since, tz), utc_bound(until, tz)
    if low is not None:
        per = per[per.index >= low]
    if high is not None:
        per = per[per.index < high]
    # pandas-stubs: stack() is DataFrame | Series; of plain (not multi-level) columns, a Series.
    frame = cast(pd.Series, per.stack()).rename("open_work_lines").reset_index()
    frame.columns = ["snapshot_at", by, "open_work_lines"]
    # to_datetime: a store with no snapshot leaves the index naive.
    frame["snapshot_at"] = pd.to_datetime(frame["snapshot_at"], utc=True).astype(TIME_DTYPE)
    if tz:
        frame["snapshot_at"] = frame["snapshot_at"].dt.tz_convert(tz)
    frame[by] = frame[by].astype(TEXT_DTYPE)
    frame["open_work_lines"] = frame["open_work_lines"].round().astype("Int64")
    return frame.sort_values(["snapshot_at", by], ignore_index=True)


def needs_action(
    obs: Observed,
    *,
    as_of: pd.Timestamp,
    stall_after: pd.Timedelta,
    current: pd.DataFrame | None = None,
) -> pd.Series:
    """Why each chapter at the snapshot `as_of` waits for a person, by chapter id, in the
    words of the reason vocabulary for its kind: its first reason by the one rule
    (`needs_person`, which `stuck` reads too); chapters that need nothing are absent.
    `current`: the chapters at `as_of`, when the caller has read them already."""
    if current is None:
        current = obs.at("chapters", as_of)
    found = needs_person(obs, as_of=as_of, stall_after=stall_after, chapters=current, first=True)
    # Each chapter's kind taken in one go, not looked up row by row (85,000 lookups in
    # the weekly page's replays at 10,000 chapters, 1.3 s); the words depend only on the
    # reason and whether the project is a novel, so each pair is said once, and the
    # reasons are read as plain texts (iterating Arrow's costs a call per row).
    novel = is_novel(current["project_id"].reindex(found.index), project_kinds(obs))
    codes = found["reason"].to_numpy(object)
    words = {(code, is_novel): reason_words(code, "novel" if is_novel else None)
             for code in set(codes) for is_novel in (False, True)}  # fmt: skip
    said = [words[pair] for pair in zip(codes, novel.tolist(), strict=True)]
    ids = pd.Index(found["chapter_id"].to_numpy(object), dtype=object)
    return pd.Series(said, index=ids, dtype=TEXT_DTYPE)


def _true(value: bool | NAType) -> bool:
    return not pd.isna(value) and bool(value)


def _group_keys(frame: pd.DataFrame, by: ForecastBy) -> pd.Series:
    return frame[by].astype(TEXT_DTYPE)


def is_open(current: pd.DataFrame, reasons: pd.Series) -> pd.Series:
    """The chapters with work left that needs no person."""
    undone = ~current["status"].isin(DONE) | flag(current["processing"])
    return undone & ~_among(current["chapter_id"], reasons.index)


def _among(ids: pd.Series, found: pd.Index | pd.Series) -> pd.Series:
    """`ids.isin(found)` for text ids, matched in Arrow: pandas' `isin` on Arrow text
    converts the ids looked for one by one, and a set of Python texts makes each id
    one (a second of a week's replays at 100,000 chapters)."""
    looked = pa.array(ids, from_pandas=True)
    wanted = pa.array(found, from_pandas=True).cast(looked.type)
    hit = pc.is_in(looked, value_set=wanted).to_numpy(zero_copy_only=False)
    return pd.Series(hit, index=ids.index)


def _open_work(
    current: pd.DataFrame, languages: pd.DataFrame, reasons: pd.Series, by: ForecastBy
) -> pd.DataFrame:
    """Per group: open chapters, remaining lines (of work not needing action; null if a
    chapter's were never fetched), chapters needing action and why."""
    going, held = (
        current[is_open(current, reasons)],
        current[_among(current["chapter_id"], reasons.index)],
    )
    open_langs = languages[~languages["status"].isin(DONE)]
    lang_columns = ["chapter_id", "language_code", "untranslated"]
    if by == "language_code":
        going = going.merge(open_langs[lang_columns], on="chapter_id")
        held = held.merge(languages[lang_columns], on="chapter_id")
    else:
        remaining = _lines_left(open_langs)
        held = held.assign(untranslated=held["chapter_id"].map(_lines_left(languages)))
        # A chapter with no open language has nothing left; one whose lines were never
        # fetched (a store taken without details) has an unknown number left, not 0.
        left = going["chapter_id"].map(remaining.astype("Float64"))
        known = _among(going["chapter_id"], remaining.index)
        going = going.assign(untranslated=left.where(known, 0.0).astype("Float64"))
    going = going.assign(group=_group_keys(going, by))
    held = held.assign(group=_group_keys(held, by), reason=held["chapter_id"].map(reasons))
    groups = pd.Index(sorted({*going["group"].unique(), *held["group"].unique()}), dtype=TEXT_DTYPE)
    open_chapters, remaining = _counted(going, groups)
    waiting, waiting_lines = _counted(held, groups)
    reasons_seen = held.drop_duplicates(["group", "chapter_id"])
    counts = reasons_seen.groupby(["group", "reason"]).size()  # by group, then reason
    said: dict[str, list[str]] = {}
    for group, reason, n in zip(counts.index.get_level_values(0),
                                counts.index.get_level_values(1), counts, strict=True):  # fmt: skip
        said.setdefault(str(group), []).append(f"{n} {reason}")
    return pd.DataFrame(
        {
            "group": groups,
            "open_chapters": open_chapters.to_numpy(),
            "remaining_lines": remaining.to_numpy(),
            "needs_action": waiting.to_numpy(),
            "needs_action_lines": waiting_lines.to_numpy(),
            "needs_action_reason": pd.array(
                [("; ".join(said[g]) if g in said else pd.NA) for g in groups], dtype=TEXT_DTYPE
            ),
        }
    )


def _counted(chapters: pd.DataFrame, groups: pd.Index) -> tuple[pd.Series, pd.Series]:
    """Per group (0 where it has none): the chapters, and their untranslated lines (null
    where any is unknown)."""
    grouped = chapters.groupby("group")
    lines = chapters["untranslated"].astype("Float64")
    unknown = lines.isna().groupby(chapters["group"]).any()
    summed = lines.groupby(chapters["group"]).sum().mask(unknown)
    return (
        grouped["chapter_id"].nunique().reindex(groups, fill_value=0),
        summed.reindex(groups, fill_value=0.0),
    )


def _lines_left(languages: pd.DataFrame) -> pd.Series:
    """Untranslated lines per chapter over `languages`; null where any is unknown."""
    lines = languages["untranslated"]
    unknown = lines.isna().groupby(languages["chapter_id"]).any()
    return lines.groupby(languages["chapter_id"]).sum().astype("Float64").mask(unknown)


def _finishes(
    model: Model,
    going: pd.DataFrame,
    languages: pd.DataFrame,
    projects: pd.DataFrame,
    as_of: pd.Timestamp,
    *,
    since: pd.Timestamp,
    slack: pd.Timedelta,
) -> pd.DataFrame:
    """When each open language of the chapters in `going` reaches `needs_review`, at
    p10/p50/p90: `chapter_id, project_id, language_code, finish_p10, finish_p50,
    finish_p90, pace, samples` (NaT finishes and a null pace where no pace is known).

    The chapter's lines left in every language (and, while it reads, the lines its
    unread pages are expected to hold) at its pace, then the tail up to that language's
    packaging. Without a learned tail, p90 allows `slack` for it. A chapter with no
    activity since `since` (the window's start) has no finish: nothing says it moves."""
    info = projects.set_index("project_id")
    targets = {str(p): list(codes) for p, codes in info["target_languages"].items()}
    langs = languages[_among(languages["chapter_id"], going["chapter_id"])]
    langs = langs.assign(open=~langs["status"].isin(DONE))
    by_chapter = {str(c): group for c, group in langs.groupby("chapter_id")}
    rows = []
    for record in going.to_dict("records"):
        chapter_id, project_id = str(record["chapter_id"]), str(record["project_id"])
        order = {code: place for place, code in enumerate(targets.get(project_id, []))}
        mine = by_chapter.get(chapter_id, langs.iloc[:0])
        mine = mine.assign(place=mine["language_code"].map(order))
        mine = mine.sort_values(["place", "language_code"], na_position="last")
        processing, active = _true(record["processing"]), record["last_activity_at"]
        chapter = OpenChapter(
            chapter_id=chapter_id,
            project_id=project_id,
            kind=str(info["kind"].get(project_id, "")),
            steps=str(info["process_steps"].get(project_id, "")),
            units=max(float(record["page_count"] or 0), 1.0),
            processing=processing,
            last_activity_at=None if pd.isna(active) else pd.Timestamp(active),
            languages=[(str(code), bool(still) or processing, float(left or 0), float(done or 0))
                       for code, still, left, done in zip(mine["language_code"], mine["open"],
                       mine["untranslated"].fillna(0), mine["covered"].fillna(0), strict=True)],
        )  # fmt: skip
        pace = model.paces.get(chapter_id)
        band = model.band(chapter)
        for code, finish in model.finishes(chapter, as_of, since=since, slack=slack).items():
            rows.append([chapter_id, project_id, code, *finish,
                         pace.p50 if pace else np.nan, pace.samples if pace else 0,
                         band])  # fmt: skip
    frame = pd.DataFrame(rows, columns=["chapter_id", "project_id", "language_code", "finish_p10",
                                       "finish_p50", "finish_p90", "pace", "samples",
                                       "band"])  # fmt: skip
    for column in ("finish_p10", "finish_p50", "finish_p90"):
        frame[column] = pd.to_datetime(frame[column], utc=True)
    return frame


def _estimate(
    open_rows: pd.DataFrame, finishes: pd.DataFrame, by: ForecastBy, as_of: pd.Timestamp
) -> pd.DataFrame:
    """Each group's finish: the latest of its open languages' at each quantile (any
    unknown leaves it unknown), and its status."""
    out = open_rows.copy()
    finishes = finishes.assign(group=_group_keys(finishes, by))
    quantiles = ["finish_p10", "finish_p50", "finish_p90", "reviewed_p50"]
    grouped = finishes.groupby("group")
    latest = grouped[quantiles].max()
    unknown = finishes[quantiles].isna().groupby(finishes["group"]).any()
    latest = latest.mask(unknown.reindex(latest.index).fillna(False).astype(bool))
    per_chapter = finishes.drop_duplicates(["group", "chapter_id"]).groupby("group")
    for column in quantiles:
        out[column] = looked_up(out["group"], latest[column])
    # The group's band is as sure as its least sure part (BANDS: surest first).
    weakest = finishes.assign(rank=finishes["band"].map(_band_rank)).sort_values("rank")
    out["band"] = out["group"].map(weakest.drop_duplicates("group", keep="last")
                                   .set_index("group")["band"])  # fmt: skip
    out["lines_per_hour"] = out["group"].map(per_chapter["pace"].mean())
    out["bins"] = out["group"].map(per_chapter["samples"].min())
    left = out["remaining_lines"]
    out["status"] = np.select(
        [
            out["open_chapters"] == 0,
            left.isna().to_numpy(bool),
            out["finish_p50"].isna(),
            (left == 0).fillna(False).to_numpy(bool),
        ],
        ["needs action", "remaining unknown", "no recent throughput", "finishing"],
        "on track",
    )
    unsure = out["status"].isin(["needs action", "remaining unknown", "no recent throughput"])
    out.loc[unsure, quantiles] = pd.NaT
    out.loc[unsure, "band"] = pd.NA
    out["as_of"] = as_of
    return out


def _with_waits(
    frame: pd.DataFrame, finishes: pd.DataFrame, waits: pd.DataFrame | None, by: ForecastBy
) -> pd.DataFrame:
    """Each group's work waiting for a person (`waiting`): since when the longest has
    waited, the group's finish if it were unblocked now (the latest of its open work's
    and of the waiting work run from now, at each quantile; an open p90 stays open), and
    the credits to finish it (0 where nothing waits: running work has paid)."""
    frame = frame.assign(credits_to_finish_p10=0.0, credits_to_finish=0.0,
                         credits_to_finish_p90=0.0)  # fmt: skip
    if waits is None or waits.empty:
        return frame
    waits = waits.assign(group=_group_keys(waits, by))
    frame["waiting_since"] = frame["group"].map(waits.groupby("group")["waiting_since"].min())
    parts = ["p10", "p50", "p90"]
    both = pd.concat(
        [
            finishes.assign(group=_group_keys(finishes, by)).rename(
                columns={f"finish_{q}": f"unblocked_{q}" for q in parts}
            ),
            waits,
        ]
    )
    columns = [f"unblocked_{q}" for q in parts]
    latest = both.groupby("group")[columns].max()
    unknown = both[columns].isna().groupby(both["group"]).any()
    latest = latest.mask(unknown)
    waiting_groups = set(waits["group"])
    for column in columns:
        found = frame["group"].map(latest[column])
        frame[column] = found.where(frame["group"].isin(waiting_groups))
    for mine, theirs in (("credits_to_finish_p10", "credits_p10"),
                         ("credits_to_finish", "credits_p50"),
                         ("credits_to_finish_p90", "credits_p90")):  # fmt: skip
        summed = waits.groupby("group")[theirs].sum()
        no_price = waits[theirs].isna().groupby(waits["group"]).any()  # unknown, not 0
        frame[mine] = (
            frame["group"]
            .map(summed.mask(no_price))
            .where(frame["group"].isin(waiting_groups), 0.0)
        )
    return frame


def _unpaid(
    obs: Observed, as_of: pd.Timestamp, held: pd.DataFrame, reasons: pd.Series
) -> pd.Series:
    """By chapter id, the pages not paid for of the chapters holding pages never started."""
    holding = held[held["chapter_id"].map(reasons) == reason_words("held_pages")]
    if holding.empty:
        return pd.Series(dtype="float64")
    ids = pd.Index(holding["chapter_id"].astype(object))
    paid = pages_at_last_run(obs, as_of, ids)
    pages = pd.Series(holding["page_count"].fillna(0).to_numpy(float), index=ids)
    return (pages - paid.reindex(ids).fillna(0).astype(float)).clip(lower=0)


def _unit_prices(obs: Observed, held: pd.DataFrame, projects: pd.DataFrame) -> UnitPrices:
    """The prices the waiting chapters' projects pay (a novel's only where one waits:
    it reads every run)."""
    kinds = dict(zip(projects["project_id"], projects["kind"], strict=True))
    novels = held["project_id"].map(kinds).eq("novel").any()
    per_chapter = price_per_chapter(obs) if novels else {}
    return UnitPrices(dict(obs.stage(Prices).learned), per_chapter)


def _band_rank(label: str) -> int:
    """The place of a band's label among `work.BANDS` (surest first)."""
    return next((rank for rank, start in enumerate(BANDS) if label.startswith(start)), len(BANDS))


def _named(
    frame: pd.DataFrame, by: ForecastBy, chapters: pd.DataFrame, projects: pd.DataFrame
) -> pd.DataFrame:
    """The group column under its own name, with names beside ids (`chapters` and
    `projects`: those at the forecast's snapshot)."""
    frame = frame.rename(columns={"group": by})
    if by == "language_code" or frame.empty:
        return frame
    if by == "project_id":
        names = dict(zip(projects["project_id"], projects["name"], strict=True))
        return frame.assign(project=frame["project_id"].map(names))
    project_names = projects.set_index("project_id")["name"]
    found = chapters.set_index("chapter_id").reindex(frame["chapter_id"])
    title = found["title"].fillna("chapter " + found["position"].astype(TEXT_DTYPE))
    return frame.assign(
        chapter=title.to_numpy(),
        project_id=found["project_id"].to_numpy(),
        project=found["project_id"].map(project_names).to_numpy(),
    )


def _shape(frame: pd.DataFrame, by: ForecastBy, tz: str | None) -> pd.DataFrame:
    """The columns in order, with their dtypes, whether or not there were rows."""
    names = {"project_id": ["project"], "chapter_id": ["chapter", "project_id", "project"]}
    leading = [by, *names.get(by, [])]
    frame = frame.reindex(columns=[*leading, *_COLUMNS])
    for column in [*leading, "needs_action_reason", "status", "band"]:
        frame[column] = frame[column].astype(TEXT_DTYPE)
    for column in ("open_chapters", "remaining_lines", "bins", "needs_action",
                   "needs_action_lines"):  # fmt: skip
        frame[column] = frame[column].astype("Int64")
    frame["lines_per_hour"] = frame["lines_per_hour"].astype("Float64")
    for column in ("credits_to_finish_p10", "credits_to_finish", "credits_to_finish_p90"):
        frame[column] = frame[column].astype("Float64")
    for column in ("finish_p10", "finish_p50", "finish_p90", "reviewed_p50", "as_of",
                   "waiting_since", "unblocked_p10", "unblocked_p50", "unblocked_p90"):  # fmt: skip
        frame[column] = pd.to_datetime(frame[column], utc=True).astype(TIME_DTYPE)
        if tz:
            frame[column] = frame[column].dt.tz_convert(tz)
    hours = (frame["finish_p50"] - frame["as_of"]).dt.total_seconds() / 3600
    frame["hours_p50"] = hours.astype("Float64")
    return frame.sort_values(by, ignore_index=True)

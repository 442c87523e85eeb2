"""Forecasts: when the open work will be done, and which work waits for a person.

```python
tk.analysis.forecast(store, by="project_id", window="7D")   # p10 / p50 / p90 finish times
tk.analysis.burn_down(store, by="project_id")                # remaining lines per snapshot
```

The method, in the words a production lead would use (docs/analysis.md has the rest):

- *Open work* is the lines still untranslated (`untranslated`) in the chapters of the
  snapshot the forecast is made at (the latest, or the latest at or before `until`).
- Some open work will not finish without a person, so it gets a reason and never an
  ETA: a failed chapter waiting for a re-scan, a run that shows no progress for
  `stall_after`, held pages never started, a staged chapter never started (with or
  without pages).
- *Throughput* is the lines translated per hour over the `window` before that snapshot,
  counted only while the group had a chapter running (an idle weekend is not slowness),
  and measured per `freq` bin (by default a day), so that there is a spread.
- The ETA divides the remaining lines by that throughput: p50 at the pooled rate (all
  lines over all running hours), p10 at the rate of the best tenth of the bins, p90 at
  that of the worst tenth. This treats a good or bad spell as one that lasts, which is
  what makes the band honest for a backlog; a bin with no lines at all leaves p90 open.
  Work after the last line (packaging, cleaning, lettering) and the last chapter of a
  group finishing after the others only ever delay the finish, and lines do not show
  them: p90 allows one snapshot interval more for them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final, Literal, cast

import numpy as np
import pandas as pd

from toolkit.analysis.calendar import When, moment, period_starts
from toolkit.analysis.observed import Observed, flag, observe, with_previous
from toolkit.analysis.runs import all_runs, paid_pages

if TYPE_CHECKING:
    from pandas._typing import Scalar
    from pandas.api.typing import NaTType, NAType

    from toolkit.store import SnapshotStore

ForecastBy = Literal["project_id", "language_code", "chapter_id"]
TEXT = pd.StringDtype()
TIME: Final = "datetime64[us, UTC]"
DONE = ("needs_review", "reviewed")

COLUMNS = ["open_chapters", "remaining_lines", "lines_per_hour", "bins", "finish_p10",
           "finish_p50", "finish_p90", "hours_p50", "needs_action", "needs_action_reason",
           "status", "as_of"]  # fmt: skip


def forecast(
    store: SnapshotStore | Observed,
    *,
    by: ForecastBy = "project_id",
    window: str | pd.Timedelta = "7D",
    freq: str = "1D",
    until: When | None = None,
    stall_after: str | pd.Timedelta = "90min",
    tz: str | None = None,
) -> pd.DataFrame:
    """When the open work of each group will be done, with a spread; one row per group
    that has open work or work waiting for a person.

    Columns: `<by>` (and `project` or `chapter` names beside the ids), `open_chapters`,
    `remaining_lines` (not counting work that needs action), `lines_per_hour`, `bins`
    (throughput bins the spread comes from), `finish_p10`, `finish_p50`, `finish_p90`,
    `hours_p50` (from `as_of`), `needs_action` (chapters), `needs_action_reason`,
    `status` (`on track`, `finishing`: no line left but still open, `needs action`,
    `no recent throughput`, `remaining unknown`)
    and `as_of` (the snapshot the forecast is made at).

    window: how far back throughput is read. freq: its bins (at least three in the
    window give a spread). until: forecast as seen at the latest snapshot at or before
    this time (to check a forecast against what happened next; a naive time is read in
    `tz`). tz: bins and the times shown are in this zone.
    """
    if by not in ("project_id", "language_code", "chapter_id"):
        raise ValueError(f"by must be project_id, language_code or chapter_id, not {by!r}")
    obs = observe(store)
    manifest = obs.manifest
    if until is not None:
        manifest = manifest[manifest["snapshot_at"] <= moment(until, tz)]
    if manifest.empty:
        return _shape(pd.DataFrame(), by, tz)
    last = len(manifest) - 1  # the snapshot's position (idx): the manifest is in order
    as_of = manifest["snapshot_at"].iloc[-1]
    times = manifest["snapshot_at"]
    before = times[times < as_of - pd.Timedelta(window)]
    first = len(before) - 1 if len(before) else 0  # the last snapshot before the window
    current = obs.store.as_of("chapters", as_of)
    reasons = needs_action(obs, as_of=as_of, stall_after=pd.Timedelta(stall_after))
    rates = _rates(obs, first=first, last=last, by=by, freq=freq, tz=tz)
    open_rows = _open_work(current, obs.store.as_of("languages", as_of), reasons, by)
    spans = times.iloc[first : last + 1].diff().dropna()
    # pandas-stubs type a median as float | Timedelta; of time differences it is a Timedelta.
    interval = cast(pd.Timedelta, spans.median()) if len(spans) else pd.Timedelta(0)
    frame = _estimate(open_rows, rates, as_of, slack=interval)
    return _shape(_named(frame, obs, by, as_of), by, tz)


def burn_down(
    store: SnapshotStore | Observed,
    *,
    by: ForecastBy = "project_id",
    since: When | None = None,
    until: When | None = None,
    tz: str | None = None,
) -> pd.DataFrame:
    """Lines still untranslated at each snapshot, per group: long frame
    `snapshot_at, <by>, remaining_lines` (a line that was never fetched counts as 0),
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
    low, high = moment(since, tz), moment(until, tz)
    if low is not None:
        per = per[per.index >= low]
    if high is not None:
        per = per[per.index < high]
    # pandas-stubs: stack() is DataFrame | Series; of plain (not multi-level) columns, a Series.
    frame = cast(pd.Series, per.stack()).rename("remaining_lines").reset_index()
    frame.columns = ["snapshot_at", by, "remaining_lines"]
    frame["snapshot_at"] = frame["snapshot_at"].astype(TIME)
    if tz:
        frame["snapshot_at"] = frame["snapshot_at"].dt.tz_convert(tz)
    frame[by] = frame[by].astype(TEXT)
    frame["remaining_lines"] = frame["remaining_lines"].round().astype("Int64")
    return frame.sort_values(["snapshot_at", by], ignore_index=True)


def needs_action(obs: Observed, *, as_of: pd.Timestamp, stall_after: pd.Timedelta) -> pd.Series:
    """Why each chapter at the snapshot `as_of` waits for a person, by chapter id;
    chapters that need nothing are absent.

    Held pages: the page count now above the pages the chapter's runs paid for by then
    (see `_pages_at_last_run`).
    """
    log = obs.chapters[obs.chapters["snapshot_at"] <= as_of].sort_values(["chapter_id", "idx"])
    current = log.groupby("chapter_id").tail(1)
    current = current[~flag(current["deleted"])]
    ran_pages = _pages_at_last_run(obs, log, as_of)
    reasons: dict[str, str] = {}
    for row in current.itertuples(index=False):
        # pandas-stubs type itertuples fields as any scalar; these columns' dtypes are known.
        chapter_id = cast(str, row.chapter_id)
        page_count = cast("float | NAType", row.page_count)
        last_activity = cast("pd.Timestamp | NaTType", row.last_activity_at)
        processing = _true(cast("bool | NAType", row.processing))
        failed = _true(cast("bool | NAType", row.failed))
        pages = int(page_count) if not pd.isna(page_count) else 0
        quiet = as_of - last_activity if not pd.isna(last_activity) else None
        if failed and not processing:
            reasons[chapter_id] = (
                "failed, waiting for a re-scan"
                if pages
                else "failed; its text needs uploading again as a new chapter"
            )
        elif failed:
            reasons[chapter_id] = "failed earlier; needs a re-scan after this run"
        elif processing and quiet is not None and quiet >= stall_after:
            reasons[chapter_id] = "running with no progress"
        elif not _true(cast("bool | NAType", row.started)):
            reasons[chapter_id] = "staged with no pages" if pages == 0 else "staged, never started"
        elif not processing and pages > ran_pages.get(chapter_id, pages):
            reasons[chapter_id] = "held pages never started"
    return pd.Series(reasons, dtype=TEXT)


def _true(value: bool | NAType) -> bool:
    return not pd.isna(value) and bool(value)


def _pages_at_last_run(obs: Observed, log: pd.DataFrame, as_of: pd.Timestamp) -> dict[str, int]:
    """Pages each chapter has paid to run by `as_of`. At the latest snapshot, the pages
    the runs' charges paid for (as `stuck` reads them); at an earlier one, the pages of
    the runs other than re-scans seen by then (a first run seen after held pages were
    added counts them as run). A chapter with no run in the store (it ran before the
    first snapshot): its page count at the last change that showed it running or paying
    (`log`: the chapters' change log sorted by chapter and snapshot)."""
    credits = log["credits_spent"].fillna(0)
    paid = credits > credits.groupby(log["chapter_id"]).shift(1).fillna(0)
    ran = log[flag(log["processing"]) | paid].groupby("chapter_id").tail(1)
    pages = dict(zip(ran["chapter_id"], ran["page_count"].fillna(0).astype(int), strict=True))
    if as_of == obs.times[-1]:
        from_runs = paid_pages(obs).dropna()
    else:
        seen = all_runs(obs)
        seen = seen[(seen["kind"] != "rescan") & (seen["seen_at"] <= as_of)]
        from_runs = seen.groupby("chapter_id")["pages"].sum()
    pages.update({str(c): int(n) for c, n in from_runs.items()})
    return pages


def _group_keys(frame: pd.DataFrame, by: ForecastBy) -> pd.Series:
    return frame[by].astype(TEXT)


def _rates(
    obs: Observed, *, first: int, last: int, by: ForecastBy, freq: str, tz: str | None
) -> pd.DataFrame:
    """Lines translated per hour, per group and bin, over the intervals between the
    snapshots at positions `first` and `last` in which the group had a chapter running
    (at either end): `group, bin, lines, hours`. Read from the change logs, so a long
    window costs the rows that changed in it, not every snapshot's rows."""
    if last <= first:
        return pd.DataFrame(columns=["group", "bin", "lines", "hours"])
    chapters = with_previous(obs.chapters, ["chapter_id"], ["failed", "processing"])
    languages = with_previous(obs.languages, ["chapter_id", "language_code"], ["covered"])

    # Lines per interval: the rise of `covered`, in full where it restarted (new, fell,
    # or the chapter's failure was cleared), as throughput counts them.
    gone = flag(chapters["deleted"])
    cleared = chapters[~gone & flag(chapters["prev_failed"]) & ~flag(chapters["failed"])]
    rows = languages[(languages["idx"] > first) & (languages["idx"] <= last)]
    rows = rows[~flag(rows["deleted"])]
    covered = rows["covered"].fillna(0).astype("int64")
    before = rows["prev_covered"].fillna(0).astype("int64")
    rescanned = pd.MultiIndex.from_frame(rows[["chapter_id", "idx"]]).isin(
        pd.MultiIndex.from_frame(cleared[["chapter_id", "idx"]])
    )
    restarted = rows["is_new"].to_numpy(bool) | (covered < before).to_numpy() | rescanned
    lines = rows.assign(lines=np.where(restarted, covered, covered - before))
    lines_per = lines.groupby([_group_keys(lines, by), "idx"])["lines"].sum()

    # Chapters running per group at each snapshot: the running count's changes, summed.
    now = (flag(chapters["processing"]) & ~gone).astype("int64")
    was = flag(chapters["prev_processing"]).astype("int64")
    changes = chapters.assign(change=now - was)[["chapter_id", "project_id", "idx", "change"]]
    if by == "language_code":
        pairs = obs.languages[["chapter_id", "language_code"]].drop_duplicates()
        changes = changes.merge(pairs, on="chapter_id")
    changes = changes.assign(group=_group_keys(changes, by))
    at_start = changes[changes["idx"] <= first].groupby("group")["change"].sum()
    inside = changes[(changes["idx"] > first) & (changes["idx"] <= last)]
    positions = list(range(first, last + 1))
    steps = inside.pivot_table(index="group", columns="idx", values="change", aggfunc="sum")
    groups = steps.index.union(at_start.index)
    steps = steps.reindex(index=groups, columns=positions).fillna(0)
    steps[first] = at_start.reindex(groups).fillna(0)
    running = steps.cumsum(axis=1).to_numpy() > 0
    active = running[:, 1:] | running[:, :-1]
    group_of, column = np.nonzero(active)
    times = pd.Series(obs.times)
    at = np.asarray(positions[1:], dtype="int64")[column]
    hours = (times.iloc[at].to_numpy() - times.iloc[at - 1].to_numpy()) / pd.Timedelta(hours=1)
    frame = pd.DataFrame({"group": groups.to_numpy()[group_of], "idx": at, "hours": hours})
    keys = pd.MultiIndex.from_frame(frame[["group", "idx"]])
    frame["lines"] = lines_per.reindex(keys).fillna(0).to_numpy()
    frame["bin"] = period_starts(times.iloc[at].reset_index(drop=True), freq, tz).to_numpy()
    return frame.groupby(["group", "bin"], as_index=False)[["lines", "hours"]].sum()


def _open_work(
    current: pd.DataFrame, languages: pd.DataFrame, reasons: pd.Series, by: ForecastBy
) -> pd.DataFrame:
    """Per group: open chapters, remaining lines (of work not needing action; null if a
    chapter's were never fetched), chapters needing action and why."""
    waiting = current["chapter_id"].isin(reasons.index)
    undone = ~current["status"].isin(DONE) | flag(current["processing"])
    going, held = current[~waiting & undone], current[waiting]
    open_langs = languages[~languages["status"].isin(DONE)]
    lang_columns = ["chapter_id", "language_code", "untranslated"]
    if by == "language_code":
        going = going.merge(open_langs[lang_columns], on="chapter_id")
        held = held.merge(languages[lang_columns], on="chapter_id")
    else:
        # pandas-stubs: agg's function may not return pd.NA, which pandas allows.
        remaining = open_langs.groupby("chapter_id")["untranslated"].agg(  # type: ignore[type-var]
            lambda values: values.sum() if values.notna().all() else pd.NA
        )
        # A chapter with no open language has nothing left; one whose lines were never
        # fetched (a store taken without details) has an unknown number left, not 0.
        left = going["chapter_id"].map(remaining.astype("Float64"))
        known = going["chapter_id"].isin(remaining.index)
        going = going.assign(untranslated=left.where(known, 0.0).astype("Float64"))
    going = going.assign(group=_group_keys(going, by))
    held = held.assign(group=_group_keys(held, by), reason=held["chapter_id"].map(reasons))
    rows = []
    for group in sorted(set(going["group"]) | set(held["group"])):
        mine, flagged = going[going["group"] == group], held[held["group"] == group]
        left = mine["untranslated"]
        counts = flagged.drop_duplicates("chapter_id")["reason"].value_counts().sort_index()
        rows.append(
            {
                "group": group,
                "open_chapters": mine["chapter_id"].nunique(),
                "remaining_lines": left.sum() if left.notna().all() else pd.NA,
                "needs_action": flagged["chapter_id"].nunique(),
                "needs_action_reason": "; ".join(f"{n} {r}" for r, n in counts.items()) or pd.NA,
            }
        )
    return pd.DataFrame(rows, columns=["group", "open_chapters", "remaining_lines", "needs_action",
                                       "needs_action_reason"])  # fmt: skip


def _estimate(
    open_rows: pd.DataFrame, rates: pd.DataFrame, as_of: pd.Timestamp, *, slack: pd.Timedelta
) -> pd.DataFrame:
    """Finish times from each group's remaining lines and its binned rates; p90 allows
    `slack` more for what lines do not show (see the module's docstring)."""
    out = open_rows.copy()
    names = ["lines_per_hour", "bins", "finish_p10", "finish_p50", "finish_p90", "status"]
    columns: dict[str, list[Scalar | NaTType]] = {name: [] for name in names}
    for row in out.itertuples(index=False):
        mine = rates[(rates["group"] == row.group) & (rates["hours"] > 0)]
        per_bin = (mine["lines"] / mine["hours"]).to_numpy(float)
        pooled = mine["lines"].sum() / mine["hours"].sum() if len(mine) else 0.0
        # pandas-stubs type itertuples fields as any scalar: a nullable count here.
        left = cast("float | NAType", row.remaining_lines)
        p10: pd.Timestamp | NaTType = pd.NaT
        p50: pd.Timestamp | NaTType = pd.NaT
        p90: pd.Timestamp | NaTType = pd.NaT
        if row.open_chapters == 0:
            status = "needs action"
        elif pd.isna(left):
            status = "remaining unknown"
        elif pooled <= 0:
            status = "no recent throughput"
        else:
            # Nothing left to translate but still open: packaging, cleaning, lettering.
            status = "on track" if left else "finishing"
            fast, slow = np.quantile(per_bin, [0.9, 0.1])
            p10 = as_of + pd.Timedelta(hours=float(left) / fast)
            p50 = as_of + pd.Timedelta(hours=float(left) / pooled)
            p90 = as_of + pd.Timedelta(hours=float(left) / slow) + slack if slow > 0 else pd.NaT
        for name, value in zip(columns, [pooled, len(per_bin), p10, p50, p90, status], strict=True):
            columns[name].append(value)
    for name, values in columns.items():
        out[name] = values
    out["as_of"] = as_of
    return out


def _named(frame: pd.DataFrame, obs: Observed, by: ForecastBy, as_of: pd.Timestamp) -> pd.DataFrame:
    """The group column under its own name, with names beside ids."""
    frame = frame.rename(columns={"group": by})
    if by == "language_code" or frame.empty:
        return frame
    if by == "project_id":
        projects = obs.store.as_of("projects", as_of)
        names = dict(zip(projects["project_id"], projects["name"], strict=True))
        return frame.assign(project=frame["project_id"].map(names))
    chapters = obs.store.as_of("chapters", as_of).set_index("chapter_id")
    project_names = obs.store.as_of("projects", as_of).set_index("project_id")["name"]
    found = chapters.reindex(frame["chapter_id"])
    title = found["title"].fillna("chapter " + found["position"].astype("string"))
    return frame.assign(
        chapter=title.to_numpy(),
        project_id=found["project_id"].to_numpy(),
        project=found["project_id"].map(project_names).to_numpy(),
    )


def _shape(frame: pd.DataFrame, by: ForecastBy, tz: str | None) -> pd.DataFrame:
    """The columns in order, with their dtypes, whether or not there were rows."""
    names = {"project_id": ["project"], "chapter_id": ["chapter", "project_id", "project"]}
    leading = [by, *names.get(by, [])]
    frame = frame.reindex(columns=[*leading, *COLUMNS])
    for column in [*leading, "needs_action_reason", "status"]:
        frame[column] = frame[column].astype(TEXT)
    for column in ("open_chapters", "remaining_lines", "bins", "needs_action"):
        frame[column] = frame[column].astype("Int64")
    frame["lines_per_hour"] = frame["lines_per_hour"].astype("Float64")
    for column in ("finish_p10", "finish_p50", "finish_p90", "as_of"):
        frame[column] = pd.to_datetime(frame[column], utc=True).astype(TIME)
        if tz:
            frame[column] = frame[column].dt.tz_convert(tz)
    hours = (frame["finish_p50"] - frame["as_of"]).dt.total_seconds() / 3600
    frame["hours_p50"] = hours.astype("Float64")
    return frame.sort_values(by, ignore_index=True)

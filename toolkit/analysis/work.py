"""The work as the service runs it, and how long each part takes, learned from history.

Past 400 lines on purpose: the durations a forecast learns (pace, runs, reading, tails)
come from the same timeline of a chapter and are fitted together into one `Model`.

A run reads the chapter's pages, translates its target languages one after another
(every page into the first, then into the second ...), then cleans and letters the pages
as the project's `processSteps` say and packages the languages one after another; a
language reaches `needs_review` when its files are packaged. Chapters run side by side.
What a store shows of that, per chapter and snapshot, is the lines covered and the lines
left over its languages (`_timeline`); the durations come from it:

- **Pace**: lines one chapter translates per hour, over the intervals in which it was
  translating at both ends (reading done, lines left, the same run). Reading and the
  work after the last line are not in it, so a chapter that started inside the window
  is not slowness. Learned per project, else per project kind, else over every chapter
  (at least `_ENOUGH` samples), in `freq` bins so that there is a spread. Where no
  interval shows that (snapshots further apart than a run lasts), the pace of whole
  first runs, creation to finish, with reading and the tail inside it.
- **Reading**: hours per page (a novel, which has no pages: per chapter), from chapters
  whose first run started inside the history.
- **Tail**: the work after the last line, from each finished run's estimated end of
  translation to its finish, fitted per project kind and steps as hours per page, per
  page and language, and per language (packaging), with the spread of what the fit
  leaves over.

An end of translation falls between two snapshots; it is placed by the pace (the lines
the earlier snapshot showed left), never outside them.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from itertools import combinations
from typing import Final

import numpy as np
import pandas as pd

from toolkit.analysis.calendar import period_starts
from toolkit.analysis.observed import Observed, flag, with_previous
from toolkit.frames.joins import outer_merged
from toolkit.timestamps import in_hours

__all__ = ["BANDS", "Model", "OpenChapter", "Spread", "Tail", "learn", "pace_samples"]

# How sure a band is, surest first: the first words of `Model.band`'s answers.
BANDS: Final = ("learned", "pooled", "whole runs", "open")
_POOLED: Final = "*"  # the key of the workspace's pooled tail in `Model.tails`
_ENOUGH: Final = 3  # samples a learned pace or duration needs to have a spread


@dataclass(frozen=True)
class Spread:
    """A learned figure at p10, p50 and p90 (for a pace: fast, pooled, slow), with the
    number of samples behind it; `whole_runs`: a pace of whole runs (reading and the
    tail inside it), where no interval showed a chapter translating at both ends."""

    p10: float
    p50: float
    p90: float
    samples: int
    whole_runs: bool = False


@dataclass(frozen=True)
class Tail:
    """Hours of work after the last line: `per_page` (cleaning and lettering that do
    not depend on languages), `per_page_language` (lettering), `per_language`
    (packaging); `low`/`high`: the 10th and 90th percentile of what the fit leaves over
    (widened when runs are few); `runs`: the finished runs behind it; `pooled`: fitted
    over the workspace's runs of every kind and steps, its own being too few."""

    per_page: float
    per_page_language: float
    per_language: float
    low: float
    high: float
    runs: int = 0
    pooled: bool = False

    def band(self, hours: float, slack_hours: float) -> tuple[float, float]:
        """Hours below and above `hours` (this tail for one chapter) its p10 and p90
        lie: what the fit left over, at least half a snapshot interval (`slack_hours`:
        the ends of translation it was learned from are known to an interval) and at
        least `hours / sqrt(runs)`, so that the fewer the runs, the wider."""
        few = hours / np.sqrt(max(self.runs, 1))
        half = slack_hours / 2
        return min(self.low, -half, -few), max(self.high, half, few)

    def hours(self, units: float, languages: int, through: int) -> float:
        """Hours from the end of translation until the `through`-th language is packaged."""
        return (
            self.per_page * units
            + self.per_page_language * units * languages
            + self.per_language * through
        )


def _timeline(obs: Observed, last: int) -> pd.DataFrame:
    """One row per chapter and snapshot position up to `last` at which the chapter or
    one of its languages changed: `chapter_id, idx, covered, left` (summed over its
    languages; `left` null where a language's was never fetched), `languages`,
    `processing`, `failed`, `page_count`, `last_activity_at`, `created_at`,
    `project_id`. A value holds until the chapter's next row."""
    langs = obs.languages[obs.languages["idx"] <= last]
    langs = with_previous(langs, ["chapter_id", "language_code"], ["covered", "untranslated"])
    gone = flag(langs["deleted"])
    alive = (~gone).astype("int64")
    was_alive = (~langs["is_new"]).astype("int64")
    unknown = (langs["untranslated"].isna() & ~gone).astype("int64")
    was_unknown = (langs["prev_untranslated"].isna() & ~langs["is_new"]).astype("int64")
    now_cov = langs["covered"].fillna(0).astype("int64").where(~gone, 0)
    now_left = langs["untranslated"].fillna(0).astype("int64").where(~gone, 0)
    deltas = pd.DataFrame(
        {
            "chapter_id": langs["chapter_id"],
            "idx": langs["idx"],
            "covered": now_cov - langs["prev_covered"].fillna(0).astype("int64"),
            "left": now_left - langs["prev_untranslated"].fillna(0).astype("int64"),
            "languages": alive - was_alive,
            "unknown": unknown - was_unknown,
        }
    )
    sums = deltas.groupby(["chapter_id", "idx"], as_index=False).sum()
    totals = sums.groupby("chapter_id")[["covered", "left", "languages", "unknown"]].cumsum()
    sums[totals.columns] = totals
    sums["left"] = sums["left"].astype("Float64").mask(sums["unknown"] > 0)

    columns = ["chapter_id", "idx", "project_id", "processing", "failed", "page_count",
               "last_activity_at", "created_at", "deleted"]  # fmt: skip
    chapters = obs.chapters.loc[obs.chapters["idx"] <= last, columns]
    rows = outer_merged(chapters, sums.drop(columns="unknown"), on=["chapter_id", "idx"])
    rows = rows.sort_values(["chapter_id", "idx"], ignore_index=True)
    filled = rows.groupby("chapter_id").ffill()
    filled["chapter_id"] = rows["chapter_id"]
    filled = filled[~flag(filled["deleted"])].drop(columns="deleted")
    filled["processing"] = flag(filled["processing"])
    filled["failed"] = flag(filled["failed"])
    for column in ("covered", "languages"):
        filled[column] = filled[column].fillna(0).astype("int64")
    return filled.reset_index(drop=True)


def _intervals(line: pd.DataFrame, times: pd.Series) -> pd.DataFrame:
    """The timeline with each row's previous row of the same chapter (`prev_*`) and the
    time of its snapshot and of the one before (`at`, `before`)."""
    grouped = line.groupby("chapter_id", sort=False)
    out = line.assign(
        prev_idx=grouped["idx"].shift(1),
        prev_covered=grouped["covered"].shift(1),
        prev_left=grouped["left"].shift(1),
        prev_processing=grouped["processing"].shift(1),
    )
    at = out["idx"].to_numpy("int64")
    stamps = times.to_numpy()
    out["at"] = pd.to_datetime(stamps[at], utc=True)
    out["before"] = pd.to_datetime(stamps[np.maximum(at - 1, 0)], utc=True)
    return out


def _pace_samples(steps: pd.DataFrame, *, first: int, freq: str, tz: str | None) -> pd.DataFrame:
    """Lines and hours of chapters translating at both ends of an interval after
    position `first`: `chapter_id, project_id, bin, lines, hours` (one row per chapter
    and bin)."""
    going = steps[
        (steps["idx"] > first)
        & (steps["prev_idx"] == steps["idx"] - 1)
        & flag(steps["prev_processing"])
        & steps["processing"]
        & (steps["prev_covered"] > 0)
        & (steps["prev_left"].fillna(0) > 0)
        & (steps["left"].fillna(0) > 0)
        & (steps["covered"] >= steps["prev_covered"])
    ]
    frame = pd.DataFrame(
        {
            "chapter_id": going["chapter_id"],
            "project_id": going["project_id"],
            "lines": (going["covered"] - going["prev_covered"]).astype(float),
            "hours": in_hours(going["at"] - going["before"]),
            "bin": period_starts(going["at"], freq, tz),
        }
    )
    return frame.groupby(["chapter_id", "project_id", "bin"], as_index=False)[
        ["lines", "hours"]
    ].sum()


def _run_samples(steps: pd.DataFrame, *, first: int, freq: str, tz: str | None) -> pd.DataFrame:
    """Lines and hours of whole first runs that finished after position `first`, from
    the chapter's creation to its finish (snapshots too far apart to catch a chapter
    translating at both ends of an interval still show these): `chapter_id,
    project_id, bin, lines, hours`."""
    settled = ~steps["processing"] & ~steps["failed"] & (steps["left"] == 0)
    seen_running = steps.groupby("chapter_id", sort=False)["processing"].cummax()
    ends = steps[settled & (steps["covered"] > 0) & seen_running & steps["created_at"].notna()]
    ends = ends.drop_duplicates("chapter_id")  # the first finish: the first run
    ends = ends[ends["idx"] > first]
    frame = pd.DataFrame(
        {
            "chapter_id": ends["chapter_id"],
            "project_id": ends["project_id"],
            "lines": ends["covered"].astype(float),
            "hours": in_hours(ends["last_activity_at"] - ends["created_at"]),
            "bin": period_starts(ends["at"], freq, tz),
        }
    )
    return frame[frame["hours"] > 0]


def _spread_of_pace(samples: pd.DataFrame) -> Spread | None:
    """Pooled pace (lines over hours) and the paces of the fast and slow tenths."""
    samples = samples[samples["hours"] > 0]
    if samples.empty or samples["lines"].sum() <= 0:
        return None
    per = (samples["lines"] / samples["hours"]).to_numpy(float)
    fast, slow = np.quantile(per, [0.9, 0.1])
    pooled = float(samples["lines"].sum() / samples["hours"].sum())
    return Spread(float(fast), pooled, float(slow), len(per))


def _translation_ends(steps: pd.DataFrame, pace: dict[str, float]) -> pd.DataFrame:
    """Where a chapter's lines ran out: `chapter_id, idx` (the first snapshot showing
    none left), `ended` (estimated from the lines the snapshot before showed left and
    the chapter's pace, kept between the two snapshots), `earliest` and `latest` (the
    two snapshots' times)."""
    ran_out = steps[(steps["left"] == 0) & (steps["prev_left"].fillna(0) > 0)]
    rate = ran_out["chapter_id"].map(pace).astype(float)
    guess = ran_out["before"] + pd.to_timedelta(
        (ran_out["prev_left"].astype(float) / rate).fillna(0), unit="h"
    )
    return pd.DataFrame(
        {
            "chapter_id": ran_out["chapter_id"],
            "idx": ran_out["idx"],
            "ended": guess.clip(lower=ran_out["before"], upper=ran_out["at"]),
            "earliest": ran_out["before"],
            "latest": ran_out["at"],
        }
    )


def _finished_tails(steps: pd.DataFrame, ends: pd.DataFrame) -> pd.DataFrame:
    """Per finished run: `chapter_id, units, languages, hours` from the end of its
    translation to its finish (`last_activity_at` of the first snapshot showing it
    settled, not failed)."""
    settled = steps[~steps["processing"]][["chapter_id", "idx", "failed", "last_activity_at"]]
    merged = pd.merge_asof(
        ends.sort_values("idx"),
        settled.sort_values("idx").rename(columns={"idx": "settled_idx"}),
        left_on="idx",
        right_on="settled_idx",
        by="chapter_id",
        direction="forward",
    )
    merged = merged[merged["settled_idx"].notna() & ~flag(merged["failed"])]
    sizes = steps.drop_duplicates("chapter_id", keep="last").set_index("chapter_id")
    hours = in_hours(merged["last_activity_at"] - merged["ended"])
    return pd.DataFrame(
        {
            "chapter_id": merged["chapter_id"].to_numpy(),
            "units": _units(sizes["page_count"]).reindex(merged["chapter_id"]).to_numpy(),
            "languages": sizes["languages"].reindex(merged["chapter_id"]).to_numpy(),
            "hours": hours.clip(lower=0).to_numpy(float),
        }
    )


def _units(page_count: pd.Series) -> pd.Series:
    """A chapter's size for reading and cleaning: its pages; a novel's (no pages): 1."""
    return page_count.fillna(0).astype(float).clip(lower=1)


# The parts of the work after the last line, as the service runs them (the emulator's
# run engine): packaging, per language, always; cleaning, per page, for `clean` and
# `full`; lettering, per page and language, for `full` only. A novel only packages.
PACKAGE, CLEAN, LETTER = 0, 1, 2
_PARTS: Final = {"text": (PACKAGE,), "translate": (PACKAGE,), "clean": (PACKAGE, CLEAN),
                "full": (PACKAGE, CLEAN, LETTER)}  # fmt: skip


def _tail_parts(kind: str, steps: str) -> tuple[int, ...]:
    """The parts a chapter of this project kind and steps has after its last line
    (every part where the steps are not known)."""
    if kind == "novel":
        return (PACKAGE,)
    return _PARTS.get(steps, (PACKAGE, CLEAN, LETTER))


def _fit_tail(
    samples: pd.DataFrame, parts: tuple[int, ...] = (PACKAGE, CLEAN, LETTER)
) -> Tail | None:
    """Hours per language (packaging), per page (cleaning) and per page and language
    (lettering), none negative, that best fit the finished runs' tails `units,
    languages, hours` (least squares over the subsets of `parts` whose coefficients all
    come out non-negative); `low` and `high`: the 10th and 90th percentile of what it
    leaves over (none below `_ENOUGH` runs, which `Tail.band` widens). Optional columns
    `cleaned` and `lettered` say whether each run's steps had those parts (default:
    yes), so that runs of other steps can share the fit (the workspace's pooled tail).
    Of fits equally good, the one with fewer parts wins, packaging first: one run fits
    every part exactly, and only packaging is in every run (a 3-page, 3-language `text`
    run of 1.5 minutes is half a minute per language, not per page)."""
    if samples.empty:
        return None
    size = samples["units"].to_numpy(float)
    langs = samples["languages"].to_numpy(float)
    cleaned = samples["cleaned"].to_numpy(float) if "cleaned" in samples else np.ones(len(size))
    lettered = samples["lettered"].to_numpy(float) if "lettered" in samples else np.ones(len(size))
    features = np.column_stack([langs, size * cleaned, size * langs * lettered])
    hours = samples["hours"].to_numpy(float)
    best: tuple[float, np.ndarray] | None = None
    for count in range(1, len(parts) + 1):
        for chosen in combinations(parts, count):
            solved = np.linalg.lstsq(features[:, chosen], hours, rcond=None)[0]
            if (solved < 0).any():
                continue
            coef = np.zeros(3)
            coef[list(chosen)] = solved
            error = float(((features @ coef - hours) ** 2).sum())
            if best is None or error < best[0] - 1e-12 * max(1.0, float((hours**2).sum())):
                best = (error, coef)
    if best is None:
        return None
    fitted = features @ best[1]
    left_over = hours - fitted
    low, high = np.quantile(left_over, [0.1, 0.9]) if len(hours) >= _ENOUGH else (0.0, 0.0)
    language, page, page_language = (float(value) for value in best[1])
    return Tail(page, page_language, language, low=float(min(low, 0)), high=float(max(high, 0)),
                runs=len(hours))  # fmt: skip


def _restricted(tail: Tail, parts: tuple[int, ...]) -> Tail:
    """`tail` with only the parts a project's steps have (the pooled tail, for one kind
    and steps)."""
    return replace(
        tail,
        per_language=tail.per_language if PACKAGE in parts else 0.0,
        per_page=tail.per_page if CLEAN in parts else 0.0,
        per_page_language=tail.per_page_language if LETTER in parts else 0.0,
    )


def _reading_samples(steps: pd.DataFrame, pace: dict[str, float], since: pd.Timestamp) -> pd.Series:
    """Hours of reading per unit (page, or novel chapter), by chapter, for first runs
    that started after `since`: from its creation to the estimated start of translation
    (the lines the first snapshot showing any covered had covered, at the chapter's pace)."""
    first = steps[steps["covered"] > 0].drop_duplicates("chapter_id")
    first = first[(first["created_at"] > since) & first["prev_covered"].fillna(0).eq(0)]
    rate = first["chapter_id"].map(pace).astype(float)
    guess = first["at"] - pd.to_timedelta((first["covered"] / rate).fillna(0), unit="h")
    lower = first[["before", "created_at"]].max(axis=1)
    began = guess.clip(lower=lower, upper=first["at"])
    hours = in_hours(began - first["created_at"]) / _units(first["page_count"])
    return pd.Series(hours.to_numpy(float), index=first["chapter_id"].to_numpy())


@dataclass(frozen=True)
class Model:
    """What was learned from the history up to a snapshot. `paces` and `ended` by
    chapter id; `reading` (hours per unit) by project kind; `tails` by (kind, steps)
    and the workspace's pooled one (`_POOLED`); `lines_per_unit` and `page_counts` (of
    the chapters with pages) by project id and by kind."""

    paces: dict[str, Spread]
    reading: dict[str, float]
    tails: dict[tuple[str, str] | str, Tail]
    lines_per_unit: dict[str, float]
    ended: dict[str, tuple[pd.Timestamp, pd.Timestamp, pd.Timestamp]]
    page_counts: dict[str, list[float]] = field(default_factory=dict)

    def tail(self, kind: str, steps: str) -> Tail | None:
        """The tail of a project kind and steps: its own fit, once it has `_ENOUGH`
        finished runs, else the workspace's pooled fit with the parts these steps have
        (None: no run has finished in the history)."""
        own = self.tails.get((kind, steps))
        if own is not None:
            return own
        pooled = self.tails.get(_POOLED)
        return None if pooled is None else _restricted(pooled, _tail_parts(kind, steps))

    def band(self, chapter: OpenChapter) -> str:
        """How the band of `chapter`'s finish is set, in words (starting with one of
        `BANDS`)."""
        pace = self.paces.get(chapter.chapter_id)
        if pace is not None and pace.whole_runs:
            return f"whole runs: {pace.samples} paces of runs, creation to finish"
        tail = self.tail(chapter.kind, chapter.steps)
        if tail is None:
            return "open: no run has finished in the history, nothing bounds the p90"
        if tail.pooled:
            return f"pooled: the tail from {tail.runs} runs of the workspace's every steps"
        return f"learned: the tail from {tail.runs} runs of these steps"

    def finishes(
        self,
        chapter: OpenChapter,
        as_of: pd.Timestamp,
        *,
        since: pd.Timestamp,
        slack: pd.Timedelta,
    ) -> dict[str, list[pd.Timestamp | None]]:
        """When each open language of `chapter` reaches `needs_review`, at p10, p50 and
        p90 (None: unknown): the lines left in every language (and, while the chapter
        reads, the lines its unread pages are expected to hold) at its pace, then the
        tail up to that language's packaging (`tail`). Without any finished run in the
        history, p90 is open (None with a p50): nothing bounds the tail; with a pace of
        whole runs (the tail inside it), p90 allows `slack` (a snapshot interval); with
        a learned tail, `Tail.band`. A chapter with no activity since `since` (the
        window's start) has no finish: nothing says it moves."""
        count = len(chapter.languages)
        left = sum(lines for _, _, lines, _ in chapter.languages)
        covered = sum(done for _, _, _, done in chapter.languages)
        per_unit = self.lines_per_unit.get(
            chapter.project_id, self.lines_per_unit.get(chapter.kind)
        )
        pace = self.paces.get(chapter.chapter_id)
        whole = pace is not None and pace.whole_runs  # reading and tail are in its pace
        unread, reading = 0.0, 0.0
        if chapter.processing and covered == 0 and per_unit and count:
            unread = max(0.0, per_unit * chapter.units - left / count)
            reading = 0.0 if whole else self.reading.get(chapter.kind, 0.0) * unread / per_unit
        lines = left + unread * count
        start: list[pd.Timestamp | None] = [None] * 3
        if chapter.last_activity_at is None or chapter.last_activity_at < since:
            pass
        elif lines == 0:
            start = list(self.ended.get(chapter.chapter_id, (as_of, as_of, as_of)))
        elif pace is not None:
            start = [as_of + pd.Timedelta(hours=reading + lines / rate)
                     for rate in (pace.p10, pace.p50, pace.p90)]  # fmt: skip
        tail = None if whole else self.tail(chapter.kind, chapter.steps)
        out: dict[str, list[pd.Timestamp | None]] = {}
        for place, (code, still_open, _, _) in enumerate(chapter.languages, start=1):
            if not still_open:
                continue
            after: list[pd.Timedelta | None]
            if whole:  # the tail is inside the pace of whole runs, to an interval
                after = [pd.Timedelta(0), pd.Timedelta(0), slack]
            elif tail is None:  # no run has finished: nothing bounds the tail above
                after = [pd.Timedelta(0), pd.Timedelta(0), None]
            else:
                base = tail.hours(chapter.units, count, place)
                below, above = tail.band(base, slack / pd.Timedelta(hours=1))
                extras = (below, 0.0, above)
                after = [pd.Timedelta(hours=max(base + extra, 0.0)) for extra in extras]
            out[code] = [None if s is None or a is None else max(s + a, as_of)
                         for s, a in zip(start, after, strict=True)]  # fmt: skip
        return out


@dataclass(frozen=True)
class OpenChapter:
    """A chapter with work left at the forecast's snapshot; `languages` in the order
    the service translates them: code, still open, lines left, lines covered."""

    chapter_id: str
    project_id: str
    kind: str
    steps: str
    units: float
    processing: bool
    last_activity_at: pd.Timestamp | None
    languages: list[tuple[str, bool, float, float]]


def learn(
    obs: Observed, projects: pd.DataFrame, *, first: int, last: int, freq: str, tz: str | None
) -> Model:
    """The model as the snapshots up to position `last` show it; paces from those after
    `first` (the window)."""
    times = pd.Series(obs.times)
    line = _timeline(obs, last)
    steps = _intervals(line, times)
    kind_of = dict(zip(projects["project_id"], projects["kind"].fillna(""), strict=True))
    steps_of = dict(zip(projects["project_id"], projects["process_steps"].fillna(""), strict=True))
    latest = line.drop_duplicates("chapter_id", keep="last").set_index("chapter_id")
    project_of = {str(c): str(p) for c, p in latest["project_id"].items()}
    paces = _paces(_pace_samples(steps, first=first, freq=freq, tz=tz), project_of, kind_of)
    runs = _paces(_run_samples(steps, first=first, freq=freq, tz=tz), project_of, kind_of)
    for chapter, spread in runs.items():  # only where no interval taught a pace
        paces.setdefault(chapter, replace(spread, whole_runs=True))
    pooled = {chapter: spread.p50 for chapter, spread in paces.items()}

    ends = _translation_ends(steps, pooled)
    tails = _finished_tails(steps, ends)
    projects_of_tails = tails["chapter_id"].map(project_of)
    tails = tails.assign(kind=projects_of_tails.map(kind_of), steps=projects_of_tails.map(steps_of))
    fitted: dict[tuple[str, str] | str, Tail] = {}
    parts = [
        _tail_parts(str(k), str(s)) for k, s in zip(tails["kind"], tails["steps"], strict=True)
    ]
    shared = tails.assign(
        cleaned=[CLEAN in p for p in parts], lettered=[LETTER in p for p in parts]
    )
    if (pooled_tail := _fit_tail(shared)) is not None:
        fitted[_POOLED] = replace(pooled_tail, pooled=True)
    for (kind, step), group in tails.groupby(["kind", "steps"]):
        if len(group) >= _ENOUGH and (tail := _fit_tail(group, _tail_parts(str(kind), str(step)))):
            fitted[(str(kind), str(step))] = tail

    reading = _reading_samples(steps, pooled, since=times.iloc[0])
    read_kind = reading.groupby(reading.index.map(project_of).map(kind_of)).median()

    read = latest[(latest["covered"] > 0) & latest["left"].notna()]
    lines = (read["covered"] + read["left"].astype(float)) / read["languages"].clip(lower=1)
    size = pd.DataFrame({"lines": lines, "units": _units(read["page_count"]),
                         "project": read["project_id"].astype(object)})  # fmt: skip
    size["kind"] = size["project"].map(kind_of)
    per_unit: dict[str, float] = {}
    for key in ("kind", "project"):  # a project's own figure wins over its kind's
        sums = size.groupby(key)[["lines", "units"]].sum()
        per_unit.update((str(k), float(v)) for k, v in (sums["lines"] / sums["units"]).items())

    paged = latest[latest["page_count"].fillna(0) > 0]
    counts = pd.DataFrame({"pages": paged["page_count"].astype(float),
                           "project": paged["project_id"].astype(object)})  # fmt: skip
    counts["kind"] = counts["project"].map(kind_of)
    page_counts: dict[str, list[float]] = {}
    for key in ("kind", "project"):
        page_counts.update((str(k), list(g)) for k, g in counts.groupby(key)["pages"])

    last_ends = ends.drop_duplicates("chapter_id", keep="last")
    return Model(
        paces,
        {str(kind): float(hours) for kind, hours in read_kind.items()},
        fitted,
        per_unit,
        {
            str(chapter): (pd.Timestamp(early), pd.Timestamp(mid), pd.Timestamp(late))
            for chapter, early, mid, late in zip(
                last_ends["chapter_id"],
                last_ends["earliest"],
                last_ends["ended"],
                last_ends["latest"],
                strict=True,
            )
        },
        page_counts,
    )


def pace_samples(
    obs: Observed, *, first: int, last: int, freq: str, tz: str | None
) -> pd.DataFrame:
    """The samples `learn` draws its paces from, as it draws them (read only, for
    `tk.explain`): `chapter_id, project_id, bin, lines, hours, whole_runs` (a pace of a
    whole first run, creation to finish, where no interval showed the chapter
    translating at both ends)."""
    steps = _intervals(_timeline(obs, last), pd.Series(obs.times))
    paces = _pace_samples(steps, first=first, freq=freq, tz=tz).assign(whole_runs=False)
    runs = _run_samples(steps, first=first, freq=freq, tz=tz).assign(whole_runs=True)
    return pd.concat([paces, runs], ignore_index=True)


def _paces(
    samples: pd.DataFrame, project_of: dict[str, str], kind_of: dict[str, str]
) -> dict[str, Spread]:
    """Each chapter's pace: its project's spread if that has `_ENOUGH` samples, else its
    kind's, else everyone's; scaled to the chapter's own pooled pace when that has
    `_ENOUGH` samples (one interval of a chapter is a few pages: too few to tell). Its
    fast and slow ends lie at least `1/sqrt(samples)` of the pooled pace from it (one
    sample: twice and half as fast), so that the fewer the samples, the wider."""
    samples = samples.assign(kind=samples["project_id"].map(kind_of))
    levels: dict[str, Spread] = {}
    for key in ("project_id", "kind"):
        for value, group in samples.groupby(key):
            if (spread := _spread_of_pace(group)) is not None:
                levels[f"{key}:{value}"] = spread
    everyone = _spread_of_pace(samples)
    own = {
        str(chapter): spread
        for chapter, group in samples.groupby("chapter_id")
        if (spread := _spread_of_pace(group)) is not None
    }
    paces: dict[str, Spread] = {}
    for chapter, project in project_of.items():
        found = [levels.get(f"project_id:{project}"), levels.get(f"kind:{kind_of.get(project)}"),
                 everyone]  # fmt: skip
        known = [spread for spread in found if spread is not None]
        enough = [spread for spread in known if spread.samples >= _ENOUGH]
        if not known:
            continue
        chosen = (enough or known)[0]
        mine = own.get(chapter)
        scale = mine.p50 / chosen.p50 if mine and mine.samples >= _ENOUGH else 1.0
        # The fewer the samples, the wider: at least p50 x (1 +- 1/sqrt(samples)).
        share = 1 / np.sqrt(max(chosen.samples, 1))
        pooled = chosen.p50 * scale
        paces[chapter] = Spread(max(chosen.p10 * scale, pooled * (1 + share)), pooled,
                                min(chosen.p90 * scale, pooled / (1 + share)),
                                chosen.samples)  # fmt: skip
    return paces

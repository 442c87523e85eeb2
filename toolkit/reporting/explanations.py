"""Every figure opened down to the rows that make it (`tk.explain`).

Past 400 lines on purpose: one reader per headline figure beside the one shape and
order every explanation takes, how each figure is made of its rows (`HOW`) and why the
few others are refused (`REFUSED`); the other figures' readers are in
`explained_inputs` (the forecast, run times, review lags), `explained_rates` (runs:
failure rates and the model comparison) and `explained_counts` (counts at the last
snapshot, the review backlog, lead times, the month's spend).

```python
rows = tk.explain(store, "rework_credits")             # the period figures() counts
rows = tk.explain(store, "lines", project="Moonlit Harbor", language="fr")
rows["value"].sum() == figures(store).totals["rework_credits"]
rows = tk.explain(store, "median_cycle_hours")         # the runs the median is taken over
recount(rows) == figures(store).totals["median_cycle_hours"]
rows = tk.explain(store, "failure_rate")   # a ratio: sum(value) / sum(denominator)
```

One row per contribution: the run, charge, snapshot or chapter it comes from
(`source`, `source_id`), the chapter and project, its times, the rule that counted it
(`rule`: the registry's definition, or the reason a chapter needs a person), a
`detail` in words, a `value` (and a ratio's `denominator`) and whether the figure is
taken over the row (`counts`).
A sum's values sum, per project, to the figure `figures` shows for the same period; a
median, a mean, a pace or a finish is taken over the rows that count as `HOW` says and
`recount` does (docs/figures.md, "Explanations"). Each figure is read from the
same analysis the figure is counted by, never counted a second way: runs that finished
(`cycle_times`), failed and stalled runs (`failures`), each run's charge (the runs
frame: `credits`, `rework`, seen at a snapshot), each chapter-language's lines at each
snapshot (the throughput's own query, not summed), the chapters at the period's
last snapshot as the forecast sees them (`seen_at`, `is_open`), and the forecast by
chapter for its own figures (`explained_inputs`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Final, Literal, cast

import numpy as np
import pandas as pd
import pyarrow as pa

from toolkit import metrics
from toolkit.analysis import STALL_AFTER, cycle_times, failures
from toolkit.analysis.calendar import snapshots_within, sorted_by
from toolkit.analysis.forecast import DONE, is_open, seen_at
from toolkit.analysis.lines import lines_by_snapshot
from toolkit.analysis.observed import Observed, observe
from toolkit.analysis.run_table import RunTable
from toolkit.analysis.runs import chapter_labels, rescans_seen, runs_kept, seen_times
from toolkit.analysis.trouble import failed_runs
from toolkit.formatting import as_texts, count
from toolkit.frames.schema import TEXT_DTYPE, TIME_DTYPE
from toolkit.reporting.explained_counts import COUNTS
from toolkit.reporting.explained_inputs import INPUTS
from toolkit.reporting.explained_rates import RATES
from toolkit.reporting.figures import FIGURES, Period, period
from toolkit.reporting.rework_causes import CAUSE_WORDS, CAUSES, causes_of, day_ends

if TYPE_CHECKING:
    from toolkit.store import SnapshotStore

__all__ = ["COLUMNS", "EXPLAINED", "HOW", "REFUSED", "TAKEN", "explain", "recount"]

# How a figure is made of its rows that count: summed; the median, mean, largest or
# smallest of their values; or, for a moment, the latest of their `finished_at`.
How = Literal["sum", "ratio", "median", "mean", "max", "min", "p50", "p90", "latest"]
HOW: Final[dict[str, How]] = {
    **dict.fromkeys(FIGURES, "sum"),
    "median_cycle_hours": "median", "mean_cycle_hours": "mean", "longest_cycle_hours": "max",
    "open_chapters": "sum", "needs_action_lines": "sum", "open_work_lines": "sum",
    "lines_per_hour": "mean", "bins": "min", "finish_p10": "latest", "finish_p50": "latest",
    "finish_p90": "latest", "hours_p50": "max", "reviewed_p50": "latest",
    "review_lag_hours": "median",
    # Runs (`explained_rates`): counts, rates and the model comparison.
    "runs": "sum", "ended_runs": "sum", "finished": "sum", "failure_rate": "ratio",
    "stalled_rate": "ratio", "rework_share": "ratio", "pages": "sum",
    "credits_per_page_language": "ratio", "credits_per_chapter_language": "mean",
    "hours_per_page": "median",
    # Re-run credits by cause (the weekly page's table).
    "rework_stalled": "sum", "rework_failed": "sum", "rework_rescan": "sum",
    "new_credits": "sum",
    # Counts at the last snapshot, lead times, the month's spend (`explained_counts`).
    "chapters": "sum", "lines_to_date": "sum", "needs_review": "sum",
    "oldest_wait_hours": "max", "reviews_per_day": "ratio", "lead_hours_p50": "p50",
    "replays": "sum", "inside": "sum", "inside_share": "ratio",
    "unblocked_p10": "latest", "unblocked_p50": "latest", "unblocked_p90": "latest",
    "credits_to_finish": "sum", "credits_to_finish_p10": "sum", "credits_to_finish_p90": "sum",
    "lead_hours_p90": "p90", "this_month": "sum", "last_month": "sum", "change": "sum",
    "this_month_rework": "sum", "last_month_rework": "sum",
}  # fmt: skip
# `HOW` in words, for the reader checking a figure by hand (`toolkit explain`).
TAKEN: Final[dict[How, str]] = {
    "sum": "the sum of the values",
    "ratio": "the sum of the values over the sum of the denominators, of the rows that count",
    "median": "the median of the values of the rows that count",
    "mean": "the mean of the values of the rows that count",
    "max": "the largest value of the rows that count",
    "min": "the smallest value of the rows that count",
    "p50": "the median of the values of the rows that count (pandas' linear quantile)",
    "p90": "the 90th percentile of the values of the rows that count (pandas' linear quantile)",
    "latest": "the latest finish of the rows that count (value: its hours after the snapshot)",
}
# The figures `explain` opens, in the registry's order.
EXPLAINED: Final = tuple(name for name in metrics.FIGURES if name in HOW)
# Readers that give their rows sorted as `_shaped` would (by DuckDB).
_PRESORTED: Final = ("lines",)
# Figures counted per target language: only these take `language=`.
BY_LANGUAGE: Final = ("lines", "open_lines", "open_work_lines", "lines_to_date")
# Why each of the registry's other figures is not opened, and what to open instead
# (docs/figures.md, "Figures explain does not open").
_TEXT_OF = "a text shown beside a figure, not a number"
_MOMENT = "a moment shown beside a figure, not a number that sums"
_LIVE = ("counted live from the service, beyond the store; its store part is `credits` "
         "since {since} (`toolkit explain credits --since ...`), and the Dashboard's "
         "\"Rows behind it\" opens the whole")  # fmt: skip
REFUSED: Final[dict[str, str]] = {
    "status": f"{_TEXT_OF}; explain `needs_action` or `finish_p50` instead",
    "band": f"{_TEXT_OF}; explain `bins` (the pace samples behind the band) instead",
    "verdict": f"{_TEXT_OF}; explain `failure_rate`, `credits_per_page_language` or "
    "`hours_per_page` instead",
    "needs_action_reason": f"{_TEXT_OF}; explain `needs_action` instead (each row's rule "
    "is its chapter's reason)",
    "as_of": f"{_MOMENT}: the snapshot the figures are counted at, every row's `at`",
    "as_of_utc": f"{_MOMENT}: the snapshot the figures are counted at, every row's `at`",
    "waiting_since": f"{_MOMENT}; explain `needs_action` instead (each row's `finished_at` "
    "is its chapter's last activity)",
    "cycle_hours": "one run's value, a row of `median_cycle_hours`' explanation, not a "
    "figure that sums; explain `median_cycle_hours` instead",
    "stalled_hours": "one chapter's value, not a figure that sums; explain `runs_stalled` "
    "or `needs_action` instead",
    "languages": "a group of the model comparison (its runs' number of target languages), "
    "not a figure that sums; explain `pages` instead (each row names its group)",
    "spent_today": _LIVE.format(since="midnight"),
    "spent_this_week": _LIVE.format(since="Monday"),
}
COLUMNS: Final = ["figure", "project_id", "project", "chapter_id", "chapter", "language_code",
                  "source", "source_id", "at", "started_at", "finished_at", "rule", "detail",
                  "value", "denominator", "counts"]  # fmt: skip
Reader = Callable[[Observed, Period], pd.DataFrame]


def explain(
    store: SnapshotStore | Observed,
    figure: str,
    *,
    project: str | None = None,
    language: str | None = None,
    since: pd.Timestamp | str | None = None,
    until: pd.Timestamp | str | None = None,
    tz: str = "UTC",
) -> pd.DataFrame:
    """The rows behind one figure of a period: one per contribution, whose `value`
    sums to the figure `tk.report` shows for the same period and scope (a figure that
    is not a sum: `recount(rows)` takes it over the rows that count, as `HOW` says).

    Args:
        store: A store (or its `Observed` view).
        figure: A figure's name from `EXPLAINED` (or its other name in a frame's
            column, `metrics.ALIASES`): every figure of the registry but
            the texts, moments and per-row values shown beside figures and the live
            spend (`REFUSED` says why each is not); `tk.glossary()` says what each
            counts.
        project: Only this project, by id or by name.
        language: Only this target language (`BY_LANGUAGE`: the figures counted per
            language).
        since: The period's start, as `figures` takes it (a naive time is read in `tz`);
            by default the midnight seven days before the last snapshot.
        until: The period's end, excluded; by default just after the last snapshot.
        tz: The zone of the period's midnights and of naive bounds.

    Returns:
        `figure, project_id, project, chapter_id, chapter, language_code, source`
        (`run`, `charge`, `snapshot` or `chapter`), `source_id` (the run id; for lines,
        `<chapter_id>/<language>@<snapshot time>`), `at` (when it counted), `started_at`,
        `finished_at` (for a forecast's moment: the chapter's own), `rule`, `detail`,
        `value`, `denominator` (a ratio's: its part of the sum the values' sum is
        divided by; empty for the other figures) and `counts` (whether the figure is
        taken over the row); sorted by
        `at`, then chapter. No rows when the period has no data (the figure is then
        unknown, not 0).

    Raises:
        ValueError: `figure` is not one `explain` opens, `language` was given for a
            figure not counted per language, or `project` names no project.
    """
    # A column that holds a figure under another name (the forecast's `remaining_lines`
    # is `open_lines`) is explained as that figure.
    figure = metrics.ALIASES.get(figure, figure)
    if figure not in EXPLAINED:
        what = f"{REFUSED[figure]}, so explain does not open it" if figure in REFUSED else (
            "no figure")  # fmt: skip
        raise ValueError(
            f"{figure!r} is {what}. Explain opens these: "
            f"{', '.join(EXPLAINED)} (tk.glossary() says what each counts)"
        )
    if language is not None and figure not in BY_LANGUAGE:
        raise ValueError(
            f"{figure!r} is not counted per language; leave out language=, or explain "
            f"{' or '.join(BY_LANGUAGE)}"
        )
    obs = observe(store)
    when = period(obs, since=since, until=until, tz=tz)
    projects = _project_ids(obs, project)
    read = _ROWS[figure]
    rows = _empty() if not when.has_data else read(obs, when)
    if projects is not None:
        rows = rows[rows["project_id"].isin(projects)]
    if language is not None:
        rows = rows[rows["language_code"] == language]
    rows = rows.reindex(columns=COLUMNS).assign(figure=figure)
    if rows["rule"].isna().all():  # one rule for every row: the figure's definition
        rows["rule"] = pd.Series(metrics.FIGURES[figure].definition, rows.index, dtype=TEXT_DTYPE)
    else:
        rows["rule"] = rows["rule"].astype(object).fillna(metrics.FIGURES[figure].definition)
    return _shaped(rows, obs, presorted=figure in _PRESORTED)


def recount(rows: pd.DataFrame, figure: str | None = None) -> float | int | pd.Timestamp | None:
    """The figure `rows` (one figure's explanation, or one project's part of it) make,
    taken as `HOW` says over the rows that count: what a reader can check by hand.
    None where the figure is unknown: a sum with an unknown part, a finish where a
    chapter that counts has none, a median of no row. A sum of no row is 0 (a period
    with no data has no row either: its figure is None, which `explain` cannot tell)."""
    name = figure if figure is not None else str(rows["figure"].iloc[0])
    how = HOW[name]
    counted = rows[rows["counts"].to_numpy(bool)]
    if how == "latest":
        moments = counted["finished_at"]
        return None if moments.empty or moments.isna().any() else pd.Timestamp(moments.max())
    values = counted["value"].astype("Float64")
    if how == "ratio":
        return _ratio(values, counted["denominator"].astype("Float64"))
    # A sum with an unknown part is unknown, and so is the latest finish (`max`) where a
    # chapter has none; a median or a mean is taken over the values known.
    if how in ("sum", "max") and values.isna().any():
        return None
    if how == "sum":
        return values.sum()
    values = values.dropna()
    if values.empty:
        return None
    if how in ("p50", "p90"):
        return float(values.quantile(0.5 if how == "p50" else 0.9))
    return float(getattr(values, how)())


def _ratio(values: pd.Series, under: pd.Series) -> float | None:
    """The sum of the values over the sum of the denominators; None where a part is
    unknown or nothing is under it."""
    if values.isna().any() or under.isna().any() or not under.sum():
        return None
    return float(values.sum() / under.sum())


def _project_ids(obs: Observed, asked: str | None) -> list[str] | None:
    """The ids `project=` names (an id or a name); None for every project."""
    if asked is None:
        return None
    projects = obs.latest_projects
    ids = projects["project_id"].astype(object)
    found = ids[(ids == asked) | (projects["name"].astype(object) == asked)].tolist()
    if not found:
        names = ", ".join(sorted(str(name) for name in projects["name"].dropna()))
        raise ValueError(
            f"no project {asked!r} in the store; give a project's id or one of its names: "
            f"{names or '(none yet)'}"
        )
    return [str(found_id) for found_id in found]


def _empty() -> pd.DataFrame:
    return pd.DataFrame({column: pd.Series(dtype=object) for column in COLUMNS})


def _shaped(rows: pd.DataFrame, obs: Observed, *, presorted: bool = False) -> pd.DataFrame:
    """The rows in `COLUMNS`' order and types, names filled in, sorted by time (unless
    the reader sorted them: `presorted`). A column no reader filled is made empty of
    its type at once, not converted value by value."""
    rows = rows.reindex(columns=COLUMNS)
    for column, look_up in (("project", _project_names), ("chapter", _chapter_names)):
        named = rows[column]
        if named.isna().any():
            ids = rows[f"{column}_id"].astype(object)
            rows[column] = named.astype(object).where(named.notna(), ids.map(look_up(obs)))
    for column in ("at", "started_at", "finished_at"):
        if rows[column].dtype == TIME_DTYPE:  # already so when every reader gave a time
            continue
        if rows[column].isna().all():
            rows[column] = pd.Series(pd.NaT, index=rows.index, dtype=TIME_DTYPE)
        else:
            rows[column] = pd.to_datetime(rows[column], utc=True).astype(TIME_DTYPE)
    texts = [c for c in COLUMNS if c not in ("at", "started_at", "finished_at", "value", "counts")]
    for column in texts:
        if rows[column].dtype == TEXT_DTYPE:
            continue
        if rows[column].isna().all():
            rows[column] = pd.Series(pd.NA, index=rows.index, dtype=TEXT_DTYPE)
        else:
            rows[column] = rows[column].astype(TEXT_DTYPE)
    # a null `counts` counts; compared, not `fillna(True)`: that fill's downcast of the
    # object column is a warning on pandas 2.2
    rows["counts"] = (rows["counts"].isna() | rows["counts"].eq(True)).astype(bool)
    for column in ("value", "denominator"):
        numbers = pd.to_numeric(rows[column]).astype("Float64")
        whole = not len(rows) or (numbers == numbers.round()).fillna(False).all()
        # counts and whole credits stay whole; so does a denominator no row has
        unset = column == "denominator" and numbers.isna().all()
        rows[column] = numbers.astype("Int64") if whole or unset else numbers
    if presorted:
        return rows.reset_index(drop=True)
    return sorted_by(rows, ["at", "chapter_id", "source_id"])


def _project_names(obs: Observed) -> pd.Series:
    projects = obs.latest_projects
    return pd.Series(
        projects["name"].astype(object).to_numpy(), index=projects["project_id"].astype(object)
    )


def _chapter_names(obs: Observed) -> pd.Series:
    """Each chapter's title by id, as its latest change names it (`Chapter <n>` without):
    made once per view (each figure a page opens names its chapters; its callers only
    read it)."""
    if "chapter_names" not in obs.memo:
        obs.memo["chapter_names"] = chapter_labels(obs)
    return cast(pd.Series, obs.memo["chapter_names"])


# -- one reader per figure -----------------------------------------------------------


def _finished(obs: Observed, when: Period) -> pd.DataFrame:
    """A chapter finished in the period: its last run that finished then (value 1);
    `detail` says how many did."""
    runs = cycle_times(obs, since=when.since, until=when.until)
    count = runs.groupby("chapter_id")["run_id"].transform("size")
    last = runs.assign(runs=count).drop_duplicates("chapter_id", keep="last")
    detail = [
        f"{count} run{'' if count == 1 else 's'} finished in the period ({kind} run last)"
        for count, kind in zip(last["runs"], last["kind"].astype(object), strict=True)
    ]
    return pd.DataFrame(
        {
            "project_id": last["project_id"], "project": last["project"],
            "chapter_id": last["chapter_id"], "chapter": last["chapter"], "source": "run",
            "source_id": last["run_id"], "at": last["finished_at"],
            "started_at": last["started_at"], "finished_at": last["finished_at"],
            "detail": pd.Series(detail, index=last.index, dtype=object),
            "value": 1,
        }
    )  # fmt: skip


def _failed(kind: str) -> Reader:
    def rows(obs: Observed, when: Period) -> pd.DataFrame:
        """A run that failed (or stalled) in the period, once, at its end (value 1)."""
        found = failures(obs, since=when.since, until=when.until)
        found = found[found["kind"] == kind]
        # Of the failed runs alone: indexing every run by its id was 0.3 s a figure on
        # a quarter at 100,000 chapters.
        started = failed_runs(obs).set_index("run_id")["started_at"]
        return pd.DataFrame(
            {
                "project_id": found["project_id"], "project": found["project"],
                "chapter_id": found["chapter_id"], "chapter": found["chapter"],
                "source": "run", "source_id": found["run_id"], "at": found["seen_at"],
                # reindex, not map: ids mapped through no run at all come back as floats
                "started_at": started.reindex(found["run_id"].astype(object)).to_numpy(),
                "finished_at": found["seen_at"],
                "detail": found["run_kind"].astype(str) + " run: " +
                found["failure_reason"].astype(object).fillna("(no reason given)").astype(str),
                "value": 1,
            }
        )  # fmt: skip

    return rows


def _charges(column: str) -> Reader:
    def rows(obs: Observed, when: Period) -> pd.DataFrame:
        """A run's charge, at the snapshot that first showed it: `credits` (what it
        paid) or `rework` (what it paid again for pages already paid for). Made once
        per view and period: the page's credits, re-run credits, their three causes,
        their share and the new credits are all read from these rows (a copy each, as
        callers add to them)."""
        key = repr(("charges", column, when.since, when.until))
        if key not in obs.memo:
            obs.memo[key] = _charge_rows(obs, when, column)
        return cast(pd.DataFrame, obs.memo[key]).copy()

    return rows


def _charge_rows(obs: Observed, when: Period, column: str) -> pd.DataFrame:
    """`_charges`' rows, made: the runs first seen in the period that paid `column`."""
    # The period's runs picked before their texts are made (`runs_kept`).
    seen, paid = seen_times(obs), getattr(obs.stage(RunTable), column)
    since, until = when.since.to_datetime64(), when.until.to_datetime64()
    runs = runs_kept(obs, (seen >= since) & (seen < until) & (paid != 0) & ~np.isnan(paid))
    outcomes = runs["outcome"].astype(object).fillna("outcome unknown")
    detail = [
        f"{kind} run of {count(int(pages), 'page')} in {count(int(languages), 'language')}, "
        f"{outcome}"
        for kind, pages, languages, outcome in zip(
            runs["kind"].astype(object), runs["pages"].fillna(0), runs["languages"].fillna(0),
            outcomes, strict=True,
        )
    ]  # fmt: skip
    return pd.DataFrame(
        {
            "project_id": runs["project_id"], "project": runs["project"],
            "chapter_id": runs["chapter_id"], "chapter": runs["chapter"],
            "source": "charge", "source_id": runs["run_id"], "at": runs["seen_at"],
            "started_at": runs["started_at"], "finished_at": runs["finished_at"],
            "detail": pd.Series(detail, index=runs.index, dtype=object),
            "value": runs[column].astype("float64"),
        }
    )  # fmt: skip


# The rows the throughput sums (`lines.lines_by_snapshot`), those with lines, named,
# given ids and sorted by DuckDB: a busy week is 100,000 rows, and they come back as
# Arrow columns (pandas would take seconds to map, format and sort them one at a time).
_LINES_ROWS = """
SELECT project_id, n.project, chapter_id, c.chapter, language_code,
       'snapshot' AS source,
       chapter_id || '/' || language_code || '@' || s.shown AS source_id, s.at,
       CASE WHEN r.chapter_id IS NULL THEN '{rose}' ELSE '{restarted}' END AS detail,
       lines AS value
FROM (SELECT * FROM snapshot_lines WHERE lines <> 0) l
JOIN stamps s USING (idx)
LEFT JOIN (SELECT DISTINCT chapter_id, idx FROM resets) r USING (chapter_id, idx)
LEFT JOIN project_names n USING (project_id)
LEFT JOIN chapter_names c USING (chapter_id)
ORDER BY s.at, chapter_id, source_id
"""
_RESTARTED = "re-scan seen: its coverage counts in full"
_ROSE = "the rise of its coverage since the snapshot before"


def _lines(obs: Observed, when: Period) -> pd.DataFrame:
    """Each chapter-language's lines at each snapshot of the period: the rise of
    `covered`, in full after a restart (the detail says which); sorted as `_shaped`
    sorts."""
    inside = snapshots_within(obs.manifest["snapshot_at"], since=when.since, until=when.until,
                              tz=None)  # fmt: skip
    idx = inside["idx"].to_numpy("int64")
    if not len(idx):
        return _empty()
    times = inside["snapshot_at"]
    stamps = pd.DataFrame(
        {"idx": idx, "at": times.astype(TIME_DTYPE).to_numpy(),
         "shown": times.dt.strftime("%Y-%m-%dT%H:%M:%SZ").to_numpy(object)}
    )  # fmt: skip
    names = _project_names(obs)
    chapters = _chapter_names(obs)
    window = (int(idx.min()), int(idx.max()))
    found = obs.store.query_arrow(
        _LINES_ROWS.format(rose=_ROSE, restarted=_RESTARTED),
        frames={
            "snapshot_lines": lines_by_snapshot(obs, window),
            "resets": rescans_seen(obs, window), "stamps": stamps,
            "project_names": pd.DataFrame({"project_id": names.index.astype(str),
                                           "project": names.to_numpy(object)}),
            "chapter_names": pd.DataFrame({"chapter_id": chapters.index.astype(str),
                                           "chapter": chapters.to_numpy(object)}),
        },
    )  # fmt: skip
    text = {pa.string(): TEXT_DTYPE, pa.large_string(): TEXT_DTYPE}
    rows: pd.DataFrame = found.to_pandas(types_mapper=text.get)
    return rows


def _at_end(obs: Observed, when: Period) -> tuple[pd.DataFrame, pd.DataFrame, pd.Series]:
    """The chapters, languages and reasons at the period's last snapshot, as the
    forecast the figures read sees them."""
    assert when.end is not None  # has_data
    seen = seen_at(obs, when.end, stall_after=pd.Timedelta(STALL_AFTER))
    return seen.chapters, seen.languages, seen.reasons


def _needs_action(obs: Observed, when: Period) -> pd.DataFrame:
    """A chapter that will not go on without a person at the last snapshot (value 1);
    the rule is why, in the reasons table's words."""
    chapters, _, reasons = _at_end(obs, when)
    waiting = chapters[chapters["chapter_id"].astype(object).isin(set(reasons.index))]
    ids = waiting["chapter_id"].astype(object)
    return pd.DataFrame(
        {
            "project_id": waiting["project_id"], "chapter_id": ids, "source": "chapter",
            "source_id": ids, "at": when.end,
            "finished_at": waiting["last_activity_at"],
            "rule": ids.map(reasons).astype(object),
            "detail": "last activity " + as_texts(waiting["last_activity_at"]),
            "value": 1,
        }
    )  # fmt: skip


def _open_lines(obs: Observed, when: Period) -> pd.DataFrame:
    """The untranslated lines of each open language of a chapter that goes on by
    itself, at the last snapshot."""
    chapters, languages, reasons = _at_end(obs, when)
    going = chapters[is_open(chapters, reasons).to_numpy(bool)]
    open_langs = languages[~languages["status"].isin(DONE)]
    projects = going.set_index(going["chapter_id"].astype(object))["project_id"].astype(object)
    rows = open_langs[open_langs["chapter_id"].astype(object).isin(set(projects.index))]
    rows = rows.assign(project_id=rows["chapter_id"].astype(object).map(projects))
    rows = rows[rows["untranslated"].fillna(1) != 0]
    return pd.DataFrame(
        {
            "project_id": rows["project_id"], "chapter_id": rows["chapter_id"],
            "language_code": rows["language_code"], "source": "chapter",
            "source_id": rows["chapter_id"].astype(str) + "/" + rows["language_code"].astype(str),
            "at": when.end, "detail": "status " + rows["status"].astype(str),
            "value": rows["untranslated"],
        }
    )  # fmt: skip


def _rework_cause(cause: str) -> Reader:
    def rows(obs: Observed, when: Period) -> pd.DataFrame:
        """A re-run's charge put down to `cause`: its chapter's latest failure by the end
        of the day it was seen paid (`rework_causes`, as the weekly page's table)."""
        found = _charges("rework")(obs, when)
        # The cause of every re-run charge of the period, found once for the three.
        key = repr(("rework causes", when.since, when.until, when.tz))
        if key not in obs.memo:
            obs.memo[key] = causes_of(obs, found["chapter_id"], day_ends(found["at"], when.tz))
        causes = cast(pd.Series, obs.memo[key])
        found = found[(causes == cause).to_numpy(bool)]
        found["detail"] = found["detail"].astype(str) + f"; re-run {CAUSE_WORDS[cause]}"
        return found

    return rows


def _rework_share(obs: Observed, when: Period) -> pd.DataFrame:
    """Each charge: its re-run part over what it paid (the ratio of the sums)."""
    paid = _charges("credits")(obs, when)
    return paid.assign(value=_again(obs, when, paid), denominator=paid["value"])


def _new_credits(obs: Observed, when: Period) -> pd.DataFrame:
    """Each charge's part that paid for pages the first time: what it paid less its
    re-run part."""
    paid = _charges("credits")(obs, when)
    paid = paid.assign(value=paid["value"].to_numpy("float64") - _again(obs, when, paid))
    return paid[(paid["value"] != 0).to_numpy(bool)]


def _again(obs: Observed, when: Period, paid: pd.DataFrame) -> np.ndarray:
    """The re-run part of each charge of `paid` (0 where none)."""
    again = _charges("rework")(obs, when).set_index("source_id")["value"]
    return again.reindex(paid["source_id"].astype(object)).fillna(0).to_numpy("float64")


_ROWS: dict[str, Reader] = {
    **INPUTS,
    **RATES,
    **COUNTS,
    **{f"rework_{cause}": _rework_cause(cause) for cause in CAUSES},
    "rework_share": _rework_share,
    "new_credits": _new_credits,
    "chapters_finished": _finished,
    "runs_failed": _failed("failed"),
    "runs_stalled": _failed("stalled"),
    "credits": _charges("credits"),
    "rework_credits": _charges("rework"),
    "lines": _lines,
    "open_lines": _open_lines,
    "needs_action": _needs_action,
}

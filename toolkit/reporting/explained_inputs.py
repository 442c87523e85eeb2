"""The rows behind the figures that are not sums: run times, the forecast, review lags.

A median, a mean, a longest, a pace or a finish is not the sum of its rows; its rows are
its inputs, and `tk.explain` says how they make it (`explanations.HOW`): each row's
`counts` says whether the figure is taken over it, and `explanations.recount` takes it
(docs/figures.md, "Figures that are not sums"). Each reader reads the analysis that
counts the figure, never counts it a second way:

- run times (`median_cycle_hours`, `mean_cycle_hours`, `longest_cycle_hours`): each run
  that finished in the period, as `cycle_times` gives it, its hours as `value`;
- the forecast's figures: each chapter as `tk.analysis.forecast(by="chapter_id")` sees
  it at the period's last snapshot. A project's figure is made of its chapters' the
  way the forecast makes a group's from its parts (a finish is the latest, the pace the
  mean of the chapters', `bins` the fewest samples behind one, lines and chapters are
  summed); a moment's row holds the chapter's own moment in `finished_at` and its hours
  after the snapshot as `value`;
- `review_lag_hours`: each review seen by the period's last snapshot (`review_lags`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, cast

import pandas as pd

from toolkit.analysis import STALL_AFTER, cycle_times, forecast
from toolkit.analysis.accuracy import EVERY, HORIZON, replay_scores
from toolkit.analysis.forecast import FREQ, WINDOW, seen_at, window_positions
from toolkit.analysis.observed import stacked
from toolkit.analysis.review import review_lags
from toolkit.analysis.work import Model, learn, pace_samples
from toolkit.formatting import count

if TYPE_CHECKING:
    from toolkit.analysis.observed import Observed
    from toolkit.reporting.figures import Period

__all__ = ["INPUTS"]

Reader = Callable[["Observed", "Period"], pd.DataFrame]


def _runs(obs: Observed, when: Period) -> pd.DataFrame:
    """Each run that finished in the period, its time from start to finish as `value`."""
    runs = cycle_times(obs, since=when.since, until=when.until)
    return pd.DataFrame(
        {
            "project_id": runs["project_id"], "project": runs["project"],
            "chapter_id": runs["chapter_id"], "chapter": runs["chapter"], "source": "run",
            "source_id": runs["run_id"], "at": runs["finished_at"],
            "started_at": runs["started_at"], "finished_at": runs["finished_at"],
            "detail": runs["kind"].astype(str) + " run",
            "value": runs["hours"].astype("Float64"), "counts": True,
        }
    )  # fmt: skip


def _chapters(obs: Observed, when: Period) -> pd.DataFrame:
    """The forecast by chapter at the period's last snapshot."""
    assert when.end is not None  # has_data
    return forecast(obs, by="chapter_id", until=when.end)


def _detail(outlook: pd.DataFrame) -> pd.Series:
    """Each chapter's forecast in words: its lines left, its pace and its samples."""
    said = []
    for left, pace, bins, status, band in zip(
        outlook["remaining_lines"], outlook["lines_per_hour"], outlook["bins"],
        outlook["status"], outlook["band"], strict=True,
    ):  # fmt: skip
        words = ["lines left unknown" if pd.isna(left) else f"{int(left):,} lines left"]
        if not pd.isna(pace):
            words.append(f"pace {pace:.1f} lines an hour")
        if not pd.isna(bins):
            words.append(f"from {count(int(bins), 'pace sample')}")
        words.append(str(status))
        if not pd.isna(band):
            words.append(f"band {band}")
        said.append("; ".join(words))
    return pd.Series(said, index=outlook.index, dtype=object)


def _hours(spans: pd.Series) -> pd.Series:
    """Time spans in hours (null where either end is unknown)."""
    hours: pd.Series = (spans.dt.total_seconds() / 3600).astype("Float64")
    return hours


def _outlook(column: str) -> Reader:
    def rows(obs: Observed, when: Period) -> pd.DataFrame:
        """One row per chapter the forecast's figure is made of (`column` of the forecast
        by chapter): those that go on by themselves, or those that wait for a person for
        `needs_action_lines`."""
        outlook = _chapters(obs, when)
        waiting = column == "needs_action_lines"
        outlook = outlook[(outlook["needs_action" if waiting else "open_chapters"] > 0)
                          .fillna(False).to_numpy(bool)]  # fmt: skip
        detail = _detail(outlook)
        moment = pd.Series(pd.NaT, index=outlook.index, dtype=outlook["as_of"].dtype)
        if column in ("finish_p10", "finish_p50", "finish_p90", "reviewed_p50"):
            moment = outlook[column]
            value = _hours(moment - outlook["as_of"])
        elif column == "open_chapters":
            value = pd.Series(1, index=outlook.index)
        else:
            value = outlook[column].astype("Float64")
        if column == "reviewed_p50":
            lag = _hours(outlook["reviewed_p50"] - outlook["finish_p50"])
            detail = detail + "; review lag " + lag.map(
                lambda h: "unknown (no review seen)" if pd.isna(h) else f"{h:.1f} h")  # fmt: skip
        if waiting:
            detail = outlook["needs_action_reason"].astype(object)
        # A chapter the forecast could not run forward (no language to time) has no
        # pace samples and takes no part in its project's finish, pace or samples.
        counted = outlook["bins"].notna() | (column in ("open_chapters", "remaining_lines",
                                                        "needs_action_lines"))  # fmt: skip
        if column == "lines_per_hour":
            counted &= outlook["lines_per_hour"].notna()
        found = pd.DataFrame(
            {
                "project_id": outlook["project_id"], "project": outlook["project"],
                "chapter_id": outlook["chapter_id"], "chapter": outlook["chapter"],
                "source": "chapter", "source_id": outlook["chapter_id"],
                "at": outlook["as_of"], "finished_at": moment, "detail": detail,
                "value": value, "counts": counted.to_numpy(bool),
            }
        )  # fmt: skip
        if column in ("lines_per_hour", "bins"):
            found = stacked([found, _samples(obs, when, column)])
        if column in ("finish_p10", "finish_p50", "finish_p90", "hours_p50") and len(found):
            projects = set(found["project_id"].astype(object))
            found = stacked([found, _tails(obs, when, projects)])
        return found

    return rows


def _samples(obs: Observed, when: Period, column: str) -> pd.DataFrame:
    """The pace samples the forecast learned from (`work.pace_samples` over its window),
    listed beside the chapters and not counted: a chapter's pace and samples are drawn
    from its project's samples (its kind's or everyone's where its project has fewer
    than three), so the samples are the inputs, not parts, of the figure. `value`: the
    sample's lines an hour for the pace, 1 for the samples."""
    assert when.end is not None
    first, last = window_positions(obs, when.end, WINDOW)
    found = pace_samples(obs, first=first, last=last, freq=FREQ, tz=None)
    found = found[(found["hours"] > 0).to_numpy(bool)]
    pace = found["lines"] / found["hours"]
    kind = found["whole_runs"].map({True: "a whole first run", False: "an interval"})
    detail = [
        f"pace sample of the {bin_:%d %b} bin, {k}: {lines:,.0f} lines in {hours:.2f} h"
        for bin_, k, lines, hours in zip(found["bin"], kind, found["lines"], found["hours"],
                                          strict=True)
    ]  # fmt: skip
    return pd.DataFrame(
        {
            "project_id": found["project_id"], "chapter_id": found["chapter_id"],
            "source": "pace sample",
            "source_id": pd.Series([f"{c}@{b:%Y-%m-%d}" for c, b in zip(
                found["chapter_id"], found["bin"], strict=True)], index=found.index, dtype=object),
            "at": found["bin"], "detail": pd.Series(detail, index=found.index, dtype=object),
            "value": pace.astype("Float64") if column == "lines_per_hour" else 1,
            "counts": False,
        }
    )  # fmt: skip


def _waiting_work(column: str) -> Reader:
    def rows(obs: Observed, when: Period) -> pd.DataFrame:
        """The work a person would unblock, by chapter: for the credits to finish, each
        chapter waiting for a person and its credits (summed); for a finish if unblocked
        now, those chapters' finish were they started now and the open chapters' own
        finish (the latest of both, as the forecast takes it). A project with nothing
        waiting has no such finish: none of its rows counts."""
        outlook = _chapters(obs, when)
        waiting = (outlook["needs_action"] > 0).fillna(False).to_numpy(bool)
        going = (outlook["open_chapters"] > 0).fillna(False).to_numpy(bool)
        credits = column.startswith("credits_to_finish")
        outlook = outlook[waiting | (going & (not credits))]
        waits = (outlook["needs_action"] > 0).fillna(False)
        detail = outlook["needs_action_reason"].astype(object).where(waits, _detail(outlook))
        value: pd.Series
        moment = pd.Series(pd.NaT, index=outlook.index, dtype=outlook["as_of"].dtype)
        if credits:
            value = outlook[column].astype("Float64")
            counted = waits
        else:
            quantile = column.removeprefix("unblocked_")
            moment = outlook[column].where(waits, outlook[f"finish_{quantile}"])
            value = _hours(moment - outlook["as_of"])
            blocked = set(outlook.loc[waits.to_numpy(bool), "project_id"].astype(object))
            counted = (waits | outlook["bins"].notna()) & outlook["project_id"].astype(object).isin(
                blocked
            )
            detail = detail.where(~waits, "if started now: " + detail.astype(str))
        return pd.DataFrame(
            {
                "project_id": outlook["project_id"], "project": outlook["project"],
                "chapter_id": outlook["chapter_id"], "chapter": outlook["chapter"],
                "source": "chapter", "source_id": outlook["chapter_id"],
                "at": outlook["as_of"], "started_at": outlook["waiting_since"],
                "finished_at": moment, "detail": detail, "value": value,
                "counts": counted.to_numpy(bool),
            }
        )  # fmt: skip

    return rows


def _tails(obs: Observed, when: Period, projects: set[object]) -> pd.DataFrame:
    """Per project of `projects`, the tail allowance its finishes add after the last line
    (`work.Model.tail` of its kind and steps, learned as the forecast learns it), in
    words, not counted: one row each, `source` `tail`."""
    assert when.end is not None
    # The finish's figures (p10, p50, p90, hours) each list the tails of one moment:
    # learned once per view and moment (learning reads every pace sample).
    key = repr(("tails", when.end))
    if key not in obs.memo:
        seen = seen_at(obs, when.end, stall_after=pd.Timedelta(STALL_AFTER))
        first, last = window_positions(obs, when.end, WINDOW)
        model = learn(obs, seen.projects, first=first, last=last, freq=FREQ, tz=None)
        obs.memo[key] = (seen.projects, model)
    seen_projects, model = cast("tuple[pd.DataFrame, Model]", obs.memo[key])
    rows = []
    for project in seen_projects.itertuples(index=False):
        if project.project_id not in projects:
            continue
        kind, steps = str(project.kind or ""), str(project.process_steps or "")
        tail = model.tail(kind, steps)
        if tail is None:
            said = "no run has finished in the history: nothing bounds the tail, the p90 is open"
        else:
            said = (
                f"after the last line: {tail.per_page:.3f} h a page, {tail.per_page_language:.3f}"
                f" h a page and language, {tail.per_language:.3f} h a language (packaging); "
                f"p10 to p90 {tail.low:+.2f} to {tail.high:+.2f} h; from {tail.runs} finished "
                f"runs{' of the whole workspace (pooled)' if tail.pooled else ''}"
            )
        rows.append({"project_id": project.project_id, "source": "tail",
                     "source_id": f"{kind}/{steps}", "at": when.end,
                     "detail": f"tail allowance of {kind} with {steps} steps, {said}",
                     "counts": False})  # fmt: skip
    return pd.DataFrame(rows, columns=["project_id", "source", "source_id", "at", "detail",
                                       "counts"])  # fmt: skip


def _replays(column: str) -> Reader:
    def rows(obs: Observed, when: Period) -> pd.DataFrame:
        """Each replay of the forecast inside the period whose outcome is known, per
        project, as the weekly page's track record scores it: 1 a replay; 1 if its
        true finish fell inside p10-p90 (1 or 0 over 1 for the share)."""
        scores = replay_scores(obs, by="project_id", horizon=HORIZON, every=EVERY,
                               window=WINDOW, freq=FREQ, stall_after=STALL_AFTER,
                               since=when.since, until=when.until, tz=when.tz)  # fmt: skip
        hit = scores["hit"].astype("int64")
        said = [
            f"replayed at {as_of:%d %b %H:%M}: p10 {p10:%d %b %H:%M}, p50 {p50:%d %b %H:%M}, "
            f"p90 {'open' if pd.isna(p90) else f'{p90:%d %b %H:%M}'}; "
            + ("not done by the horizon, past the p90" if pd.isna(finish)
               else f"finished {finish:%d %b %H:%M}, {'inside' if h else 'outside'} the band")
            for as_of, p10, p50, p90, finish, h in zip(
                scores["as_of"], scores["finish_p10"], scores["finish_p50"],
                scores["finish_p90"], scores["finish"], hit, strict=True)
        ]  # fmt: skip
        found = pd.DataFrame(
            {
                "project_id": scores["project_id"].astype(object), "source": "replay",
                "source_id": pd.Series([f"{p}@{a:%Y-%m-%dT%H:%MZ}" for p, a in zip(
                    scores["project_id"], scores["as_of"], strict=True)], index=scores.index,
                    dtype=object),
                "at": scores["as_of"], "finished_at": scores["finish"],
                "detail": pd.Series(said, index=scores.index, dtype=object),
                "value": 1 if column == "replays" else hit,
                "denominator": 1 if column == "inside_share" else None,
            }
        )  # fmt: skip
        return found if column != "inside" else found[hit.to_numpy(bool)]

    return rows


def _open_work(obs: Observed, when: Period) -> pd.DataFrame:
    """Every chapter-language's untranslated lines at the last snapshot, those waiting
    for a person included (the burn-down's last point)."""
    assert when.end is not None
    seen = seen_at(obs, when.end, stall_after=pd.Timedelta(STALL_AFTER))
    projects = pd.Series(
        seen.chapters["project_id"].astype(object).to_numpy(),
        index=seen.chapters["chapter_id"].astype(object),
    )
    langs = seen.languages
    left = langs["untranslated"].fillna(0).astype("int64")
    rows = langs[(left != 0).to_numpy(bool)]
    reasons = {str(k): str(v) for k, v in seen.reasons.items()}
    detail = [
        f"waits for a person: {reasons[str(c)]}" if str(c) in reasons else f"status {status}"
        for c, status in zip(rows["chapter_id"], rows["status"], strict=True)
    ]
    return pd.DataFrame(
        {
            "project_id": rows["chapter_id"].astype(object).map(projects),
            "chapter_id": rows["chapter_id"], "language_code": rows["language_code"],
            "source": "chapter",
            "source_id": rows["chapter_id"].astype(str) + "/" + rows["language_code"].astype(str),
            "at": when.end,
            "detail": pd.Series(detail, index=rows.index, dtype=object),
            "value": left[rows.index], "counts": True,
        }
    )  # fmt: skip


def _review_lags(obs: Observed, when: Period) -> pd.DataFrame:
    """Each review seen by the last snapshot: from ready to reviewed, in hours."""
    assert when.end is not None
    lags = review_lags(obs, when.end)
    return pd.DataFrame(
        {
            "project_id": lags["project_id"], "chapter_id": lags["chapter_id"],
            "source": "chapter", "source_id": lags["chapter_id"], "at": lags["reviewed_at"],
            "started_at": lags["ready_at"], "finished_at": lags["reviewed_at"],
            "detail": "ready seen by its " + lags["source"].astype(str),
            "value": lags["hours"].astype("Float64"), "counts": True,
        }
    )  # fmt: skip


# Each figure that is not a sum of the headline kind, and its reader.
_FORECAST = ("open_chapters", "needs_action_lines", "lines_per_hour", "bins", "finish_p10",
             "finish_p50", "finish_p90", "hours_p50", "reviewed_p50")  # fmt: skip
INPUTS: dict[str, Reader] = {
    "median_cycle_hours": _runs,
    "mean_cycle_hours": _runs,
    "longest_cycle_hours": _runs,
    **{name: _outlook(name) for name in _FORECAST},
    "open_work_lines": _open_work,
    **{name: _replays(name) for name in ("replays", "inside", "inside_share")},
    **{
        name: _waiting_work(name)
        for name in (
            "unblocked_p10",
            "unblocked_p50",
            "unblocked_p90",
            "credits_to_finish",
            "credits_to_finish_p10",
            "credits_to_finish_p90",
        )
    },
    "review_lag_hours": _review_lags,
}

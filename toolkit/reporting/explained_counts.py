"""The rows behind the counts at a moment and over a month: where chapters stand, the
lines on record, the review backlog, lead times and this month's spend.

Each reader reads the analysis that counts its figure, at the period's last snapshot
(`chapters`, `lines_to_date`, the review backlog) or over the period (lead times), or
over the calendar month of that snapshot (`this_month` and the others of
`analysis.monthly_spend`):

- `chapters`: each chapter at the last snapshot (value 1, its state in `detail`);
- `lines_to_date`: each chapter-language's covered lines at the last snapshot (the
  running total's last point: a re-scan took its chapter's away);
- `needs_review`, `oldest_wait_hours`: each chapter waiting for review, the second
  with its wait as `value` (the largest is the figure);
- `reviews_per_day`: each review of the span (value 1) and one `period` row per
  project holding the span in days as `denominator`: the figure is their ratio;
- `lead_hours_p50`, `lead_hours_p90`: each chapter that became reviewable in the
  period, its time from upload as `value` (the median, the 90th percentile);
- the month's spend: each charge at its own time (`analysis.charges`); `change` is this
  month's charges less last month's, so its rows of last month are negative.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Final, cast

import pandas as pd

from toolkit.analysis import charges, lead_times
from toolkit.analysis.monthly import month_starts
from toolkit.analysis.observed import stacked
from toolkit.analysis.review import (
    reviews_seen,
    span_days,
    waiting_for_review,
)
from toolkit.formatting import as_texts, count

if TYPE_CHECKING:
    from toolkit.analysis.observed import Observed
    from toolkit.reporting.figures import Period

__all__ = ["COUNTS"]

Reader = Callable[["Observed", "Period"], pd.DataFrame]


def _end(when: Period) -> pd.Timestamp:
    assert when.end is not None  # has_data
    return when.end


def _chapters(obs: Observed, when: Period) -> pd.DataFrame:
    """Each chapter at the period's last snapshot, its state in words."""
    end = _end(when)
    found = obs.at("chapters", end)
    ids = found["chapter_id"].astype(object)
    return pd.DataFrame(
        {
            "project_id": found["project_id"], "chapter_id": ids, "source": "chapter",
            "source_id": ids, "at": end,
            "detail": "state " + found["state"].astype(str).str.replace("_", " "),
            "value": 1,
        }
    )  # fmt: skip


def _lines_to_date(obs: Observed, when: Period) -> pd.DataFrame:
    """Each chapter-language's covered lines at the period's last snapshot."""
    end = _end(when)
    found = obs.at("languages", end)
    found = found[(found["covered"].fillna(0) != 0).to_numpy(bool)]
    ids = found["chapter_id"].astype(str)
    return pd.DataFrame(
        {
            "project_id": found["project_id"], "chapter_id": found["chapter_id"],
            "language_code": found["language_code"], "source": "snapshot",
            "source_id": ids + "/" + found["language_code"].astype(str), "at": end,
            "detail": "lines covered at the snapshot, status " + found["status"].astype(str),
            "value": found["covered"].astype("int64"),
        }
    )  # fmt: skip


def _window(when: Period) -> pd.Timedelta:
    """The span the weekly page counts reviews per day over: the period in whole days."""
    return (when.until - when.since).ceil("D")


def _waiting(column: str) -> Reader:
    def read(obs: Observed, when: Period) -> pd.DataFrame:
        """Each chapter waiting for review at the last snapshot: 1, or its wait."""
        rows = _waiting_rows(obs, _end(when))
        return rows.assign(value=1) if column == "needs_review" else rows.copy()

    return read


def _waiting_rows(obs: Observed, end: pd.Timestamp) -> pd.DataFrame:
    """`_waiting`'s rows with each wait as the value: made once per view and moment for
    both figures (their details say each chapter's time, 0.2 s at 100,000 chapters);
    callers copy them."""
    key = f"waiting_rows:{end.isoformat()}"
    if key not in obs.memo:
        found = waiting_for_review(obs, end)
        ids = found["chapter_id"].astype(object)
        obs.memo[key] = pd.DataFrame(
            {
                "project_id": found["project_id"], "chapter_id": ids, "source": "chapter",
                "source_id": ids, "at": end, "started_at": found["since"],
                "detail": "waiting for review since " + as_texts(found["since"]),
                "value": found["wait_hours"].astype("float64"),
            }
        )  # fmt: skip
    return cast(pd.DataFrame, obs.memo[key])


def _reviews(obs: Observed, when: Period) -> pd.DataFrame:
    """Each review of the span before the last snapshot (1 over 0), and per project of
    the backlog the span itself (0 over its days)."""
    end = _end(when)
    reviewed, span = reviews_seen(obs, end, _window(when))
    waiting = waiting_for_review(obs, end)
    projects = sorted({*map(str, reviewed["project_id"].unique()),
                       *map(str, waiting["project_id"].unique())})  # fmt: skip
    ids = reviewed["chapter_id"].astype(object)
    reviews = pd.DataFrame(
        {
            "project_id": reviewed["project_id"].astype(object), "chapter_id": ids,
            "source": "chapter", "source_id": ids, "at": reviewed["at"],
            "finished_at": reviewed["at"], "detail": "reviewed", "value": 1,
            "denominator": 0.0,
        }
    )  # fmt: skip
    start = end - span
    spans = pd.DataFrame(
        {
            "project_id": projects, "source": "period",
            "source_id": f"{start.isoformat()}/{end.isoformat()}", "at": end,
            "started_at": start, "finished_at": end,
            "detail": f"the span reviews are counted over: {span_days(span):g} days",
            "value": 0, "denominator": span_days(span),
        }
    )  # fmt: skip
    return pd.concat([reviews, spans], ignore_index=True)


def _leads(obs: Observed, when: Period) -> pd.DataFrame:
    """Each chapter that became reviewable in the period: from upload to then."""
    found = lead_times(obs, since=when.since, until=when.until)
    runs = found["runs"].astype("int64")
    failed = found["failed_runs"].astype("int64")
    return pd.DataFrame(
        {
            "project_id": found["project_id"], "project": found["project"],
            "chapter_id": found["chapter_id"], "chapter": found["chapter"],
            "source": "chapter", "source_id": found["chapter_id"],
            "at": found["reviewable_at"], "started_at": found["uploaded_at"],
            "finished_at": found["reviewable_at"],
            "detail": pd.Series([f"{count(r, 'run')}, {f} failed or stalled" for r, f in zip(
                                 runs, failed, strict=True)], index=found.index, dtype=object),
            "value": found["hours"].astype("Float64"),
        }
    )  # fmt: skip


def _month(column: str) -> Reader:
    def read(obs: Observed, when: Period) -> pd.DataFrame:
        """Each charge of the month of the last snapshot (in the period's zone), or of
        the month before; `change` takes both, last month's negative."""
        end = _end(when).tz_convert(when.tz)
        this_start, last_start = month_starts(end)
        found = charges(obs)
        times = found["charged_at"].dt.tz_convert(when.tz)
        this = ((times >= this_start) & (times <= end)).to_numpy(bool)
        last = ((times >= last_start) & (times < this_start)).to_numpy(bool)
        sign = pd.Series(0.0, index=found.index)
        if column in ("this_month", "this_month_rework", "change"):
            sign[this] = 1.0
        if column in ("last_month", "last_month_rework"):
            sign[last] = 1.0
        if column == "change":
            sign[last] = -1.0
        measure = "rework_credits" if column.endswith("_rework") else "credits"
        value = found[measure].astype("float64") * sign
        keep = (value != 0).to_numpy(bool)
        found, value = found[keep], value[keep]
        month = pd.Series(
            [f"{this_start:%Y-%m}" if v else f"{last_start:%Y-%m}" for v in this[keep]],
            index=found.index,
            dtype=object,
        )
        rows = pd.DataFrame(
            {
                "project_id": found["project_id"], "chapter_id": found["chapter_id"],
                "source": "charge",
                "source_id": found["chapter_id"].astype(str) + "@"
                + found["charged_at"].dt.strftime("%Y-%m-%dT%H:%M:%SZ"),
                "at": found["charged_at"], "started_at": found["charged_at"],
                "detail": "paid in " + month + " (" + found["source"].astype(str)
                + ": seen at " + found["seen_at"].dt.strftime("%Y-%m-%d %H:%M") + " UTC)",
                "value": value,
            }
        )  # fmt: skip
        # Last month with no snapshot after the store's first has no data: its figures
        # and the change are unknown, not 0 (`monthly_spend`), and a row says so.
        counted = obs.manifest["snapshot_at"].iloc[1:].dt.tz_convert(when.tz)
        if (
            column in ("last_month", "last_month_rework", "change")
            and not ((counted >= last_start) & (counted < this_start)).any()
        ):
            unknown = pd.DataFrame(
                {"source": ["period"], "source_id": [f"{last_start:%Y-%m}"], "at": [this_start],
                 "detail": [f"no snapshot in {last_start:%Y-%m} after the store's first: "
                            "last month's spend is unknown"], "value": [pd.NA]}
            )  # fmt: skip
            rows = stacked([rows, unknown])
        return rows

    return read


COUNTS: Final[dict[str, Reader]] = {
    "chapters": _chapters,
    "lines_to_date": _lines_to_date,
    "needs_review": _waiting("needs_review"),
    "oldest_wait_hours": _waiting("oldest_wait_hours"),
    "reviews_per_day": _reviews,
    "lead_hours_p50": _leads,
    "lead_hours_p90": _leads,
    **{name: _month(name) for name in ("this_month", "last_month", "change",
                                       "this_month_rework", "last_month_rework")},
}  # fmt: skip

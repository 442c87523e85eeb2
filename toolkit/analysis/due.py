"""Due dates against a forecast: will a project's open work finish by its date?

`forecast(store, due={"Moonlit Harbor": "2026-12-20"})` adds, for each project named
(by name or id): `due` (the date), `will_miss` (the p50 finish is after the due date's
end), and how late the p50 and p90 finishes are in hours (`late_hours_p50`,
`late_hours_p90`; 0 when in time, null when that finish is unknown). A due date means
the end of that day, in the forecast's zone (UTC unless `tz` is given). A project with
no open work is not in the forecast, so it cannot miss its date.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date

import pandas as pd

__all__ = ["with_due"]

_DUE_COLUMNS = ["due", "will_miss", "late_hours_p50", "late_hours_p90"]


def _deadline(day: date, tz: str | None = None) -> pd.Timestamp:
    """The moment a due date ends: midnight after it, in `tz` (UTC by default)."""
    return pd.Timestamp(day).tz_localize(tz or "UTC") + pd.Timedelta(days=1)


def with_due(
    frame: pd.DataFrame, due: Mapping[str, date | str], *, tz: str | None = None
) -> pd.DataFrame:
    """`frame` (a forecast by project) with the due-date columns; rows of projects with
    no due date have them null."""
    dates = {key: value if isinstance(value, date) else date.fromisoformat(value)
             for key, value in due.items()}  # fmt: skip
    if "project_id" not in frame.columns:
        raise ValueError("due dates are per project: forecast with by='project_id'")
    names = frame["project"] if "project" in frame.columns else frame["project_id"]
    found = [dates.get(str(pid), dates.get(str(name))) for pid, name in
             zip(frame["project_id"], names, strict=True)]  # fmt: skip
    ends = pd.Series([_deadline(day, tz) if day else pd.NaT for day in found], index=frame.index)
    ends = pd.to_datetime(ends, utc=True)
    out = frame.copy()
    out["due"] = pd.Series(found, index=frame.index, dtype="object")
    for level in ("p50", "p90"):
        late = (frame[f"finish_{level}"] - ends).dt.total_seconds() / 3600
        out[f"late_hours_{level}"] = late.clip(lower=0).astype("Float64")
    has_due = ends.notna()
    miss = (frame["finish_p50"] > ends).astype("boolean")
    out["will_miss"] = miss.mask(~has_due | frame["finish_p50"].isna(), pd.NA)
    return out[[*frame.columns, *_DUE_COLUMNS]]

"""Re-run credits put down to a cause: after a stall, after a failure, or a plain re-scan.

Decision (docs/weekly-report.md): rework is put down to a cause per chapter and day:
the kind of the chapter's latest failure seen by the end of the day (in the period's
zone) the re-run was paid (`stalled` or `failed`, as `analysis.failures` tells them); a
re-run of a chapter that had not failed is `rescan`. The weekly page sums it per
project (`rework_causes`); `tk.explain` puts each re-run charge down to its cause by
the same rule (`causes_of`), so the two agree charge by charge.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

import pandas as pd

from toolkit import analysis
from toolkit.frames.schema import TEXT_DTYPE, TIME_DTYPE

if TYPE_CHECKING:
    from toolkit.analysis.observed import Observed
    from toolkit.reporting.figures import Period

__all__ = ["CAUSES", "CAUSE_WORDS", "causes_of", "rework_causes"]

CAUSES: Final = ("stalled", "failed", "rescan")
CAUSE_WORDS: Final = {
    "stalled": "after stalls",
    "failed": "after failures",
    "rescan": "as plain re-scans",
}
_DAY = pd.Timedelta(days=1)

# Each chapter's project, as its last change shows it, for chapters the latest snapshot
# no longer holds (deleted since): those alone, from the chapters' log.
_PROJECT_OF_CHAPTER = """
SELECT chapter_id, arg_max(project_id, idx) AS project_id FROM chapters_changes
WHERE chapter_id IN (SELECT chapter_id FROM _gone) GROUP BY chapter_id
"""


def rework_causes(obs: Observed, when: Period) -> pd.DataFrame:
    """Per project: `rework_<cause>` credits for each cause in `CAUSES`, from each
    chapter's re-run credits of each day of the period (`analysis.credit_spend`)."""
    columns = [f"rework_{cause}" for cause in CAUSES]
    spend = analysis.credit_spend(obs, freq="1D", by="chapter_id", since=when.since,
                                  until=when.until, tz=when.tz)  # fmt: skip
    spend = spend[spend["rework_credits"] > 0]
    if spend.empty:
        return pd.DataFrame(columns=columns, dtype="float64")
    spend = spend.merge(_projects_of(obs, spend["chapter_id"]), on="chapter_id", how="left")
    spend["cause"] = causes_of(obs, spend["chapter_id"], spend["period"] + _DAY)
    table = spend.pivot_table(
        index="project_id", columns="cause", values="rework_credits", aggfunc="sum"
    )
    table = table.reindex(columns=list(CAUSES)).fillna(0)
    table.columns = columns
    return table


def _projects_of(obs: Observed, chapters: pd.Series) -> pd.DataFrame:
    """`chapter_id, project_id` of `chapters`, each project as the chapter's last change
    shows it: the row the latest snapshot holds (its last change), and for a chapter
    deleted since, its last row in the log. Reading the whole log for every chapter's
    last row was a second of the weekly page at 100,000 chapters x a year."""
    wanted = pd.Index(chapters.dropna().unique())
    latest = obs.latest_chapters
    held = latest.loc[latest["chapter_id"].isin(wanted), ["chapter_id", "project_id"]]
    gone = wanted.difference(pd.Index(held["chapter_id"]))
    if len(gone):
        frame = pd.DataFrame({"chapter_id": pd.Series(gone, dtype=TEXT_DTYPE)})
        logged = obs.store.query(_PROJECT_OF_CHAPTER, frames={"_gone": frame})
        held = pd.concat([held, logged], ignore_index=True)
    return held.astype({"chapter_id": chapters.dtype, "project_id": TEXT_DTYPE})


def day_ends(times: pd.Series, tz: str) -> pd.Series:
    """The end of each time's day in `tz` (its next midnight), in UTC."""
    local = pd.to_datetime(times, utc=True).dt.tz_convert(tz)
    return (local.dt.floor("D", ambiguous=True, nonexistent="shift_forward") + _DAY).dt.tz_convert(
        "UTC"
    )


def causes_of(obs: Observed, chapters: pd.Series, ends: pd.Series) -> pd.Series:
    """Per re-run (its chapter and the end of the day it was paid): the kind of the
    chapter's latest failure seen before that end (the last in `failures`' order, by
    `seen_at` and run), `rescan` where it had none."""
    failures = analysis.failures(obs)
    none = pd.Series(pd.NA, index=chapters.index, dtype=object)
    if failures.empty:  # (merge_asof refuses empty Arrow keys)
        return none.fillna("rescan")
    # Series, not arrays: an array of texts would be read back as pandas' text type,
    # which merge_asof will not match with the failures' object ids.
    rows = pd.DataFrame(
        {
            "chapter_id": chapters.astype(object),
            "end": pd.to_datetime(ends, utc=True).astype(TIME_DTYPE),
        }
    )
    rows["row"] = rows.index
    seen = pd.DataFrame(
        {
            "chapter_id": failures["chapter_id"].astype(object),
            "seen_at": failures["seen_at"].astype(TIME_DTYPE),
            "kind": failures["kind"].astype(object),
        }
    )
    found = pd.merge_asof(
        rows.sort_values("end", kind="stable"),
        seen.sort_values("seen_at", kind="stable"),
        left_on="end",
        right_on="seen_at",
        by="chapter_id",
        allow_exact_matches=False,
    )
    return none.fillna(found.set_index("row")["kind"]).fillna("rescan")

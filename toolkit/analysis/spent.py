"""Credits at the moment they were spent: the figure a budget's period and a calendar
month count.

```python
tk.analysis.charges(store)                             # one row per charge, with its time
tk.analysis.spend_in(store, since="2027-01-01", until="2027-02-01")   # per project
```

`credit_spend` puts each charge in the period of the snapshot that first showed it: for
a trend that is what the store saw. A budget's period asks when the money went: a run
is paid when it starts (DESIGN.md), and for a first run that moment is known exactly,
the chapter's creation (`runs`: `started_source` `created`); a charge at 23:50 on 31
January seen by the 00:30 snapshot is January's. No event tells when a re-scan, added
pages or held pages started: such a charge lies between the snapshot before and the one
that showed it, and counts at the later (the snapshot), so that a period's spend never
holds a charge the store could not have seen by its end.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

import numpy as np
import pandas as pd

from toolkit.analysis._arrays import NO_TIME, category_codes, moment_micros, taken, to_micros
from toolkit.analysis.calendar import utc_bound
from toolkit.analysis.observed import Observed, observe
from toolkit.analysis.run_table import RunTable
from toolkit.analysis.runs import transition_rows
from toolkit.analysis.workspaces import across
from toolkit.frames.schema import TEXT_DTYPE, TIME_DTYPE

if TYPE_CHECKING:
    from toolkit.store import SnapshotStore
    from toolkit.timestamps import When

__all__ = ["charges", "spend_in"]


@across
def charges(store: SnapshotStore | Observed) -> pd.DataFrame:
    """One row per charge the store saw after its first snapshot: `chapter_id,
    project_id, credits, rework_credits, charged_at, source` (`created`: a first run,
    paid at the chapter's creation; `snapshot`: paid before the snapshot that first
    showed it, at that snapshot's time) and `seen_at` (that snapshot)."""
    return _charges(observe(store)).copy()


def _charges(obs: Observed) -> pd.DataFrame:
    """`charges`, made once per view: `charges` answers a copy."""
    if "charges" not in obs.memo:
        obs.memo["charges"] = _charged(obs)
    return cast(pd.DataFrame, obs.memo["charges"])


@dataclass(frozen=True)
class _Paid:
    """The runs that paid, in the run table's order: the transition row that first showed
    each (`row`), its credits and rework credits, and when it was charged and seen (int64
    microseconds; `exact`: charged at its chapter's creation, a first run)."""

    row: np.ndarray
    credits: np.ndarray
    rework: np.ndarray
    charged: np.ndarray
    seen: np.ndarray
    exact: np.ndarray


def _paid(obs: Observed) -> _Paid:
    """`_Paid`, made once per view (a watch cycle's budgets ask six periods of it)."""
    if "paid" not in obs.memo:
        runs = obs.stage(RunTable)
        seen = to_micros(obs.manifest["snapshot_at"])[runs.seen_idx]
        exact = runs.from_creation.astype(bool) & (runs.started != NO_TIME)
        kept = (runs.seen_idx > 0) & (runs.credits > 0)
        obs.memo["paid"] = _Paid(
            runs.row[kept],
            runs.credits[kept].astype("float64"),
            runs.rework[kept].astype("float64"),
            np.where(exact, runs.started, seen)[kept],
            seen[kept],
            exact[kept],
        )
    return cast(_Paid, obs.memo["paid"])


def _rows(obs: Observed) -> pd.DataFrame:
    """The transition rows' ids a charge is named by (`transition_rows`: those two
    columns alone, before the stage is read; a watch cycle's budgets ask nothing else of
    it). Called only where a run paid: the store has rows."""
    return cast(pd.DataFrame, transition_rows(obs, ["chapter_id", "project_id"]))


def _charged(obs: Observed) -> pd.DataFrame:
    paid = _paid(obs)
    if not len(paid.row):
        return pd.DataFrame(
            {
                "chapter_id": pd.Series(dtype=TEXT_DTYPE),
                "project_id": pd.Series(dtype=TEXT_DTYPE),
                "credits": pd.Series(dtype="float64"),
                "rework_credits": pd.Series(dtype="float64"),
                "charged_at": pd.Series(dtype=TIME_DTYPE),
                "source": pd.Series(dtype=TEXT_DTYPE),
                "seen_at": pd.Series(dtype=TIME_DTYPE),
            }
        )
    rows = _rows(obs)
    frame = pd.DataFrame(
        {
            "chapter_id": taken(rows["chapter_id"], paid.row).astype(object).to_numpy(),
            "project_id": taken(rows["project_id"], paid.row).astype(object).to_numpy(),
            "credits": paid.credits,
            "rework_credits": paid.rework,
            "charged_at": pd.to_datetime(paid.charged, unit="us", utc=True).astype(TIME_DTYPE),
            "source": np.where(paid.exact, "created", "snapshot"),
            "seen_at": pd.to_datetime(paid.seen, unit="us", utc=True).astype(TIME_DTYPE),
        }
    )
    for column in ("chapter_id", "project_id", "source"):
        frame[column] = frame[column].astype(TEXT_DTYPE)
    return frame.sort_values(["charged_at", "chapter_id"], ignore_index=True)


def _in_charges_order(obs: Observed, paid: _Paid, at: np.ndarray) -> np.ndarray:
    """The positions `at` of `paid` in the order `charges` lists them (by the moment
    charged, then the chapter's id as text; equal ones as the runs come), with no id
    made a text: a sum adds in that order."""
    ids = _rows(obs)["chapter_id"]
    texts = ids.cat.categories.to_numpy(object)
    place = np.empty(len(texts) + 1, "int64")
    place[np.argsort(texts, kind="stable")] = np.arange(len(texts))
    place[-1] = len(texts)  # a null id (code -1) sorts last
    chapter = place[category_codes(ids)[paid.row[at]]]
    return at[np.lexsort((chapter, paid.charged[at]))]


@across
def spend_in(
    store: SnapshotStore | Observed,
    *,
    since: When | None = None,
    until: When | None = None,
    tz: str | None = None,
) -> pd.DataFrame:
    """Credits charged in [since, until) at each charge's own time (`charges`), per
    project: `project_id, project, credits, rework_credits` (projects with a charge
    only; a naive bound is read in `tz`). A budget's period and a calendar month ask
    this."""
    obs = observe(store)
    paid = _paid(obs)
    low, high = utc_bound(since, tz), utc_bound(until, tz)
    inside = np.ones(len(paid.row), bool)
    if low is not None:
        inside &= paid.charged >= moment_micros(low)
    if high is not None:
        inside &= paid.charged < moment_micros(high)
    # Only the period's charges are read (in `charges`' order, which the sums add in),
    # and only their project ids made texts.
    at = np.flatnonzero(inside)
    project_ids = np.zeros(0, object)
    if len(at):
        at = _in_charges_order(obs, paid, at)
        rows = _rows(obs)
        project_ids = taken(rows["project_id"], paid.row[at]).astype(object).to_numpy()
    found = pd.DataFrame(
        {
            "project_id": project_ids,
            "credits": paid.credits[at],
            "rework_credits": paid.rework[at],
        }
    )
    sums = found.groupby("project_id")[["credits", "rework_credits"]].sum()
    projects = obs.latest_projects
    names = dict(zip(projects["project_id"].astype(object), projects["name"], strict=True))
    out = sums.reset_index()
    out.insert(1, "project", out["project_id"].map(names))
    for column in ("project_id", "project"):
        out[column] = out[column].astype(TEXT_DTYPE)
    return out.sort_values("project_id", ignore_index=True)

"""Credits spent this month against last month, per workspace.

```python
tk.analysis.monthly_spend({"studio-a": store_a, "studio-b": store_b})
```
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import pandas as pd

from toolkit.analysis.observed import Observed
from toolkit.analysis.spent import charges
from toolkit.analysis.workspaces import labelled, stack, store_label
from toolkit.frames.schema import TEXT_DTYPE

if TYPE_CHECKING:
    from toolkit.store import SnapshotStore
    from toolkit.timestamps import When

__all__ = ["month_starts", "monthly_spend"]


def monthly_spend(
    stores: Mapping[str, SnapshotStore | Observed]
    | Sequence[SnapshotStore | Observed]
    | SnapshotStore
    | Observed,
    *,
    until: When | None = None,
    tz: str | None = None,
) -> pd.DataFrame:
    """Credits spent this month against last month, per workspace (and a total row):
    `workspace, month, previous_month, this_month, last_month, change,
    this_month_rework, last_month_rework`.

    Each charge counts in the month it was paid (`analysis.spent`): a first run at its
    chapter's creation, any other charge at the snapshot that first showed it.

    "This month" is the calendar month (in `tz`, UTC by default) of `until` (by default
    each store's latest snapshot, the latest of them for all); spend so far, so early in
    a month it reads low against a whole last month. A month in which a workspace has
    no snapshot after its first (the baseline) has no data: null, never 0, and so is the
    change and the total of a column with a null in it. A single store is labelled by
    its given or recorded workspace, else `default`.

    Args:
        stores: A store, or several (a mapping of label to store, or a list).
        until: A time in "this month"; by default each store's latest snapshot (the
            latest of them for the total).
        tz: The time zone a naive `since` or `until` is read in; UTC by default; also the
            zone of the calendar months.

    Returns:
        One row per workspace, and a total row.

    Raises:
        ValueError: No stores were given, or several share a workspace label.
    """
    several = labelled(stores) or {store_label(stores, default="default"): stores}  # type: ignore[arg-type]
    # Each charge at its own time (`spent`): a first run at its chapter's creation.
    frame = stack({name: charges(store) for name, store in several.items()})
    times = frame["charged_at"].dt.tz_convert(tz) if tz else frame["charged_at"]
    if until is not None:
        end = pd.Timestamp(until)
        end = end.tz_localize("UTC") if end.tzinfo is None else end
    else:
        latest = [_latest(store) for store in several.values()]
        end = max((t for t in latest if t is not None), default=pd.Timestamp.now("UTC"))
    end = end.tz_convert(tz) if tz else end.tz_convert("UTC")
    this_start, last_start = month_starts(end)
    this = (times >= this_start) & (times <= end)
    last = (times >= last_start) & (times < this_start)
    names = list(several)
    out = pd.DataFrame({"workspace": names})
    counted = {name: _counted(store, tz) for name, store in several.items()}
    months = (("this_month", this, this_start, end + pd.Timedelta(microseconds=1)),
              ("last_month", last, last_start, this_start))  # fmt: skip
    for column, mask, low, high in months:
        part = frame[mask]
        seen = out["workspace"].map(
            {name: bool(((t >= low) & (t < high)).any()) for name, t in counted.items()}
        )
        for measure, name in (("credits", column), ("rework_credits", f"{column}_rework")):
            values = out["workspace"].map(part.groupby("workspace")[measure].sum()).fillna(0)
            out[name] = values.astype("Float64").mask(~seen.to_numpy(bool))  # no data: null
    sums = {c: out[c].sum(skipna=False) for c in out.columns if c != "workspace"}
    out = pd.concat([out, pd.DataFrame([{"workspace": "(all workspaces)", **sums}])],
                    ignore_index=True)  # fmt: skip
    out["change"] = out["this_month"].astype("Float64") - out["last_month"].astype("Float64")
    out["workspace"] = out["workspace"].astype(TEXT_DTYPE)
    columns = ["this_month", "last_month", "change", "this_month_rework", "last_month_rework"]
    out[columns] = out[columns].astype("Float64")
    out["month"] = pd.array([f"{this_start:%Y-%m}"] * len(out), dtype=TEXT_DTYPE)
    out["previous_month"] = pd.array([f"{last_start:%Y-%m}"] * len(out), dtype=TEXT_DTYPE)
    return out[["workspace", "month", "previous_month", *columns]]


def month_starts(end: pd.Timestamp) -> tuple[pd.Timestamp, pd.Timestamp]:
    """The first moments of `end`'s calendar month and of the month before, in `end`'s
    zone: "this month" is [the first, `end`], "last month" [the second, the first)."""
    this_start = end.tz_localize(None).to_period("M").start_time.tz_localize(end.tz)
    last_start = (this_start.tz_localize(None) - pd.offsets.MonthBegin(1)).tz_localize(end.tz)
    return this_start, last_start


def _counted(store: SnapshotStore | Observed, tz: str | None) -> pd.Series:
    """The times of the snapshots whose changes count (all but the first), in `tz`."""
    manifest = store.manifest if isinstance(store, Observed) else store.snapshots()
    times = manifest["snapshot_at"].iloc[1:]
    return times.dt.tz_convert(tz) if tz else times


def _latest(store: SnapshotStore | Observed) -> pd.Timestamp | None:
    manifest = store.manifest if isinstance(store, Observed) else store.snapshots()
    return manifest["snapshot_at"].iloc[-1] if len(manifest) else None

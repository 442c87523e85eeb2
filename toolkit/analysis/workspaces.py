"""Several workspaces at once: an agency's stores read together, with a `workspace` column.

```python
stores = {"studio-a": tk.SnapshotStore("data/snapshots/studio-a"),
          "studio-b": tk.SnapshotStore("data/snapshots/studio-b")}
tk.analysis.credit_spend(stores, freq="1D")      # workspace, period, project_id, ...
tk.analysis.monthly_spend(stores)                # this month against last, per workspace
```

Every analysis function that takes a store also takes a mapping label -> store, or a
sequence of stores (`across` wraps them in `toolkit.analysis`): it runs on each store
and stacks the frames, with `workspace` first. A function that answers with a dict
(`price_per_page`) answers with one dict per workspace; `price_estimate` asks the
workspace that holds the project. In a sequence, a store's label is the one it was
given (`SnapshotStore(..., workspace=...)`), else the `workspace` its snapshots record,
else its folder's name.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

import pandas as pd

from toolkit.analysis.observed import Observed

if TYPE_CHECKING:
    from toolkit.store import SnapshotStore
    from toolkit.store.log import When

P = ParamSpec("P")
R = TypeVar("R")
TEXT = pd.StringDtype()


def label(store: SnapshotStore | Observed, *, default: str | None = None) -> str:
    """The workspace label of one store: the one given, else the one its snapshots
    record, else `default`, else (to tell several stores apart) its folder's name."""
    obs = store if isinstance(store, Observed) else None
    plain = store.store if isinstance(store, Observed) else store
    given = getattr(plain, "workspace_label", None)
    if isinstance(given, str) and given:
        return given
    manifest = obs.manifest if obs is not None else plain.snapshots()
    if "workspace" in manifest.columns:
        recorded = manifest["workspace"].dropna()
        if len(recorded):
            return str(recorded.iloc[-1])
    if default is not None:
        return default
    return os.path.basename(os.path.normpath(str(plain.root))) or str(plain.root)


def labelled(source: object) -> dict[str, Any] | None:
    """`source` as {label: store} when it names several workspaces; None for one store."""
    if isinstance(source, Mapping):
        if not source:
            raise ValueError("no workspaces given: pass a mapping of label -> store")
        return {str(name): store for name, store in source.items()}
    if isinstance(source, Sequence) and not isinstance(source, str | bytes | pd.DataFrame):
        stores = list(source)
        if not stores:
            raise ValueError("no workspaces given: pass a list of stores")
        names = [label(store) for store in stores]
        if len(set(names)) < len(names):
            raise ValueError(
                f"several stores share a workspace label ({', '.join(sorted(names))}); pass "
                "a mapping instead, e.g. {'studio-a': store_a, 'studio-b': store_b}"
            )
        return dict(zip(names, stores, strict=True))
    return None


def stack(results: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """Frames per workspace as one, with `workspace` first."""
    frames = [frame.assign(workspace=name) for name, frame in results.items()]
    combined = pd.concat(frames, ignore_index=True)
    combined["workspace"] = combined["workspace"].astype(TEXT)
    return combined[["workspace", *[c for c in combined.columns if c != "workspace"]]]


def across(function: Callable[P, R]) -> Callable[P, R]:
    """`function` (whose first parameter is a store) also taking several workspaces."""

    @functools.wraps(function)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        stores = labelled(args[0]) if args else None
        if stores is None:
            return function(*args, **kwargs)
        if function.__name__ == "price_estimate":
            return _price_estimate(function, stores, *args[1:], **kwargs)
        # P cannot say "the same arguments with another first one": checked by the tests.
        results = {name: function(store, *args[1:], **kwargs) for name, store in stores.items()}  # type: ignore[arg-type]
        if all(isinstance(result, pd.DataFrame) for result in results.values()):
            return stack(results)  # type: ignore[arg-type,return-value]
        return results  # type: ignore[return-value]

    return wrapper


def _price_estimate(
    function: Callable[..., R], stores: dict[str, Any], *args: Any, **kwargs: Any
) -> R:
    project_id = args[0] if args else kwargs.get("project_id")
    for store in stores.values():
        plain = store.store if isinstance(store, Observed) else store
        if project_id in set(plain.latest("projects")["project_id"]):
            return function(store, *args, **kwargs)
    raise ValueError(
        f"project {project_id!r} is in none of the workspaces {', '.join(stores)}; "
        "check the id, or take a snapshot of the workspace that holds it"
    )


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
        tz: The time zone of the calendar months and of a naive `until`; UTC by default.

    Returns:
        One row per workspace, and a total row.

    Raises:
        ValueError: No stores were given, or several share a workspace label.
    """
    from toolkit.analysis.measures import credit_spend  # the plain one, for one store

    several = labelled(stores) or {label(stores, default="default"): stores}  # type: ignore[arg-type]
    daily = {name: credit_spend(store, freq="1h") for name, store in several.items()}
    frame = stack(daily)
    times = frame["period"].dt.tz_convert(tz) if tz else frame["period"]
    if until is not None:
        end = pd.Timestamp(until)
        end = end.tz_localize("UTC") if end.tzinfo is None else end
    else:
        latest = [_latest(store) for store in several.values()]
        end = max((t for t in latest if t is not None), default=pd.Timestamp.now("UTC"))
    end = end.tz_convert(tz) if tz else end.tz_convert("UTC")
    this_start = end.tz_localize(None).to_period("M").start_time.tz_localize(end.tz)
    last_start = (this_start.tz_localize(None) - pd.offsets.MonthBegin(1)).tz_localize(end.tz)
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
    out["workspace"] = out["workspace"].astype(TEXT)
    columns = ["this_month", "last_month", "change", "this_month_rework", "last_month_rework"]
    out[columns] = out[columns].astype("Float64")
    out["month"] = pd.array([f"{this_start:%Y-%m}"] * len(out), dtype=TEXT)
    out["previous_month"] = pd.array([f"{last_start:%Y-%m}"] * len(out), dtype=TEXT)
    return out[["workspace", "month", "previous_month", *columns]]


def _counted(store: SnapshotStore | Observed, tz: str | None) -> pd.Series:
    """The times of the snapshots whose changes count (all but the first), in `tz`."""
    manifest = store.manifest if isinstance(store, Observed) else store.snapshots()
    times = manifest["snapshot_at"].iloc[1:]
    return times.dt.tz_convert(tz) if tz else times


def _latest(store: SnapshotStore | Observed) -> pd.Timestamp | None:
    manifest = store.manifest if isinstance(store, Observed) else store.snapshots()
    return manifest["snapshot_at"].iloc[-1] if len(manifest) else None

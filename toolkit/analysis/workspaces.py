"""Several workspaces at once: an agency's stores read together, with a `workspace` column.

```python
stores = {"studio-a": tk.SnapshotStore("data/snapshots/studio-a"),
          "studio-b": tk.SnapshotStore("data/snapshots/studio-b")}
tk.analysis.credit_spend(stores, freq="1D")      # workspace, period, project_id, ...
```

Every analysis function that takes a store also takes a mapping label -> store, or a
sequence of stores (`@across` where each is defined): it runs on each store
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
from toolkit.frames.schema import TEXT_DTYPE

if TYPE_CHECKING:
    from toolkit.store import SnapshotStore

__all__ = ["P", "R", "across", "labelled", "stack", "store_label"]

P = ParamSpec("P")
R = TypeVar("R")


def store_label(store: SnapshotStore | Observed, *, default: str | None = None) -> str:
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
        names = [store_label(store) for store in stores]
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
    combined["workspace"] = combined["workspace"].astype(TEXT_DTYPE)
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

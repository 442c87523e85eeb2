"""`toolkit store check`'s look at the stages a store keeps (`run_store`: the run
pipeline's and the review moves): each one kept for the store's present state is
compared, value for value, with the stage worked out again from the change log; one
that differs is a finding, and `--repair` deletes what the store keeps, so the next
figure works it out again."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pandas as pd

from toolkit.analysis.charges import Charges
from toolkit.analysis.observed import Observed
from toolkit.analysis.prices import Prices
from toolkit.analysis.review_moves import ReviewMoves
from toolkit.analysis.run_store import PART, Keeper, folder_of, forget, kept_as
from toolkit.analysis.run_table import RunTable
from toolkit.analysis.runs import RunFrame
from toolkit.analysis.transitions import Transitions
from toolkit.store import SnapshotStore
from toolkit.store.check import StoreFinding

__all__ = ["STAGES", "check_runs_kept", "stages_equal"]

# Every stage the store keeps: the run pipeline's, in its order, then the review moves.
STAGES: tuple[type, ...] = (Transitions, Prices, Charges, RunTable, RunFrame, ReviewMoves)


def check_runs_kept(root: str, *, repair: bool = False) -> list[StoreFinding]:
    """One finding per run stage the store keeps for its present state that differs
    from the stage worked out again from its snapshots (a file damaged or written by a
    toolkit with a fault); with `repair`, what the store keeps is deleted.

    Args:
        root: The store's folder (an object store keeps no stages: nothing to check).
        repair: Delete what the store keeps when a stage differs.

    Returns:
        The findings; empty when every stage kept equals its build, or none is kept.
    """
    store = SnapshotStore(root)
    folder = folder_of(store)
    if folder is None or not folder.is_dir():
        return []
    built = Observed(store, keep=False)
    keeper = Keeper(store, store.version())
    state = folder / keeper.state(built.manifest)
    if (state / f"{PART}.arrow").exists() and not keeper.keeps(built.manifest):
        # A part the update kept (`run_part`): joined with its base and kept whole, as
        # its first reader would; then compared as every kept stage is.
        Observed(store).stage(RunTable)
    findings = []
    for kind in STAGES:
        name = kept_as(kind) or kind.__name__
        path = state / f"{name}.arrow"
        if not path.exists():
            continue
        kept = keeper.load(kind, built.manifest)
        if kept is not None and stages_equal(kept, built.stage(kind)):
            continue
        what = "does not read" if kept is None else "differs from the snapshots"
        figures, stage = ("review", "moves") if kind is ReviewMoves else ("run", name)
        findings.append(
            StoreFinding(
                "runs", "_runs", str(path),
                f"the {figures} figures' {stage.replace('_', ' ')} kept for the present "
                f"snapshots {what}: every {figures} figure would read it",
                "deletes the kept run stages and review moves; the next figure works "
                "them out from the snapshots again",
                repairable=True,
            )
        )  # fmt: skip
    if repair and findings:
        forget(store)
        for finding in findings:
            finding.done = "deleted; the next figure works the runs out again"
    return findings


def stages_equal(left: Any, right: Any) -> bool:
    """Whether two stages hold the same values, dtypes and categories included (NaN
    equals NaN)."""
    if type(left) is not type(right):
        return False
    for f in dataclasses.fields(left):
        if not _equal(getattr(left, f.name), getattr(right, f.name)):
            return False
    return True


def _equal(a: Any, b: Any) -> bool:
    if isinstance(a, pd.DataFrame):
        return _frames_equal(a, b)
    if isinstance(a, np.ndarray):
        return _arrays_equal(a, b)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same_float(a[k], b[k]) for k in a)
    return bool(a == b)


def _frames_equal(a: pd.DataFrame, b: Any) -> bool:
    try:
        pd.testing.assert_frame_equal(a, b, check_exact=True, check_categorical=True)
    except AssertionError:
        return False
    return True


def _arrays_equal(a: np.ndarray, b: Any) -> bool:
    if not isinstance(b, np.ndarray) or a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.dtype == object:
        return bool([_text(x) for x in a] == [_text(x) for x in b])
    return bool(np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"))


def _text(value: Any) -> Any:
    return None if value is None or (isinstance(value, float) and np.isnan(value)) else value


def _same_float(a: float, b: float) -> bool:
    return a == b or (np.isnan(a) and np.isnan(b))

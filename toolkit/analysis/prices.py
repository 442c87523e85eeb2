"""The pipeline's second stage: the price of a page, learned from first runs.

A first run pays for every page of a chapter in each of its target languages, so its
charge over pages x languages is the price. Learned per project where it has two first
runs, else the workspace's (see `_learn_prices`); a novel is priced per chapter and has
no pages, so it learns nothing here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from toolkit.analysis._arrays import is_true, to_float
from toolkit.analysis.transitions import Transitions

if TYPE_CHECKING:
    from toolkit.analysis.observed import Observed

__all__ = ["Prices"]


@dataclass(frozen=True)
class Prices:
    """The learned price per page and language by project id (`None`: the workspace),
    and per transition row the price of one of its pages in all its chapter's languages
    (`per_page`, NaN where nothing was learned) and those languages (`languages`)."""

    learned: dict[str | None, float]
    languages: np.ndarray
    per_page: np.ndarray

    @classmethod
    def build(cls, obs: Observed) -> Prices:
        found = obs.stage(Transitions)
        if found.empty:
            return cls({}, np.zeros(0), np.zeros(0))
        return cls.priced(found, _learn_prices(found.rows, n_languages=found.languages()))

    @classmethod
    def priced(cls, found: Transitions, learned: dict[str | None, float]) -> Prices:
        """The rows of `found` priced by prices `learned` (over these rows, or over the
        whole history when `found` holds some chapters only: `run_extend`)."""
        rows = found.rows
        languages = found.languages()
        workspace_price = learned.get(None, np.nan)
        own = {k: v for k, v in learned.items() if k is not None}
        # By project code: a price per project, then one take for the rows.
        projects = rows["project_id"].cat
        price = np.array(
            [own.get(str(p), workspace_price) for p in projects.categories] + [workspace_price]
        )[projects.codes.to_numpy()]
        return cls(learned, languages, languages * price)


def _learn_prices(rows: pd.DataFrame, *, n_languages: np.ndarray) -> dict[str | None, float]:
    """The price per page and target language, per project id; `None`: the workspace.

    Learned from first charges seen after the baseline (a chapter that had not run
    before, paying for its pages): the most common credits / (pages x languages). A
    project's own price needs two first charges: one alone may hide a second run started
    between the same two snapshots, so a project with one uses the workspace's price.
    """
    credits, before = to_float(rows["credits_spent"]), to_float(rows["prev_credits"])
    pages = to_float(rows["page_count"])
    first = (
        (rows["idx"].to_numpy() > 0)
        & ~is_true(rows["deleted"])
        & ~is_true(rows["prev_started"])
        & (before == 0)
        & (credits > 0)
        & (pages > 0)
    )
    if not first.any():
        # No first run seen since the baseline: what chapters that ran had spent by then.
        first = (
            (rows["idx"].to_numpy() == 0) & is_true(rows["started"]) & (credits > 0) & (pages > 0)
        )
    if not first.any():
        return {}
    price = np.round(credits[first] / (pages[first] * n_languages[first]), 9)
    seen = pd.DataFrame({"project_id": rows["project_id"].to_numpy(object)[first], "price": price})
    workspace = _typical(seen.assign(project_id=""))[""]
    prices: dict[str | None, float] = {None: workspace}
    samples = seen["project_id"].value_counts().to_dict()
    for project, typical in _typical(seen).items():
        prices[str(project)] = typical if samples[project] >= 2 else workspace
    return prices


def _typical(seen: pd.DataFrame) -> dict[object, float]:
    """Per project id, the most common price, the lowest of equally common ones: a first
    charge that also paid for a re-run between the same two snapshots shows a multiple
    of it. (One count of every project and price, not a count per project.)"""
    counts = seen.groupby(["project_id", "price"]).size().rename("n").reset_index()
    counts = counts.sort_values(["project_id", "n", "price"], ascending=[True, False, True])
    best = counts.drop_duplicates("project_id")
    return dict(zip(best["project_id"], best["price"].astype(float), strict=True))

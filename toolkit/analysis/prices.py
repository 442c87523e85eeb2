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

__all__ = ["Prices", "first_charges", "learned_from"]


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
    """The price per page and target language, per project id; `None`: the workspace."""
    return learned_from(first_charges(rows, n_languages=n_languages))


def first_charges(rows: pd.DataFrame, *, n_languages: np.ndarray) -> pd.DataFrame:
    """What prices are learned from (`learned_from`), one row each: the first charges
    seen after the baseline (a chapter that had not run before, paying for its pages),
    and what chapters that ran had spent by the baseline (`baseline`: true); with their
    `chapter_id`, `project_id` and `price`, credits / (pages x languages). An extension
    keeps them (`run_part`), so that the prices of a history of which only some
    chapters changed are learned without reading every row."""
    credits, before = to_float(rows["credits_spent"]), to_float(rows["prev_credits"])
    pages = to_float(rows["page_count"])
    idx = rows["idx"].to_numpy()
    paid = (credits > 0) & (pages > 0)
    first = (idx > 0) & ~is_true(rows["deleted"]) & ~is_true(rows["prev_started"]) & (before == 0)
    baseline = (idx == 0) & is_true(rows["started"])
    chosen = paid & (first | baseline)
    price = np.round(credits[chosen] / (pages[chosen] * n_languages[chosen]), 9)
    return pd.DataFrame({
        "chapter_id": rows["chapter_id"].to_numpy(object)[chosen],
        "project_id": rows["project_id"].to_numpy(object)[chosen],
        "price": price,
        "baseline": baseline[chosen],
    })  # fmt: skip


def learned_from(seen: pd.DataFrame) -> dict[str | None, float]:
    """The prices learned from first charges (`first_charges`): the most common price
    of each project, and of the workspace (`None`). With no first charge seen since the
    baseline, what chapters that ran had spent by then. A project's own price needs two:
    one alone may hide a second run started between the same two snapshots, so a
    project with one uses the workspace's price."""
    after = seen[~seen["baseline"].to_numpy(bool)]
    seen = after if len(after) else seen
    if seen.empty:
        return {}
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

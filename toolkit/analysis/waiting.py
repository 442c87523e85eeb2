"""Work that waits for a person, as a forecast dates it: since when it waits, when it
would be done if a person unblocked it now, and what finishing it will cost.

A chapter that waits (`forecast.needs_action`: failed, stalled, staged, held pages) has
no finish of its own: nothing moves it. Unblocked now, it runs from the start as the
service runs a chapter (`work`: read, translate every language in turn, the tail): a
re-scan of a failed or stalled chapter reads and translates all its pages again, held
or staged pages run for the first time. Its lines are the lines a page holds in its
project (else its kind) times its pages; a chapter with no pages yet (staged) is taken
at its project's typical size (the median page count of the project's chapters).

Credits to finish: a running chapter has paid already (a run is charged when it
starts), so what is left to pay is the waiting work's: its pages (held pages: those
not paid yet) in its languages at the project's learned price per page and language
(`Prices`), a novel's chapter at the project's median first-run charge per chapter and
language (`price_per_chapter`). The service's price per page does not vary, so the band
is that of the work's size: exact where the pages are known, and for a chapter with no
pages yet the 10th and 90th percentile of its project's page counts.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import numpy as np
import pandas as pd

from toolkit.analysis.work import Model, OpenChapter

__all__ = ["UnitPrices", "waiting_work"]

_COLUMNS = ["chapter_id", "project_id", "language_code", "waiting_since", "unblocked_p10",
           "unblocked_p50", "unblocked_p90", "credits_p10", "credits_p50",
           "credits_p90"]  # fmt: skip


@dataclass(frozen=True)
class UnitPrices:
    """Credits per page and language by project id (`None`: the workspace), and per
    chapter and language for chapters with no pages (novels)."""

    per_page: dict[str | None, float]
    per_chapter: dict[str | None, float]

    def of(self, project_id: str, *, novel: bool) -> float:
        """The price of one unit (a page; a novel's chapter) in one language; NaN if
        none was learned."""
        table = self.per_chapter if novel else self.per_page
        return float(table.get(project_id, table.get(None, np.nan)))


def waiting_work(
    model: Model,
    held: pd.DataFrame,
    languages: pd.DataFrame,
    projects: pd.DataFrame,
    as_of: pd.Timestamp,
    *,
    since: pd.Timestamp,
    slack: pd.Timedelta,
    unpaid_pages: pd.Series,
    prices: UnitPrices,
) -> pd.DataFrame:
    """Per waiting chapter (`held`: chapters at the snapshot) and language: `_COLUMNS`.
    `unpaid_pages`: by chapter id, the pages its runs have not paid for (held pages);
    a chapter absent from it runs (and pays for) all its pages."""
    ids = projects["project_id"].astype(str)
    targets = {p: list(codes) for p, codes in zip(ids, projects["target_languages"], strict=True)}
    orders = {p: {code: place for place, code in enumerate(codes)} for p, codes in targets.items()}
    kinds = dict(zip(ids, projects["kind"].fillna("").astype(str), strict=True))
    steps_of = dict(zip(ids, projects["process_steps"].fillna("").astype(str), strict=True))
    sizes = _sizes(model, projects)
    # The waiting chapters' language codes, in one pass (not a frame per chapter).
    mine = languages[languages["chapter_id"].astype(object).isin(set(held["chapter_id"]))]
    by_chapter: dict[object, list[object]] = {}  # a grouping to lists costs a frame a chapter
    for chapter_id, code in zip(
        mine["chapter_id"].astype(object).tolist(), mine["language_code"].tolist(), strict=True
    ):
        by_chapter.setdefault(chapter_id, []).append(code)

    @cache  # chapters of a project mostly have the same languages
    def in_order(project_id: str, codes: tuple[str, ...]) -> tuple[str, ...]:
        """The codes in the order the project lists its targets (any other after, by code)."""
        order = orders.get(project_id, {})
        return tuple(sorted(codes, key=lambda c: (order.get(c, len(order)), c)))

    unpaid = {str(c): float(n) for c, n in unpaid_pages.items()}
    rows = []
    columns = ["chapter_id", "project_id", "page_count", "last_activity_at", "created_at"]
    # A quarter of 100,000 chapters may wait: their columns are read as Python values
    # at once, not a record (a dict) each.
    for chapter, project, count, active, created in zip(
        *(held[column].tolist() for column in columns), strict=True
    ):
        chapter_id, project_id = str(chapter), str(project)
        kind = kinds.get(project_id, "")
        paged = pd.notna(count) and count > 0
        band = (float(count),) * 3 if paged else sizes.get(project_id, (1.0, 1.0, 1.0))
        units = max(band[1], 1.0)
        found = by_chapter.get(chapter_id)
        codes = (
            in_order(project_id, tuple(map(str, found)))
            if found is not None
            else tuple(targets.get(project_id, []))
        )
        finishes: dict[str, list[pd.Timestamp | None]] = {}
        if codes and model.paces:  # nothing learned (no open work to time): no date
            chapter = OpenChapter(
                chapter_id=chapter_id,
                project_id=project_id,
                kind=kind,
                steps=steps_of.get(project_id, ""),
                units=units,
                processing=True,  # as if started now, from its first page
                last_activity_at=as_of,
                languages=[(code, True, 0.0, 0.0) for code in codes],
            )
            finishes = model.finishes(chapter, as_of, since=since, slack=slack)
        price = prices.of(project_id, novel=kind == "novel")
        if kind == "novel":
            costs = [price] * 3
        elif chapter_id in unpaid:
            costs = [unpaid[chapter_id] * price] * 3
        else:
            costs = [max(size, 1.0) * price for size in band]
        waited = active if pd.notna(active) else created
        for code in codes:
            rows.append([chapter_id, project_id, code, waited, *finishes.get(code, [None] * 3),
                         *costs])  # fmt: skip
    frame = pd.DataFrame(rows, columns=_COLUMNS)
    for column in ("waiting_since", "unblocked_p10", "unblocked_p50", "unblocked_p90"):
        frame[column] = pd.to_datetime(frame[column], utc=True)
    for column in ("credits_p10", "credits_p50", "credits_p90"):
        frame[column] = frame[column].astype(float)
    return frame


def _sizes(model: Model, projects: pd.DataFrame) -> dict[str, tuple[float, float, float]]:
    """Per project id, the 10th, 50th and 90th percentile of its chapters' page counts
    (`Model.page_counts`), else its kind's."""
    kinds = dict(zip(projects["project_id"].astype(str), projects["kind"].fillna(""), strict=True))
    out = {}
    for project, kind in kinds.items():
        counts = model.page_counts.get(project) or model.page_counts.get(str(kind))
        if counts:
            low, mid, high = np.quantile(counts, [0.1, 0.5, 0.9])
            out[project] = (float(low), float(mid), float(high))
    return out

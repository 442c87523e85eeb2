"""Throughput, credit spend, cycle times and failures, measured from a snapshot store.

```python
tk.analysis.throughput(store, freq="1h", by="language_code")   # lines per hour
tk.analysis.credit_spend(store, freq="1D", by="project_id")     # credits per day
tk.analysis.cycle_times(store); tk.analysis.failures(store); tk.analysis.stalled(store)
tk.analysis.price_estimate(store, project_id, pages=20)
```

What is counted (DESIGN.md, "What the analysis counts"): every figure is a change
between two consecutive snapshots, put in the period of the later one; the first
snapshot is the baseline and counts for nothing; a row absent from the previous
snapshot counts from zero. The change log (`store.changes`) holds exactly the rows that
changed, so a long history is read without repeating what stood still.

Decisions the design leaves open:

- The effective price is per page and target language, learned per project as the
  median of first charges (a chapter's first rise of `credits_spent` over its pages and
  languages), else the median over the workspace, else unknown. While it is unknown, a
  rise on a chapter that already paid and has no unpaid pages counts as rework.
- A chapter's target languages are the languages its rows show; by `language_code`,
  spend is split evenly over them.
- By `model`, lines count for the last model a language lists (the one translating
  now); a language that lists none counts under "(unknown)".
- Periods are the snapshot times floored to `freq` (calendar frequencies such as "W"
  or "MS" start their period as pandas does). Output rows cover every period holding a
  snapshot after the baseline and every group seen, zeros included.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal, cast

import numpy as np
import pandas as pd

from toolkit._observed import Observed, flag, observe, periods, records, with_previous
from toolkit._runs import cycle_times, failures, stalled

if TYPE_CHECKING:
    from toolkit.store import SnapshotStore

__all__ = [
    "credit_spend",
    "cycle_times",
    "failures",
    "price_estimate",
    "price_per_chapter",
    "price_per_page",
    "stalled",
    "throughput",
]

ThroughputBy = Literal["language_code", "project_id", "model"]
SpendBy = Literal["project_id", "language_code", "chapter_id"]
UNKNOWN_MODEL = "(unknown)"
TEXT = pd.StringDtype()


def _check(name: str, value: str, allowed: Sequence[str]) -> None:
    if value not in allowed:
        raise ValueError(f"{name} must be one of {', '.join(allowed)}, not {value!r}")


def _long(
    values: pd.DataFrame, obs: Observed, freq: str, by: str, measures: list[str]
) -> pd.DataFrame:
    """Sum `measures` per (period, by) over every non-baseline period and group seen."""
    later = periods(obs.manifest["snapshot_at"].iloc[1:], freq).drop_duplicates()
    groups = values[by].dropna().unique() if len(values) else []
    grid = pd.MultiIndex.from_product([later, groups], names=["period", by])
    if len(values):
        values = values.assign(period=periods(values["snapshot_at"], freq))
        sums = values.groupby(["period", by])[measures].sum()
    else:
        sums = pd.DataFrame(columns=measures, dtype="float64")
    result = sums.reindex(grid, fill_value=0).reset_index()
    result["period"] = result["period"].astype("datetime64[us, UTC]")
    result[by] = result[by].astype(TEXT)
    return result.sort_values(["period", by], ignore_index=True)


def _resets(obs: Observed) -> set[tuple[str, int]]:
    """(chapter, snapshot position) pairs where a chapter's counts restarted: its
    `failed` flag was cleared, or it paid again for pages already paid."""
    chapters = with_previous(obs.chapters, ["chapter_id"], ["failed"])
    cleared = chapters[
        ~chapters["deleted"] & flag(chapters["prev_failed"]) & ~flag(chapters["failed"])
    ]
    resets = set(zip(cleared["chapter_id"], cleared["idx"], strict=True))
    spend = _spend_rows(obs)
    reworked = spend[spend["rework_credits"] > 0]
    return resets | set(zip(reworked["chapter_id"], reworked["idx"], strict=True))


def _standing_through_resets(obs: Observed, resets: set[tuple[str, int]]) -> pd.DataFrame:
    """Language rows that stood still through a re-scan, carried to the reset's snapshot.

    The change log holds a row only when it changed, so a re-scan that finished between
    two snapshots with the coverage it had before leaves no language row at all, only
    the chapter's restart. Each such language's last row is brought forward to that
    snapshot, so its lines count in full there like any other restart.
    """
    languages = obs.languages
    resets_of: dict[str, list[int]] = {}
    for chapter, idx in resets:
        resets_of.setdefault(chapter, []).append(idx)
    rows = languages[languages["chapter_id"].isin(list(resets_of))]
    rows = rows.sort_values(["chapter_id", "language_code", "idx"], ignore_index=True)
    picked: list[int] = []
    at: list[int] = []
    for (chapter, _code), group in rows.groupby(["chapter_id", "language_code"], sort=False):
        logged = group["idx"].to_numpy()
        for idx in resets_of[chapter]:
            last = int(np.searchsorted(logged, idx)) - 1  # the row in force just before
            if last < 0 or (last + 1 < len(logged) and logged[last + 1] == idx):
                continue  # never seen before, or logged at the reset and counted there
            if not bool(group["deleted"].iloc[last]):
                picked.append(int(group.index[last]))
                at.append(idx)
    standing = rows.loc[picked].reset_index(drop=True)
    standing["idx"] = pd.array(at, dtype=standing["idx"].dtype)
    standing["snapshot_at"] = pd.Series(
        [obs.times[i] for i in at], dtype=standing["snapshot_at"].dtype
    )
    return standing


def throughput(
    store: SnapshotStore | Observed, freq: str = "1h", by: ThroughputBy = "language_code"
) -> pd.DataFrame:
    """Lines translated per period: long frame `period, <by>, lines`.

    A chapter-language's lines are the rise of `covered`; after a re-scan (coverage fell,
    `failed` was cleared, or credits rose as rework) the count restarted, so the new
    value counts in full. Never negative.
    """
    _check("by", by, ("language_code", "project_id", "model"))
    obs = observe(store)
    log = with_previous(obs.languages, ["chapter_id", "language_code"], ["covered", "failed"])
    log = log[(log["idx"] > 0) & ~log["deleted"]].copy()
    covered = log["covered"].fillna(0).astype("int64")
    before = log["prev_covered"].fillna(0).astype("int64")
    resets = _resets(obs)
    chapter_reset = [(c, i) in resets for c, i in zip(log["chapter_id"], log["idx"], strict=True)]
    restarted = (
        (covered < before)
        | (flag(log["prev_failed"]) & ~flag(log["failed"]))
        | pd.Series(chapter_reset, index=log.index, dtype=bool)
    )
    log["lines"] = np.where(restarted, covered, np.maximum(covered - before, 0))
    standing = _standing_through_resets(obs, resets)
    standing["lines"] = standing["covered"].fillna(0).astype("int64")
    log = pd.concat([log, standing], ignore_index=True) if len(standing) else log
    if by == "model":
        log["model"] = [
            list(m)[-1] if m is not None and len(m) else UNKNOWN_MODEL for m in log["models"]
        ]
    result = _long(log, obs, freq, by, ["lines"])
    result["lines"] = result["lines"].astype("Int64")
    return result


def _first_charges(obs: Observed, *, paged: bool) -> pd.DataFrame:
    """First charges (a chapter's first rise of `credits_spent`) seen after the baseline,
    else at it: `chapter_id, project_id, credits, pages, n_langs`. `paged` picks
    chapters with pages (comics) or without (novels, priced by their text)."""
    chapters = with_previous(obs.chapters, ["chapter_id"], ["credits_spent"])
    credits = chapters["credits_spent"].fillna(0).astype("float64")
    before = chapters["prev_credits_spent"].fillna(0).astype("float64")
    pages = chapters["page_count"].fillna(0).astype("float64")
    live = ~chapters["deleted"] & (credits > 0) & ((pages > 0) if paged else (pages == 0))
    first = live & (before == 0) & (chapters["idx"] > 0)
    if not first.any():
        # No first charge seen since the baseline: what chapters had spent by then.
        first = live & (chapters["idx"] == 0)
    chosen = chapters[first]
    n_langs = [max(len(obs.languages_of.get(c, [])), 1) for c in chosen["chapter_id"]]
    return pd.DataFrame(
        {
            "project_id": chosen["project_id"].astype(object).to_numpy(),
            "credits": (credits - before)[first].to_numpy(),
            "pages": pages[first].to_numpy(),
            "n_langs": np.array(n_langs, dtype=float),
        }
    )


def _medians(prices: pd.DataFrame) -> dict[str | None, float]:
    medians: dict[str | None, float] = {
        str(project): float(group.median())
        for project, group in prices.groupby("project_id")["price"]
    }
    if len(prices):
        medians[None] = float(prices["price"].median())
    return medians


def price_per_page(store: SnapshotStore | Observed) -> dict[str | None, float]:
    """The effective price per page and target language, per project id; the key `None`
    holds the workspace-wide median. Learned from first charges seen in the store."""
    obs = observe(store)
    if "prices" not in obs.memo:
        first = _first_charges(obs, paged=True)
        first["price"] = first["credits"] / (first["pages"] * first["n_langs"])
        obs.memo["prices"] = _medians(first)
    return cast(dict[str | None, float], obs.memo["prices"])


def price_per_chapter(store: SnapshotStore | Observed) -> dict[str | None, float]:
    """For chapters without pages (novels, priced by their text): the typical first
    charge per chapter and target language, per project id (`None`: all of them)."""
    obs = observe(store)
    if "chapter_prices" not in obs.memo:
        first = _first_charges(obs, paged=False)
        first["price"] = first["credits"] / first["n_langs"]
        obs.memo["chapter_prices"] = _medians(first)
    return cast(dict[str | None, float], obs.memo["chapter_prices"])


def _spend_rows(obs: Observed) -> pd.DataFrame:
    """Per chapter change after the baseline: `credits` risen and the `rework_credits` part."""
    if "spend" in obs.memo:
        return cast(pd.DataFrame, obs.memo["spend"])
    log = obs.chapters.sort_values(["chapter_id", "idx"], ignore_index=True)
    prices = price_per_page(obs)
    rows = []
    columns = ["chapter_id", "project_id", "idx", "snapshot_at", "deleted", "credits_spent",
               "page_count"]  # fmt: skip
    current, n_langs, credits_before, paid = None, 1, 0.0, 0.0
    for chapter, project, idx, at, deleted, spent, page_count in records(log, columns):
        if chapter != current:
            current, credits_before, paid = chapter, 0.0, 0.0
            n_langs = max(len(obs.languages_of.get(chapter, [])), 1)
        if deleted:
            credits_before, paid = 0.0, 0.0  # absent: it counts from zero again
            continue
        credits, pages = float(spent or 0), float(page_count or 0)
        price = prices.get(project, prices.get(None))
        if idx == 0:
            # The baseline: assume what was spent paid for the pages it could.
            per_page = n_langs * price if price else None
            paid = min(pages, credits / per_page) if per_page else pages * (credits > 0)
            credits_before = credits
            continue
        rise, rework = max(credits - credits_before, 0.0), 0.0
        if rise > 0:
            unpaid = max(pages - paid, 0.0)
            if pages == 0:
                # A novel has no pages to tell new from old by; it cannot be re-scanned
                # either (its retry is a new chapter), so only a second charge is rework.
                rework = rise if credits_before > 0 else 0.0
            elif price:
                new_pages = min(unpaid, rise / (n_langs * price))
                rework = max(rise - new_pages * n_langs * price, 0.0)
                paid += new_pages
            else:
                rework = rise if credits_before > 0 and unpaid == 0 else 0.0
                paid = pages
        credits_before = credits
        rows.append((chapter, project, idx, at, rise, rework, n_langs))
    columns = ["chapter_id", "project_id", "idx", "snapshot_at", "credits", "rework_credits", "n"]
    frame = pd.DataFrame(rows, columns=columns)
    frame["snapshot_at"] = frame["snapshot_at"].astype("datetime64[us, UTC]")
    obs.memo["spend"] = frame
    return frame


def credit_spend(
    store: SnapshotStore | Observed, freq: str = "1D", by: SpendBy = "project_id"
) -> pd.DataFrame:
    """Credits spent per period: long frame `period, <by>, credits, rework_credits`.

    A chapter's spend is the rise of its `credits_spent`; `rework_credits` is the part
    that paid again for pages already paid for (a re-scan, a retried failure). By
    `language_code`, a chapter's spend is split evenly over its target languages.
    """
    _check("by", by, ("project_id", "language_code", "chapter_id"))
    obs = observe(store)
    spend = _spend_rows(obs)
    if by == "language_code":
        codes = [obs.languages_of.get(c, [None]) for c in spend["chapter_id"]]
        spend = spend.assign(language_code=codes).explode("language_code")
        spend["credits"] = spend["credits"] / spend["n"]
        spend["rework_credits"] = spend["rework_credits"] / spend["n"]
    result = _long(spend, obs, freq, by, ["credits", "rework_credits"])
    for column in ("credits", "rework_credits"):
        result[column] = result[column].astype("Float64")
    return result


def price_estimate(
    store: SnapshotStore | Observed,
    project_id: str,
    *,
    pages: int,
    languages: int | Sequence[str] | None = None,
) -> float:
    """Credits an upload of `pages` pages will cost, from the price seen in history.

    The project's own price when the store saw it pay, else the median price of the
    workspace's projects of the same kind. A novel is priced by its text, not by pages:
    for a novel project `pages` counts chapters of the project's usual length.
    languages: how many target languages (or their codes); by default the project's.
    """
    obs = observe(store)
    projects = obs.store.latest("projects").set_index("project_id")
    known = project_id in projects.index
    kind = projects.loc[project_id, "kind"] if known else None
    prices = price_per_chapter(obs) if kind == "novel" else price_per_page(obs)
    price = prices.get(project_id)
    if price is None and known:
        alike = [
            value
            for other, value in prices.items()
            if other in projects.index and projects.loc[other, "kind"] == kind
        ]
        price = float(np.median(alike)) if alike else None
    elif price is None:
        price = prices.get(None)
    if price is None:
        unit = "chapter" if kind == "novel" else "page"
        raise ValueError(
            f"no {unit} price learned for project {project_id!r} yet: the store has seen "
            "no first charge of a chapter like its own; take snapshots (store.take) "
            "while a chapter runs, then ask again"
        )
    if languages is None:
        if not known:
            raise ValueError(
                f"project {project_id!r} is not in the latest snapshot; "
                "pass languages= or take a snapshot first"
            )
        targets = projects.loc[project_id, "target_languages"]
        languages = len(targets) if isinstance(targets, list) else 0
    count = languages if isinstance(languages, int) else len(list(languages))
    return float(pages * count * price)

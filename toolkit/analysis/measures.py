"""Throughput, credit spend and the learned price, as changes between snapshots."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal, cast

import numpy as np
import pandas as pd

from toolkit.analysis.observed import Observed, flag, observe, periods, with_previous

if TYPE_CHECKING:
    from toolkit.store import SnapshotStore

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


def _chapter_log(obs: Observed) -> pd.DataFrame:
    """The chapters' log sorted by chapter and snapshot, with `prev_failed` and
    `prev_credits_spent`: sorted once for the several figures that read it."""
    if "chapter_log" not in obs.memo:
        columns = ["credits_spent", "failed"]
        obs.memo["chapter_log"] = with_previous(obs.chapters, ["chapter_id"], columns)
    return cast(pd.DataFrame, obs.memo["chapter_log"])


def _resets(obs: Observed) -> pd.DataFrame:
    """`chapter_id, idx` (snapshot position) where a chapter's counts restarted: its
    `failed` flag was cleared, or it paid again for pages already paid."""
    chapters = _chapter_log(obs)
    cleared = chapters[
        ~chapters["deleted"] & flag(chapters["prev_failed"]) & ~flag(chapters["failed"])
    ]
    spend = _spend_rows(obs)
    reworked = spend[spend["rework_credits"] > 0]
    both = pd.concat([_keys(cleared), _keys(reworked)], ignore_index=True)
    return both.drop_duplicates(ignore_index=True)


def _keys(frame: pd.DataFrame, *, codes: bool = False) -> pd.DataFrame:
    """`chapter_id, idx` (and `language_code` if `codes`) of a log, in one dtype per
    column whichever log they come from, so that logs join and compare on them."""
    columns = ["chapter_id", "language_code"] if codes else ["chapter_id"]
    keys = {column: frame[column].astype("str").array for column in columns}
    return pd.DataFrame({**keys, "idx": frame["idx"].to_numpy("int64")})


def _at_resets(log: pd.DataFrame, resets: pd.DataFrame) -> np.ndarray:
    """Whether each row of `log` is at one of the chapters' `resets`."""
    keys = pd.MultiIndex.from_frame(_keys(log))
    return keys.isin(pd.MultiIndex.from_frame(resets))


def _standing_through_resets(obs: Observed, resets: pd.DataFrame) -> pd.DataFrame:
    """Language rows that stood still through a re-scan, carried to the reset's snapshot.

    The change log holds a row only when it changed, so a re-scan that finished between
    two snapshots with the coverage it had before leaves no language row at all, only
    the chapter's restart. Each such language's last row is brought forward to that
    snapshot, so its lines count in full there like any other restart.
    """
    languages = obs.languages
    rows = languages[languages["chapter_id"].isin(resets["chapter_id"])]
    rows = rows.reset_index(drop=True)
    logged = _keys(rows, codes=True).assign(row=np.arange(len(rows)))
    # Every language a reset chapter's rows show, at each of its resets.
    wanted = logged[["chapter_id", "language_code"]].drop_duplicates().merge(resets)
    # Logged at the reset itself: counted there already.
    keys = ["chapter_id", "language_code", "idx"]
    at_reset = pd.MultiIndex.from_frame(wanted[keys]).isin(pd.MultiIndex.from_frame(logged[keys]))
    wanted = wanted[~at_reset]
    if wanted.empty:
        return rows.iloc[:0].copy()  # merge_asof cannot type an empty key column
    # The row in force just before the reset; none if the language was not seen yet.
    last = pd.merge_asof(
        wanted.sort_values("idx"),
        logged.sort_values("idx"),
        on="idx",
        by=["chapter_id", "language_code"],
        allow_exact_matches=False,
    ).dropna(subset=["row"])
    picked = last["row"].to_numpy("int64")
    live = ~flag(rows["deleted"]).to_numpy()[picked]  # gone before the reset: stays gone
    standing = rows.iloc[picked[live]].reset_index(drop=True)
    at = last["idx"].to_numpy("int64")[live]
    standing["idx"] = pd.array(at, dtype=standing["idx"].dtype)
    times = obs.manifest["snapshot_at"].reset_index(drop=True)
    standing["snapshot_at"] = times.iloc[at].astype(standing["snapshot_at"].dtype).array
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
    restarted = (
        (covered < before)
        | (flag(log["prev_failed"]) & ~flag(log["failed"]))
        | pd.Series(_at_resets(log, resets), index=log.index, dtype=bool)
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
    chapters = _chapter_log(obs)
    credits = chapters["credits_spent"].fillna(0).astype("float64")
    before = chapters["prev_credits_spent"].fillna(0).astype("float64")
    pages = chapters["page_count"].fillna(0).astype("float64")
    live = ~chapters["deleted"] & (credits > 0) & ((pages > 0) if paged else (pages == 0))
    first = live & (before == 0) & (chapters["idx"] > 0)
    if not first.any():
        # No first charge seen since the baseline: what chapters had spent by then.
        first = live & (chapters["idx"] == 0)
    chosen = chapters[first]
    n_langs = obs.language_counts(chosen["chapter_id"])
    return pd.DataFrame(
        {
            "project_id": chosen["project_id"].astype(object).to_numpy(),
            "credits": (credits - before)[first].to_numpy(),
            "pages": pages[first].to_numpy(),
            "n_langs": n_langs.astype(float),
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
    # `prev_credits_spent` is null where the chapter was absent before (no row yet, or
    # deleted): it counts from zero again.
    log = _chapter_log(obs)
    credits = log["credits_spent"].fillna(0).to_numpy("float64")
    before = log["prev_credits_spent"].fillna(0).to_numpy("float64")
    n_langs = obs.language_counts(log["chapter_id"])
    rise = np.maximum(credits - before, 0.0)
    rework = _rework(log, obs, credits=credits, before=before, rise=rise, n_langs=n_langs)
    kept = ~flag(log["deleted"]).to_numpy() & (log["idx"].to_numpy("int64") > 0)
    frame = pd.DataFrame(
        {
            "chapter_id": log["chapter_id"].astype("str")[kept].array,
            "project_id": log["project_id"].astype("str")[kept].array,
            "idx": log["idx"].to_numpy("int64")[kept],
            "snapshot_at": log["snapshot_at"][kept].astype("datetime64[us, UTC]").array,
            "credits": rise[kept],
            "rework_credits": rework[kept],
            "n": n_langs[kept],
        }
    )
    obs.memo["spend"] = frame
    return frame


def _rework(
    log: pd.DataFrame,
    obs: Observed,
    *,
    credits: np.ndarray,
    before: np.ndarray,
    rise: np.ndarray,
    n_langs: np.ndarray,
) -> np.ndarray:
    """The part of each row's `rise` that paid again for pages already paid for.

    How many pages a chapter has paid for carries from one change to the next, so this
    walks the log in order; but chapters are independent, so it walks every chapter's
    k-th change at once (a few hundred numpy steps for a year, not a Python step per
    row). The arithmetic is the same, operation for operation, as walking row by row.
    """
    prices = price_per_page(obs)
    known = {str(project): price for project, price in prices.items() if project is not None}
    fallback = prices.get(None, np.nan)
    price = log["project_id"].astype(object).map(known).astype("float64").fillna(fallback)
    price = price.to_numpy("float64")  # NaN: no price learned yet
    pages = log["page_count"].fillna(0).to_numpy("float64")
    deleted = flag(log["deleted"]).to_numpy()
    new = log["is_new"].to_numpy(bool)
    baseline = log["idx"].to_numpy("int64") == 0
    chapter = pd.factorize(log["chapter_id"])[0]
    step = log.groupby("chapter_id", sort=False).cumcount().to_numpy()

    paid = np.zeros(chapter.max() + 1 if len(chapter) else 0)  # pages paid, by chapter
    rework = np.zeros(len(log))
    order = np.argsort(step, kind="stable")
    bounds = np.searchsorted(step[order], np.arange(step.max() + 2 if len(step) else 1))
    for low, high in itertools.pairwise(bounds):
        rows = order[low:high]  # every chapter's k-th change
        ch = chapter[rows]
        paid_before = np.where(new[rows], 0.0, paid[ch])
        after, rework[rows] = _pay(
            paid_before,
            credits=credits[rows],
            before=before[rows],
            rise=rise[rows],
            pages=pages[rows],
            per_lang=n_langs[rows],
            price=price[rows],
            baseline=baseline[rows],
        )
        paid[ch] = np.where(deleted[rows], 0.0, after)  # absent: counts from zero again
    return rework


def _pay(
    paid: np.ndarray,
    *,
    credits: np.ndarray,
    before: np.ndarray,
    rise: np.ndarray,
    pages: np.ndarray,
    per_lang: np.ndarray,
    price: np.ndarray,
    baseline: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """One change of each chapter: (pages paid after it, its rework credits)."""
    priced = ~np.isnan(price)
    with np.errstate(invalid="ignore", divide="ignore"):
        # The baseline: assume what was spent paid for the pages it could.
        per_page = per_lang * price
        at_baseline = np.where(priced, np.minimum(pages, credits / per_page), pages * (credits > 0))
        # A known price tells new pages from old ones.
        unpaid = np.maximum(pages - paid, 0.0)
        new_pages = np.minimum(unpaid, rise / (per_lang * price))
        priced_rework = np.maximum(rise - new_pages * per_lang * price, 0.0)
    # Without one, a chapter that paid and has no unpaid pages pays again.
    unpriced_rework = np.where((before > 0) & (unpaid == 0), rise, 0.0)
    # A novel has no pages to tell new from old by; it cannot be re-scanned either (its
    # retry is a new chapter), so only a second charge is rework.
    novel = pages == 0
    novel_rework = np.where(before > 0, rise, 0.0)
    charged = rise > 0
    rework = np.select(
        [~charged | baseline, novel, priced], [0.0, novel_rework, priced_rework], unpriced_rework
    )
    after = np.select(
        [baseline, ~charged | novel, priced], [at_baseline, paid, paid + new_pages], pages
    )
    return after, rework


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
        # One row per language, in the spend rows' order (so each group sums in the same
        # order); a chapter whose languages were never seen keeps one row, without a code.
        targets = obs.target_languages.astype({"chapter_id": "str", "language_code": object})
        spend = spend.merge(targets, on="chapter_id", how="left", sort=False)
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

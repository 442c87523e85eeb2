"""Throughput, credit spend and the learned price, as changes between snapshots."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal

import numpy as np
import pandas as pd

from toolkit.analysis.calendar import When, period_starts, within
from toolkit.analysis.observed import Observed, flag, observe, with_previous
from toolkit.analysis.runs import all_runs, prices
from toolkit.analysis.timing import fill_grid

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
    values: pd.DataFrame,
    by: str,
    measures: list[str],
    *,
    time: str,
    freq: str,
    tz: str | None,
    since: When | None,
    until: When | None,
    fill: bool,
    names: pd.Series | None,
) -> pd.DataFrame:
    """Sum `measures` per (period, by): rows with nothing to show are left out unless
    `fill`, which gives every period from the first to the last and every group."""
    values = within(values, time, since=since, until=until, tz=tz)
    columns = ["period", by, *measures]
    if len(values):
        values = values.assign(period=period_starts(values[time], freq, tz))
        sums = values.groupby(["period", by], dropna=False)[measures].sum().reset_index()
        sums = sums[(sums[measures] != 0).any(axis=1)] if not fill else sums
    else:
        sums = pd.DataFrame({c: pd.Series(dtype="float64") for c in columns})
        sums["period"] = sums["period"].astype(pd.DatetimeTZDtype("us", tz or "UTC"))
    if fill:
        sums = fill_grid(sums, by, measures, freq=freq, tz=tz)
    result = sums[columns].copy()
    result[by] = result[by].astype(TEXT)
    if names is not None:
        result.insert(2, "project", result[by].astype(object).map(names).astype(TEXT))
    return result.sort_values(["period", by], ignore_index=True)


def _resets(obs: Observed) -> pd.DataFrame:
    """`chapter_id, idx` (snapshot position) where a chapter's counts restarted: a
    re-scan was seen there (it clears `failed` and pays again for the pages)."""
    runs = all_runs(obs)
    rescans = runs[(runs["kind"] == "rescan").fillna(False)]
    frame = pd.DataFrame(
        {
            "chapter_id": rescans["chapter_id"].astype("str").array,
            "idx": rescans["seen_idx"].to_numpy("int64"),
        }
    )
    return frame.drop_duplicates(ignore_index=True)


def _keys(frame: pd.DataFrame, *, codes: bool = False) -> pd.DataFrame:
    """`chapter_id, idx` (and `language_code` if `codes`) of a log, in one dtype per
    column whichever log they come from, so that logs join and compare on them."""
    columns = ["chapter_id", "language_code"] if codes else ["chapter_id"]
    keys = {column: frame[column].astype("str").array for column in columns}
    return pd.DataFrame({**keys, "idx": frame["idx"].to_numpy("int64")})


def _at_resets(log: pd.DataFrame, resets: pd.DataFrame) -> np.ndarray:
    """Whether each row of `log` is at one of the chapters' `resets`."""
    keys = pd.MultiIndex.from_frame(_keys(log))
    return np.asarray(keys.isin(pd.MultiIndex.from_frame(resets)), bool)


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
    standing: pd.DataFrame = rows.iloc[picked[live]].reset_index(drop=True)
    at = last["idx"].to_numpy("int64")[live]
    standing["idx"] = pd.array(at, dtype=standing["idx"].dtype)
    times = obs.manifest["snapshot_at"].reset_index(drop=True)
    standing["snapshot_at"] = times.iloc[at].astype(standing["snapshot_at"].dtype).array
    return standing


def throughput(
    store: SnapshotStore | Observed,
    freq: str = "1h",
    by: ThroughputBy = "language_code",
    *,
    since: When | None = None,
    until: When | None = None,
    tz: str | None = None,
    fill: bool = False,
) -> pd.DataFrame:
    """Lines translated per period: long frame `period, <by>[, project], lines`.

    A chapter-language's lines are the rise of `covered`; after a re-scan (coverage fell,
    `failed` was cleared, or a re-scan run was seen) the count restarted, so the new
    value counts in full. Never negative. By `model`: the service's model name, the last
    one the language lists. Periods without lines are left out unless `fill`.
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
    names = _project_names(obs) if by == "project_id" else None
    result = _long(log, by, ["lines"], time="snapshot_at", freq=freq, tz=tz, since=since,
                   until=until, fill=fill, names=names)  # fmt: skip
    result["lines"] = result["lines"].astype("Int64")
    return result


def _project_names(obs: Observed) -> pd.Series:
    runs = all_runs(obs)
    named = runs.drop_duplicates("project_id").set_index("project_id")["project"]
    return named.astype(object)


def price_per_page(store: SnapshotStore | Observed) -> dict[str | None, float]:
    """The effective price per page and target language, per project id; the key `None`
    holds the workspace-wide median. Learned from first runs only (`charges.learn_prices`):
    a project's own price needs two of its first runs, else it takes the workspace's."""
    return dict(prices(observe(store)))


def price_per_chapter(store: SnapshotStore | Observed) -> dict[str | None, float]:
    """For chapters without pages (novels, priced by their text): the median first-run
    charge per chapter and target language, per project id (`None`: all of them)."""
    runs = all_runs(observe(store))
    first = runs[(runs["kind"] == "first").fillna(False) & (runs["pages"] == 0)]
    first = first[first["credits"] > 0]
    price = (first["credits"] / first["languages"]).astype("float64")
    found: dict[str | None, float] = {
        str(project): float(group.median())
        for project, group in price.groupby(first["project_id"].astype(object))
    }
    if len(price):
        found[None] = float(price.median())
    return found


def credit_spend(
    store: SnapshotStore | Observed,
    freq: str = "1D",
    by: SpendBy = "project_id",
    *,
    since: When | None = None,
    until: When | None = None,
    tz: str | None = None,
    fill: bool = False,
) -> pd.DataFrame:
    """Credits spent per period: long frame `period, <by>[, project], credits,
    rework_credits`, in the period of the snapshot that first showed each charge.

    A chapter's spend is the rise of its `credits_spent`, split into the runs it paid
    for (`runs`); `rework_credits` is what re-scans paid again for pages already paid
    for, in whole credits. By `language_code`, a run's charge is split evenly over its
    target languages. Periods without spend are left out unless `fill`.
    """
    _check("by", by, ("project_id", "language_code", "chapter_id"))
    obs = observe(store)
    runs = all_runs(obs)
    spend = pd.DataFrame(
        {
            "chapter_id": runs["chapter_id"].astype(object),
            "project_id": runs["project_id"].astype(object),
            "seen_at": runs["seen_at"],
            "credits": runs["credits"].astype("float64"),
            "rework_credits": runs["rework"].astype("float64"),
        }
    )
    if by == "language_code":
        spend = _per_language(obs, spend)
    names = _project_names(obs) if by == "project_id" else None
    result = _long(spend, by, ["credits", "rework_credits"], time="seen_at", freq=freq, tz=tz,
                   since=since, until=until, fill=fill, names=names)  # fmt: skip
    for column in ("credits", "rework_credits"):
        result[column] = result[column].astype("Float64")
    return result


def _per_language(obs: Observed, spend: pd.DataFrame) -> pd.DataFrame:
    """Each charge split evenly over the target languages of its project."""
    projects = obs.store.latest("projects")
    targets = projects[["project_id", "target_languages"]].astype({"project_id": object})
    targets = targets.explode("target_languages").rename(
        columns={"target_languages": "language_code"}
    )
    targets = targets.dropna(subset=["language_code"])
    spend = spend.merge(targets, on="project_id", how="left", sort=False)
    per = spend["project_id"].map(targets.groupby("project_id").size()).fillna(1)
    spend["credits"] = spend["credits"] / per
    spend["rework_credits"] = spend["rework_credits"] / per
    return spend


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
    kinds: dict[object, object] = projects["kind"].to_dict()
    kind = kinds[project_id] if known else None
    prices = price_per_chapter(obs) if kind == "novel" else price_per_page(obs)
    price = prices.get(project_id)
    if price is None and known:
        alike = [
            value for other, value in prices.items() if other in kinds and kinds[other] == kind
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

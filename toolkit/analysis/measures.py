"""Throughput, credit spend and the learned price, as changes between snapshots.

Past 400 lines on purpose: throughput, spend and the learned price read the same runs
and share the shaping of periods and languages; apart, each would repeat it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal, cast

import numpy as np
import pandas as pd
import pyarrow as pa

from toolkit.analysis._arrays import category_codes, taken
from toolkit.analysis.calendar import period_starts, snapshots_within
from toolkit.analysis.lines import LINES_KEYS, LINES_SQL, lines_read
from toolkit.analysis.observed import Observed, observe
from toolkit.analysis.prices import Prices
from toolkit.analysis.run_table import RunTable
from toolkit.analysis.runs import all_runs, rescans_seen, transition_rows
from toolkit.analysis.timing import fill_grid
from toolkit.analysis.workspaces import across
from toolkit.frames.schema import TEXT_DTYPE
from toolkit.timestamps import When

if TYPE_CHECKING:
    from toolkit.store import SnapshotStore

__all__ = [
    "SpendBy",
    "ThroughputBy",
    "credit_spend",
    "price_estimate",
    "price_per_chapter",
    "price_per_page",
    "throughput",
]

ThroughputBy = Literal["language_code", "project_id", "model"]
SpendBy = Literal["project_id", "language_code", "chapter_id"]


def _check(name: str, value: str, allowed: Sequence[str]) -> None:
    if value not in allowed:
        raise ValueError(f"{name} must be one of {', '.join(allowed)}, not {value!r}")


def _periods(
    obs: Observed, freq: str, *, tz: str | None, since: When | None, until: When | None
) -> tuple[pd.DataFrame, pd.Series]:
    """Each snapshot in [since, until) by position (`idx`) with the code of its period
    (`period`), and the periods by code: a figure summed per snapshot position is then
    summed per period without a time per row."""
    times = snapshots_within(obs.manifest["snapshot_at"], since=since, until=until, tz=tz)
    codes, starts = pd.factorize(period_starts(times["snapshot_at"], freq, tz))
    return (
        pd.DataFrame({"idx": times["idx"].to_numpy("int64"), "period": codes}),
        pd.Series(starts),
    )


def _shape(
    sums: pd.DataFrame,
    starts: pd.Series,
    by: str,
    measures: list[str],
    *,
    freq: str,
    tz: str | None,
    fill: bool,
    names: pd.Series | None,
) -> pd.DataFrame:
    """A long frame `period, <by>[, project], <measures>` from sums per period code
    (`_periods` gives the codes and their `starts`): rows with nothing to show left out
    unless `fill`, which gives every period from the first to the last and every group."""
    # The period starts taken by code as they are (tz-aware: to_numpy would make a
    # Python object per row).
    sums = sums.assign(period=starts.take(sums["period"].to_numpy("int64")).array)
    columns = ["period", by, *measures]
    if not fill:
        sums = sums[(sums[measures] != 0).any(axis=1)]
    if sums.empty:
        sums = pd.DataFrame({c: pd.Series(dtype="float64") for c in columns})
        sums["period"] = sums["period"].astype(pd.DatetimeTZDtype("us", tz or "UTC"))
    if fill:
        sums = fill_grid(sums, by, measures, freq=freq, tz=tz)
    result = sums[columns].copy()
    result[by] = result[by].astype(TEXT_DTYPE)
    if names is not None:
        result.insert(2, "project", result[by].astype(object).map(names).astype(TEXT_DTYPE))
    return result.sort_values(["period", by], ignore_index=True)


@across
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

    Args:
        store: A `SnapshotStore` or its `Observed` view; or several workspaces' stores at
            once (a mapping of label to store, or a list), and then the answer has a
            `workspace` column first, or is one dict per label where the call answers with a
            dict (`toolkit.analysis.workspaces`).
        freq: The period, any pandas offset alias ("h", "D", "W-MON", "MS").
        by: Group by "language_code", "project_id" (its name in `project`) or "model".
        since: The window's start, included (a naive time is read in `tz`); by default
            the beginning.
        until: The window's end, excluded; by default no end.
        tz: The time zone a naive `since` or `until` is read in; UTC by default; also the
            zone of the periods.
        fill: Give every period from the first to the last, and every group, a row (0
            where nothing happened).

    Returns:
        The lines, one row per period and group.

    Raises:
        ValueError: `by` or `freq` is not one this function takes.
    """
    _check("by", by, ("language_code", "project_id", "model"))
    obs = observe(store)
    # Once per view and question: the weekly page asks the week's lines by project and
    # day for its figures and for its day table (a copy each: callers add columns).
    key = repr(("throughput", freq, by, str(since), str(until), tz, fill))
    if key not in obs.memo:
        obs.memo[key] = _throughput(obs, freq, by, since=since, until=until, tz=tz, fill=fill)
    return cast(pd.DataFrame, obs.memo[key]).copy()


def _throughput(
    obs: Observed,
    freq: str,
    by: ThroughputBy,
    *,
    since: When | None,
    until: When | None,
    tz: str | None,
    fill: bool,
) -> pd.DataFrame:
    """`throughput`'s frame, made."""
    positions, starts = _periods(obs, freq, tz=tz, since=since, until=until)
    if positions.empty:
        sums = pd.DataFrame({"period": np.zeros(0, "int64"), by: [], "lines": []})
    else:
        window = int(positions["idx"].min()), int(positions["idx"].max())
        # The window's lines at each snapshot, when the view read them already (the
        # weekly page, which lists them too): summed here, not asked of the log again.
        # Else the sums alone come back from DuckDB (a year's rows would be 3.6 million).
        rows = lines_read(obs, window) if by != "model" else None
        if rows is not None:
            sums = _summed(rows, positions, window, by)
        else:
            resets = rescans_seen(obs, window)  # the window's alone: LINES_SQL reads no other
            frames = {"resets": resets, "periods": positions}
            key = LINES_KEYS[by]
            if by == "model":
                key = _model_before(obs, window, resets, frames)
            found = obs.store.query(LINES_SQL.format(key=key), frames=frames, window=window)
            sums = pd.DataFrame(
                {
                    "period": found["period"].to_numpy("int64"),
                    by: found["key"].astype(object).to_numpy(),
                    "lines": found["lines"].astype("int64").to_numpy(),
                }
            )
    names = _run_project_names(obs) if by == "project_id" else None
    result = _shape(sums, starts, by, ["lines"], freq=freq, tz=tz, fill=fill, names=names)
    result["lines"] = result["lines"].astype("Int64")
    return result


def _summed(
    rows: pa.Table, positions: pd.DataFrame, window: tuple[int, int], by: str
) -> pd.DataFrame:
    """The lines of each snapshot's rows summed per period (`positions`' codes) and `by`:
    `period, <by>, lines`, as `LINES_SQL` sums them (a snapshot of the window outside
    the periods counts in none)."""
    code = np.full(window[1] - window[0] + 1, -1, "int64")
    code[positions["idx"].to_numpy("int64") - window[0]] = positions["period"].to_numpy("int64")
    period = code[rows.column("idx").to_numpy() - window[0]]
    inside = period >= 0
    frame = pd.DataFrame(
        {
            "period": period[inside],
            by: rows.column(by).to_numpy(zero_copy_only=False)[inside],
            "lines": rows.column("lines").to_numpy()[inside].astype("int64"),
        }
    )
    # A null group is summed too, as DuckDB's GROUP BY keeps it.
    return frame.groupby(["period", by], sort=False, dropna=False)["lines"].sum().reset_index()


def _model_before(
    obs: Observed,
    window: tuple[int, int],
    resets: pd.DataFrame,
    frames: dict[str, pd.DataFrame],
) -> str:
    """The model key of the lines read over `window`. The window starts from each
    chapter-language's row in force before it, and a re-scan with no row of its own
    counts under the model of the row before it: over the whole log, the last row whose
    lines changed, which the state need not be (a row may change its models alone). So
    for the languages of the chapters re-scanned in the window, that row's model is read
    from the log before the window (those chapters' rows only) and taken for their state
    rows (`models_before`, added to `frames`); every other row keeps its own."""
    model = LINES_KEYS["model"]
    first, last = window
    chapters = resets.loc[resets["idx"].between(first, last), ["chapter_id"]]
    if first == 0 or chapters.empty:
        return model
    frames["models_before"] = obs.store.query(
        f"""
        SELECT chapter_id, language_code, arg_max({model}, idx) AS key
        FROM languages_changes
        WHERE _changed IS NOT false AND idx < {first}
          AND chapter_id IN (SELECT chapter_id FROM rescanned)
        GROUP BY chapter_id, language_code
        """,
        frames={"rescanned": chapters.drop_duplicates()},
    )
    # The state rows are the window's rows at `first - 1` (stamped so, `_changed` null).
    return f"""coalesce((
        SELECT b.key FROM models_before b
        WHERE b.chapter_id = languages_changes.chapter_id
          AND b.language_code = languages_changes.language_code
          AND languages_changes.idx = {first - 1}), {model})"""


def _run_project_names(obs: Observed) -> pd.Series:
    """Each project's name by id, as the runs name them (from the chapters' rows: no
    runs frame is needed); its first row's. Once per view: spend and lines both ask."""
    if "run_project_names" in obs.memo:
        return cast(pd.Series, obs.memo["run_project_names"])
    rows = transition_rows(obs, ["project_id", "project"])
    if rows is None:
        return pd.Series(dtype=object)
    # Each project's first row told by code: texts for a year's 2.2 million rows were
    # 0.2 s, and a workspace has a few hundred projects.
    first = np.flatnonzero(~pd.Series(category_codes(rows["project_id"])).duplicated().to_numpy())
    named = rows.iloc[first].astype(object)
    obs.memo["run_project_names"] = named.set_index("project_id")["project"]
    return cast(pd.Series, obs.memo["run_project_names"])


@across
def price_per_page(store: SnapshotStore | Observed) -> dict[str | None, float]:
    """The effective price per page and target language, per project id; the key `None`
    holds the workspace-wide median. Learned from first runs only (`prices.learn_prices`):
    a project's own price needs two of its first runs, else it takes the workspace's.

    Args:
        store: A `SnapshotStore` or its `Observed` view; or several workspaces' stores at
            once (a mapping of label to store, or a list), and then the answer has a
            `workspace` column first, or is one dict per label where the call answers with a
            dict (`toolkit.analysis.workspaces`).

    Returns:
        Credits per page and target language by project id; `None` for the workspace.
    """
    return dict(observe(store).stage(Prices).learned)


@across
def price_per_chapter(store: SnapshotStore | Observed) -> dict[str | None, float]:
    """For chapters without pages (novels, priced by their text): the median first-run
    charge per chapter and target language, per project id (`None`: all of them).

    Args:
        store: A `SnapshotStore` or its `Observed` view; or several workspaces' stores at
            once (a mapping of label to store, or a list), and then the answer has a
            `workspace` column first, or is one dict per label where the call answers with a
            dict (`toolkit.analysis.workspaces`).

    Returns:
        Credits per chapter and target language by project id; `None` for all.
    """
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


@across
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

    Args:
        store: A `SnapshotStore` or its `Observed` view; or several workspaces' stores at
            once (a mapping of label to store, or a list), and then the answer has a
            `workspace` column first, or is one dict per label where the call answers with a
            dict (`toolkit.analysis.workspaces`).
        freq: The period, any pandas offset alias ("h", "D", "W-MON", "MS").
        by: Group by "project_id" (its name in `project`), "language_code" or
            "chapter_id".
        since: The window's start, included (a naive time is read in `tz`); by default
            the beginning.
        until: The window's end, excluded; by default no end.
        tz: The time zone a naive `since` or `until` is read in; UTC by default; also the
            zone of the periods.
        fill: Give every period from the first to the last, and every group, a row (0
            where nothing happened).

    Returns:
        The credits, one row per period and group.

    Raises:
        ValueError: `by` or `freq` is not one this function takes.
    """
    _check("by", by, ("project_id", "language_code", "chapter_id"))
    obs = observe(store)
    runs = obs.stage(RunTable)
    positions, starts = _periods(obs, freq, tz=tz, since=since, until=until)
    period = np.full(len(obs.manifest), -1, dtype="int64")
    period[positions["idx"].to_numpy()] = positions["period"].to_numpy()
    seen = period[runs.seen_idx]
    kept = seen >= 0
    # The runs' chapters and projects by code (categoricals): no text is made for the
    # 200,000 runs of a year, only for the sums.
    spend = pd.DataFrame(
        {
            "period": seen[kept],
            "chapter_id": _at_runs(obs, "chapter_id", runs.row[kept]),
            "project_id": _at_runs(obs, "project_id", runs.row[kept]),
            "credits": runs.credits[kept],
            "rework_credits": runs.rework[kept],
        }
    )
    if by == "language_code":
        spend = _per_language(obs, spend.astype({"project_id": object}))
    measures = ["credits", "rework_credits"]
    sums = spend.groupby(["period", by], dropna=False, observed=True)[measures].sum()
    sums = sums.reset_index()
    names = _run_project_names(obs) if by == "project_id" else None
    result = _shape(sums, starts, by, measures, freq=freq, tz=tz, fill=fill, names=names)
    for column in ("credits", "rework_credits"):
        result[column] = result[column].astype("Float64")
    return result


def _at_runs(obs: Observed, column: str, rows: np.ndarray) -> pd.Series:
    """A text column of the transition rows (a categorical) at the given rows."""
    found = transition_rows(obs, [column]) if len(rows) else None
    if found is None:
        return pd.Series(dtype="category")
    return taken(found[column], rows)


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


@across
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

    Args:
        store: A `SnapshotStore` or its `Observed` view; or several workspaces' stores at
            once (a mapping of label to store, or a list), and then the answer has a
            `workspace` column first, or is one dict per label where the call answers with a
            dict (`toolkit.analysis.workspaces`); of several, the one whose latest snapshot
            holds the project prices it.
        project_id: The project the upload goes to.
        pages: The pages to upload (for a novel project: chapters of its usual length).
        languages: How many target languages, or their codes; by default the project's.

    Returns:
        The estimated credits.

    Raises:
        ValueError: No price was learned yet for a chapter like the project's, the
            project is not in the latest snapshot and `languages` was not given, or it
            is in none of several workspaces given.
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

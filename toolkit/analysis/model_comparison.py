"""Which translation model is cheaper or faster, comparing like with like.

```python
tk.analysis.compare_models(store)        # per stratum and model, with a verdict
tk.analysis.price_by_language(store)     # credits per page, per project and language
```

A model used on lettered comics in three languages and another on plain text in one
differ in cost per page and in hours per page for reasons that are not the model: that
is a mix effect. So runs are compared only within a *stratum* of the same project kind,
process steps and number of target languages; and price is normalised per page and
target language (what the service charges for), hours per page (what a run's length
scales with). Within a stratum a difference is called only when a bootstrap interval of
it (over runs, seeded, so the answer is the same every time) excludes zero and it is
at least `_MATERIAL` of the smaller value; otherwise the verdict says the data cannot
tell the models apart, or that there are too few runs to say.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from toolkit import metrics
from toolkit.analysis._arrays import looked_up
from toolkit.analysis.observed import Observed, observe
from toolkit.analysis.runs import runs
from toolkit.analysis.workspaces import across
from toolkit.formatting import show
from toolkit.frames.schema import TEXT_DTYPE

if TYPE_CHECKING:
    from toolkit.store import SnapshotStore
    from toolkit.timestamps import When

__all__ = ["compare_models", "price_by_language"]

_STRATUM = ["kind", "process_steps", "languages"]
_MATERIAL = 0.05  # a difference smaller than 5% is not one a buyer acts on
_RESAMPLES = 1000
_ENDED = ("finished", "failed", "stalled")


@across
def compare_models(
    store: SnapshotStore | Observed,
    *,
    since: When | None = None,
    until: When | None = None,
    tz: str | None = None,
    confidence: float = 0.9,
    min_runs: int = 3,
) -> pd.DataFrame:
    """Per stratum (project `kind`, `process_steps`, number of target `languages`) and
    `model`: `runs`, `ended_runs`, `pages`, `credits`, `credits_per_page_language`
    (comics: credits over pages times languages, of runs charged in the store's
    history), `credits_per_chapter_language` (novels, priced by their text),
    `hours_per_page` (median over finished runs), `failure_rate` and `stall_rate` (over
    ended runs), `rework_share` (of credits), and the stratum's `verdict`.

    `since`/`until` keep the runs that started in [since, until).

    Args:
        store: A `SnapshotStore` or its `Observed` view; or several workspaces' stores at
            once (a mapping of label to store, or a list), and then the answer has a
            `workspace` column first, or is one dict per label where the call answers with a
            dict (`toolkit.analysis.workspaces`).
        since: The window's start, included, on the runs' start (a naive time is read in
            `tz`); by default the beginning.
        until: The window's end, excluded; by default no end.
        tz: The time zone a naive `since` or `until` is read in; UTC by default.
        confidence: The confidence of the bootstrap interval a difference must clear.
        min_runs: With fewer runs of a model in a stratum than this, the verdict says
            there are too few to compare.

    Returns:
        One row per stratum and model.
    """
    obs = observe(store)
    seen = _with_strata(obs, runs(obs, since=since, until=until, tz=tz))
    rows = []
    for key, stratum in seen.groupby(_STRATUM, sort=True, dropna=False):
        verdict = _verdict(stratum, confidence=confidence, min_runs=min_runs)
        for model, mine in stratum.groupby("model", sort=True):
            rows.append({**dict(zip(_STRATUM, key, strict=True)), "model": model,
                         **_figures(mine), "verdict": verdict})  # fmt: skip
    return _shape(pd.DataFrame(rows))


@across
def price_by_language(
    store: SnapshotStore | Observed,
    *,
    since: When | None = None,
    until: When | None = None,
    tz: str | None = None,
) -> pd.DataFrame:
    """Credits per page for each project and target language: `project_id, project,
    language_code, model, runs, pages, credits, credits_per_page`. The service charges a
    run per chapter, so a run's credits are split evenly over its languages; novels
    (priced by their text) are left out. Runs charged before the store's first snapshot
    have no charge to count and are left out too.

    Args:
        store: A `SnapshotStore` or its `Observed` view; or several workspaces' stores at
            once (a mapping of label to store, or a list), and then the answer has a
            `workspace` column first, or is one dict per label where the call answers with a
            dict (`toolkit.analysis.workspaces`).
        since: The window's start, included, on the runs' start (a naive time is read in
            `tz`); by default the beginning.
        until: The window's end, excluded; by default no end.
        tz: The time zone a naive `since` or `until` is read in; UTC by default.

    Returns:
        One row per project, target language and model.
    """
    obs = observe(store)
    seen = _with_strata(obs, runs(obs, since=since, until=until, tz=tz))
    paid = seen[(seen["kind"] == "comic") & (seen["credits"] > 0) & (seen["pages"] > 0)]
    paid = paid.assign(share=paid["credits"] / paid["languages"].clip(lower=1))
    live = obs.languages[~obs.languages["deleted"].fillna(False).astype(bool)]
    targets = live[["chapter_id", "language_code"]].drop_duplicates().astype(TEXT_DTYPE)
    per = paid.merge(targets, on="chapter_id")
    grouped = per.groupby(["project_id", "language_code", "model"], sort=True)
    frame = grouped.agg(project=("project", "first"), runs=("run_id", "nunique"),
                        pages=("pages", "sum"), credits=("share", "sum")).reset_index()  # fmt: skip
    frame["credits_per_page"] = (frame["credits"] / frame["pages"]).astype("Float64")
    frame = frame[["project_id", "project", "language_code", "model", "runs", "pages",
                   "credits", "credits_per_page"]]  # fmt: skip
    for column in ("project_id", "project", "language_code", "model"):
        frame[column] = frame[column].astype(TEXT_DTYPE)
    frame[["runs", "pages"]] = frame[["runs", "pages"]].astype("Int64")
    frame["credits"] = frame["credits"].astype("Float64")
    return frame.reset_index(drop=True)


def _with_strata(obs: Observed, seen: pd.DataFrame) -> pd.DataFrame:
    """The runs with their project's kind and process steps, and their model by name."""
    projects = obs.store.latest("projects").set_index("project_id")
    seen = seen.assign(
        kind=looked_up(seen["project_id"], projects["kind"]).astype(TEXT_DTYPE),
        process_steps=looked_up(seen["project_id"], projects["process_steps"]).astype(TEXT_DTYPE),
        model=seen["models"].astype(TEXT_DTYPE).fillna("(unknown)"),
    )
    return seen.astype({"languages": "Int64", "pages": "Int64"})


def _samples(runs_of: pd.DataFrame) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per measure, per run: (numerator, denominator), so that a resample's figure is
    sum over sum (price) or the median of the ratios (hours per page)."""
    paid = runs_of[(runs_of["credits"] > 0) & (runs_of["pages"].fillna(0) > 0)]
    page_langs = (paid["pages"] * paid["languages"]).astype(float).to_numpy()
    done = runs_of[(runs_of["outcome"] == "finished") & (runs_of["pages"].fillna(0) > 0)]
    hours = (done["finished_at"] - done["started_at"]).dt.total_seconds() / 3600
    ended = runs_of[runs_of["outcome"].isin(_ENDED).fillna(False)]
    return {
        "price": (paid["credits"].astype(float).to_numpy(), page_langs),
        "speed": (hours.to_numpy(float), done["pages"].astype(float).to_numpy()),
        "failures": (
            ended["outcome"].isin(["failed", "stalled"]).to_numpy(float),
            np.ones(len(ended)),
        ),
    }


def _ratio(num: np.ndarray, den: np.ndarray) -> float:
    return float(num.sum() / den.sum()) if den.sum() else np.nan


def _median_ratio(num: np.ndarray, den: np.ndarray) -> float:
    return float(np.median(num / den)) if len(num) else np.nan


# Each measure's statistic and the registry's figure (toolkit.metrics) it is shown as.
_STATISTICS: dict[str, tuple[Callable[[np.ndarray, np.ndarray], float], str]] = {
    "price": (_ratio, "credits_per_page_language"),
    "speed": (_median_ratio, "hours_per_page"),
    "failures": (_ratio, "failure_rate"),
}


def _figures(mine: pd.DataFrame) -> dict[str, object]:
    samples = _samples(mine)
    comic = (mine["kind"] == "comic").all()
    novel_paid = mine[(mine["credits"] > 0) & (mine["kind"] == "novel")]
    ended = mine[mine["outcome"].isin(_ENDED).fillna(False)]
    credits = float(mine["credits"].sum())
    return {
        "runs": len(mine),
        "ended_runs": len(ended),
        "pages": int(mine["pages"].fillna(0).sum()),
        "credits": credits,
        "credits_per_page_language": _ratio(*samples["price"]) if comic else np.nan,
        "credits_per_chapter_language": (
            float((novel_paid["credits"] / novel_paid["languages"].clip(lower=1)).mean())
            if len(novel_paid)
            else np.nan
        ),
        "hours_per_page": _median_ratio(*samples["speed"]),
        # Failed or stalled, as `failure_rates` counts it (one label, one quantity).
        "failure_rate": float(ended["outcome"].isin(["failed", "stalled"]).mean())
        if len(ended)
        else np.nan,
        "stall_rate": float((ended["outcome"] == "stalled").mean()) if len(ended) else np.nan,
        "rework_share": float(mine["rework"].sum()) / credits if credits else np.nan,
    }


def _verdict(stratum: pd.DataFrame, *, confidence: float, min_runs: int) -> str:
    models = sorted(stratum["model"].unique())
    if len(models) < 2:
        return f"only {models[0]} in this stratum: nothing to compare it with"
    counts = stratum["model"].value_counts()
    if counts.min() < min_runs:
        listed = ", ".join(f"{m}: {counts[m]}" for m in models)
        return f"too few runs to compare ({listed}; at least {min_runs} each)"
    per_model = {m: _samples(stratum[stratum["model"] == m]) for m in models}
    parts = []
    for measure, (statistic, figure) in _STATISTICS.items():
        parts.append(_compare(measure, statistic, figure, per_model, confidence))
    return "; ".join(parts)


def _compare(
    measure: str,
    statistic: Callable[[np.ndarray, np.ndarray], float],
    figure: str,
    per_model: dict[str, dict[str, tuple[np.ndarray, np.ndarray]]],
    confidence: float,
) -> str:
    """One measure across the stratum's models: each against the best, bootstrapped; the
    values read as the registry shows `figure` (`26 s`, `14%`), under its label."""
    data = {m: per_model[m][measure] for m in per_model if len(per_model[m][measure][0])}
    if len(data) < 2:
        return f"{measure}: not enough runs that show it"
    values = {m: statistic(*pair) for m, pair in data.items()}
    best = min(values, key=lambda m: values[m])
    rng = np.random.default_rng(0)
    said = []
    for model in [m for m in sorted(data) if m != best]:
        differences = []
        for _ in range(_RESAMPLES):
            draws = []
            for name in (model, best):
                num, den = data[name]
                pick = rng.integers(0, len(num), len(num))
                draws.append(statistic(num[pick], den[pick]))
            differences.append(draws[0] - draws[1])
        low, high = np.nanquantile(differences, [(1 - confidence) / 2, (1 + confidence) / 2])
        gap = values[model] - values[best]
        smaller = min(abs(values[model]), abs(values[best]))
        material = gap > _MATERIAL * smaller if smaller else gap > 0
        figures = (f"{metrics.header(figure)}: {best} {show(figure, values[best])} vs "
                   f"{model} {show(figure, values[model])}")  # fmt: skip
        if low > 0 and material:
            interval = (f"{confidence:.0%} interval of the gap {show(figure, low)} to "
                        f"{show(figure, high)}")  # fmt: skip
            said.append(f"{measure}: {best} is better ({figures}; {interval})")
        else:
            said.append(f"{measure}: cannot tell {best} and {model} apart ({figures})")
    return "; ".join(said)


def _shape(frame: pd.DataFrame) -> pd.DataFrame:
    columns = [*_STRATUM, "model", "runs", "ended_runs", "pages", "credits",
               "credits_per_page_language", "credits_per_chapter_language", "hours_per_page",
               "failure_rate", "stall_rate", "rework_share", "verdict"]  # fmt: skip
    frame = frame.reindex(columns=columns)
    for column in ("kind", "process_steps", "model", "verdict"):
        frame[column] = frame[column].astype(TEXT_DTYPE)
    for column in ("languages", "runs", "ended_runs", "pages"):
        frame[column] = frame[column].astype("Int64")
    for column in columns[columns.index("credits") : -1]:
        frame[column] = frame[column].astype("Float64")
    return frame

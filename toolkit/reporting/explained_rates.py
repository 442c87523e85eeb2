"""The rows behind the figures of runs: failure rates and the model comparison.

Each row is a run that started in the period (`analysis.runs`, the runs
`failure_rates` and `compare_models` count), with its outcome, model and stratum in
`detail`. A count sums its rows' `value`; a rate is a ratio
(`explanations.HOW`: the sum of `value` over the sum of `denominator`), so each run
carries its part of both: for `failure_rate`, 1 over 1 for a run that failed or
stalled and 0 over 1 for one that finished. The model comparison's figures are made per
stratum (project kind, process steps, target languages) and model, as
`tk.analysis.compare_models` makes them: `detail` names both, so a reader groups the
rows as the comparison does (docs/figures.md, "Figures that are not sums").
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Final

import numpy as np
import pandas as pd

from toolkit.analysis import runs
from toolkit.formatting import count

if TYPE_CHECKING:
    from toolkit.analysis.observed import Observed
    from toolkit.reporting.figures import Period

__all__ = ["RATES"]

Reader = Callable[["Observed", "Period"], pd.DataFrame]
_ENDED: Final = ("finished", "failed", "stalled")


def _started(obs: Observed, when: Period) -> pd.DataFrame:
    """The runs that started in the period, with their project's kind and process steps
    and their model by name (the comparison's strata)."""
    found = runs(obs, since=when.since, until=when.until)
    projects = obs.store.latest("projects")
    kinds = pd.Series(projects["kind"].astype(object).to_numpy(),
                      index=projects["project_id"].astype(object))  # fmt: skip
    steps = pd.Series(projects["process_steps"].astype(object).to_numpy(),
                      index=projects["project_id"].astype(object))  # fmt: skip
    ids = found["project_id"].astype(object)
    return found.assign(
        project_kind=kinds.reindex(ids).to_numpy(),
        process_steps=steps.reindex(ids).to_numpy(),
        model=found["models"].astype(object).fillna("(unknown)"),
    )


def _detail(found: pd.DataFrame) -> pd.Series:
    """A run in words: its kind and outcome, then the model and stratum it is compared in."""
    said = [
        f"{kind} run, {outcome}; model {model}; {project_kind}, {steps} steps, "
        f"{count(int(languages), 'language') if pd.notna(languages) else '? languages'}"
        for kind, outcome, model, project_kind, steps, languages in zip(
            found["kind"].astype(object), found["outcome"].astype(object).fillna("outcome unknown"),
            found["model"], found["project_kind"], found["process_steps"], found["languages"],
            strict=True,
        )
    ]  # fmt: skip
    return pd.Series(said, index=found.index, dtype=object)


def _rows(found: pd.DataFrame, value: object, denominator: object = None,
          counts: object = True) -> pd.DataFrame:  # fmt: skip
    return pd.DataFrame(
        {
            "project_id": found["project_id"], "project": found["project"],
            "chapter_id": found["chapter_id"], "chapter": found["chapter"], "source": "run",
            "source_id": found["run_id"], "at": found["started_at"],
            "started_at": found["started_at"], "finished_at": found["finished_at"],
            "detail": _detail(found), "value": value, "denominator": denominator,
            "counts": counts,
        }
    )  # fmt: skip


def _ended(outcomes: tuple[str, ...] | None, *, ratio: bool) -> Reader:
    def read(obs: Observed, when: Period) -> pd.DataFrame:
        """The runs that started in the period and ended (finished, failed or stalled):
        a count's rows are those with an outcome in `outcomes` (value 1); a rate's are
        every run that ended, 1 or 0 over 1."""
        found = _started(obs, when)
        found = found[found["outcome"].isin(_ENDED).fillna(False).to_numpy(bool)]
        hit = found["outcome"].isin(outcomes or _ENDED).fillna(False).astype("int64")
        if ratio:
            return _rows(found, hit, 1)
        return _rows(found[hit.to_numpy(bool)], 1)

    return read


def _pages(obs: Observed, when: Period) -> pd.DataFrame:
    """Each run's pages, summed per stratum and model by the comparison."""
    found = _started(obs, when)
    return _rows(found, found["pages"].fillna(0).astype("int64"))


def _paid(found: pd.DataFrame, kind: str) -> np.ndarray:
    return (
        (
            (found["credits"] > 0)
            & (found["project_kind"] == kind)
            & (found["pages"].fillna(0) > 0)
            if kind == "comic"
            else (found["credits"] > 0) & (found["project_kind"] == kind)
        )
        .fillna(False)
        .to_numpy(bool)
    )


def _per_page_language(obs: Observed, when: Period) -> pd.DataFrame:
    """Each paid run of pages: its credits over its pages times its languages (a
    ratio of sums per stratum and model); a novel's runs do not count."""
    found = _started(obs, when)
    found = found[(found["credits"] > 0).fillna(False).to_numpy(bool)]
    paid = _paid(found, "comic")
    size = (found["pages"].fillna(0) * found["languages"].fillna(0)).astype("float64")
    return _rows(found, found["credits"].astype("float64"), size, counts=paid)


def _per_chapter_language(obs: Observed, when: Period) -> pd.DataFrame:
    """Each paid run of a novel: its credits over its languages (the comparison takes
    the mean per stratum and model)."""
    found = _started(obs, when)
    found = found[_paid(found, "novel")]
    share = found["credits"].astype("float64") / found["languages"].fillna(0).clip(lower=1)
    return _rows(found, share)


def _hours_per_page(obs: Observed, when: Period) -> pd.DataFrame:
    """Each finished run of pages: its time from start to finish over its pages (the
    comparison takes the median per stratum and model)."""
    found = _started(obs, when)
    done = (found["outcome"] == "finished").fillna(False) & (found["pages"].fillna(0) > 0)
    found = found[done.to_numpy(bool)]
    hours = (found["finished_at"] - found["started_at"]).dt.total_seconds() / 3600
    return _rows(found, hours / found["pages"].astype("float64"))


RATES: Final[dict[str, Reader]] = {
    "runs": _ended(None, ratio=False),
    "ended_runs": _ended(None, ratio=False),
    "finished": _ended(("finished",), ratio=False),
    "failure_rate": _ended(("failed", "stalled"), ratio=True),
    "stalled_rate": _ended(("stalled",), ratio=True),
    "pages": _pages,
    "credits_per_page_language": _per_page_language,
    "credits_per_chapter_language": _per_chapter_language,
    "hours_per_page": _hours_per_page,
}

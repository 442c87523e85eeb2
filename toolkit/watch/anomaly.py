"""The `anomaly` check: a project's latest period against its own recent baseline.

Three measures per project, in bins of `anomaly_period` (a day by default, aligned to
UTC midnight): credits spent, failure rate (failed and stalled runs over the runs that
ended in the bin) and lines translated. The latest *complete* bin is compared with the
`anomaly_baseline` bins before it: it is unusual when it lies more than `anomaly_mads`
scaled median absolute deviations from their median (`_outlier`). Spend and failures
are flagged when high, throughput when low while the project has work running (an idle
day is not slowness). The message states the baseline.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from toolkit import analysis
from toolkit.analysis.observed import observe
from toolkit.analysis.runs import runs_ended
from toolkit.watch.config import CheckSettings
from toolkit.watch.findings import Finding

if TYPE_CHECKING:
    from toolkit.store import SnapshotStore

__all__ = ["evaluate", "failures_by_bin"]

_SCALE = 1.4826  # makes the MAD estimate a standard deviation for normal data
_MIN_BASELINE = 3  # bins with data needed before anything is called unusual
_MIN_RUNS = 3  # runs ended in a bin before its failure rate counts


@dataclass(frozen=True)
class _Baseline:
    median: float
    mad: float  # scaled
    bins: int


def _outlier(value: float, history: list[float], mads: float, floor: float) -> _Baseline | None:
    """The baseline when `value` lies more than `mads` scaled MADs from the median of
    `history`, else None. `floor` is the least spread assumed: a flat history (MAD 0)
    would otherwise make any change unusual."""
    if len(history) < _MIN_BASELINE:
        return None
    values = np.asarray(history, dtype=float)
    median = float(np.median(values))
    mad = _SCALE * float(np.median(np.abs(values - median)))
    if abs(value - median) <= mads * max(mad, floor):
        return None
    return _Baseline(median, mad, len(history))


def evaluate(
    store: SnapshotStore, workspace: str, settings: CheckSettings, now: pd.Timestamp
) -> list[Finding]:
    """The anomaly check: a figure of the last complete period far from its baseline."""
    period = pd.Timedelta(settings.anomaly_period)
    end = now.floor(period)  # the latest complete bin is [end - period, end)
    first = end - period * (settings.anomaly_baseline + 1)
    times = store.snapshots()["snapshot_at"]
    if times.empty:
        return []
    start = max(first, times.iloc[0].ceil(period))  # the baseline snapshot counts for nothing
    bins = pd.date_range(start, end - period, freq=period, tz="UTC")
    if len(bins) < _MIN_BASELINE + 1:
        return []
    freq = f"{int(period.total_seconds())}s"
    found: list[Finding] = []
    names: dict[str, str] = {}

    def series(frame: pd.DataFrame, column: str) -> Iterator[tuple[str, np.ndarray]]:
        """Per project, its sums in every bin (0 where none), in one grouping."""
        firsts = frame.drop_duplicates("project_id")
        firsts = firsts[firsts["project_id"].notna()]
        names.update(
            zip(firsts["project_id"].astype(str), firsts["project"].astype(str), strict=True)
        )
        sums = frame.groupby(["period", "project_id"])[column].sum()
        grid = sums.unstack("project_id").reindex(bins).fillna(0.0)
        # A row of numbers a project (not a frame's column each: a workspace has hundreds).
        return zip(map(str, grid.columns), grid.to_numpy("float64").T, strict=True)

    spend = analysis.credit_spend(store, freq=freq, by="project_id", since=start, until=end)
    for pid, values in series(spend, "credits"):
        found += _flag("spend", pid, names[pid], workspace, values, bins, settings, high=True)
    lines = analysis.throughput(store, freq=freq, by="project_id", since=start, until=end)
    running = _running_projects(store)
    for pid, values in series(lines, "lines"):
        if pid in running:
            found += _flag(
                "throughput", pid, names[pid], workspace, values, bins, settings, high=False
            )
    found += _failure_rates(store, workspace, settings, bins, period)
    return found


def _running_projects(store: SnapshotStore) -> set[str]:
    chapters = observe(store).latest_chapters  # read once a cycle, shared with the rest
    return set(chapters.loc[chapters["processing"].fillna(False).astype(bool), "project_id"])


def _failure_rates(
    store: SnapshotStore,
    workspace: str,
    settings: CheckSettings,
    bins: pd.DatetimeIndex,
    period: pd.Timedelta,
) -> list[Finding]:
    ended = runs_ended(observe(store), since=bins[0], until=bins[-1] + period)
    names = ended.drop_duplicates("project_id").set_index("project_id")["project"]
    counts = failures_by_bin(ended, bins, period)
    counts = counts[counts["count"] >= _MIN_RUNS]
    if counts.empty:
        return []
    # By project, a row of bins (NaN where too few runs ended): not a frame each.
    failed, ran = (counts[c].unstack("bin").reindex(columns=bins) for c in ("sum", "count"))
    found = []
    for project_id, fails, runs in zip(
        failed.index, failed.to_numpy(), ran.to_numpy(), strict=True
    ):
        if np.isnan(runs[-1]):
            continue  # too few runs ended in the latest bin
        rates = fails / runs
        history = [float(v) for v in rates[:-1] if not np.isnan(v)]
        value = float(rates[-1])
        base = _outlier(value, history, settings.anomaly_mads, floor=0.05)
        if base is None or value <= base.median:
            continue
        project = str(names[project_id])
        found.append(
            Finding(
                check="anomaly",
                scope="project",
                subject=project,
                workspace=workspace,
                message=(
                    f"{project}: failure rate {value:.0%} ({int(fails[-1])} of "
                    f"{int(runs[-1])} runs) {_bin_words(bins[-1], period)}, against a "
                    f"baseline of {base.median:.0%} (median of {base.bins} "
                    f"{_unit(period)}, MAD {base.mad * 100:.0f} points)"
                ),
                figures={
                    "measure": "failure_rate",
                    "value": round(value, 3),
                    "runs": int(runs[-1]),
                    "median": round(base.median, 3),
                    "mad": round(base.mad, 3),
                    "baseline_bins": base.bins,
                    "bin_start": bins[-1].isoformat(),
                    "project_id": str(project_id),
                },
                detail="failure_rate",
            )
        )
    return found


def failures_by_bin(
    ended: pd.DataFrame, bins: pd.DatetimeIndex, period: pd.Timedelta
) -> pd.DataFrame:
    """Runs ended in each of `bins` per project, and how many of them failed or stalled:
    `sum, count` by `project_id, bin`, bins with none left out. Only the runs that ended
    in the bins are read (whole periods: a run's bin is the period it ended in), not the
    project's whole history."""
    ended = ended[(ended["finished_at"] >= bins[0]) & (ended["finished_at"] < bins[-1] + period)]
    binned = pd.DataFrame(
        {
            "project_id": ended["project_id"],
            "bin": ended["finished_at"].dt.floor(period),
            "failed": ended["outcome"].isin(["failed", "stalled"]),
        }
    )
    return binned.groupby(["project_id", "bin"])["failed"].agg(["sum", "count"])


def _flag(
    measure: str,
    project_id: str,
    project: str,
    workspace: str,
    values: np.ndarray,
    bins: pd.DatetimeIndex,
    settings: CheckSettings,
    *,
    high: bool,
) -> list[Finding]:
    """The finding when the last of `values` (one a bin) is unusual against the rest."""
    history = values[:-1].tolist()
    value = float(values[-1])
    median = float(np.median(history)) if history else 0.0
    base = _outlier(value, history, settings.anomaly_mads, floor=max(1.0, 0.1 * median))
    if base is None or (value > base.median) != high or (high and base.median == 0 and value < 10):
        return []
    unit = "credits" if measure == "spend" else "lines"
    period = bins[1] - bins[0]
    words = "spent" if measure == "spend" else "translated"
    return [
        Finding(
            check="anomaly",
            scope="project",
            subject=project,
            workspace=workspace,
            message=(
                f"{project}: {value:,.0f} {unit} {words} {_bin_words(bins[-1], period)}, "
                f"against a baseline of {base.median:,.0f} (median of {base.bins} "
                f"{_unit(period)}, MAD {base.mad:,.0f})"
            ),
            figures={
                "measure": measure,
                "value": value,
                "median": base.median,
                "mad": round(base.mad, 3),
                "baseline_bins": base.bins,
                "bin_start": bins[-1].isoformat(),
                "project_id": project_id,
            },
            detail=measure,
        )
    ]


def _unit(period: pd.Timedelta) -> str:
    if period == pd.Timedelta(days=1):
        return "days"
    if period == pd.Timedelta(hours=1):
        return "hours"
    return f"periods of {period}"


def _bin_words(start: pd.Timestamp, period: pd.Timedelta) -> str:
    if period == pd.Timedelta(days=1):
        return f"on {start.day} {start:%b}"
    return f"in the {_unit(period).rstrip('s')} from {start:%d %b %H:%M} UTC"

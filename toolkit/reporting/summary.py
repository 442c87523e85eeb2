"""The store's figures for a lead as a folder: PNG plots, the figures, the outlook.

The folder gets `progress.png`, `throughput.png`, `credit_spend.png`,
`status_breakdown.png`, `cycle_times.png`; the period's figures (`figures.py`, the same
numbers the weekly page shows) as `summary.csv` (one row per project and an
"(all projects)" row; an empty cell is no data) and `figures.json`; then the outlook:
`burn_down.png` with `forecast.csv` (when each project's open work will be done),
`model_comparison.csv` (like for like) and `spend_this_month.csv` (this month against
last).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import pandas as pd

from toolkit import analysis, metrics, plots
from toolkit.analysis.observed import Observed
from toolkit.errors import ConfigError, ToolkitError
from toolkit.formatting import hours, text, text_table, whole
from toolkit.reporting.figures import (
    FIGURES,
    WORDS,
    Figures,
    figures,
    label,
    whole_numbers,
    write_json,
)
from toolkit.store import SnapshotStore

__all__ = ["PLOTS", "summary", "write_report"]

PLOTS = ("progress", "throughput", "credit_spend", "status_breakdown", "cycle_times")
_TOTAL = "(all projects)"


def summary(figs: Figures) -> pd.DataFrame:
    """The figures as one row per project and a total row: `summary.csv`."""
    total = pd.DataFrame([{"project_id": pd.NA, "project": _TOTAL, **figs.totals}])
    table = pd.concat([figs.projects, total.astype(figs.projects.dtypes)], ignore_index=True)
    return table


def _text_summary(figs: Figures) -> str:
    """The figures for a terminal: what each column counts and over which period."""
    when = figs.period
    rows = [
        {
            "project": str(row["project"]),
            **{WORDS[name]: whole(row[name]) or "-" for name in FIGURES},
            WORDS["median_cycle_hours"]: hours(row["median_cycle_hours"]) or "-",
        }
        for row in summary(figs).to_dict("records")
    ]
    at_end = label("open_lines", when).removeprefix(WORDS["open_lines"] + " ")
    lines = [
        f"Figures, {when.label()} ({when.snapshots} snapshots after the baseline); "
        f"{WORDS['open_lines']} and {WORDS['needs_action']} {at_end}; "
        '"-": no data (docs/figures.md):',
        text_table(rows),
    ]
    return "\n".join(lines)


def write_report(
    store: SnapshotStore | str | os.PathLike[str],
    *,
    out: str | os.PathLike[str],
    echo: bool = True,
    workspaces: Mapping[str, SnapshotStore] | None = None,
    days: int = 7,
) -> Path:
    """Write the PNG plots and `summary.csv` into `out`; returns the folder.

    echo: print the summary table and where the files went. workspaces: the agency's
    stores by label, for the spend of each this month against last (default: this one).
    days: the figures cover the `days` days up to the last snapshot (`figures.period`).
    """
    import matplotlib.pyplot as plt

    folder = _check_folder(out)  # before reading the store: fail fast, make nothing yet
    source = store if isinstance(store, SnapshotStore) else SnapshotStore(store)
    obs = Observed(source)
    if obs.manifest.empty:
        raise ToolkitError(
            f"the store {source.root!r} has no snapshots yet; take some first "
            "(`toolkit snapshot`, or store.take(client)), an hour or so apart"
        )
    _make_folder(folder)
    written = []
    for name in PLOTS:
        ax = getattr(plots, name)(obs)
        path = folder / f"{name}.png"
        ax.figure.savefig(path, dpi=110)
        plt.close(ax.figure)
        written.append(path)
    figs = figures(obs, days=days)
    csv = folder / "summary.csv"
    summary(figs).to_csv(csv, index=False)
    written.extend([csv, write_json(figs, folder / "figures.json")])
    outlook, tables = _outlook(obs, folder, workspaces)
    written.extend(outlook)
    if echo:
        print(_text_summary(figs))
        for name, frame in tables.items():
            print(f"\n{name.replace('_', ' ').capitalize()}:\n{_terminal(name, frame)}")
        print(f"Report written to {folder}: {', '.join(p.name for p in written)}")
    return folder


def _check_folder(out: str | os.PathLike[str]) -> Path:
    """`out` as a path, or a `ConfigError` naming the file that stands in its way."""
    folder = Path(out)
    for path in (folder, *folder.parents):
        if path.exists() and not path.is_dir():
            raise ConfigError(
                f"the report folder {str(folder)!r} cannot be made: {str(path)!r} is a file; "
                "give --out (out=) a folder, or move the file"
            )
    return folder


def _make_folder(folder: Path) -> None:
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(
            f"the report folder {str(folder)!r} cannot be made ({exc.strerror}); "
            "give --out (out=) a folder you can write to"
        ) from exc


# What a table of `_outlook` says, in one line, when the store gives it no row.
_NOTHING = {
    "forecast": "no chapter open or waiting for a person: nothing to forecast",
    "model_comparison": "no run yet to compare the translation models on",
    "spend_this_month": "no workspace to sum the spend of",
}


def _terminal(name: str, frame: pd.DataFrame) -> str:
    """A weekly table for the terminal: the figures by the notebooks' rules, and long
    verdicts (the model comparison's) as sentences below rather than a column off-screen;
    one line instead of an empty table."""
    if frame.empty:
        return f"  ({_NOTHING[name]})"
    if "verdict" not in frame.columns:
        return text(frame)
    verdicts = "\n".join(f"  - {v}" for v in dict.fromkeys(frame["verdict"].dropna()))
    return f"{text(frame.drop(columns='verdict'))}\nVerdicts:\n{verdicts}"


def _counted_whole(frame: pd.DataFrame) -> pd.DataFrame:
    """Counts and credits (by the registry's formats) as whole numbers in a CSV file, as
    every surface shows them: `602`, never `602.0`; the empty cell stays no data."""
    whole_columns = [
        c for c in frame.columns
        if (f := metrics.FIGURES.get(metrics.ALIASES.get(str(c), str(c)))) is not None
        and f.format in ("count", "credits") and pd.api.types.is_float_dtype(frame[c].dtype)
    ]  # fmt: skip
    return frame.assign(**{c: whole_numbers(frame[c]) for c in whole_columns})


def _outlook(
    obs: Observed, folder: Path, workspaces: Mapping[str, SnapshotStore] | None
) -> tuple[list[Path], dict[str, pd.DataFrame]]:
    """The weekly sections beyond the summary: the forecast per project with its
    burn-down, the model comparison, and spend this month against last (docs/analysis.md)."""
    import matplotlib.pyplot as plt

    ax = plots.burn_down(obs)
    burn = folder / "burn_down.png"
    figure = ax.get_figure(root=True)
    assert figure is not None  # burn_down draws on a figure of its own
    figure.savefig(burn, dpi=110)
    plt.close(figure)
    tables = {
        "forecast": analysis.forecast(obs, by="project_id"),
        "model_comparison": analysis.compare_models(obs),
        "spend_this_month": analysis.monthly_spend(workspaces or obs),
    }
    forecast = tables["forecast"]
    tables["forecast"] = forecast.drop(columns=["project_id"]).rename(
        columns={"as_of": "as_of_utc"}
    )
    written = [burn]
    for name, frame in tables.items():
        path = folder / f"{name}.csv"
        _counted_whole(frame).to_csv(path, index=False)
        written.append(path)
    return written, tables

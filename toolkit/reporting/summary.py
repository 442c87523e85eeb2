"""The store's figures for a lead as a folder: PNG plots and a summary table.

The folder gets `progress.png`, `throughput.png`, `credit_spend.png`,
`status_breakdown.png`, `cycle_times.png` and `summary.csv`: one row per project and a
"(all projects)" row; then the outlook: `burn_down.png` with `forecast.csv` (when each
project's open work will be done), `model_comparison.csv` (like for like) and
`spend_this_month.csv` (this month against last). Figures count between the store's
first snapshot and its last, as everything in `toolkit.analysis` does; the chapter
counts are those of the last one.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import pandas as pd

from toolkit import analysis, plots
from toolkit.analysis.observed import Observed
from toolkit.errors import ConfigError, ToolkitError
from toolkit.store import SnapshotStore

PLOTS = ("progress", "throughput", "credit_spend", "status_breakdown", "cycle_times")
TOTAL = "(all projects)"


def summary(store: SnapshotStore | Observed) -> pd.DataFrame:
    """One row per project (and a total): what a production lead reports on."""
    obs = store if isinstance(store, Observed) else Observed(store)
    projects = obs.store.latest("projects")[["project_id", "name"]]
    chapters = obs.store.latest("chapters")
    finished = chapters["status"].isin(["needs_review", "reviewed"]) & ~chapters["failed"].fillna(
        False
    )
    per = pd.DataFrame(
        {
            "chapters": chapters.groupby("project_id").size(),
            "chapters_finished": finished.groupby(chapters["project_id"]).sum(),
            "chapters_failed": chapters["failed"]
            .fillna(False)
            .groupby(chapters["project_id"])
            .sum(),
        }
    )
    lines = analysis.throughput(obs, freq="1D", by="project_id")
    per["lines_translated"] = lines.groupby("project_id")["lines"].sum()
    spend = analysis.credit_spend(obs, freq="1D", by="project_id")
    per["credits"] = spend.groupby("project_id")["credits"].sum()
    per["rework_credits"] = spend.groupby("project_id")["rework_credits"].sum()
    per["failed_runs"] = analysis.failures(obs).groupby("project_id").size()
    runs = analysis.cycle_times(obs)
    per["median_cycle_hours"] = runs.groupby("project_id")["hours"].median()
    prices = analysis.price_per_page(obs)
    per["price_per_page_language"] = pd.Series(
        {project: price for project, price in prices.items() if project is not None},
        dtype="Float64",
    )

    table = projects.set_index("project_id").join(per, how="outer")
    counts = ["chapters", "chapters_finished", "chapters_failed", "lines_translated", "failed_runs"]
    table[counts] = table[counts].fillna(0).astype("Int64")
    for column in ("credits", "rework_credits"):
        table[column] = table[column].fillna(0).astype("Float64")
    total: dict[str, object] = {
        column: table[column].sum() for column in [*counts, "credits", "rework_credits"]
    }
    total["name"] = TOTAL
    total["median_cycle_hours"] = runs["hours"].median() if len(runs) else pd.NA
    total["price_per_page_language"] = prices.get(None, pd.NA)
    last = pd.DataFrame([total], index=[TOTAL])[table.columns].astype(table.dtypes)
    table = pd.concat([table.sort_values("name"), last])
    table.index.name = "project_id"
    table = table.reset_index()
    table["project_id"] = table["project_id"].astype("string").mask(table["name"] == TOTAL)
    return table


def write_report(
    store: SnapshotStore | str | os.PathLike[str],
    *,
    out: str | os.PathLike[str],
    echo: bool = True,
    workspaces: Mapping[str, SnapshotStore] | None = None,
) -> Path:
    """Write the PNG plots and `summary.csv` into `out`; returns the folder.

    echo: print the summary table and where the files went. workspaces: the agency's
    stores by label, for the spend of each this month against last (default: this one).
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
    table = summary(obs)
    csv = folder / "summary.csv"
    table.to_csv(csv, index=False)
    written.append(csv)
    outlook = _outlook(obs, folder, workspaces)
    written.extend(outlook)
    if echo:
        first, last = obs.manifest["snapshot_at"].iloc[[0, -1]]
        span = f"from {first:%Y-%m-%d %H:%M} to {last:%Y-%m-%d %H:%M} UTC"
        print(f"{len(obs.manifest)} snapshots {span}")
        with pd.option_context("display.width", 160, "display.max_columns", None):
            print(table.drop(columns="project_id").round(2).to_string(index=False))
        for path in outlook[1:]:
            heading = path.stem.replace("_", " ").capitalize()
            with pd.option_context("display.width", 160, "display.max_columns", None):
                print(f"\n{heading}:\n{pd.read_csv(path).round(3).to_string(index=False)}")
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


def _outlook(
    obs: Observed, folder: Path, workspaces: Mapping[str, SnapshotStore] | None
) -> list[Path]:
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
        frame.to_csv(path, index=False)
        written.append(path)
    return written

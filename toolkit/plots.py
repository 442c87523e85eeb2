"""matplotlib helpers for the figures a production lead puts in a report.

Past 400 lines on purpose: the pictures share their axes, colours and "largest `top`,
the rest as other" rule; each public helper is a few lines over those.

```python
ax = tk.plots.throughput(store)                  # or a frame analysis.throughput returned
tk.plots.credit_spend(store, ax=axes[1])
ax.figure.savefig("spend.png")
```

Every helper takes a store, or the frame it would compute from one (named in its
docstring), and `ax=`; draws on a new figure when no Axes is given; returns the Axes;
never calls `plt.show()`. Times are drawn in UTC with concise date labels. With many
projects or languages, the largest `top` are drawn and the rest summed as "other", so
a workspace of a hundred projects stays legible.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, cast

import matplotlib as mpl
import matplotlib.dates as mdates
import numpy as np
import pandas as pd
from matplotlib.ticker import MaxNLocator

from toolkit import analysis, formatting, metrics
from toolkit.analysis import workspaces
from toolkit.analysis.observed import observe, with_previous
from toolkit.frames.schema import TIME_DTYPE
from toolkit.timestamps import When, utc

if TYPE_CHECKING:
    from typing import TypeAlias

    from matplotlib.axes import Axes

    from toolkit.analysis.observed import Observed
    from toolkit.store import SnapshotStore

    Source: TypeAlias = SnapshotStore | Observed | pd.DataFrame

__all__ = [
    "OTHER",
    "OTHER_COLOR",
    "REWORK",
    "TOP",
    "burn_down",
    "credit_spend",
    "cycle_times",
    "largest_wide",
    "progress",
    "project_colors",
    "status_breakdown",
    "throughput",
]

_Plot = Callable[..., "Axes"]

OTHER = "other"
OTHER_COLOR = "#a8a8a8"
REWORK = metrics.header("rework_credits")  # the hatched part's legend entry
TOP = 8
# Above this many periods, bars get thinner than a pixel: draw stacked areas instead.
_MAX_BARS = 60
_GROUP_LABELS = {
    "project_id": "project",
    "language_code": "language",
    "chapter_id": "chapter",
    "model": "model",
}
# Project colours, in turn (red stays for failures, grey for "other").
_PALETTE = ("#4f8fc0", "#e39b3b", "#6aa84f", "#9b6fc3", "#3bb2b0", "#d46a9f", "#c9a227",
           "#5b6bd0", "#8c6d4f", "#7fbf7f")  # fmt: skip
# One colour per chapter state (`toolkit.frames.STATES`), in the order the bars stack.
_STATE_COLORS = {
    "staged": "#c7c7c7",
    "reading": "#f6d28b",
    "translating": "#f2b134",
    "finishing": "#c98a1b",
    "failed": "#d0454c",
    "stalled": "#8f2a30",
    "needs_review": "#4f8fc0",
    "reviewed": "#3a9a5b",
}


def _axes(ax: Axes | None) -> Axes:
    if ax is not None:
        return ax
    import matplotlib.pyplot as plt

    _, ax = plt.subplots(figsize=(10, 5), layout="constrained")
    return ax


def _naive(times: pd.Series) -> pd.Series:
    """UTC times without their zone: matplotlib's date axis then shows them as UTC."""
    return pd.to_datetime(times, utc=True).dt.tz_convert(None)


def _date_axis(ax: Axes) -> None:
    # matplotlib.dates has no annotations on these constructors.
    # minticks 3: a span of 4-5 hours (a short history and its forecast) has too few
    # whole hours for the default 5, and matplotlib then warns and falls back.
    locator = mdates.AutoDateLocator(minticks=3, maxticks=10)  # type: ignore[no-untyped-call]
    ax.xaxis.set_major_locator(locator)
    ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator))  # type: ignore[no-untyped-call]
    ax.set_xlabel(metrics.header("time"))


def _top(frame: pd.DataFrame, column: str, measure: str, top: int) -> pd.DataFrame:
    """`frame` with every `column` value outside the `top` largest by `measure` summed
    as "other"."""
    # stable: equal totals keep the groups' order (by name); numpy's quicksort orders
    # ties differently from one numpy to the next (1.26 and 2.x pick other projects)
    totals = frame.groupby(column, observed=True)[measure].sum()
    totals = totals.sort_values(ascending=False, kind="stable")
    keep = set(totals.index[:top]) if len(totals) > top + 1 else set(totals.index)
    labels = frame[column].astype(object).where(frame[column].isin(keep), OTHER)
    return frame.assign(**{column: labels})


def largest_wide(
    frame: pd.DataFrame, index: str, column: str, measure: str, top: int = TOP
) -> pd.DataFrame:
    """Rows per `index`, one column per `column` value: the `top` largest by `measure`
    (largest first), the rest summed as "other" (last). A plot with a thousand projects
    shows the few that matter and one bar for the rest, and draws in a second.

    Args:
        frame: Long rows: `index`, `column` and `measure` among its columns.
        index: The column whose values become the rows (days, periods).
        column: The column whose values become the columns (projects, languages).
        measure: The column summed.
        top: How many columns keep their own name.

    Returns:
        The wide frame of floats, zeros where a group has no row.
    """
    frame = _top(frame, column, measure, top)
    wide = frame.pivot_table(index=index, columns=column, values=measure, aggfunc="sum")
    wide = wide.fillna(0).astype(float)
    order = [c for c in wide.sum().sort_values(ascending=False, kind="stable").index if c != OTHER]
    return wide[order + ([OTHER] if OTHER in wide.columns else [])]


def _stacked(
    ax: Axes,
    wide: pd.DataFrame,
    width: pd.Timedelta | None,
    styles: dict[str, dict[str, Any]] | None = None,
) -> None:
    """Stacked bars per period (areas when there are too many periods for bars)."""
    styles = {OTHER: {"color": OTHER_COLOR}, **(styles or {})}
    x = _naive(pd.Series(wide.index))
    if width is not None and len(wide) <= _MAX_BARS:
        bottom = np.zeros(len(wide))
        for name in wide.columns:
            values = wide[name].to_numpy()
            # matplotlib's stubs: on a date axis a Timedelta width is fine (unit conversion).
            ax.bar(x, values, width=width * 0.85, bottom=bottom, align="edge", label=str(name),  # type: ignore[arg-type]
                   **styles.get(name, {}))  # fmt: skip
            bottom += values
    elif len(wide.columns):
        areas = ax.stackplot(
            x, *(wide[c].to_numpy() for c in wide.columns), labels=list(map(str, wide.columns)),
            step="post",
        )  # fmt: skip
        for area, name in zip(areas, wide.columns, strict=True):
            area.set(**styles.get(name, {}))
    _date_axis(ax)


def _mark_partial(
    ax: Axes, source: Source, wide: pd.DataFrame, width: pd.Timedelta | None, per: str
) -> str:
    """Mark with `*` the bars of periods the snapshots cover only in part, as the weekly
    page marks its part-days; returns what the title adds (nothing when none is). A
    period no longer than the snapshots' spacing is never partial: each holds one step."""
    if isinstance(source, pd.DataFrame) or width is None or wide.empty:
        return ""
    times = pd.Series(observe(source).times, dtype=TIME_DTYPE)
    if len(times) < 2 or width <= times.diff().median():
        return ""
    starts = pd.to_datetime(pd.Series(wide.index), utc=True)
    partial = (times.iloc[0] > starts) | (times.iloc[-1] < starts + width)
    if not partial.any():
        return ""
    heights = wide.sum(axis=1).to_numpy()
    for start, height, part in zip(_naive(starts), heights, partial, strict=True):
        if part:
            ax.annotate("*", (start + width * 0.425, height), ha="center", va="bottom",
                        fontsize="large", fontweight="bold")  # fmt: skip
    return f" (* part-{per})"


def _project_styles(
    source: Source, group: str, shown: Iterable[object]
) -> dict[str, dict[str, Any]]:
    """Each project's colour as a style, when the groups are projects."""
    if group != "project_id":
        return {}
    colors = _colors(source, [name for name in shown if name != OTHER])
    return {name: {"color": color} for name, color in colors.items()}


def _legend(ax: Axes, title: str) -> None:
    if ax.get_legend_handles_labels()[0]:
        ax.legend(title=title, fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1))


def project_colors(names: Iterable[object]) -> dict[str, str]:
    """One colour per project, the same in every plot and on the weekly page.

    The projects, in name order, take the palette's colours in turn.

    Args:
        names: Every project name of the store (not only those a plot shows), so that
            a project keeps its colour from plot to plot.

    Returns:
        A hex colour per name.
    """
    ordered = sorted({str(name) for name in names})
    return {name: _PALETTE[i % len(_PALETTE)] for i, name in enumerate(ordered)}


def _colors(source: Source, shown: Iterable[object]) -> dict[str, str]:
    """`project_colors` over the store's projects (a frame: the projects it shows)."""
    names = [str(name) for name in shown]
    if not isinstance(source, pd.DataFrame) and workspaces.labelled(source) is None:
        names += [str(n) for n in observe(source).latest_projects["name"].dropna()]
    return project_colors(names)


def _project_names(source: Source, project_ids: pd.Series) -> list[str]:
    """Each project id as its name from the store's latest snapshot; a frame, or an id
    the store does not know, keeps the id."""
    names: dict[str, str] = {}
    if not isinstance(source, pd.DataFrame):
        projects = observe(source).latest_projects
        names = dict(zip(projects["project_id"], projects["name"], strict=True))
    # Each id looked up once: a chart of runs repeats a few projects' over 100,000 rows.
    codes, distinct = pd.factorize(pd.Series(project_ids, dtype=object), use_na_sentinel=False)
    named = [names.get(p, p) for p in distinct]
    return [named[c] for c in codes]


def _per(freq: str) -> str:
    """ "1h" -> "hour", "1D" -> "day", "15min" -> "15min": for axis labels and titles."""
    words = {"1h": "hour", "h": "hour", "1D": "day", "D": "day", "1W": "week", "W": "week"}
    return words.get(freq, freq)


def _freq_width(freq: str) -> pd.Timedelta | None:
    try:
        # pandas-stubs allow only a Tick; pandas also takes Day (no Tick since pandas 3)
        # and raises ValueError for the rest (weeks, months).
        return pd.Timedelta(pd.tseries.frequencies.to_offset(freq))  # type: ignore[arg-type]
    except ValueError:
        return None


# Several workspaces: each plot below but the burn-down also takes a mapping label ->
# store, or a list of stores (toolkit.analysis.workspaces), and draws each group as
# "workspace: name". The decorator keeps the plot the function its module defines.


def _workspace_names(stores: dict[str, Any], frame: pd.DataFrame, column: str) -> pd.DataFrame:
    """`frame` (with `workspace`) with `column` as "workspace: name", `workspace` dropped."""
    names: dict[tuple[str, str], str] = {}
    if column == "project_id":
        for workspace, store in stores.items():
            projects = observe(store).latest_projects
            for project, name in zip(projects["project_id"], projects["name"], strict=True):
                names[(workspace, project)] = name
    labels = [
        f"{w}: {names.get((w, g), g)}"
        for w, g in zip(frame["workspace"], frame[column], strict=True)
    ]
    return frame.assign(**{column: labels}).drop(columns="workspace")


def _progress_frame(stores: dict[str, Any], **_: Any) -> pd.DataFrame:
    frames = {
        workspace: observe(store).store.history("languages")[
            ["snapshot_at", "project_id", "covered"]
        ]
        for workspace, store in stores.items()
    }
    return _workspace_names(stores, workspaces.stack(frames), "project_id")


def _measure_frame(function: Any, freq: str, by: str) -> Any:
    def frame_of(
        stores: dict[str, Any], *, freq: str = freq, by: str = by, **_: Any
    ) -> pd.DataFrame:
        return _workspace_names(stores, function(stores, freq, by), by)

    return frame_of


def _status_frame(stores: dict[str, Any], *, at: When | None = None, **_: Any) -> pd.DataFrame:
    frames = {w: _chapters_at(store, at) for w, store in stores.items()}
    return _workspace_names(stores, workspaces.stack(frames), "project_id")


def _chapters_at(source: Source, at: When | None) -> pd.DataFrame:
    """The chapters at the newest snapshot at or before `at`, the latest when None."""
    if isinstance(source, pd.DataFrame):
        if at is not None:
            raise ValueError(
                "`at` picks a snapshot of a store, and a chapters frame is one moment "
                "already: pass the store with `at`, or the frame without it"
            )
        return source
    obs = observe(source)
    return obs.latest_chapters if at is None else obs.at("chapters", pd.Timestamp(utc(at)))


def _cycle_frame(stores: dict[str, Any], **_: Any) -> pd.DataFrame:
    # across() takes several workspaces too; its signature keeps the one-store type.
    return analysis.cycle_times(stores).drop(columns="workspace")  # type: ignore[arg-type]


def _several(frame_of: Callable[..., pd.DataFrame]) -> Callable[[_Plot], _Plot]:
    """A plot that also takes several workspaces: their frame, from `frame_of`, drawn."""

    def decorate(plot: _Plot) -> _Plot:
        @functools.wraps(plot)
        def wrapper(source: Any, **options: Any) -> Axes:
            stores = workspaces.labelled(source)
            if stores is None:
                return plot(source, **options)
            # The frame is read at `at` already: the plot draws it as given.
            drawing = {k: v for k, v in options.items() if k != "at"}
            return plot(frame_of(stores, **options), **drawing)

        return cast(_Plot, wrapper)

    return decorate


@_several(_progress_frame)
def progress(source: Source, *, ax: Axes | None = None, top: int = TOP) -> Axes:
    """Translated lines on record per project at each snapshot (a re-scan drops them).

    Args:
        source (Source | list | Mapping): A store; several workspaces (a list of stores, or
            a mapping of label to store); or a languages history frame (`snapshot_at`,
            `project_id`, `covered`).
        ax (Axes | None): The Axes to draw on; a new figure when None.
        top (int): The projects drawn, largest now first; the rest are summed as "other".

    Returns:
        The Axes drawn on.

    Raises:
        ValueError: Several workspaces were given with none in them, or sharing a label.
    """
    ax = _axes(ax)
    if isinstance(source, pd.DataFrame):
        grouped = source.groupby(["snapshot_at", "project_id"], observed=True)["covered"]
        totals = grouped.sum().reset_index()
    else:
        obs = observe(source)
        log = with_previous(obs.languages, ["chapter_id", "language_code"], ["covered"])
        now = log["covered"].fillna(0).where(~log["deleted"], 0).astype(float)
        log["delta"] = now - log["prev_covered"].fillna(0).astype(float)
        per = log.groupby(["idx", "project_id"])["delta"].sum().unstack(fill_value=0)
        per = per.reindex(range(len(obs.times)), fill_value=0.0).cumsum()
        per.index = obs.times
        # Two snapshots at one instant (the demo's last) are one point, not summed twice.
        per = per[~per.index.duplicated(keep="last")]
        # pandas-stubs: stack() is DataFrame | Series; of plain columns it is a Series.
        totals = cast(pd.Series, per.stack()).rename("covered").reset_index()
        totals.columns = ["snapshot_at", "project_id", "covered"]
    totals["project"] = _project_names(source, totals["project_id"])
    wide = totals.pivot_table(index="snapshot_at", columns="project", values="covered",
                              aggfunc="sum").fillna(0.0)  # fmt: skip
    # Rank by where each project stands now; the rest are summed as "other".
    last = wide.iloc[-1] if len(wide) else pd.Series(dtype=float)
    ranked = last.sort_values(ascending=False, kind="stable").index.tolist()
    if len(ranked) > top + 1:
        wide[OTHER] = wide[ranked[top:]].sum(axis=1)
        ranked = [*ranked[:top], OTHER]
    x = _naive(pd.Series(wide.index))
    colors = _colors(source, ranked)
    for name in ranked:
        style: dict[str, Any] = (
            {"color": OTHER_COLOR, "linestyle": "--"} if name == OTHER else {"color": colors[name]}
        )
        ax.plot(x, wide[name].to_numpy(), drawstyle="steps-post", label=str(name), linewidth=1.8,
                **style)  # fmt: skip
    _date_axis(ax)
    ax.set_ylabel(metrics.header("lines_to_date"))
    ax.set_title(f"{metrics.header('lines_to_date').capitalize()}, by project, all languages")
    ax.set_ylim(bottom=0)
    _legend(ax, metrics.header("project"))
    return ax


@_several(_measure_frame(analysis.throughput, "1h", "language_code"))
def throughput(
    source: Source,
    *,
    ax: Axes | None = None,
    freq: str = "1h",
    by: analysis.ThroughputBy = "language_code",
    top: int = TOP,
) -> Axes:
    """Lines translated per period, stacked by language (or project, or model).

    Args:
        source (Source | list | Mapping): A store; several workspaces (a list of stores, or
            a mapping of label to store); or the frame `analysis.throughput` returns (then
            `freq` and `by` describe it).
        ax (Axes | None): The Axes to draw on; a new figure when None.
        freq (str): The period, as a pandas frequency ("1h", "1D", "1W").
        by (str): Stack by "language_code", "project_id" or "model".
        top (int): The groups drawn, largest first; the rest are summed as "other".

    Returns:
        The Axes drawn on.

    Raises:
        ValueError: Several workspaces were given with none in them, or sharing a label.
    """
    ax = _axes(ax)
    frame = source if isinstance(source, pd.DataFrame) else analysis.throughput(source, freq, by)
    group = str(next(c for c in frame.columns if c not in ("period", "lines")))
    if group == "project_id":
        frame = frame.assign(project_id=_project_names(source, frame["project_id"]))
    wide = largest_wide(frame, "period", group, "lines", top)
    _stacked(ax, wide, _freq_width(freq), _project_styles(source, group, wide.columns))
    label = _GROUP_LABELS[group]
    marked = _mark_partial(ax, source, wide, _freq_width(freq), _per(freq))
    ax.set_ylabel(metrics.per("lines", _per(freq)))
    ax.set_title(f"{metrics.per('lines', _per(freq)).capitalize()}{marked}, by {label}")
    _legend(ax, label)
    return ax


@_several(_measure_frame(analysis.credit_spend, "1D", "project_id"))
def credit_spend(
    source: Source,
    *,
    ax: Axes | None = None,
    freq: str = "1D",
    by: analysis.SpendBy = "project_id",
    top: int = TOP,
) -> Axes:
    """Credits spent per period, stacked by project (or language, or chapter), with the
    part that paid for re-runs hatched on top.

    Args:
        source (Source | list | Mapping): A store; several workspaces (a list of stores, or
            a mapping of label to store); or the frame `analysis.credit_spend` returns (then
            `freq` and `by` describe it).
        ax (Axes | None): The Axes to draw on; a new figure when None.
        freq (str): The period, as a pandas frequency ("1h", "1D", "1W").
        by (str): Stack by "project_id", "language_code" or "chapter_id".
        top (int): The groups drawn, largest first; the rest are summed as "other".

    Returns:
        The Axes drawn on.

    Raises:
        ValueError: Several workspaces were given with none in them, or sharing a label.
    """
    ax = _axes(ax)
    frame = source if isinstance(source, pd.DataFrame) else analysis.credit_spend(source, freq, by)
    group = str(next(c for c in frame.columns if c not in ("period", "credits", "rework_credits")))
    if group == "project_id":
        frame = frame.assign(project_id=_project_names(source, frame["project_id"]))
    new = frame["credits"].astype(float) - frame["rework_credits"].astype(float)
    frame = frame.assign(new_credits=new)
    wide = largest_wide(frame, "period", group, "new_credits", top)
    rework = frame.groupby("period")["rework_credits"].sum().astype(float)
    wide[REWORK] = rework.reindex(wide.index, fill_value=0.0)
    hatched = {"hatch": "//", "facecolor": "white", "edgecolor": "#555555"}
    styles = _project_styles(source, group, [c for c in wide.columns if c != REWORK])
    _stacked(ax, wide, _freq_width(freq), {**styles, REWORK: hatched})
    label = _GROUP_LABELS[group]
    marked = _mark_partial(ax, source, wide, _freq_width(freq), _per(freq))
    ax.set_ylabel(metrics.per("credits", _per(freq)))
    ax.set_title(f"{metrics.per('credits', _per(freq)).capitalize()}{marked}, by {label}; "
                 f"hatched: {REWORK}")  # fmt: skip
    _legend(ax, label)
    return ax


@_several(_status_frame)
def status_breakdown(
    source: Source, *, ax: Axes | None = None, top: int = 15, at: When | None = None
) -> Axes:
    """Chapters per state (`state`: staged, reading, translating, ..., failed, stalled,
    needs review, reviewed) and project at the latest snapshot, or at the newest one
    taken at or before `at`.

    Args:
        source (Source | list | Mapping): A store; several workspaces (a list of stores, or
            a mapping of label to store); or a chapters frame (`project_id`, `state`), such
            as `store.latest("chapters")` or `tk.chapters_frame(client)`.
        ax (Axes | None): The Axes to draw on; a new figure when None.
        top (int): The projects drawn, those with most chapters first; the rest are summed
            as "other".
        at (When | None): A time (datetime, Timestamp or ISO text; naive is UTC): the
            chapters as the newest snapshot taken at or before it found them, which the
            title names. None: the latest snapshot. Only with a store or workspaces.

    Returns:
        The Axes drawn on (empty when no snapshot is as old as `at`).

    Raises:
        ValueError: Several workspaces were given with none in them, or sharing a label;
            `at` with a chapters frame.
    """
    ax = _axes(ax)
    chapters = _chapters_at(source, at)
    frame = pd.DataFrame(
        {
            "project": _project_names(source, chapters["project_id"]),
            "state": chapters["state"].astype(object),
            "n": 1,
        }
    )
    frame = _top(frame, "project", "n", top)
    counts = frame.pivot_table(index="project", columns="state", values="n", aggfunc="sum").fillna(
        0
    )
    counts = counts.reindex(columns=[s for s in _STATE_COLORS if s in counts.columns])
    order = counts.sum(axis=1).sort_values().index.tolist()
    if OTHER in order:
        order.remove(OTHER)
        order.insert(0, OTHER)
    counts = counts.loc[order]
    left = np.zeros(len(counts))
    for state_name in counts.columns:
        values = counts[state_name].to_numpy()
        ax.barh(
            counts.index.astype(str),
            values,
            left=left,
            color=_STATE_COLORS[state_name],
            label=state_name.replace("_", " "),
        )
        left += values
    ax.set_xlabel(metrics.header("chapters"))
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylabel(metrics.header("project"))
    when = ""
    if "snapshot_at" in chapters.columns and len(chapters):
        when = f" at {chapters['snapshot_at'].max():%Y-%m-%d %H:%M} UTC"
    ax.set_title(f"{metrics.header('chapters').capitalize()}, by state and project{when}")
    _legend(ax, metrics.header("state"))
    return ax


@_several(_cycle_frame)
def cycle_times(source: Source, *, ax: Axes | None = None) -> Axes:
    """How long runs took from start to `needs_review`: a histogram stacked by the kind
    of run (first runs, re-scans, added pages, held pages started), with the median.

    Args:
        source (Source | list | Mapping): A store; several workspaces (a list of stores, or
            a mapping of label to store); or the frame `analysis.cycle_times` returns.
        ax (Axes | None): The Axes to draw on; a new figure when None.

    Returns:
        The Axes drawn on.

    Raises:
        ValueError: Several workspaces were given with none in them, or sharing a label.
    """
    ax = _axes(ax)
    runs = source if isinstance(source, pd.DataFrame) else analysis.cycle_times(source)
    runs = runs[runs["hours"].notna()]
    hours = runs["hours"].astype(float).to_numpy()
    # Minutes read better than "0.06 h" for runs that take less than a couple of hours.
    unit, scale = ("minutes", 60.0) if len(hours) and hours.max() < 2 else ("hours", 1.0)
    values = hours * scale
    if len(values):
        baseline = "going at the baseline"
        kinds = runs["kind"].astype(object).fillna(baseline) if "kind" in runs else None
        known = ("first", "rescan", "added_pages", "held_start", baseline)
        order = [k for k in known if kinds is not None and (kinds == k).any()]
        groups = (
            [values[(kinds == k).to_numpy()] for k in order]
            if order and kinds is not None
            else [values]
        )
        labels = [k.replace("_", " ") for k in order] if order else None
        colours = ["#4f8fc0", "#e39b3b", "#6aa84f", "#9b6fc3", "#999999"][: len(groups)]
        edges = np.histogram_bin_edges(values, bins=min(30, max(5, len(values) // 2)))
        ax.hist(
            groups,
            bins=edges.tolist(),
            stacked=True,
            color=colours,
            edgecolor="white",
            label=labels,
        )
        median = float(np.median(values))
        shown = formatting.show("median_cycle_hours", median / scale)
        ax.axvline(median, color="#d0454c", linestyle="--",
                   label=f"{metrics.header('median_cycle_hours')} {shown}")  # fmt: skip
        ax.legend(fontsize="small")
    else:
        ax.text(0.5, 0.5, "no finished runs yet", ha="center", va="center", transform=ax.transAxes)
    ax.set_xlabel(f"{metrics.header('cycle_hours')} ({unit}), from start to needs review")
    ax.set_ylabel(metrics.header("runs"))
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_title(f"{metrics.header('cycle_hours').capitalize()}, {len(values):,} runs finished")
    return ax


def burn_down(
    source: SnapshotStore | Observed,
    *,
    ax: Axes | None = None,
    by: analysis.ForecastBy = "project_id",
    window: str = "7D",
    freq: str = "1D",
    top: int = TOP,
) -> Axes:
    """Lines still to translate per project (or language), with the forecast from the
    latest snapshot: the dashed line runs to the p50 finish, the band spans p10 to p90.

    source: a store, or several (a mapping label -> store, or a list). window, freq: as
    `analysis.forecast` takes them. Work that waits for a person has no band (no ETA):
    its lines stand apart, dotted, above the group's moving work at the forecast's
    snapshot, and its count is in the legend.
    """
    ax = _axes(ax)
    left = _keyed(analysis.burn_down(source, by=by), by)
    seen = _keyed(analysis.forecast(source, by=by, window=window, freq=freq), by)
    ranked = seen.sort_values("remaining_lines", ascending=False)["key"].tolist()[:top]
    turn = itertools.cycle(mpl.rcParams["axes.prop_cycle"].by_key()["color"])
    labels = seen.set_index("key")["label"].astype(str)
    named = _colors(source, labels) if by == "project_id" else {}
    banded = dotted = False
    for key, cycled in zip(ranked, turn, strict=False):
        color = named.get(labels[key], cycled)
        mine = left[left["key"] == key]
        ax.plot(_naive(mine["snapshot_at"]), mine["open_work_lines"].astype(float),
                drawstyle="steps-post", color=color, linewidth=1.8)  # fmt: skip
        row = seen[seen["key"] == key].iloc[0]
        label, said = str(row["label"]), []
        if pd.notna(row["finish_p50"]):
            start = pd.Timestamp(row["as_of"]).tz_convert(None)  # always set
            p50 = pd.Timestamp(row["finish_p50"]).tz_convert(None)
            p10, p90 = (
                pd.Timestamp(row[c]).tz_convert(None) if pd.notna(row[c]) else pd.NaT
                for c in ("finish_p10", "finish_p90")
            )
            height = float(row["remaining_lines"])
            far = p90 if pd.notna(p90) else p50 + 2 * (p50 - start)  # no p90: open-ended
            ax.fill([start, p10, far], [height, 0, 0], color=color, alpha=0.18, linewidth=0)
            # matplotlib's stubs: Timestamps are fine on a date axis (unit conversion).
            ax.plot([start, p50], [height, 0], color=color, linestyle="--", linewidth=1.2)  # type: ignore[arg-type]
            # On the time axis too, where a few lines left would make the band too thin
            # to see: the p10-p90 span as a bar, the p50 as a dot.
            ax.plot([p10 if pd.notna(p10) else start, far], [0, 0], color=color, alpha=0.45,  # type: ignore[arg-type]
                    linewidth=6, solid_capstyle="butt", clip_on=False)  # fmt: skip
            ax.plot([p50], [0], marker="o", color=color, clip_on=False, markersize=7)  # type: ignore[arg-type]
            banded = True
            said.append(f"{metrics.header('finish_p50')} {p50:%d %b %H:%M}")
        if row["needs_action"]:
            said.append(f"{metrics.header('needs_action')} {row['needs_action']:,}")
            waiting = row["needs_action_lines"]
            if pd.notna(waiting) and waiting > 0:  # apart: above the work that moves
                at = pd.Timestamp(row["as_of"]).tz_convert(None)
                base = float(row["remaining_lines"]) if pd.notna(row["remaining_lines"]) else 0.0
                # matplotlib's stubs: Timestamps are fine on a date axis (unit conversion).
                ax.plot([at, at], [base, base + float(waiting)], color=color, linestyle=":",  # type: ignore[arg-type]
                        linewidth=3)  # fmt: skip
                said.append(f"{metrics.header('needs_action_lines')} {int(waiting):,}")
                dotted = True
        ax.plot([], [], color=color, label=f"{label}:\n{'; '.join(said)}" if said else label)
    _date_axis(ax)
    ax.set_ylim(bottom=0)
    ax.set_ylabel(metrics.header("open_work_lines"))
    # Three quantities, each under its own label: the steps, the forecast, the waiting.
    drawn = (f";\ndashed: {metrics.header('open_lines')}, to a dot at their likely finish "
             "(p50) and a band from p10 to p90") if banded else ""  # fmt: skip
    drawn += f";\ndotted: {metrics.header('needs_action_lines')}" if dotted else ""
    title = metrics.header("open_work_lines").capitalize()
    ax.set_title(f"{title}, by {_GROUP_LABELS[by]}{drawn}", loc="left", fontsize="medium")
    _legend(ax, _GROUP_LABELS[by])
    return ax


def _keyed(frame: pd.DataFrame, by: str) -> pd.DataFrame:
    """`frame` with `key` (the group, within its workspace) and `label` (its name)."""
    name = {"project_id": "project", "chapter_id": "chapter"}.get(by, by)
    named = frame[name] if name in frame.columns else frame[by]
    if "workspace" not in frame.columns:
        return frame.assign(key=frame[by], label=named.fillna(frame[by]))
    return frame.assign(
        key=frame["workspace"] + "/" + frame[by],
        label=frame["workspace"] + ": " + named.fillna(frame[by]),
    )

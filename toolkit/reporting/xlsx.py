"""The week as a spreadsheet a manager opens without programming (`toolkit report --xlsx`).

```python
tk.report(store, "week.xlsx", format="xlsx")
```

Written by openpyxl (through pandas' `ExcelWriter`): `figures` (each project's headline
figures and the total, as `figures.json` has them), a sheet per tag with `tags=`
(`by client`), `explanations` (every figure `tk.explain` opens: what it counts, its
unit, how its rows make it, how many rows, its value, and a link to its sheet),
`forecast` (`tk.analysis.forecast` at the period's last snapshot), `about` (the period,
and what each headline figure counts), then a sheet per explained figure with rows,
named by its key (`credits`): its rows, the value headed with the figure's label and
unit. A header is the registry's label with its unit (`credits spent (credits)`);
counts and credits are whole numbers, shown with a thousands separator; times are in
UTC (a spreadsheet cell has no zone) and their headers say so.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

import pandas as pd

from toolkit import analysis, metrics
from toolkit.analysis.observed import Observed
from toolkit.frames.schema import TEXT_DTYPE
from toolkit.reporting.explanations import EXPLAINED, HOW, TAKEN, explain, recount
from toolkit.reporting.figures import FIGURES, Figures, figures, label
from toolkit.reporting.tags import Tags, by_tag, keys_of

__all__ = ["heading", "write_xlsx"]

_WHOLE: Final = "#,##0"
_TIME_FORMAT: Final = "yyyy-mm-dd hh:mm"
# The sheets' names are DESIGN.md's contract for `figures` (lower case, as the file).
_SHEETS: Final = ("figures", "explanations", "forecast", "about")
# The rows a sheet holds below its header (Excel's limit: 1,048,576 rows). A figure
# with more rows (a year's review lags at 1,000,000 chapters) shows the first ones; its
# index row says so and names the command that writes every one.
SHEET_ROWS: Final = 1_048_575


def write_xlsx(
    store: Observed,
    path: str | os.PathLike[str],
    *,
    since: pd.Timestamp | str | None = None,
    until: pd.Timestamp | str | None = None,
    days: int = 7,
    tz: str | None = None,
    tags: Tags | None = None,
) -> Path:
    """Write the period's figures, their explanations and the forecast to `path` as an
    .xlsx workbook (`_SHEETS`); returns the path. The period is the one `figures`
    counts (`days` up to the last snapshot, or `since`..`until`, in `tz`). With `tags`,
    a sheet per tag after `figures` (`by client`): the figures per value of the tag."""
    figs = figures(store, since=since, until=until, days=days, tz=tz)
    when = figs.period
    rows = {
        name: explain(store, name, since=when.since, until=when.until, tz=when.tz)
        for name in EXPLAINED
    }
    by = keys_of(tags) if tags else []  # a sheet per tag: `by client` (31 characters at most)
    grouped = {f"by {key}"[:31]: _tag_sheet(figs, tags or {}, key) for key in by}
    # A sheet per figure with rows, named by its key (28 characters at most, of 31).
    opened = {name: _figure_sheet(name, found.head(SHEET_ROWS))
              for name, found in rows.items() if len(found)}  # fmt: skip
    sheets = {
        "figures": _figures_sheet(figs),
        **grouped,
        "explanations": _explanations_sheet(rows),
        "forecast": _forecast_sheet(store, figs),
        "about": _about_sheet(figs),
        **opened,
    }
    path = Path(path)
    with pd.ExcelWriter(path, engine="openpyxl") as writer:
        for name, frame in sheets.items():
            frame.to_excel(writer, sheet_name=name, index=False)
            _format(writer.sheets[name], frame)
        _link_sheets(writer.sheets["explanations"], sheets["explanations"])
    return path


def heading(name: str) -> str:
    """A column's header with its unit: `credits spent (credits)`; a time says UTC."""
    figure = metrics.FIGURES.get(metrics.ALIASES.get(name, name))
    if figure is None:
        return metrics.header(name)
    if figure.format == "moment":
        return f"{figure.words} (UTC)"
    return figure.words if figure.unit == "text" else f"{figure.words} ({figure.unit})"


def _figures_sheet(figs: Figures) -> pd.DataFrame:
    table = figs.projects[["project", *FIGURES]].copy()
    total = {"project": "(all projects)", **{name: figs.totals[name] for name in FIGURES}}
    table = pd.concat([table, pd.DataFrame([total])], ignore_index=True)
    for name in FIGURES:
        table[name] = table[name].astype("Int64")
    return table.rename(columns={name: heading(name) for name in FIGURES})


def _tag_sheet(figs: Figures, tags: Tags, key: str) -> pd.DataFrame:
    """The figures per value of tag `key` (`tags.by_tag`), then the total: a sheet."""
    table = by_tag(figs, tags, key)
    total = {key: "(all projects)", "projects": len(figs.projects),
             **{name: figs.totals[name] for name in FIGURES}}  # fmt: skip
    table = pd.concat([table, pd.DataFrame([total])], ignore_index=True)
    for name in ("projects", *FIGURES):
        table[name] = table[name].astype("Int64")
    return table.rename(columns={name: heading(name) for name in ("projects", *FIGURES)})


def _explanations_sheet(rows: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """Every explained figure: what it counts, its unit, how its rows make it, how many
    rows, its value (`recount`: the figure as every surface shows it), and its sheet."""
    said = []
    for name, found in rows.items():
        figure = metrics.FIGURES[name]
        made = recount(found, name) if len(found) else None
        if isinstance(made, pd.Timestamp):
            made = made.tz_convert("UTC").tz_localize(None)
        elif made is not None and figure.format in ("count", "credits"):
            made = int(made)
        cut = (f"its first {SHEET_ROWS:,} rows (a sheet holds no more); every row: "
               f"toolkit explain {name} --csv FILE") if len(found) > SHEET_ROWS else ""  # fmt: skip
        said.append({"figure": name, "what it counts": figure.words, "unit": figure.unit,
                     "taken as": TAKEN[HOW[name]], "rows": len(found),
                     "value": made, "sheet": name if len(found) else "", "note": cut})  # fmt: skip
    frame = pd.DataFrame(said)
    frame["rows"] = frame["rows"].astype("Int64")
    return frame


def _figure_sheet(name: str, found: pd.DataFrame) -> pd.DataFrame:
    """One figure's rows: the value headed with the figure's label and unit (a ratio's:
    its numerator and denominator), whole numbers where the figure is whole; columns
    that are empty for every row left out."""
    figure = metrics.FIGURES[name]
    columns = ["project", "chapter", "language_code", "source", "source_id", "at",
               "started_at", "finished_at", "rule", "detail", "value", "denominator",
               "counts"]  # fmt: skip
    frame = _naive(found[columns])
    value = frame["value"].astype("Float64")
    whole = figure.format in ("count", "credits") and bool((value.dropna() % 1 == 0).all())
    frame["value"] = value.astype("Int64") if whole else value
    if HOW[name] != "ratio":
        frame = frame.drop(columns=["denominator"])
    if frame["counts"].all():  # say which rows count only where some do not
        frame = frame.drop(columns=["counts"])
    keep = [c for c in frame.columns if c in ("project", "value") or frame[c].notna().any()]
    return frame[keep].rename(columns={
        "at": "at (UTC)", "started_at": "started (UTC)", "finished_at": "finished (UTC)",
        "value": _value_heading(name), "denominator": "denominator",
        "counts": "counts"}).rename(columns=metrics.header)  # fmt: skip


def _value_heading(name: str) -> str:
    """The header of a figure's values: `credits spent (credits)`; a moment's values are
    hours after the snapshot; a ratio's its numerators."""
    if HOW[name] == "latest":
        return "hours after the snapshot (hours)"
    if HOW[name] == "ratio":
        return "numerator"
    return heading(name)


def _link_sheets(sheet: Any, index: pd.DataFrame) -> None:
    """Each figure's sheet name in the explanations sheet opens that sheet."""
    from openpyxl.worksheet.hyperlink import Hyperlink

    at = list(index.columns).index("sheet") + 1
    for row, name in enumerate(index["sheet"], start=2):
        if name:
            cell = sheet.cell(row=row, column=at)
            # A place in the workbook (`location`), not a file or an address (`target`).
            cell.hyperlink = Hyperlink(ref=cell.coordinate, location=f"'{name}'!A1")
            cell.style = "Hyperlink"


def _forecast_sheet(store: Observed, figs: Figures) -> pd.DataFrame:
    end = figs.period.end
    if end is None:
        return pd.DataFrame({heading("status"): pd.Series(dtype=TEXT_DTYPE)})
    outlook = analysis.forecast(store, by="project_id", until=end)
    outlook = _naive(outlook.drop(columns=["project_id", "as_of"], errors="ignore"))
    return outlook.rename(columns=heading)


def _about_sheet(figs: Figures) -> pd.DataFrame:
    when = figs.period
    said = [
        ("period", "", when.label()),
        ("from", "time (UTC)", _plain_time(when.start)),
        ("to", "time (UTC)", _plain_time(when.end) if when.end is not None else "no data"),
    ]
    said += [(label(name, when), metrics.FIGURES[name].unit, metrics.FIGURES[name].definition)
             for name in FIGURES]  # fmt: skip
    return pd.DataFrame(said, columns=["figure", "unit", "what it is"])


def _plain_time(moment: pd.Timestamp) -> str:
    return f"{moment.tz_convert('UTC'):%Y-%m-%d %H:%M}"


def _naive(frame: pd.DataFrame) -> pd.DataFrame:
    """Times in UTC without their zone: a spreadsheet cell holds none."""
    frame = frame.copy()
    for column in frame.columns:
        if isinstance(frame[column].dtype, pd.DatetimeTZDtype):
            frame[column] = frame[column].dt.tz_convert("UTC").dt.tz_localize(None)
    return frame


def _format(sheet: Any, frame: pd.DataFrame) -> None:
    """Whole numbers with a thousands separator, times to the minute, readable widths."""
    for number, column in enumerate(frame.columns, start=1):
        values = frame[column]
        style = None
        if pd.api.types.is_integer_dtype(values.dtype):
            style = _WHOLE
        elif pd.api.types.is_datetime64_any_dtype(values.dtype):
            style = _TIME_FORMAT
        letter = sheet.cell(row=1, column=number).column_letter
        if style is not None:
            for row in range(2, len(frame) + 2):
                sheet.cell(row=row, column=number).number_format = style
        longest = max([len(str(column)), *(len(str(v)) for v in values.head(200))])
        sheet.column_dimensions[letter].width = min(longest + 2, 60)

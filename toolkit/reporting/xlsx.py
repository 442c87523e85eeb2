"""The week as a spreadsheet a manager opens without programming (`toolkit report --xlsx`).

```python
tk.report(store, "week.xlsx", format="xlsx")
```

Four sheets, written by openpyxl (through pandas' `ExcelWriter`): `Figures` (each
project's headline figures and the total, as `figures.json` has them), `Explanations`
(every headline figure's rows, `tk.explain`), `Forecast` (`tk.analysis.forecast` at
the period's last snapshot) and `About` (the period, and what each figure counts). A
header is the registry's label with its unit (`credits spent (credits)`); counts and
credits are whole numbers, shown with a thousands separator; times are in UTC (a
spreadsheet cell has no zone) and their headers say so.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Final

import pandas as pd

from toolkit import analysis, metrics
from toolkit.analysis.observed import Observed
from toolkit.reporting.explanations import explain
from toolkit.reporting.figures import FIGURES, Figures, figures, label
from toolkit.reporting.tags import Tags, by_tag, keys_of

__all__ = ["heading", "write_xlsx"]

_WHOLE: Final = "#,##0"
_TIME_FORMAT: Final = "yyyy-mm-dd hh:mm"
_SHEETS: Final = ("Figures", "Explanations", "Forecast", "About")


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
    a sheet per tag after `Figures` (`By client`): the figures per value of the tag."""
    figs = figures(store, since=since, until=until, days=days, tz=tz)
    when = figs.period
    rows = [
        explain(store, name, since=when.since, until=when.until, tz=when.tz) for name in FIGURES
    ]
    by = keys_of(tags) if tags else []  # a sheet per tag: `By client` (31 characters at most)
    grouped = {f"By {key}"[:31]: _tag_sheet(figs, tags or {}, key) for key in by}
    sheets = {
        "Figures": _figures_sheet(figs),
        **grouped,
        "Explanations": _explanations_sheet(rows),
        "Forecast": _forecast_sheet(store, figs),
        "About": _about_sheet(figs),
    }
    path = Path(path)
    with pd.ExcelWriter(path, engine="openpyxl") as writer:
        for name, frame in sheets.items():
            frame.to_excel(writer, sheet_name=name, index=False)
            _format(writer.sheets[name], frame)
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


def _explanations_sheet(rows: list[pd.DataFrame]) -> pd.DataFrame:
    found = [frame for frame in rows if len(frame)]
    frame = pd.concat(found, ignore_index=True) if found else rows[0]
    frame = frame.assign(
        unit=frame["figure"].astype(object).map(lambda name: metrics.FIGURES[name].unit)
    )
    columns = ["figure", "project", "chapter", "language_code", "source", "source_id", "at",
               "started_at", "finished_at", "rule", "detail", "value", "unit"]  # fmt: skip
    frame = _naive(frame[columns])
    return frame.rename(
        columns={"at": "at (UTC)", "started_at": "started (UTC)", "finished_at": "finished (UTC)"}
    ).rename(columns=lambda c: metrics.header(c) if c not in ("value", "unit") else c)


def _forecast_sheet(store: Observed, figs: Figures) -> pd.DataFrame:
    end = figs.period.end
    if end is None:
        return pd.DataFrame({heading("status"): pd.Series(dtype="string")})
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

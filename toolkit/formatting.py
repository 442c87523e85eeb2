"""How figures read wherever a person sees them: panels, notebooks' tables, the command.

```python
tk.table(frame)          # a pandas Styler with the rules below, for a notebook cell
count(1, "page")         # "1 page"; count(3, "page") -> "3 pages"
card("Client", {...})    # the HTML that Client, Workspace, SnapshotStore and SnapshotInfo
                         # show in a notebook (`_repr_html_`); their plain reprs stay short
```

The rules, written once: a missing value shows as blank (never `<NA>` or `NaN`);
credits and counts are whole numbers with thousands separators; rates and shares are
percentages; times to the minute; flags as yes/no; lists
joined with commas; long text (a failure reason) wraps instead of being cut; a column of
ids is left out when the table has names beside it, and an index of ids is hidden the
same way. Durations in hours read as the weekly page shows them: minutes under an hour,
else hours to one decimal; so their headers say "time", never "hours" (the registry's
labels, `toolkit.metrics`, head every column it defines).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from toolkit.metrics import ALIASES, FIGURES, header

if TYPE_CHECKING:
    import pandas as pd
    from pandas.io.formats.style import Styler

__all__ = [
    "as_texts",
    "card",
    "count",
    "escape",
    "first_line",
    "hours",
    "html_table",
    "missing",
    "moment",
    "show",
    "size",
    "table",
    "text",
    "text_table",
    "utc_second",
    "whole",
    "whole_or_dash",
]

_WRAP_WIDTH = "32em"


def as_texts(values: pd.Series) -> pd.Series:
    """`values.astype(str)`, each distinct value made a text once: a column of times
    repeats a few thousand snapshots' over 100,000 rows (0.27 s a column on the weekly
    page made one by one)."""
    import numpy as np
    import pandas as pd

    codes, distinct = pd.factorize(values)
    # A null's text (as astype gives it) last, where code -1 takes it.
    words = pd.concat([pd.Series(distinct, dtype=values.dtype), values[codes < 0].iloc[:1]])
    texts: pd.Series = words.astype(str).iloc[np.where(codes < 0, len(words) - 1, codes)]
    return texts.set_axis(values.index)


def count(n: int | None, noun: str, plural: str | None = None) -> str:
    """`1 page`, `3 pages`, `1,200 pages`; `plural` for irregular nouns."""
    n = n or 0
    return f"{n:,} {noun if n == 1 else plural or noun + 's'}"


def size(n_bytes: int) -> str:
    """`812 B`, `4.2 kB`, `3.1 MB`, `1.2 GB` (powers of 1,000, as file managers show)."""
    value = float(n_bytes)
    for unit in ("B", "kB", "MB"):
        if value < 1000:
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1000
    return f"{value:,.1f} GB"


def text_table(rows: Sequence[Mapping[str, str]]) -> str:
    """Rows of text as aligned columns, headed by their keys, for a terminal."""
    if not rows:
        return ""
    headers = list(rows[0])
    widths = [max(len(h), *(len(row[h]) for row in rows)) for h in headers]
    cells = [headers, *([row[h] for h in headers] for row in rows)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)) for line in cells]
    return "\n".join(line.rstrip() for line in lines)


def card(title: str, rows: Mapping[str, str]) -> str:
    """An object's summary as a small HTML table, for Jupyter's `_repr_html_`: the title
    above, then one row per item. Everything is escaped."""
    from html import escape

    cells = "".join(
        f'<tr><th style="text-align:left;padding:1px 10px 1px 0">{escape(name)}</th>'
        f'<td style="text-align:left">{escape(value)}</td></tr>'
        for name, value in rows.items()
    )
    return f"<div><b>{escape(title)}</b><table>{cells}</table></div>"


def escape(value: object) -> str:
    """A value as text for an HTML page or panel: None as nothing, `<`, `&` and quotes
    escaped (so the same text is safe in an attribute)."""
    from html import escape as html_escape

    return html_escape("" if value is None else str(value))


def missing(value: Any) -> bool:
    """No data: None, pandas' NA or NaT, or a float NaN (a list or text is data)."""
    if value is None:
        return True
    try:
        import pandas as pd

        return bool(pd.isna(value))
    except (TypeError, ValueError, ImportError):
        return False


def whole(value: Any) -> str:
    """A credit or count figure: `1,234`, blank when missing; halves round up."""
    if missing(value):
        return ""
    return f"{math.floor(float(value) + 0.5):,}"


def whole_or_dash(value: Any) -> str:
    """A count or credits figure on a page: `1,234`, a dash where there is no data."""
    return whole(value) or "–"


def hours(value: Any) -> str:
    """A duration given in hours: `26 s` under a minute, `25 min` under an hour (0.0 h
    would say nothing), else hours to one decimal, `7.5 h`, `31.2 h`; blank when missing."""
    if missing(value):
        return ""
    value = float(value)
    if value and abs(value) < 1 / 60:  # "0 min" would say nothing
        return f"{round(value * 3600)} s"
    return f"{round(value * 60)} min" if abs(value) < 1 else f"{value:,.1f} h"


def moment(value: Any) -> str:
    """A time to the minute, in the zone it carries: `2026-11-21 14:05`."""
    if missing(value):
        return ""
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M")
    return str(value)


def first_line(error: BaseException) -> str:
    """An error's first line, or its type's name when it has no text: how a refusal
    quotes an error from a library (DuckDB, delta-rs) without its traceback or detail."""
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def utc_second(when: datetime) -> str:
    """A UTC time to the second, its zone said: `2026-11-21 14:05:09 UTC` (the store's
    messages, where a snapshot is told apart from the next by its second)."""
    return when.strftime("%Y-%m-%d %H:%M:%S UTC")


def _is_credit(name: str) -> bool:
    """A sum of credits (not a price per page, which keeps its decimals)."""
    return ("credit" in name or name in {"cost", "rework"}) and "_per_" not in name


def _yes_no(value: Any) -> str:
    """A flag: `yes`, `no`, blank when missing."""
    return "" if missing(value) else ("yes" if value else "no")


def _percent(value: Any) -> str:
    return "" if missing(value) else f"{float(value):.0%}"


def _decimal(value: Any) -> str:
    return "" if missing(value) else f"{value:,.2f}"


def _listed(value: Any) -> str:
    """A list cell (target languages, models) as `en, fr`."""
    if value is None or isinstance(value, str) or not hasattr(value, "__iter__"):
        return "" if missing(value) else str(value)
    return ", ".join(str(item) for item in value)


def _byte_size(value: Any) -> str:
    return "" if missing(value) else size(int(value))


def _rule(name: str, series: pd.Series, credits: bool) -> Callable[[Any], str] | None:
    import pandas as pd

    kinds = pd.api.types
    if kinds.is_bool_dtype(series.dtype):
        return _yes_no
    if kinds.is_datetime64_any_dtype(series.dtype):
        return _time_rule(series)
    if not kinds.is_numeric_dtype(series.dtype):
        return (
            _listed if kinds.is_object_dtype(series.dtype) or "list" in str(series.dtype) else None
        )
    if credits:
        return whole
    figure = FIGURES.get(ALIASES.get(name, name))
    if figure is not None and figure.format in _BY_FORMAT:
        return _BY_FORMAT[figure.format]
    if _is_credit(name):
        return whole
    if name.endswith(("rate", "share")):
        return _percent
    if "hours" in name:
        return hours
    if name in ("byte_size", "bytes"):
        return _byte_size
    if "_per_" in name:  # a price or a pace: its decimals matter
        return _decimal
    if kinds.is_float_dtype(series.dtype) and not _whole_numbers(series):
        return _decimal
    return whole  # counts, also where pandas made them floats (`describe`, a mean of ints)


# How a registered figure reads, by its format (toolkit.metrics).
_BY_FORMAT: dict[str, Callable[[Any], str]] = {
    "count": whole, "credits": whole, "duration": hours, "share": _percent, "pace": _decimal,
}  # fmt: skip


def show(name: str, value: Any) -> str:
    """`value` of the registry's figure `name` as every surface shows it: `show("hours_p50",
    0.13)` -> `8 min`, `show("failure_rate", 0.5)` -> `50%`; blank when missing."""
    kind = FIGURES[ALIASES.get(name, name)].format
    if kind in _BY_FORMAT:
        return _BY_FORMAT[kind](value)
    return moment(value) if kind == "moment" else _plain(value)


def _time_rule(times: Any) -> Callable[[Any], str]:
    """Times to the minute; days (every value a midnight: a daily period) as dates."""
    import pandas as pd

    values = pd.DatetimeIndex(times).dropna()
    if len(values) and bool((values == values.normalize()).all()):
        return lambda value: "" if missing(value) else f"{value:%Y-%m-%d}"
    return moment


def _whole_numbers(series: pd.Series) -> bool:
    values = series.dropna().astype(float)
    return bool(((values % 1) == 0).all())


def text(frame: pd.DataFrame, *, credits: bool = False, missing: str = "-") -> str:
    """`frame` as aligned text for a terminal, by the same rules as `table`.

    Args:
        frame: The figures, one row per line.
        credits: Every number is credits (a pivot of credits): whole numbers.
        missing: What a missing value shows as; a dash, as on the weekly page.

    Returns:
        The lines, headed by the column names in words; ids left out beside names.
    """
    frame, cells = _cells(frame, credits)
    heads = [header(c) for c in frame.columns]
    rows = [{head: cell or missing for head, cell in zip(heads, row, strict=True)} for row in cells]
    return text_table(rows)


def html_table(frame: pd.DataFrame, *, credits: bool = False) -> str:
    """`frame` as a plain HTML table by the same rules as `table`, for a page that must
    render wherever the toolkit is installed (pandas' `Styler` needs jinja2, which the
    toolkit does not install). Everything is escaped; numbers are right-aligned."""
    import pandas as pd

    frame, cells = _cells(frame, credits)
    right = [
        ' class="n"' if pd.api.types.is_numeric_dtype(frame[c].dtype) else "" for c in frame.columns
    ]
    head = "".join(
        f"<th{r}>{escape(header(c))}</th>" for c, r in zip(frame.columns, right, strict=True)
    )
    rows = (
        "".join(f"<td{r}>{escape(c)}</td>" for c, r in zip(row, right, strict=True))
        for row in cells
    )
    body = "".join(f"<tr>{row}</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _cells(frame: pd.DataFrame, credits: bool) -> tuple[pd.DataFrame, list[list[str]]]:
    """`frame` without the ids a name says, and its cells as text by the rules above:
    what `text` and `html_table` lay out, each in its own way."""
    frame, _ = _without_ids(frame)
    rules = [_rule(str(c).lower(), frame[c], credits) or _plain for c in frame.columns]
    cells = [
        [rule(value) for rule, value in zip(rules, values, strict=True)]
        for values in frame.itertuples(index=False)
    ]
    return frame, cells


def _without_ids(frame: pd.DataFrame) -> tuple[pd.DataFrame, bool]:
    """`frame` without its `*_id` columns when a name column says the same, and whether
    it has one (an index of ids is then hidden too)."""
    named = any(c in frame.columns for c in ("name", "project", "chapter"))
    if named:
        frame = frame.drop(columns=[c for c in frame.columns if str(c).endswith("_id")])
    return frame, named


def _plain(value: Any) -> str:
    return "" if missing(value) else str(value)


def table(
    frame: pd.DataFrame | pd.Series, *, credits: bool = False, caption: str | None = None
) -> Styler:
    """`frame` styled by the rules above, for display in a notebook.

    A column is formatted by its name and type: credits (any name with "credit", or
    every number when `credits=True`, for a pivot of credits) and counts as whole
    numbers, rates as percentages, prices and paces (`*_per_*`) to two decimals, hours
    as minutes or hours, sizes in bytes as kB/MB, times to the minute (days as dates),
    flags as yes/no, lists joined; a figure the registry defines (`toolkit.metrics`)
    reads by its format there; headers are the registry's labels (else `_` as spaces).
    Columns named `*_id` are dropped when a `name`, `project` or `chapter` column is
    there to say the same; an index of ids is hidden likewise.
    """
    import pandas as pd

    frame = frame.to_frame() if isinstance(frame, pd.Series) else frame
    frame, named = _without_ids(frame)
    styler = frame.style.format(na_rep="")
    for column in frame.columns:
        rule = _rule(str(column).lower(), frame[column], credits)
        if rule is not None:
            styler = styler.format(rule, subset=[column])
    index_name = str(frame.index.name or "")
    if isinstance(frame.index, pd.RangeIndex) or (named and index_name.endswith("_id")):
        styler = styler.hide(axis="index")
    elif pd.api.types.is_datetime64_any_dtype(frame.index.dtype):
        styler = styler.format_index(_time_rule(frame.index), axis="index")
    # Headers in words, the registry's: `median_cycle_hours` reads `median run time`.
    styler = styler.format_index(header, axis="columns")
    wrap: list[tuple[str, str | float]] = [
        ("white-space", "normal"),
        ("max-width", _WRAP_WIDTH),
        ("text-align", "left"),
    ]
    styler = styler.set_table_styles([{"selector": "td, th", "props": wrap}], overwrite=False)
    return styler.set_caption(caption) if caption else styler

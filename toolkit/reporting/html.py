"""`tk.report`: the weekly report as one self-contained HTML page a lead can mail
(docs/weekly-report.md), its figures as `figures.json` (docs/figures.md), or a
spreadsheet of the figures, their explanations and the forecast (`reporting.xlsx`)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

import pandas as pd

from toolkit.analysis.observed import Observed
from toolkit.errors import ToolkitError
from toolkit.reporting.figures import check_zone, figures, write_json
from toolkit.reporting.page import render
from toolkit.reporting.tags import Tags, by_tag, keys_of, with_groups
from toolkit.reporting.weekly import gather
from toolkit.reporting.xlsx import write_xlsx
from toolkit.store import SnapshotStore

__all__ = ["report"]

_DEFAULT_NAMES = {
    "html": "weekly-report.html",
    "json": "figures.json",
    "xlsx": "figures.xlsx",
}


def report(
    store: SnapshotStore | str | os.PathLike[str],
    out: str | os.PathLike[str] | None = None,
    *,
    format: Literal["html", "json", "xlsx"] = "html",
    since: pd.Timestamp | str | None = None,
    until: pd.Timestamp | str | None = None,
    days: int = 7,
    title: str | None = None,
    tz: str | None = None,
    tags: Tags | None = None,
) -> Path:
    """Write the weekly report; returns the file's path.

    format: "html", one self-contained page (`out` its path, default
    `weekly-report.html`), or "json", the period's figures (`out` the folder to write
    `figures.json` into, or a path ending in `.json`; default `figures.json`), or "xlsx",
    a workbook of the figures, their explanations and the forecast (`out` its path, or
    the folder to write `figures.xlsx` into; default `figures.xlsx`). The window
    is the `days` days up to the last snapshot, or `since`..`until` (UTC when no zone is
    given). tz: the zone the page's days, midnights and times are in, and a naive
    `since`/`until` is read in (default UTC). tags: the projects' tags (`{"Moonlit
    Harbor": {"client": "Acme"}}`, a watch config's `[tags]`; `{}` for none of the
    user's): with them, the service's `translation_group` is a tag too; "json" adds
    `by_tag`, the figures per value of each tag, "xlsx" a sheet per tag (`by client`),
    and "html" a table per tag, this period against the previous one, each number
    opening its rows. Missing folders are made.
    """
    if format not in _DEFAULT_NAMES:
        raise ToolkitError(f'format must be "html", "json" or "xlsx", not {format!r}')
    check_zone(tz)
    source = store if isinstance(store, SnapshotStore) else SnapshotStore(store)
    if tags is not None:  # the service's groups join the user's tags
        try:
            tags = with_groups(tags, [source], until=until, tz=tz)
        except ValueError as exc:
            raise ToolkitError(str(exc)) from exc
    path = _output_path(out, format)
    if format == "xlsx":
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            return write_xlsx(Observed(source), path, since=since, until=until, days=days, tz=tz,
                              tags=tags)  # fmt: skip
        except ValueError as exc:
            raise ToolkitError(f"the store {source.root!r}: {exc}") from exc
    try:
        if format == "json":
            figs = figures(Observed(source), since=since, until=until, days=days, tz=tz)
        else:
            weekly = gather(Observed(source), since=since, until=until, days=days, tz=tz,
                            tags=tags)  # fmt: skip
    except ValueError as exc:
        raise ToolkitError(f"the store {source.root!r}: {exc}") from exc
    path.parent.mkdir(parents=True, exist_ok=True)
    if format == "json":
        grouped = {key: by_tag(figs, tags, key) for key in keys_of(tags)} if tags else None
        return write_json(figs, path, by_tag=grouped)
    end = weekly.period.end
    heading = (
        f"Translation week to {weekly.period.local(end):%d %b %Y}"
        if end is not None
        else "Translation week"
    )
    path.write_text(render(weekly, title=title or heading), encoding="utf-8")
    return path


def _output_path(out: str | os.PathLike[str] | None, format: str) -> Path:
    """Where `format` is written: `out`, or the format's file in the folder `out` names
    (json and xlsx), or the format's file here; a folder where a page goes is refused."""
    path = Path(out) if out is not None else Path(f"{_DEFAULT_NAMES[format]}")
    if format in ("json", "xlsx") and path.suffix != f".{format}":
        path = path / _DEFAULT_NAMES[format]
    if path.is_dir():
        raise ToolkitError(
            f"{str(path)!r} is a folder; give the page's file name, such as "
            f"{str(path / _DEFAULT_NAMES[format])!r}"
        )
    return path

"""The agency page's drill-down: every number on the page opens the rows that make it.

Past 400 lines on purpose: the anchors a number links to and the sections that carry
them are one scheme, kept in one module so a link and its target cannot drift apart.

As on the weekly page (`drilldown`), the explanations are sections of the same page, so
the page stays one file that can be mailed; unlike it, a number here is a workspace's,
a project's or a tag's, this week's or the previous week's, so each opens exactly its
own rows, and they add up to it (docs/figures.md, "The agency page"):

- a headline figure of one week has one section (`#explain-credits-now`, `-was` for the
  previous week), the target of the all-workspaces total; in it, one block per
  workspace (`...-w1`), the target of that workspace's number, and in that, one group
  of rows per project (`...-w1-<project id>`), the target of the project's number. A
  row is one chapter (and language, for the figures counted per language) and what
  counted it, summed over its runs, charges or snapshots, so a busy week stays a page,
  not 100,000 rows; the block names the `toolkit explain` command that prints each one;
- a tag's number opens its group in the figure's section for that tag
  (`#explain-credits-now-t1-2`: the projects that carry the value, each linked down to
  its own rows);
- the forecast of a project opens its chapters (`#explain-outlook-w1-<project id>`),
  one column per forecast figure `explain` opens; a finish is the latest of the
  chapters that count, the pace their mean (`explanations.HOW`).

A number links only where the page carries its rows: a dash (no data) and a figure
with no row (0, nothing counted) link nowhere.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from html import escape
from typing import TYPE_CHECKING, Any, Final, cast

import numpy as np
import pandas as pd

from toolkit import metrics
from toolkit.formatting import missing, show
from toolkit.frames.joins import outer_merged
from toolkit.reporting.drilldown import command
from toolkit.reporting.explanations import EXPLAINED, HOW, TAKEN, explain
from toolkit.reporting.figures import FIGURES, Period, header_of, label
from toolkit.reporting.tags import UNTAGGED, Tags, keys_of, tag_values

if TYPE_CHECKING:
    from toolkit.analysis.observed import Observed

__all__ = [
    "FORECAST",
    "OUTLOOK",
    "WEEKS",
    "Drilldown",
    "Scope",
    "explained_outlook",
    "explained_week",
    "moment_in",
]

# The two weeks a number may be of: the `Figures` attribute of a workspace's week, and
# its word in an anchor.
WEEKS: Final = {"figures": "now", "previous": "was"}
# The forecast's columns on the agency page.
FORECAST: Final = ("open_chapters", "remaining_lines", "lines_per_hour", "finish_p10",
                   "finish_p50", "finish_p90")  # fmt: skip
# Those `explain` opens: they link to each project's chapters.
OUTLOOK: Final = tuple(name for name in FORECAST if name in EXPLAINED)
_MOMENTS: Final = ("finish_p10", "finish_p50", "finish_p90")
# The sections' look: the rows a link lands on are marked, with room above them for
# the table's header; a tag's value heads its projects; a chapter that does not count
# is grey.
ROWS_STYLE: Final = """
[id^="explain-"] { scroll-margin-top: 4em; }
tbody:target td, div.scope:target > h4 { background: #fff8d6; }
tr.group td { font-weight: 600; background: #fafafa; } td.out { color: #999; }
h4 { margin: 1.4em 0 0.3em; } section h3 { margin-top: 2em; }
"""
# A chapter's row shows at most this many of its contributions' details.
_DETAILS: Final = 2


def explained_week(obs: Observed, when: Period) -> dict[str, pd.DataFrame]:
    """The rows of every headline figure over a workspace's week (none without data)."""
    if not when.has_data:
        return {}
    return {
        name: explain(obs, name, since=when.since, until=when.until, tz=when.tz) for name in FIGURES
    }


def explained_outlook(obs: Observed, when: Period) -> dict[str, pd.DataFrame]:
    """The chapters behind each forecast figure at the week's last snapshot."""
    if not when.has_data:
        return {}
    return {
        name: explain(obs, name, since=when.since, until=when.until, tz=when.tz) for name in OUTLOOK
    }


def _slug(text: object) -> str:
    """A piece of an anchor: letters, digits, `_` and `-` only."""
    return re.sub(r"[^A-Za-z0-9_-]", "_", str(text))


@dataclass(frozen=True)
class Scope:
    """One workspace's material for the drill-down (`Agency` gives it)."""

    name: str
    store: str
    periods: Mapping[str, Period]  # by `WEEKS` key
    rows: Mapping[str, Mapping[str, pd.DataFrame]]  # by `WEEKS` key, then figure
    outlook: Mapping[str, pd.DataFrame]  # by forecast figure
    projects: Mapping[str, pd.DataFrame]  # by `WEEKS` key: project_id, project, FIGURES
    totals: Mapping[str, Mapping[str, Any]]  # by `WEEKS` key: the workspace's figures


class Drilldown:
    """Which anchor each number of the agency page opens, and the sections they are."""

    def __init__(self, scopes: list[Scope], tags: Tags) -> None:
        self.scopes = scopes
        self.tags = tags
        self.keys = keys_of(tags)
        self._index = {scope.name: n for n, scope in enumerate(scopes, start=1)}
        # Which projects have rows, by workspace, week and figure; the tags' members.
        self._with_rows = {
            (scope.name, which, figure): set(found["project_id"].astype(object).map(str))
            for scope in scopes for which, figures in scope.rows.items()
            for figure, found in figures.items()
        }  # fmt: skip
        self._tagged: dict[tuple[str, str], pd.DataFrame] = {}

    # -- the anchors a number opens (None: the page carries no row of it) --------

    def total(self, figure: str, which: str) -> str | None:
        """The all-workspaces number's section (also the tags' `All projects`)."""
        if not any(self._with_rows.get((s.name, which, figure)) for s in self.scopes):
            return None
        return f"explain-{figure}-{WEEKS[which]}"

    def workspace(self, figure: str, which: str, name: str) -> str | None:
        if not self._with_rows.get((name, which, figure)):
            return None
        return f"explain-{figure}-{WEEKS[which]}-w{self._index[name]}"

    def project(self, figure: str, which: str, name: str, project_id: object) -> str | None:
        if str(project_id) not in self._with_rows.get((name, which, figure), ()):
            return None
        return f"explain-{figure}-{WEEKS[which]}-w{self._index[name]}-{_slug(project_id)}"

    def tag(self, figure: str, which: str, key: str, value: object) -> str | None:
        """A tag value's group: the projects carrying it, in the figure's tag section."""
        members = self._members(key, which)
        found = members[members[key] == str(value)]
        if not any(self.project(figure, which, w, p) for w, p in
                   zip(found["workspace"], found["project_id"], strict=True)):  # fmt: skip
            return None
        values = list(dict.fromkeys(members[key]))
        return (f"explain-{figure}-{WEEKS[which]}-t{self.keys.index(key) + 1}-"
                f"{values.index(str(value)) + 1}")  # fmt: skip

    def outlook(self, figure: str, name: str, project_id: object) -> str | None:
        """A project's forecast figure: its chapters (one table for every column). A
        column that is a headline figure under another name (the open lines) opens that
        figure's rows of the project this week: one per chapter and language."""
        same = metrics.ALIASES.get(figure)
        if same in FIGURES:
            return self.project(same, "figures", name, project_id)
        scope = self.scopes[self._index[name] - 1]
        if figure not in scope.outlook:
            return None
        rows = scope.outlook[figure]
        if not (rows["project_id"].astype(object) == str(project_id)).any():
            return None
        return f"explain-outlook-w{self._index[name]}-{_slug(project_id)}"

    # -- the sections ---------------------------------------------------------

    def sections(self, heading: str = "Where each number comes from") -> list[str]:
        """Every section the page's numbers link to, under one heading."""
        parts = [f"<h2>{escape(heading)}</h2>",
                 '<p class="note">Each underlined number opens the rows that make it; they '
                 "add up to it. A row is one chapter (and language) and what counted it; "
                 "each block names the command that prints every contribution.</p>"]  # fmt: skip
        for figure in FIGURES:
            for which in WEEKS:
                if self.total(figure, which) is not None:
                    parts += self._figure_section(figure, which)
        parts += self._outlook_sections()
        return parts

    def _figure_section(self, figure: str, which: str) -> list[str]:
        week = "this week" if which == "figures" else "the previous week"
        definition = metrics.FIGURES[figure].definition
        parts_of = [scope.totals[which].get(figure) for scope in self.scopes]
        total: int | None = None
        if not any(missing(v) for v in parts_of):
            total = sum(int(cast(int, v)) for v in parts_of)
        # One workspace (the weekly page by a tag): its projects are all there is.
        where = "in all workspaces" if len(self.scopes) > 1 else "in all projects"
        every = f": {show(figure, total)} {where}" if total is not None else ""
        parts = [
            f'<section id="explain-{figure}-{WEEKS[which]}">',
            f"<h3>{escape(header_of(figure))}, {week}{escape(every)}</h3>",
            f'<p class="total">{escape(definition)} Taken as {escape(TAKEN[HOW[figure]])}.</p>',
        ]
        for scope in self.scopes:
            parts += self._workspace_block(scope, figure, which)
        parts.append("</section>")
        for key in self.keys:  # apart: a section's rows add up to its own number
            parts += self._tag_block(figure, which, key, f"{header_of(figure)}, {week}")
        return parts

    def _workspace_block(self, scope: Scope, figure: str, which: str) -> list[str]:
        anchor = self.workspace(figure, which, scope.name)
        when = scope.periods[which]
        if anchor is None:
            return []
        rows = self._rows(scope, figure, which)
        number = scope.totals[which].get(figure)
        said = label(figure, when) + ("" if missing(number) else f": {show(figure, number)}")
        languages = bool(rows["language_code"].notna().any())  # a figure counted by language
        header = [header_of("project"), header_of("chapter"),
                  *([header_of("language_code")] if languages else []),
                  header_of("detail"), header_of(figure)]  # fmt: skip
        # One pass over the chapters' rows, gathered per project: a frame per project
        # and its rows as dicts took seconds on a busy week's 100,000 rows.
        bodies = []
        for project_id, cells in _chapter_rows(figure, _by_chapter(rows), languages):
            target = self.project(figure, which, scope.name, project_id)
            bodies.append(f'<tbody id="{target}">{"".join(cells)}</tbody>')
        every = command(figure, when, scope.store)
        return [
            f'<div class="scope" id="{anchor}">',
            f"<h4>{escape(scope.name)}: {escape(said)}</h4>",
            f"<table>{_head(header, {len(header) - 1})}{''.join(bodies)}</table>",
            f'<p class="note">Every {escape(metrics.FIGURES[figure].unit)} row, one per run, '
            f"charge or snapshot: <code>{escape(every)}</code></p>",
            "</div>",
        ]

    def _tag_block(self, figure: str, which: str, key: str, title: str) -> list[str]:
        members = self._members(key, which)
        words = key.replace("_", " ")
        header = [header_of("project"), header_of("workspace"), header_of(figure)]
        bodies = []
        for value, group in members.groupby(key, sort=False):
            target = self.tag(figure, which, key, value)
            if target is None:
                continue
            cells = [f'<tr class="group"><td colspan="3">{escape(words)}: {escape(str(value))}'
                     "</td></tr>"]  # fmt: skip
            for row in group.to_dict("records"):
                number = row[figure]
                down = self.project(figure, which, row["workspace"], row["project_id"])
                cells.append(
                    f"<tr><td>{escape(str(row['project']))}</td>"
                    f"<td>{escape(str(row['workspace']))}</td>"
                    f"{_value_cell(figure, number, down)}</tr>"
                )
            bodies.append(f'<tbody id="{target}">{"".join(cells)}</tbody>')
        if not bodies:
            return []
        return [f'<section id="explain-{figure}-{WEEKS[which]}-by-t{self.keys.index(key) + 1}">',
                f"<h3>{escape(title)}, by {escape(words)}</h3>",
                f"<table>{_head(header, {2})}{''.join(bodies)}</table>",
                "</section>"]  # fmt: skip

    def _outlook_sections(self) -> list[str]:
        parts: list[str] = []
        header = [header_of("chapter"), *(header_of(n) for n in OUTLOOK), header_of("detail")]
        for scope in self.scopes:
            if not scope.outlook:
                continue
            chapters = _outlook_by_chapter(scope.outlook)
            for project_id, group in chapters.groupby("project_id", sort=False):
                if not any(self.outlook(n, scope.name, project_id) for n in OUTLOOK):
                    continue
                anchor = f"explain-outlook-w{self._index[scope.name]}-{_slug(project_id)}"
                project = str(group["project"].iloc[0])
                zone = scope.periods["figures"].tz
                body = "".join(_outlook_row(row, zone) for row in _records(group))
                numbers = set(range(1, len(OUTLOOK) + 1))
                parts += [
                    f'<section id="{anchor}">',
                    f"<h4>{escape(project)} ({escape(scope.name)})</h4>",
                    f"<table>{_head(header, numbers)}<tbody>{body}</tbody></table>",
                    "</section>",
                ]
        if parts:
            parts[:0] = [
                "<h3>The forecast's chapters</h3>",
                '<p class="total">Each chapter as the forecast sees it at the week\'s last '
                "snapshot. A project's finish is the latest of its chapters', its pace their "
                "mean; a chapter without pace samples (in grey) takes no part in them.</p>",
            ]
        return parts

    # -- material ---------------------------------------------------------------

    def _rows(self, scope: Scope, figure: str, which: str) -> pd.DataFrame:
        found = scope.rows.get(which, {}).get(figure)
        return found if found is not None else pd.DataFrame(columns=["project_id"])

    def _members(self, key: str, which: str) -> pd.DataFrame:
        """Every workspace's projects with their figures and value of tag `key`."""
        if (key, which) not in self._tagged:
            frames = [scope.projects[which].assign(workspace=scope.name) for scope in self.scopes]
            together = pd.concat(frames, ignore_index=True)
            values = tag_values(together, self.tags, key).astype(object)
            # The tag's values in name order, projects without it last: as its table.
            order = {v: n for n, v in enumerate(sorted(set(values) - {UNTAGGED}))}
            rank = values.map(lambda v: order.get(v, len(order)))
            together = together.assign(**{key: values, "_rank": rank})
            self._tagged[key, which] = together.sort_values("_rank", kind="stable")
        return self._tagged[key, which]


def _records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """A frame's rows as dicts keyed by column name."""
    return [{str(k): v for k, v in row.items()} for row in frame.to_dict("records")]


def _head(header: list[str], numbers: set[int]) -> str:
    """A table's header; the columns at `numbers` hold numbers (aligned right)."""
    right = ' class="n"'
    cells = "".join(f"<th{right if i in numbers else ''}>{escape(h)}</th>"
                    for i, h in enumerate(header))  # fmt: skip
    return f"<thead><tr>{cells}</tr></thead>"


def _by_chapter(rows: pd.DataFrame) -> pd.DataFrame:
    """A workspace's rows summed per project, chapter, language and rule: what a reader
    checks a number against without a row per snapshot. `detail` says how many rows
    were summed and the first of their details."""
    keyed = pd.DataFrame({
        "project_id": rows["project_id"].astype(object), "project": rows["project"].astype(object),
        "chapter": rows["chapter"].astype(object).fillna(rows["chapter_id"].astype(object)),
        "language": rows["language_code"].astype(object).fillna(""),
        "rule": rows["rule"].astype(object).fillna(""),
        "detail": rows["detail"].astype(object).fillna(""),
        "source": rows["source"].astype(object), "value": rows["value"],
        "unknown": rows["value"].isna().to_numpy(bool),
    })  # fmt: skip
    groups = keyed.groupby(["project_id", "chapter", "language", "rule"], sort=False)
    said = groups.agg(
        project=("project", "first"), source=("source", "first"), rows=("value", "size"),
        value=("value", "sum"), unknown=("unknown", "any"),
    ).reset_index()  # fmt: skip
    said["value"] = said["value"].astype(object).where(~said["unknown"], None)
    # Each group's distinct details in the order first seen, taken for every group at
    # once (a list per group, made by pandas one group at a time, took seconds).
    said["detail"] = _details(keyed["detail"], groups.ngroup().to_numpy(), said)
    # By project name, the largest first: a sum's biggest parts on top.
    size = pd.to_numeric(said["value"], errors="coerce").abs()
    return said.assign(_size=size).sort_values(["project", "_size"], ascending=[True, False],
                                               kind="stable", na_position="first")  # fmt: skip


def _details(details: pd.Series, group: np.ndarray, said: pd.DataFrame) -> list[str]:
    """Per group of `said` (numbered as `group` numbers each row): how many rows it
    sums and its first `_DETAILS` distinct details, with how many more there are."""
    texts = details.to_numpy(object)
    kept = (group >= 0) & (texts != "")
    distinct = pd.DataFrame({"group": group[kept], "detail": texts[kept]}).drop_duplicates()
    rank = distinct.groupby("group", sort=False).cumcount().to_numpy()
    many = np.bincount(distinct["group"].to_numpy("int64"), minlength=len(said))
    firsts: list[list[str]] = [[] for _ in range(len(said))]
    for number, text in zip(
        distinct["group"].to_numpy()[rank < _DETAILS],
        distinct["detail"].to_numpy(object)[rank < _DETAILS],
        strict=True,
    ):
        firsts[number].append(text)  # fmt: skip
    said_rows = said["rows"].to_numpy("int64")
    sources = said["source"].to_numpy(object)
    return [
        _detail(shown, int(count), int(rows), str(source))
        for shown, count, rows, source in zip(firsts, many, said_rows, sources, strict=True)
    ]


def _detail(shown: list[str], distinct: int, rows: int, source: str) -> str:
    said = "; ".join(shown)
    if distinct > _DETAILS:
        said += f"; {distinct - _DETAILS:,} more"
    return f"{rows:,} {source}s: {said}" if rows > 1 else said


def _chapter_rows(
    figure: str, said: pd.DataFrame, languages: bool
) -> Iterator[tuple[object, list[str]]]:
    """Each project's rows (`_by_chapter`'s, in its order) as the table's rows, with the
    project's id, the projects in the order they first come. A row's rule is beside its
    detail where it is not the figure's definition (a chapter that needs a person says
    why)."""
    definition = metrics.FIGURES[figure].definition
    names = ("project_id", "project", "chapter", "language", "rule", "detail", "value")
    columns = [said[name].to_numpy(object) for name in names]
    # A busy week is some 100,000 rows of few projects, languages and values: each of
    # those cells is made once (by the value's type too: 1 and 1.0 show differently).
    cells: dict[tuple[type, object], str] = {}
    values: dict[tuple[type, object], str] = {}

    def cell(text: object) -> str:
        key = (type(text), text)
        if key not in cells:
            cells[key] = f"<td>{escape(str(text))}</td>"
        return cells[key]

    projects: dict[object, list[str]] = {}
    for project_id, project, chapter, language, rule, detail, value in zip(*columns, strict=True):
        shown = str(detail)
        if str(rule) != definition:
            shown = f"{rule}: {shown}" if shown else str(rule)
        named = (type(value), value)
        if named not in values:
            values[named] = _value_cell(figure, value)
        where = cell(language) if languages else ""
        projects.setdefault(project_id, []).append(
            f"<tr>{cell(project)}<td>{escape(str(chapter))}</td>{where}"
            f"<td>{escape(shown)}</td>{values[named]}</tr>"
        )
    yield from projects.items()


def _value_cell(figure: str, value: object, target: str | None = None) -> str:
    known = not missing(value)
    text = show(figure, value) if known else "–"
    raw = "" if not known else str(value)
    shown = (f'<a href="#{target}" data-figure="{figure}">{escape(text)}</a>'
             if target and known else escape(text))  # fmt: skip
    return f'<td class="n" data-figure="{figure}" data-value="{escape(raw)}">{shown}</td>'


def _outlook_by_chapter(outlook: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """One row per chapter, a column per forecast figure: `<figure>` the value,
    `<figure>@` the moment (finishes), `<figure>?` whether it counts."""
    merged: pd.DataFrame | None = None
    for name, rows in outlook.items():
        # A row per chapter: the pace samples and the tail allowance (`tk.explain`'s
        # inputs, which do not count) would repeat a chapter or have none.
        rows = rows[rows["source"] == "chapter"]
        part = rows[["project_id", "project", "chapter_id", "chapter", "detail"]].copy()
        part[name] = rows["value"].astype(object)
        part[f"{name}@"] = rows["finished_at"]
        part[f"{name}?"] = rows["counts"]
        if merged is None:
            merged = part
        else:
            merged = outer_merged(merged, part, on=["project_id", "project", "chapter_id",
                                                    "chapter"], suffixes=("", "_"))  # fmt: skip
            merged["detail"] = merged["detail"].fillna(merged.pop("detail_"))
    return merged if merged is not None else pd.DataFrame(columns=["project_id"])


def moment_in(value: object, zone: str) -> str:
    """A forecast's moment as the page shows it, in the workspace's zone: `Sun 29 Nov
    19:43 UTC`; a dash when unknown."""
    if missing(value):
        return "–"
    return f"{pd.Timestamp(value).tz_convert(zone):%a %d %b %H:%M %Z}"  # type: ignore[arg-type]


def _outlook_row(row: Mapping[str, Any], zone: str) -> str:
    cells = [f"<td>{escape(str(row['chapter']))}</td>"]
    for name in OUTLOOK:
        value, moment, counts = row.get(name), row.get(f"{name}@"), row.get(f"{name}?")
        if counts is None or counts != counts:  # the chapter is not among this figure's rows
            cells.append(f'<td class="n" data-figure="{name}" data-value="" data-counts="0">–</td>')
            continue
        when = "" if moment is None or pd.isna(moment) else pd.Timestamp(moment).isoformat()
        if name in _MOMENTS:
            text = moment_in(moment, zone)
        else:
            text = (
                "–"
                if value is None or pd.isna(value)
                else show(name, value)
                if name != "lines_per_hour"
                else f"{float(value):,.1f}"
            )
        css = "n" if counts else "n out"
        raw = "" if missing(value) else str(value)
        cells.append(f'<td class="{css}" data-figure="{name}" data-value="{escape(raw)}" '
                     f'data-at="{when}" data-counts="{int(bool(counts))}">'
                     f"{escape(text)}</td>")  # fmt: skip
    cells.append(f"<td>{escape(str(row['detail']))}</td>")
    return f"<tr>{''.join(cells)}</tr>"

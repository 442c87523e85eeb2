"""A page whose numbers link to the rows that make them, as a link follower reads it
(importable from any test directory): the agency page and the weekly page's tables by
a tag. `opened` follows every link and recounts the rows it lands on."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

import pandas as pd
from html_page import Page

from toolkit.reporting.agency_drilldown import moment_in
from toolkit.reporting.explanations import recount


class Anchored(HTMLParser):
    """The page as a link follower sees it: every element's id, every link (its target,
    figure and text), the values under each id, and each number of the page's tables
    before its explanations, marked `[n]` where it is a link."""

    VOID = frozenset({"meta", "br", "img", "hr", "input", "link", "col", "wbr"})

    def __init__(self, text: str) -> None:
        super().__init__()
        self.ids: set[str] = set()
        self.links: list[tuple[str, str, str]] = []  # target, figure, text
        self.under: dict[str, list[dict[str, str]]] = {}  # id -> its value cells
        self.cells: list[str] = []  # the numbers' cells above the explanations
        self._open: list[tuple[str, str | None]] = []
        self._link: list[str] | None = None
        self._cell: list[str] | None = None
        self._explaining = False
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        found = dict(attrs)
        if tag not in self.VOID:
            self._open.append((tag, found.get("id")))
        if found.get("id"):
            assert found["id"] not in self.ids, f"two elements with id {found['id']}"
            self.ids.add(found["id"])
        if tag == "td" and "data-figure" in found:
            for _, ident in self._open:
                if ident:
                    self.under.setdefault(ident, []).append(found)
        if tag == "td" and not self._explaining:
            self._cell = []
        if tag == "a" and found.get("href", "").startswith("#"):
            self._link = [found["href"][1:], found.get("data-figure", ""), ""]
            if self._cell is not None:
                self._cell.append("[")

    def handle_endtag(self, tag):
        if tag in self.VOID:
            return
        while self._open and self._open.pop()[0] != tag:
            pass
        if tag == "a" and self._link is not None:
            self.links.append((self._link[0], self._link[1], self._link[2]))
            self._link = None
            if self._cell is not None:
                self._cell.append("]")
        if tag == "td" and self._cell is not None:
            self.cells.append("".join(self._cell).strip())
            self._cell = None

    def handle_data(self, data):
        if "Where each " in data:  # "Where each number comes from": the explanations
            self._explaining = True
        if self._link is not None:
            self._link[2] += data
        if self._cell is not None:
            self._cell.append(data)


def _recounted(cells: list[dict[str, str]], figure: str):
    """The figure the linked rows make, as `explanations.recount` takes it."""
    rows = pd.DataFrame(
        {
            "value": [float(c["data-value"]) if c["data-value"] else None for c in cells],
            "counts": [c.get("data-counts", "1") == "1" for c in cells],
            "finished_at": pd.to_datetime([c.get("data-at") or None for c in cells], utc=True),
        }
    )
    return recount(rows, figure)


def opened(path: Path, zone: str, *, marked: bool = False) -> tuple[set[str], set[str]]:
    """Follow every link of the page at `path` (with `marked`, only those that name
    their figure, `data-figure`: the weekly page's other links open its sections of the
    largest rows, checked by test_drilldown): it lands on an element of the page,
    and the value cells under it (of the link's figure) make the linked number, as
    `recount` takes it. Returns the kinds of target (`explain-F-now-w1-P`: a project's
    rows this week) and the figures linked. Every known number but 0 above the
    explanations is a link."""
    seen = Anchored(path.read_text(encoding="utf-8"))
    kinds, linked = set(), set()
    for target, figure, text in seen.links:
        assert target in seen.ids, target
        if marked and not figure:
            continue
        cells = [c for c in seen.under.get(target, []) if c["data-figure"] == figure]
        assert cells, (target, figure)
        made = _recounted(cells, figure)
        if figure.startswith("finish_"):
            assert moment_in(made, zone) == text, (target, figure)
        elif figure == "lines_per_hour":
            assert f"{made:,.0f}" == text, (target, figure)
        else:
            assert made is not None and int(made) == int(text.replace(",", "")), (
                target,
                figure,
                text,
                cells[:3],
            )
        kind = re.sub(r"-t(\d)-\d+$", r"-t\1-V", target)
        kind = re.sub(r"-(w\d)-[A-Za-z0-9_-]+$", r"-\1-P", kind)
        kinds.add(kind.replace(f"explain-{figure}-", "explain-F-"))
        linked.add(figure)
    weeks = [c for c in seen.cells if " was " in c]
    assert weeks
    for cell in weeks:
        for part in cell.split(" was "):
            assert part in ("–", "0") or re.fullmatch(r"\[[\d,]+\]", part), cell
    return kinds, linked


def numbers(cell: str) -> tuple[int | None, int | None]:
    """This week's and the previous week's number of a cell: `1,234 was 1,100`; a dash
    is no data."""
    found = re.fullmatch(r"(–|[\d,]+) was (–|[\d,]+)", cell)
    assert found, cell
    return tuple(None if part == "–" else int(part.replace(",", "")) for part in found.groups())  # type: ignore[return-value]


def table(page: Page, first: str) -> list[list[str]]:
    """The rows of the first table whose header starts with `first`, header included
    (the rows after it as long as the header, up to the next header or the total)."""
    starts = [i for i, row in enumerate(page.rows) if row and row[0] == first]
    found = [page.rows[starts[0]]]
    for row in page.rows[starts[0] + 1 :]:
        if row[0] == first or len(row) != len(found[0]):
            break
        found.append(row)
        if row[0].startswith("All "):  # a total row ends its table
            break
    return found

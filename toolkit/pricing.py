"""What a run will cost before it is sent, and how sure that figure is.

```python
quote = tk.pricing.quote_pages(project, 20, store=store)
quote.credits, quote.learned       # 40, True
quote.sentence()                   # "This run will cost 40 credits (price learned from ...)."
```

The service does not publish its prices. With a snapshot store that has seen this
workspace pay, the price is learned from its history (`tk.analysis.price_estimate`).
Otherwise the figure is an estimate at an assumed list price: 1 credit per page per
target language, and a novel chapter 1 credit per started 2,000 characters per target
language (what the emulator charges, DESIGN.md). Every quote says which, so what shows
it can label an assumed figure as an estimate. Credits are whole: a fractional learned
figure is rounded up, so a budget check never under-counts.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from toolkit.formatting import count

if TYPE_CHECKING:
    from toolkit.models import ChapterListItem, Project
    from toolkit.store import SnapshotStore

__all__ = ["Quote", "quote_pages", "quote_rescans", "quote_text", "total"]

_ASSUMED_CREDITS_PER_UNIT = 1
_NOVEL_CHARS_PER_UNIT = 2000
_LEARNED = "price learned from this workspace's history"


@dataclass(frozen=True)
class Quote:
    """Credits a run will cost; `learned` when the price came from the workspace's history."""

    credits: int
    learned: bool
    basis: str

    @property
    def label(self) -> str:
        """`40 credits`, or `about 40 credits (estimate)` when the price is assumed."""
        if self.learned:
            return f"{self.credits:,} credits"
        return f"about {self.credits:,} credits (estimate)"

    def sentence(self, *, run: str = "This run") -> str:
        about = "" if self.learned else "about "
        return f"{run} will cost {about}{self.credits:,} credits ({self.basis})."


def _units_of_text(text: str) -> int:
    """How many started blocks of 2,000 characters a novel chapter's text makes."""
    return math.ceil(len(text) / _NOVEL_CHARS_PER_UNIT) if text else 0


def quote_pages(project: Project, pages: int, *, store: SnapshotStore | None = None) -> Quote:
    """What running `pages` pages of a comic chapter of `project` costs."""
    languages = len(project.language_codes)
    learned = _learned(store, project, pages)
    if learned is not None:
        return Quote(learned, True, _LEARNED)
    return Quote(
        pages * languages * _ASSUMED_CREDITS_PER_UNIT,
        False,
        f"estimate: {count(pages, 'page')} x {count(languages, 'language')} "
        f"at an assumed {_ASSUMED_CREDITS_PER_UNIT} credit each",
    )


def quote_text(project: Project, text: str, *, store: SnapshotStore | None = None) -> Quote:
    """What a novel chapter of `text` in `project` costs.

    A learned novel price is per chapter of the project's usual length (what
    `price_estimate` learns for novels), whatever this text's length.
    """
    languages = len(project.language_codes)
    learned = _learned(store, project, 1)
    if learned is not None:
        return Quote(learned, True, f"{_LEARNED}, for a chapter of the project's usual length")
    units = _units_of_text(text)
    return Quote(
        units * languages * _ASSUMED_CREDITS_PER_UNIT,
        False,
        f"estimate: {count(units, 'block')} of up to {_NOVEL_CHARS_PER_UNIT:,} characters x "
        f"{count(languages, 'language')} at an assumed {_ASSUMED_CREDITS_PER_UNIT} credit each",
    )


def quote_rescans(
    projects: Mapping[str, Project],
    chapters: Iterable[ChapterListItem],
    *,
    store: SnapshotStore | None = None,
) -> Quote:
    """What re-scanning `chapters` costs: each runs all its pages in every language again."""
    quotes = [
        quote_pages(projects[c.project_id], c.page_count or 0, store=store)
        for c in chapters
        if c.project_id is not None and c.project_id in projects
    ]
    return total(quotes)


def total(quotes: Iterable[Quote]) -> Quote:
    """One quote for several runs; learned only when every part was."""
    parts = list(quotes)
    credits = sum(q.credits for q in parts)
    learned = bool(parts) and all(q.learned for q in parts)
    if len({q.basis for q in parts}) == 1:
        basis = parts[0].basis  # one run, or runs priced alike: its own words
    elif learned:
        basis = _LEARNED
    elif any(q.learned for q in parts):
        basis = f"estimate: partly {_LEARNED}, the rest at an assumed list price"
    else:
        basis = (
            f"estimate at an assumed {_ASSUMED_CREDITS_PER_UNIT} credit per page, or per "
            f"{_NOVEL_CHARS_PER_UNIT:,} characters of text, per language"
        )
    return Quote(credits, learned, basis)


def _learned(store: SnapshotStore | None, project: Project, units: int) -> int | None:
    if store is None:
        return None
    from toolkit import analysis

    try:
        credits = analysis.price_estimate(
            store, project.id, pages=units, languages=project.language_codes
        )
    except ValueError:
        return None  # no history for a project like this one yet: the assumed price
    if math.isnan(credits):
        return None
    return math.ceil(credits - 1e-9)

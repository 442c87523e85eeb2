"""A chapter's `state`: what it is doing or waiting for, in a word a person uses.

Derived from the service's fields, never sent by it; `status` stays as the service sent
it. The first line that applies gives the state:

| state          | the service's fields                                                  |
|----------------|-----------------------------------------------------------------------|
| `staged`       | `started` is false: created staged, never run                         |
| `reading`      | `processing`, pages being read: the detail's `detecting`; without a   |
|                | detail, no language has a line translated yet                         |
| `finishing`    | `processing`, every line translated: a language is `exporting`        |
|                | (packaging), or the detail shows no line left (cleaning, lettering)   |
| `translating`  | `processing` otherwise                                                |
| `stalled`      | `failed`, and `failureReason` says the run stalled (the service       |
|                | abandoned it)                                                         |
| `failed`       | `failed`                                                              |
| `needs_review` | `status` is `needs_review`                                            |
| `reviewed`     | `status` is `reviewed`                                                |
| `translating`  | anything else (a status the toolkit does not know is not done)        |

A run going on a failed chapter (pages added to it) shows its phase: `failed` stays true
on the service until a re-scan, and the chapter is `failed` again once the run settles.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Final

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

if TYPE_CHECKING:
    from toolkit.models import ChapterDetail, ChapterListItem

__all__ = ["STATES", "chapter_states", "fill_states", "says_stalled", "states"]

STATES: Final = (
    "staged",
    "reading",
    "translating",
    "finishing",
    "failed",
    "stalled",
    "needs_review",
    "reviewed",
)
_RUNNING: Final = ("reading", "translating", "finishing")
_STALL: Final = re.compile(r"\bstall", re.IGNORECASE)


def says_stalled(reason: str | None) -> bool:
    """Whether a failure reason says the run stalled (and the service abandoned it).

    Args:
        reason: A chapter's `failure_reason`, or None.

    Returns:
        True when the reason mentions a stall, in any case.
    """
    return reason is not None and _STALL.search(reason) is not None


def states(
    started: np.ndarray,
    processing: np.ndarray,
    failed: np.ndarray,
    reasons: np.ndarray,
    status: np.ndarray,
    reading: np.ndarray,
    finishing: np.ndarray,
) -> np.ndarray:
    """The state of each chapter, by the table in this module's docstring.

    Flags are boolean arrays with nulls already filled (`started` null counts as
    started); `reasons` and `status` are object arrays (None for null); `reading` and
    `finishing` say what a running chapter's languages and detail show.
    """
    stalled = np.fromiter((says_stalled(r) for r in reasons), bool, len(reasons))
    conditions = [
        ~started,
        processing & reading,
        processing & finishing,
        processing,
        failed & stalled,
        failed,
        status == "needs_review",
        status == "reviewed",
    ]
    choices = [
        "staged",
        "reading",
        "finishing",
        "translating",
        "stalled",
        "failed",
        "needs_review",
        "reviewed",
    ]
    return np.select(conditions, choices, default="translating").astype(object)


def chapter_states(
    items: Iterable[ChapterListItem], chapter_details: Mapping[str, ChapterDetail] | None = None
) -> list[str]:
    """The state of each chapter of a list, by the table in this module's docstring.

    Args:
        items: Chapters from chapter lists (`Client.list_chapters`).
        chapter_details: Chapter details by chapter id, where known: only a detail tells
            reading pages and cleaning apart from translating.

    Returns:
        One state of `STATES` per item, in the items' order.
    """
    items = list(items)
    chapter_details = chapter_details or {}
    reading, finishing = [], []
    for item in items:
        detail = chapter_details.get(item.id)
        reading.append(_reading(item, detail))
        finishing.append(_finishing(item, detail))

    def flags(values: Iterable[bool | None], null: bool) -> np.ndarray:
        return np.array([null if v is None else v for v in values], bool)

    return list(
        states(
            flags((c.started for c in items), True),
            flags((c.processing for c in items), False),
            flags((c.failed for c in items), False),
            np.array([c.failure_reason for c in items], object),
            np.array([c.status for c in items], object),
            np.array(reading, bool),
            np.array(finishing, bool),
        )
    )


def _reading(item: ChapterListItem, detail: ChapterDetail | None) -> bool:
    if detail is not None and detail.detecting is not None:
        return detail.detecting
    return all((lang.covered or 0) == 0 for lang in item.languages)


def _finishing(item: ChapterListItem, detail: ChapterDetail | None) -> bool:
    if any(lang.exporting for lang in item.languages):
        return True
    if detail is None or not detail.languages:
        return False
    return all(lang.untranslated == 0 for lang in detail.languages)


def fill_states(table: pa.Table) -> pa.ChunkedArray:
    """The `state` column of a chapters table, derived from the row where it is null
    (rows a toolkit wrote before the column existed). Without the languages and detail
    of the time, a running chapter of such a row reads `translating`."""
    column = table.column("state")
    if column.null_count == 0:
        return column

    def flag(name: str, null: bool) -> np.ndarray:
        return np.asarray(pc.fill_null(table.column(name), null).to_numpy(), bool)

    def texts(name: str) -> np.ndarray:
        return np.asarray(table.column(name).to_numpy(zero_copy_only=False), object)

    none = np.zeros(table.num_rows, bool)
    derived = states(
        flag("started", True),
        flag("processing", False),
        flag("failed", False),
        texts("failure_reason"),
        texts("status"),
        none,
        none,
    )
    return pc.coalesce(column, pa.array(derived, pa.string()))

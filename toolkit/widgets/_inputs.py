"""What the panels take from their inputs (uploaded files, typed numbers) and how they
name projects and chapters.

Uploaded pages are ordered by file name in natural order (`page-2` before `page-10`),
which is how people number scans; the panel lets the user change it before sending.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import ipywidgets as widgets

from toolkit.batch import natural_key
from toolkit.errors import InvalidUpload

if TYPE_CHECKING:
    from toolkit.models import ChapterListItem, Project

# For a checkbox or label: size to the text, else ipywidgets cuts long labels short.
AUTO = {"width": "auto"}


@dataclass(frozen=True)
class Upload:
    """One file from a `FileUpload`: its name and its bytes."""

    name: str
    content: bytes

    def as_file(self) -> io.BytesIO:
        # A named file object: the client streams it and names it in any refusal.
        stream = io.BytesIO(self.content)
        stream.name = self.name
        return stream


def uploads_of(value: Iterable[Mapping[str, Any]]) -> list[Upload]:
    """The files of a `FileUpload.value`, in natural file-name order."""
    files = [Upload(str(item["name"]), bytes(item["content"])) for item in value]
    return sorted(files, key=lambda upload: natural_key(upload.name))


def decode_text(upload: Upload) -> str:
    try:
        return upload.content.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InvalidUpload(
            f"{upload.name} is not UTF-8 text; save it as UTF-8 and upload it again",
            item=upload.name,
        ) from exc


def parse_number(text: str, *, what: str = "chapter number") -> int | None:
    """A number typed in a text box; blank means "not given"."""
    text = text.strip()
    if not text:
        return None
    if not re.fullmatch(r"\d+", text) or int(text) < 1:
        raise InvalidUpload(
            f"The {what} {text!r} is not a whole number of 1 or more: type one, or leave "
            "the box empty"
        )
    return int(text)


def next_free(chapters: Sequence[ChapterListItem]) -> int:
    """The number the service gives a chapter sent without one: after the highest."""
    return max((c.position or 0 for c in chapters), default=0) + 1


def refuse_taken(number: int, chapters: Sequence[ChapterListItem], project: Project) -> None:
    """Refuse, in the panel's words, a chapter number the project already has."""
    if any(c.position == number for c in chapters):
        raise InvalidUpload(
            f"Chapter {number} is taken in {project.name}; the next free number is "
            f"{next_free(chapters)}."
        )


def project_label(project: Project) -> str:
    languages = ", ".join(project.language_codes) or "no target languages"
    return f"{project.name} ({project.kind}, {project.source_language} -> {languages})"


def chapter_label(chapter: ChapterListItem) -> str:
    title = f": {chapter.title}" if chapter.title else ""
    return f"Chapter {chapter.position}{title}"


class BudgetBox(widgets.HBox):
    """The budget of a batch action: over it, the panel asks once more (0: no budget)."""

    def __init__(self, budget: int | None) -> None:
        self.input = widgets.BoundedIntText(
            value=budget or 0, min=0, max=10**9, description="Budget", layout={"width": "200px"}
        )
        note = widgets.HTML("credits: a batch that costs more asks once more (0: no budget)")
        super().__init__([self.input, note])

    @property
    def value(self) -> int:
        return int(self.input.value)

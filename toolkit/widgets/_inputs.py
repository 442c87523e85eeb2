"""What the panels take from their inputs: uploaded files, chapter numbers, prices.

Decisions where the spec is silent:
- Uploaded pages are ordered by file name in natural order (`page-2` before `page-10`),
  which is how people number scans; the panel lets the user change it before sending.
- The service does not publish its price. With a snapshot store the estimate is the
  price learned from history (`tk.analysis.price_estimate`); without one it is 1 credit
  per page per target language, and for novel text 1 credit per started 2,000
  characters per target language (the emulator's rule), and the panel says which.
"""

from __future__ import annotations

import io
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from toolkit.errors import InvalidUpload

if TYPE_CHECKING:
    from toolkit.models import ChapterListItem, Project

NOVEL_CHARS_PER_UNIT = 2000
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


def natural_key(name: str) -> list[Any]:
    return [int(part) if part.isdigit() else part.lower() for part in re.split(r"(\d+)", name)]


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
            f"{what} {text!r} is not a whole number of 1 or more; "
            "type one, or leave the box empty to let the service choose"
        )
    return int(text)


def project_label(project: Project) -> str:
    languages = ", ".join(project.language_codes) or "no target languages"
    return f"{project.name} ({project.kind}, {project.source_language} -> {languages})"


def count(n: int | None, noun: str) -> str:
    """`1 page`, `3 pages`."""
    n = n or 0
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def chapter_label(chapter: ChapterListItem) -> str:
    title = f": {chapter.title}" if chapter.title else ""
    return f"Chapter {chapter.position}{title}"


@dataclass(frozen=True)
class Estimate:
    """What a run will cost, and how that figure was reached."""

    credits: float
    units: int
    languages: int
    basis: str

    def sentence(self, *, run: str = "This run") -> str:
        return f"{run} will cost about {self.credits:g} credits ({self.basis})."


def novel_units(text: str) -> int:
    return math.ceil(len(text) / NOVEL_CHARS_PER_UNIT) if text else 0


def estimate(
    project: Project, *, pages: int = 0, text: str | None = None, store: Any = None
) -> Estimate:
    """The credits a run of `pages` pages (or of `text`) in `project` will cost."""
    languages = len(project.language_codes)
    if text is not None:
        units, unit = novel_units(text), "started 2,000 characters"
    else:
        units, unit = pages, "pages"
    if store is not None:
        learned = _learned_price(store, project, units)
        if learned is not None:
            return Estimate(learned, units, languages, "price learned from the store's history")
    return Estimate(
        float(units * languages),
        units,
        languages,
        f"{units} {unit} x {languages} languages at 1 credit each",
    )


def rescan_estimate(
    projects: Mapping[str, Project], chapters: Sequence[ChapterListItem], *, store: Any = None
) -> Estimate:
    """What re-scanning `chapters` costs: each runs all its pages in every language again."""
    parts = [
        estimate(projects[c.project_id], pages=c.page_count or 0, store=store)
        for c in chapters
        if c.project_id is not None and c.project_id in projects
    ]
    pages = sum(c.page_count or 0 for c in chapters)
    basis = "; ".join(sorted({p.basis for p in parts})) or "nothing selected"
    return Estimate(sum(p.credits for p in parts), pages, 0, basis)


def _learned_price(store: Any, project: Project, units: int) -> float | None:
    from toolkit import analysis

    try:
        credits = analysis.price_estimate(
            store, project.id, pages=units, languages=project.language_codes
        )
    except (LookupError, ValueError):
        # No history for this project yet: the caller falls back to the plain rule.
        return None
    if credits is None or (isinstance(credits, float) and math.isnan(credits)):
        return None
    return float(credits)

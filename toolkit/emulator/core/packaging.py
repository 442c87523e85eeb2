"""Prepared files: which a run packages, and their names and sizes.

No contents are kept: sizes derive from the pages' bytes and lines translated, so they
are deterministic (docs/emulator.md).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["PreparedFile", "prepared_files"]

_COMIC_FORMATS: dict[str, tuple[str, ...]] = {
    "text": ("txt",),
    "translate": ("txt",),
    "clean": ("txt", "clean"),
    "full": ("txt", "clean", "cbz"),
}
_NOVEL_FORMATS: tuple[str, ...] = ("txt", "docx")
_SUFFIXES = {"txt": ".txt", "docx": ".docx", "clean": "-clean.zip", "cbz": ".cbz"}


@dataclass(frozen=True)
class PreparedFile:
    """An export's file: its format, name, size and page count."""

    format: str
    filename: str
    byte_size: int
    page_count: int


def _formats_for(kind: str, steps: str) -> tuple[str, ...]:
    return _NOVEL_FORMATS if kind == "novel" else _COMIC_FORMATS[steps]


def _slug(name: str) -> str:
    """A file-name-safe form of a project name."""
    text = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")
    return text or "chapter"


def prepared_files(
    *,
    kind: str,
    steps: str,
    project_name: str,
    position: int,
    language: str,
    pages: int,
    page_bytes: int,
    lines: int,
) -> list[PreparedFile]:
    """The files one language of a chapter has once a run has packaged it."""
    stem = f"{_slug(project_name)}-ch{position:03d}-{language}"
    sizes = {
        "txt": 128 + 64 * lines,
        "docx": 8_192 + 96 * lines,
        "clean": 512 + page_bytes * 9 // 10,
        "cbz": 1_024 + page_bytes + 22 * pages,
    }
    return [
        PreparedFile(fmt, stem + _SUFFIXES[fmt], sizes[fmt], pages)
        for fmt in _formats_for(kind, steps)
    ]

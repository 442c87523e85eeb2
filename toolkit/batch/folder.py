"""A folder of chapters, read and checked before anything is sent.

A folder holds either comic chapters, one sub-folder of page images each
(`chapter-01/001.png`, ...), or novel chapters, one `.txt` file each (`chapter-01.txt`).

Decisions where the spec and DESIGN are silent:
- A chapter's number is the first number in its name: `chapter-07`, `07`, `ch7 - storm`
  are all chapter 7. A name without a number, a number below 1, or two entries with the
  same number are problems.
- Pages are sent in natural file-name order (`page-2` before `page-10`), as scans are
  numbered; each page passes the client's own checks here (an SVG, an empty or damaged
  image is a problem), so nothing is refused half-way through a batch.
- Text is read as UTF-8 (a byte-order mark is dropped) and passes the client's text
  check (not empty, at most 200,000 characters).
- Hidden files (`.DS_Store`, the upload record), `Thumbs.db` and `desktop.ini` are
  ignored; anything else that is not a chapter is a problem, so a stray file is
  noticed instead of silently left out.
- A chapter's digest (SHA-256 over its pages in order, or its text) is what a rerun
  compares with the upload record to know the chapter is the same one.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from toolkit.client import check_image, check_text
from toolkit.errors import InvalidUpload

__all__ = ["FolderChapter", "FolderScan", "Kind", "Problem", "natural_key", "scan_folder"]

Kind = Literal["comic", "novel"]
_IGNORED = {"thumbs.db", "desktop.ini"}
_NUMBER = re.compile(r"\d+")


def natural_key(name: str) -> list[Any]:
    """Sort key putting `page-2` before `page-10`."""
    return [int(part) if part.isdigit() else part.lower() for part in re.split(r"(\d+)", name)]


@dataclass(frozen=True)
class FolderChapter:
    """One chapter found in the folder: its number, where it is, what it holds."""

    number: int
    source: Path
    pages: tuple[Path, ...] = ()
    text: str | None = None
    size: int = 0
    digest: str = ""

    @property
    def kind(self) -> Kind:
        return "novel" if self.text is not None else "comic"

    @property
    def name(self) -> str:
        return self.source.name + ("/" if self.text is None else "")


@dataclass(frozen=True)
class Problem:
    """Something in the folder that stops the upload until it is fixed."""

    where: str
    reason: str

    def __str__(self) -> str:
        return f"{self.where}: {self.reason}"


@dataclass
class FolderScan:
    """What scanning an upload folder found: its chapters and the problems that stop them."""

    root: Path
    chapters: list[FolderChapter] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)


def scan_folder(root: str | Path, *, kind: Kind | None = None) -> FolderScan:
    """Read `root`'s chapters in number order, with every problem found.

    kind: the project's kind; a chapter of the other kind is a problem.
    """
    root = Path(root).expanduser()
    if not root.is_dir():
        what = "does not exist" if not root.exists() else "is not a folder"
        raise InvalidUpload(f"{root} {what}: give the folder that holds the chapters")
    scan = FolderScan(root)
    by_number: dict[int, FolderChapter] = {}
    for entry in _ordered(root):
        if _ignored(entry):
            continue
        chapter = _read_entry(entry, scan.problems)
        if chapter is None:
            continue
        if kind is not None and chapter.kind != kind:
            scan.problems.append(Problem(chapter.name, _wrong_kind(chapter, kind)))
        elif chapter.number in by_number:
            first = by_number[chapter.number].name
            scan.problems.append(
                Problem(chapter.name, f"chapter {chapter.number} again (also {first})")
            )
        else:
            by_number[chapter.number] = chapter
    kinds = {c.kind for c in by_number.values()}
    if len(kinds) > 1:
        scan.problems.append(
            Problem(root.name, "holds both chapter folders and .txt files: keep one kind")
        )
    scan.chapters = [by_number[n] for n in sorted(by_number)]
    if not scan.chapters and not scan.problems:
        scan.problems.append(
            Problem(root.name, "no chapters found: expected chapter-01/ folders or .txt files")
        )
    return scan


def _ordered(folder: Path) -> list[Path]:
    # The name itself breaks ties (`chapter-5`, `chapter-05`): the same order everywhere.
    return sorted(folder.iterdir(), key=lambda p: (natural_key(p.name), p.name))


def _ignored(path: Path) -> bool:
    return path.name.startswith(".") or path.name.lower() in _IGNORED


def _file_number(path: Path, problems: list[Problem]) -> int | None:
    found = _NUMBER.search(path.stem if path.is_file() else path.name)
    if found is None:
        problems.append(Problem(path.name, "no chapter number in its name (use chapter-01, ...)"))
        return None
    number = int(found.group())
    if number < 1:
        problems.append(Problem(path.name, "chapter numbers start at 1"))
        return None
    return number


def _read_entry(path: Path, problems: list[Problem]) -> FolderChapter | None:
    if path.is_dir():
        number = _file_number(path, problems)
        return None if number is None else _read_pages(path, number, problems)
    if path.suffix.lower() == ".txt":
        number = _file_number(path, problems)
        return None if number is None else _read_text(path, number, problems)
    problems.append(
        Problem(path.name, "not a chapter: expected a folder of page images or a .txt file")
    )
    return None


def _read_pages(folder: Path, number: int, problems: list[Problem]) -> FolderChapter | None:
    pages, found = [], len(problems)
    digest = hashlib.sha256()
    for path in _ordered(folder):
        where = f"{folder.name}/{path.name}"
        if _ignored(path):
            continue
        if not path.is_file():
            problems.append(Problem(where, "a folder inside a chapter folder: pages only"))
            continue
        try:
            with path.open("rb") as file:
                check_image(file, where)
                file.seek(0)
                while block := file.read(1 << 16):
                    digest.update(block)
        except InvalidUpload as exc:
            # The client's message starts with the label it was given: keep the reason.
            problems.append(Problem(where, str(exc).removeprefix(f"{where}: ")))
            continue
        except OSError as exc:
            problems.append(Problem(where, f"cannot be read ({exc.strerror})"))
            continue
        pages.append(path)
    if not pages and len(problems) == found:
        problems.append(Problem(folder.name + "/", "no page images in it"))
    if len(problems) > found:
        return None
    size = sum(p.stat().st_size for p in pages)
    return FolderChapter(number, folder, tuple(pages), None, size, digest.hexdigest())


def _read_text(path: Path, number: int, problems: list[Problem]) -> FolderChapter | None:
    try:
        raw = path.read_bytes()
        text = raw.decode("utf-8-sig")
        check_text(text)
    except UnicodeDecodeError:
        problems.append(Problem(path.name, "is not UTF-8 text; save it as UTF-8"))
        return None
    except InvalidUpload as exc:
        problems.append(Problem(path.name, str(exc)))
        return None
    except OSError as exc:
        problems.append(Problem(path.name, f"cannot be read ({exc.strerror})"))
        return None
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    return FolderChapter(number, path, (), text, len(raw), digest)


def _wrong_kind(chapter: FolderChapter, kind: Kind) -> str:
    if kind == "comic":
        return "a text chapter, but the project is a comic: its chapters are folders of pages"
    return "a folder of pages, but the project is a novel: its chapters are .txt files"

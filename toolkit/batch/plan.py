"""What an upload of a folder will do, and cost, before anything is sent.

Each chapter of the folder is matched with the chapter at its number in the project:

- none there: it is sent, at its number;
- one there that the upload record says came from this folder with the same content:
  skipped (this is how a rerun continues where the last one stopped);
- one there that the record does not know (created elsewhere, or by a run that stopped
  before it could write the record): skipped when it looks the same (as many pages; a
  novel chapter's text cannot be read back to compare), else a conflict;
- one there with other content than the record says: a conflict.

A conflict is a problem like a bad file: the plan is not ready and nothing is sent until
it is resolved. The plan says which is which, so nothing is skipped silently.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from toolkit.batch.folder import FolderChapter, FolderScan, Problem, scan_folder
from toolkit.batch.record import UploadRecord
from toolkit.errors import InvalidUpload
from toolkit.formatting import count, size
from toolkit.pricing import Quote, quote_pages, quote_text, total

if TYPE_CHECKING:
    from toolkit.client import Client
    from toolkit.models import ChapterListItem, Project
    from toolkit.store import SnapshotStore

__all__ = ["Action", "PlannedChapter", "UploadPlan", "find_project", "plan_upload"]

Action = Literal["send", "skip", "conflict"]


@dataclass(frozen=True)
class PlannedChapter:
    """A chapter of the folder, what the upload will do with it (send, skip, conflict), and why."""

    chapter: FolderChapter
    action: Action
    note: str
    quote: Quote | None = None


@dataclass
class UploadPlan:
    """The folder's chapters, what will happen to each, and the price of what is sent."""

    project: Project
    scan: FolderScan
    items: list[PlannedChapter] = field(default_factory=list)

    @property
    def folder(self) -> Path:
        return self.scan.root

    @property
    def to_send(self) -> list[PlannedChapter]:
        return [item for item in self.items if item.action == "send"]

    @property
    def skipped(self) -> list[PlannedChapter]:
        return [item for item in self.items if item.action == "skip"]

    @property
    def problems(self) -> list[Problem]:
        conflicts = [
            Problem(item.chapter.name, item.note)
            for item in self.items
            if item.action == "conflict"
        ]
        return [*self.scan.problems, *conflicts]

    @property
    def ready(self) -> bool:
        """True when nothing stops the upload (it may still have nothing to send)."""
        return not self.problems

    @property
    def quote(self) -> Quote:
        return total(item.quote for item in self.to_send if item.quote is not None)

    @property
    def bytes_to_send(self) -> int:
        return sum(item.chapter.size for item in self.to_send)

    def over_budget(self, budget: int | None) -> bool:
        """True when the price is over `budget` credits (None or 0: no budget set)."""
        return bool(budget) and self.quote.credits > (budget or 0)

    def headline(self) -> str:
        """One line: what will be sent where, and for how much.

        While problems stop the upload it says so, and names no price: nothing priced
        would be sent, and fixing a problem may change what is.
        """
        sending = self.to_send
        if not self.ready:
            problems = len(self.problems)
            return (
                f"Nothing will be sent to {self.project.name} until the "
                f"{count(problems, 'problem')} below {'is' if problems == 1 else 'are'} fixed."
            )
        if not sending:
            return f"Nothing to send to {self.project.name}: every chapter is already there."
        pages = sum(len(item.chapter.pages) for item in sending)
        what = count(len(sending), "chapter") + (f", {count(pages, 'page')}" if pages else "")
        return (
            f"Send {what} ({size(self.bytes_to_send)}) to {self.project.name}: {self.quote.label}."
        )

    def rows(self) -> list[dict[str, str]]:
        """The plan as table rows: chapter, source, pages, size, credits, plan (credits
        only when the plan is ready: see `headline`)."""
        return [
            {
                "Ch.": str(item.chapter.number),
                "From": item.chapter.name,
                "Pages": str(len(item.chapter.pages)) if item.chapter.pages else "text",
                "Size": size(item.chapter.size),
                "Credits": str(item.quote.credits) if item.quote and self.ready else "",
                "Plan": item.note
                if self.ready or item.action != "send"
                else f"{item.note}, once the problems are fixed",
            }
            for item in self.items
        ]


def find_project(client: Client, project: str) -> Project:
    """The workspace's project with this name (or id); a clear refusal when there is none."""
    projects = client.list_projects()
    by_id = [p for p in projects if p.id == project]
    named = by_id or [p for p in projects if p.name == project]
    if not named:
        named = [p for p in projects if (p.name or "").casefold() == project.casefold()]
    if len(named) == 1:
        return named[0]
    if not named:
        names = ", ".join(sorted(p.name or p.id for p in projects)) or "none"
        raise InvalidUpload(f"no project named {project!r}; the workspace has: {names}")
    ids = ", ".join(p.id for p in named)
    raise InvalidUpload(f"{len(named)} projects are named {project!r}: give one's id ({ids})")


def plan_upload(
    client: Client,
    folder: str | Path,
    *,
    project: str | Project,
    store: SnapshotStore | None = None,
) -> UploadPlan:
    """Scan `folder`, compare it with the project's chapters, and price what is new.

    project: a `Project`, or a project's name or id. store: a snapshot store to learn the
    price from (else the price is an estimate at the assumed list price).
    """
    chosen = find_project(client, project) if isinstance(project, str) else project
    scan = scan_folder(folder, kind=chosen.kind)
    existing = {c.position: c for c in client.list_chapters(chosen.id)}
    record = UploadRecord(scan.root)
    plan = UploadPlan(chosen, scan)
    for chapter in scan.chapters:
        there = existing.get(chapter.number)
        if there is None:
            plan.items.append(
                PlannedChapter(chapter, "send", "new", _quote(chosen, chapter, store))
            )
        else:
            plan.items.append(_compare(chosen, chapter, there, record))
    return plan


def _quote(project: Project, chapter: FolderChapter, store: SnapshotStore | None) -> Quote:
    if chapter.text is not None:
        return quote_text(project, chapter.text, store=store)
    return quote_pages(project, len(chapter.pages), store=store)


def _compare(
    project: Project, chapter: FolderChapter, there: ChapterListItem, record: UploadRecord
) -> PlannedChapter:
    recorded = record.get(project.id, chapter.number)
    if recorded is not None and recorded.chapter_id == there.id:
        if recorded.digest == chapter.digest:
            return PlannedChapter(chapter, "skip", "already uploaded from this folder")
        return PlannedChapter(
            chapter,
            "conflict",
            f"chapter {chapter.number} was uploaded from this folder before, and its files "
            "have changed since; move that chapter to the trash to send it again, or restore "
            "the files",
        )
    if chapter.text is not None:
        return PlannedChapter(
            chapter, "skip", f"chapter {chapter.number} is already in {project.name}"
        )
    pages = there.page_count or 0
    if there.started is not False and pages == len(chapter.pages):
        return PlannedChapter(
            chapter,
            "skip",
            f"chapter {chapter.number} is already in {project.name} with {count(pages, 'page')}",
        )
    state = "" if there.started is not False else "staged, "
    return PlannedChapter(
        chapter,
        "conflict",
        f"chapter {chapter.number} is already in {project.name} ({state}{count(pages, 'page')}) "
        f"and this folder has {count(len(chapter.pages), 'page')}: rename the folder to a free "
        "number, or move that chapter to the trash",
    )

"""Sending a planned folder upload, chapter by chapter, and its summary.

Each chapter is one `create_chapter` call at its own number: the service creates a
chapter with all its pages or not at all, and with a number a retry whose answer was
lost never makes a second one, so a chapter is never half there (nor counted as created
when the client cannot be sure: `UnconfirmedCreate` is a refusal in one line saying what
to check). The first refusal stops
the upload (the next chapters would most likely meet the same one: no credits left, the
network down); the summary says what was created, skipped, refused and not sent, and
the same upload run again continues from there.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from toolkit.batch.plan import PlannedChapter, UploadPlan
from toolkit.batch.record import UploadRecord
from toolkit.errors import InvalidUpload, ToolkitError, in_plain_words
from toolkit.formatting import count, size

if TYPE_CHECKING:
    from toolkit.client import Client

__all__ = ["ChapterOutcome", "Progress", "Result", "UploadInterrupted", "UploadSummary", "upload"]

Result = Literal["created", "skipped", "refused", "interrupted", "not sent"]
_WORDS: dict[Result, str] = {
    "skipped": "already there",
    "refused": "refused",
    "interrupted": "interrupted while sent",
    "not sent": "not sent",
}
_IN_FLIGHT = "stopped while being sent: it may be in the project now; a rerun finds it"


class UploadInterrupted(KeyboardInterrupt):
    """Ctrl-C (or a notebook's interrupt) stopped an upload; `summary` says what it did.

    A `KeyboardInterrupt`, so that whatever stops on one still stops.
    """

    def __init__(self, summary: UploadSummary) -> None:
        super().__init__(summary.headline())
        self.summary = summary


@dataclass(frozen=True)
class Progress:
    """How far an upload has got: chapters and bytes done of the total to send."""

    chapters_done: int
    chapters_total: int
    bytes_done: int
    bytes_total: int
    current: str = ""


@dataclass(frozen=True)
class ChapterOutcome:
    """What sending one chapter of the folder came to, with its size and credits."""

    number: int
    source: str
    pages: int
    size: int
    credits: int | None
    result: Result
    detail: str = ""
    chapter_id: str | None = None


@dataclass
class UploadSummary:
    """What an upload did to every chapter of a project's folder, and whether it was cut short."""

    project_name: str
    outcomes: list[ChapterOutcome] = field(default_factory=list)
    record_problem: str | None = None
    interrupted: bool = False

    def of(self, result: Result) -> list[ChapterOutcome]:
        return [o for o in self.outcomes if o.result == result]

    @property
    def complete(self) -> bool:
        """True when every chapter of the folder is now in the project."""
        return not self.of("refused") and not self.of("interrupted") and not self.of("not sent")

    def headline(self) -> str:
        parts = [f"{count(len(self.of('created')), 'chapter')} created in {self.project_name}"]
        for result, words in _WORDS.items():
            if self.of(result):
                parts.append(f"{len(self.of(result))} {words}")
        line = ", ".join(parts) + "."
        if self.interrupted:
            line += " Interrupted: run the same upload again to continue where it stopped."
        elif not self.complete:
            line += " Fix what stopped it, then run the same upload again to continue."
        if self.record_problem:
            line += f" {self.record_problem}"
        return line

    def rows(self) -> list[dict[str, str]]:
        return [
            {
                "Ch.": str(o.number),
                "From": o.source,
                "Pages": str(o.pages) if o.pages else "text",
                "Size": size(o.size),
                "Credits": "" if o.credits is None else str(o.credits),
                "Result": o.result + (f": {o.detail}" if o.detail else ""),
            }
            for o in self.outcomes
        ]


def upload(
    client: Client,
    plan: UploadPlan,
    *,
    on_progress: Callable[[Progress], object] | None = None,
) -> UploadSummary:
    """Send the plan's new chapters in number order; returns what happened to each.

    Refuses (`InvalidUpload`, nothing sent) a plan with problems. `on_progress` is called
    before the first chapter and after each one. Interrupted (Ctrl-C), it raises
    `UploadInterrupted` carrying the summary so far.
    """
    if not plan.ready:
        listed = "; ".join(str(p) for p in plan.problems)
        raise InvalidUpload(f"nothing was sent: fix these first: {listed}")
    record = UploadRecord(plan.folder)
    summary = UploadSummary(plan.project.name or plan.project.id)
    sending = plan.to_send
    total_bytes = plan.bytes_to_send
    done_bytes, stopped = 0, False

    def report(done: int, current: str = "") -> None:
        if on_progress is not None:
            on_progress(Progress(done, len(sending), done_bytes, total_bytes, current))

    report(0, sending[0].chapter.name if sending else "")
    done = 0
    for item in plan.items:
        if item.action == "skip":
            summary.outcomes.append(_outcome(item, "skipped", item.note))
            continue
        if stopped:
            summary.outcomes.append(_outcome(item, "not sent"))
            continue
        try:
            chapter_id = _send(client, plan, item)
        except KeyboardInterrupt:
            summary.interrupted = stopped = True
            summary.outcomes.append(_outcome(item, "interrupted", _IN_FLIGHT))
            continue
        except ToolkitError as exc:
            summary.outcomes.append(_outcome(item, "refused", in_plain_words(exc)))
            stopped = True
            continue
        summary.outcomes.append(_outcome(item, "created", chapter_id=chapter_id))
        done += 1
        done_bytes += item.chapter.size
        following = sending[done].chapter.name if done < len(sending) else ""
        try:
            summary.record_problem = (
                _remember(record, plan, item, chapter_id) or summary.record_problem
            )
            report(done, following)
        except KeyboardInterrupt:  # between two chapters: the rest is not sent
            summary.interrupted = stopped = True
    if summary.interrupted:
        raise UploadInterrupted(summary)
    return summary


def _remember(
    record: UploadRecord, plan: UploadPlan, item: PlannedChapter, chapter_id: str
) -> str | None:
    """Write the chapter to the upload record; a sentence for the summary if that failed."""
    try:
        record.add(plan.project.id, item.chapter.number, chapter_id, item.chapter.digest)
    except OSError as exc:
        return (
            f"The upload record {record.path} could not be written ({exc.strerror}); "
            "a rerun compares page counts instead."
        )
    return None


def _send(client: Client, plan: UploadPlan, item: PlannedChapter) -> str:
    chapter = item.chapter
    if chapter.text is not None:
        created = client.create_chapter(plan.project.id, text=chapter.text, position=chapter.number)
    else:
        created = client.create_chapter(
            plan.project.id, pages=list(chapter.pages), position=chapter.number
        )
    return created.id


def _outcome(
    item: PlannedChapter, result: Result, detail: str = "", chapter_id: str | None = None
) -> ChapterOutcome:
    chapter = item.chapter
    return ChapterOutcome(
        chapter.number,
        chapter.name,
        len(chapter.pages),
        chapter.size,
        item.quote.credits if item.quote else None,
        result,
        detail,
        chapter_id,
    )

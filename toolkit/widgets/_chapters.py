"""What the Dashboard knows about chapters, from the client's resources alone.

- `fetch_chapter_details`: the details a refresh needs, many at once over the one client (a
  thread pool: httpx's sync client is safe to share, its pool bounds the connections,
  and threads work the same inside Jupyter, whose kernel already runs an event loop).
- `state` and `phase`: what a chapter is doing, in words. The service shows phases only
  through flags: `detecting` while pages are read, a language's `untranslated` lines
  while it is translated (languages go one after another, in the project's order),
  `exporting` while its files are packaged; between translating and packaging, the
  project's `processSteps` say whether pages are being cleaned and lettered.
- `FinishEstimates`: an estimated finish from the pace the dashboard has seen, in lines translated
  per second of the service's clock; cleaning, lettering and packaging come after it.
- `FILTERS` and `SORTS`: the table's choices.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from toolkit.errors import NotFound

if TYPE_CHECKING:
    from toolkit.client import Client
    from toolkit.models import ChapterDetail, ChapterListItem, Project

# Requests in flight at once: 150 details at 50 ms of latency take about 0.5 s.
CONCURRENCY = 16


def fetch_chapter_details(client: Client, chapter_ids: Sequence[str]) -> dict[str, ChapterDetail]:
    """Each chapter's detail, fetched concurrently; chapters gone meanwhile are left out."""

    def one(chapter_id: str) -> ChapterDetail | None:
        try:
            return client.get_chapter(chapter_id)
        except NotFound:
            return None  # moved to the trash since the list: the next refresh drops it

    if not chapter_ids:
        return {}
    workers = min(CONCURRENCY, len(chapter_ids))
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="toolkit-dashboard") as pool:
        found = dict(zip(chapter_ids, pool.map(one, chapter_ids), strict=True))
    return {chapter_id: detail for chapter_id, detail in found.items() if detail is not None}


def state(chapter: ChapterListItem) -> str:
    """One word for the table's filters: running, failed, staged, needs_review, reviewed."""
    if chapter.processing:
        return "running"
    if chapter.failed:
        return "failed"
    if chapter.started is False:
        return "staged"
    return chapter.status or "translating"


def phase(chapter: ChapterListItem, detail: ChapterDetail | None, project: Project | None) -> str:
    """What a running chapter is doing: reading pages, translating en, cleaning, ..."""
    if detail is not None and detail.detecting:
        return "reading pages"
    exporting = [lang.language_code for lang in chapter.languages if lang.exporting]
    if exporting:
        return f"packaging {exporting[0]}"
    if detail is None:
        return "running"
    left = [lang.language_code for lang in detail.languages if (lang.untranslated or 0) > 0]
    if left:
        return f"translating {left[0]}"
    steps = project.process_steps if project is not None else None
    return {"full": "cleaning and lettering", "clean": "cleaning"}.get(steps or "", "finishing")


@dataclass
class _Seen:
    at: datetime
    covered: int


class FinishEstimates:
    """Estimated finish of each running chapter's translation, from the pace seen so far.

    The first refresh that sees a chapter running notes its covered lines and the
    service's time; a later one divides the lines translated since by the time passed.
    A chapter whose coverage falls (a re-scan) starts over.
    """

    def __init__(self) -> None:
        self._first: dict[str, _Seen] = {}

    def update(
        self,
        chapters: Iterable[ChapterListItem],
        chapter_details: Mapping[str, ChapterDetail],
        now: datetime | None,
    ) -> dict[str, datetime]:
        if now is None:
            return {}
        estimates: dict[str, datetime] = {}
        running = set()
        for chapter in chapters:
            if not chapter.processing:
                continue
            running.add(chapter.id)
            covered = sum(lang.covered or 0 for lang in chapter.languages)
            first = self._first.get(chapter.id)
            if first is None or covered < first.covered:
                self._first[chapter.id] = _Seen(now, covered)
                continue
            detail = chapter_details.get(chapter.id)
            left = sum(lang.untranslated or 0 for lang in detail.languages) if detail else None
            seconds = (now - first.at).total_seconds()
            done = covered - first.covered
            if left is not None and seconds > 0 and done > 0:
                estimates[chapter.id] = now + timedelta(seconds=left * seconds / done)
        for gone in set(self._first) - running:
            del self._first[gone]
        return estimates


def _activity(chapter: ChapterListItem) -> float:
    return chapter.last_activity_at.timestamp() if chapter.last_activity_at else 0.0


FILTERS: dict[str, tuple[str, Callable[[ChapterListItem], bool]]] = {
    "all": ("All", lambda c: True),
    "running": ("Running", lambda c: state(c) == "running"),
    "failed": ("Failed", lambda c: bool(c.failed)),
    "needs_review": ("Needs review", lambda c: state(c) == "needs_review"),
    "staged": ("Staged", lambda c: state(c) == "staged"),
}

SORTS: dict[str, tuple[str, Callable[[ChapterListItem], Any]]] = {
    "running_first": (
        "Running and failed first",
        lambda c: (not c.processing, not c.failed, c.position or 0),
    ),
    "number": ("Chapter number", lambda c: c.position or 0),
    "activity": ("Latest activity first", lambda c: -_activity(c)),
    "credits": ("Most credits first", lambda c: -(c.credits_spent or 0)),
}

"""The panels' tables as HTML: the Dashboard's chapters and totals, and plain row tables.

Coverage of a language is `covered / (covered + untranslated)`: `covered` comes on the
chapter list, `untranslated` only on the chapter detail, so a language whose detail was
not fetched shows its covered lines without a percentage. States are words on coloured
labels, not glyphs, so they read the same without an emoji font; a failure reason is
shown in full and wraps.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from toolkit.formatting import count, escape, whole
from toolkit.frames import chapter_states
from toolkit.widgets._chapters import phase, state

if TYPE_CHECKING:
    from toolkit.models import ChapterDetail, ChapterListItem, Project

_CELL = "padding:3px 8px;border-bottom:1px solid #e5e7eb;text-align:left;vertical-align:top"
# One label per chapter state (`toolkit.frames.STATES`).
_RUNNING = ("#1d4ed8", "#dbeafe")
_LABELS = {
    "staged": ("staged", "#374151", "#e5e7eb"),
    "reading": ("reading", *_RUNNING),
    "translating": ("translating", *_RUNNING),
    "finishing": ("finishing", *_RUNNING),
    "failed": ("failed", "#b91c1c", "#fee2e2"),
    "stalled": ("stalled", "#b91c1c", "#fee2e2"),
    "needs_review": ("needs review", "#92400e", "#fef3c7"),
    "reviewed": ("reviewed", "#166534", "#dcfce7"),
}


def state_badge(key: str) -> str:
    text, fg, bg = _LABELS.get(key, (key, "#374151", "#f3f4f6"))
    return (
        f'<span class="tk-state tk-{key}" style="color:{fg};background:{bg};'
        f'padding:0 6px;border-radius:8px;white-space:nowrap">{escape(text)}</span>'
    )


@dataclass(frozen=True)
class Coverage:
    covered: int
    untranslated: int | None

    @property
    def share(self) -> float | None:
        if self.untranslated is None:
            return None
        total = self.covered + self.untranslated
        return self.covered / total if total else None

    def html(self, code: str) -> str:
        share = self.share
        if share is None:
            return f"<b>{escape(code)}</b> {count(self.covered, 'line')}"
        width = round(share * 100)
        tip = f"{self.covered} of {self.covered + (self.untranslated or 0)} lines translated"
        bar = (
            f'<span title="{escape(tip)}" style="display:inline-block;width:80px;height:8px;'
            f'background:#e5e7eb;vertical-align:middle"><span style="display:block;'
            f'width:{width}%;height:8px;background:#16a34a"></span></span>'
        )
        return f'<span style="white-space:nowrap"><b>{escape(code)}</b> {bar} {width}%</span>'


def coverage(chapter: ChapterListItem, detail: ChapterDetail | None) -> dict[str, Coverage]:
    """Per language code: lines covered and, when the detail is known, untranslated."""
    untranslated = (
        {lang.language_code: lang.untranslated for lang in detail.languages} if detail else {}
    )
    return {
        lang.language_code: Coverage(lang.covered or 0, untranslated.get(lang.language_code))
        for lang in chapter.languages
    }


def _state_cell(
    chapter: ChapterListItem,
    detail: ChapterDetail | None,
    project: Project | None,
    stalled: bool,
    waits: str | None = None,
) -> str:
    key = state(chapter)
    found = {chapter.id: detail} if detail is not None else None
    parts = [state_badge(chapter_states([chapter], found)[0])]
    if key == "running":
        parts.append(f"<small>{escape(phase(chapter, detail, project))}</small>")
    if stalled:
        parts.append('<small style="color:#a16207">no progress in the last snapshots</small>')
    if waits:  # what it waits a person for, and since when (the store's `stuck`)
        parts.append(
            f'<div class="tk-waits" style="color:#a16207;font-size:12px">{escape(waits)}</div>'
        )
    if chapter.failed:
        reason = chapter.failure_reason or "no reason given"
        if key == "running":
            parts.append(state_badge("failed"))
        parts.append(
            f'<div class="tk-reason" title="{escape(reason)}" style="color:#b91c1c;'
            f'max-width:40em;white-space:normal;font-size:12px">{escape(reason)}</div>'
        )
    return " ".join(parts)


def _finish(when: datetime | None, now: datetime | None) -> str:
    """`in ~12 min`: relative, so it reads right whatever the zone or the service's clock."""
    if when is None or now is None:
        return ""
    minutes = max(0, round((when - now).total_seconds() / 60))
    if minutes < 1:
        left = "under a minute"
    elif minutes < 60:
        left = f"~{minutes} min"
    else:
        left = f"~{minutes // 60} h {minutes % 60:02d} min"
    tip = f"translation should end about {when:%H:%M} UTC at the pace seen"
    return f'<span title="{tip}" style="white-space:nowrap">in {left}</span>'


def chapter_table(
    chapters: Sequence[ChapterListItem],
    chapter_details: Mapping[str, ChapterDetail],
    *,
    project: Project | None = None,
    stalled: Collection[str] = (),
    waits: Mapping[str, str] | None = None,
    finish: Mapping[str, datetime] | None = None,
    now: datetime | None = None,
) -> str:
    """The chapter table as HTML, one row per chapter in the order given."""
    finish = finish or {}
    head = ["Ch.", "Title", "Pages", "State", "Languages", "Est. finish", "Credits"]
    header = "".join(f'<th style="{_CELL}">{h}</th>' for h in head)
    rows = []
    for chapter in chapters:
        detail = chapter_details.get(chapter.id)
        languages = "<br>".join(cov.html(code) for code, cov in coverage(chapter, detail).items())
        cells = [
            escape(chapter.position),
            escape(chapter.title or ""),
            escape(chapter.page_count or 0),
            _state_cell(
                chapter, detail, project, chapter.id in stalled, (waits or {}).get(chapter.id)
            ),
            languages,
            _finish(finish.get(chapter.id), now),
            whole(chapter.credits_spent or 0),
        ]
        rows.append(
            '<tr class="tk-chapter">'
            + "".join(f'<td style="{_CELL}">{cell}</td>' for cell in cells)
            + "</tr>"
        )
    return (
        '<table class="tk-chapters" style="border-collapse:collapse;font-size:13px">'
        f"<thead><tr>{header}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )


def totals(chapters: Sequence[ChapterListItem]) -> str:
    """One line of totals: chapters, pages, each state, credits."""
    states = [state(c) for c in chapters]
    pages = sum(c.page_count or 0 for c in chapters)
    parts = [
        f"<b>{count(len(chapters), 'chapter')}</b>, {count(pages, 'page')}",
        f"<b>{states.count('running')}</b> running",
        f"<b>{sum(bool(c.failed) for c in chapters)}</b> failed",
        f"<b>{states.count('needs_review')}</b> needing review",
        f"<b>{states.count('staged')}</b> staged",
        f"<b>{whole(sum(c.credits_spent or 0 for c in chapters))}</b> credits spent",
    ]
    return '<p class="tk-totals">' + ", ".join(parts) + "</p>"


def rows_table(rows: Sequence[Mapping[str, str]]) -> str:
    """Rows of text (a plan, a summary) as a plain HTML table headed by their keys."""
    if not rows:
        return ""
    header = "".join(f'<th style="{_CELL}">{escape(h)}</th>' for h in rows[0])
    body = "".join(
        "<tr>" + "".join(f'<td style="{_CELL}">{escape(v)}</td>' for v in row.values()) + "</tr>"
        for row in rows
    )
    return (
        '<table class="tk-rows" style="border-collapse:collapse;font-size:13px">'
        f"<thead><tr>{header}</tr></thead><tbody>{body}</tbody></table>"
    )

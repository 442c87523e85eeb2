"""The Dashboard's chapter table and totals, as HTML built from the client's resources.

Coverage of a language is `covered / (covered + untranslated)`: `covered` comes on the
chapter list, `untranslated` only on the chapter detail, so a language whose detail was
not fetched shows its covered lines without a percentage.
"""

from __future__ import annotations

import html
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from toolkit.models import ChapterDetail, ChapterListItem

_CELL = "padding:3px 8px;border-bottom:1px solid #e5e7eb;text-align:left;vertical-align:top"
_STATUS_COLOURS = {"translating": "#2563eb", "needs_review": "#d97706", "reviewed": "#16a34a"}


def _esc(value: object) -> str:
    return html.escape("" if value is None else str(value), quote=False)


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
            return f"<b>{_esc(code)}</b> {self.covered} lines"
        width = round(share * 100)
        bar = (
            '<span style="display:inline-block;width:80px;height:8px;background:#e5e7eb;'
            f'vertical-align:middle"><span style="display:block;width:{width}%;height:8px;'
            'background:#16a34a"></span></span>'
        )
        return (
            f"<b>{_esc(code)}</b> {bar} {width}% "
            f"<small>({self.covered} done, {self.untranslated} untranslated)</small>"
        )


def coverage(chapter: ChapterListItem, detail: ChapterDetail | None) -> dict[str, Coverage]:
    """Per language code: lines covered and, when the detail is known, untranslated."""
    untranslated = (
        {lang.language_code: lang.untranslated for lang in detail.languages} if detail else {}
    )
    return {
        lang.language_code: Coverage(lang.covered or 0, untranslated.get(lang.language_code))
        for lang in chapter.languages
    }


def _state(chapter: ChapterListItem, detail: ChapterDetail | None, stalled: bool) -> str:
    status = chapter.status or "not started"
    colour = _STATUS_COLOURS.get(status, "#6b7280")
    text = f'<span style="color:{colour}">{_esc(status)}</span>'
    if chapter.started is False:
        text = '<span style="color:#6b7280">staged</span>'
    if chapter.processing:
        phase = "reading pages" if detail is not None and detail.detecting else "running"
        text += f" <b>&#9203; {phase}</b>"
    if stalled:
        text += ' <b style="color:#a16207">no progress since the last snapshots</b>'
    return text


def _failed(chapter: ChapterListItem) -> str:
    if not chapter.failed:
        return ""
    reason = _esc(chapter.failure_reason or "no reason given")
    return f'<span style="color:#b91c1c">&#9888; failed</span><br><small>{reason}</small>'


def chapter_rows(
    chapters: Sequence[ChapterListItem],
    details: Mapping[str, ChapterDetail],
    *,
    stalled: Collection[str] = (),
) -> list[list[str]]:
    rows = []
    for chapter in chapters:
        detail = details.get(chapter.id)
        languages = "<br>".join(cov.html(code) for code, cov in coverage(chapter, detail).items())
        rows.append(
            [
                _esc(chapter.position),
                _esc(chapter.title or ""),
                _esc(chapter.page_count),
                _state(chapter, detail, chapter.id in stalled),
                languages,
                _failed(chapter),
                f"{chapter.credits_spent or 0:g}",
            ]
        )
    return rows


def chapter_table(
    chapters: Sequence[ChapterListItem],
    details: Mapping[str, ChapterDetail],
    *,
    stalled: Collection[str] = (),
) -> str:
    """The chapter table as HTML, one row per chapter in the order given."""
    if not chapters:
        return "<p><i>No chapters in this project yet.</i></p>"
    head = ["Ch.", "Title", "Pages", "Status", "Languages", "Failed", "Credits"]
    header = "".join(f'<th style="{_CELL}">{h}</th>' for h in head)
    body = "".join(
        '<tr class="tk-chapter">' + "".join(f'<td style="{_CELL}">{c}</td>' for c in row) + "</tr>"
        for row in chapter_rows(chapters, details, stalled=stalled)
    )
    return (
        '<table class="tk-chapters" style="border-collapse:collapse;font-size:13px">'
        f"<thead><tr>{header}</tr></thead><tbody>{body}</tbody></table>"
    )


def totals(chapters: Sequence[ChapterListItem], details: Mapping[str, ChapterDetail]) -> str:
    """One line of totals: chapters, pages, running, failed, credits, lines per language."""
    lines: dict[str, list[int]] = {}
    for chapter in chapters:
        for code, cov in coverage(chapter, details.get(chapter.id)).items():
            done_left = lines.setdefault(code, [0, 0])
            done_left[0] += cov.covered
            done_left[1] += cov.untranslated or 0
    per_language = ", ".join(
        f"{_esc(code)} {done} done / {left} untranslated" for code, (done, left) in lines.items()
    )
    credits = sum(c.credits_spent or 0 for c in chapters)
    pages = sum(c.page_count or 0 for c in chapters)
    return (
        '<p class="tk-totals">'
        f"<b>{len(chapters)}</b> chapters, <b>{pages}</b> pages, "
        f"<b>{sum(bool(c.processing) for c in chapters)}</b> running, "
        f"<b>{sum(bool(c.failed) for c in chapters)}</b> failed, "
        f"<b>{credits:g}</b> credits spent"
        + (f"; lines: {per_language}" if per_language else "")
        + "</p>"
    )

"""JSON answers built from rows, shaped exactly as the spec's tables say.

Field names are camelCase, times ISO 8601 from the emulator clock, and `lastChapterAt`
milliseconds. The single-project answer leaves out the list-only fields
(`targetLanguages`, `chapterCount`, `lastChapterAt`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from toolkit.emulator.core.clock import iso
from toolkit.emulator.core.state import Row, from_ms

__all__ = [
    "Json",
    "chapter_detail",
    "chapter_list_item",
    "new_chapter",
    "page",
    "project",
    "project_list_item",
]

# The add-pages answer names its storage key with a vendor word; ours is S3.
_STORAGE_KEY_FIELD = "sourceImageS3Key"

Json = dict[str, Any]

# The overall status is the lowest language status (DESIGN.md).
_STATUS_ORDER = ("translating", "needs_review", "reviewed")


def _lowest_status(statuses: Iterable[str]) -> str:
    ranks = [_STATUS_ORDER.index(status) for status in statuses]
    return _STATUS_ORDER[min(ranks)] if ranks else _STATUS_ORDER[0]


def _iso_or_none(ms: int | None) -> str | None:
    return None if ms is None else iso(from_ms(ms))


def project(row: Row) -> Json:
    """A project row as the service writes a project."""
    return {
        "id": row["id"],
        "name": row["name"],
        "kind": row["kind"],
        "sourceLanguage": row["source_language"],
        "readingDirection": row["reading_direction"],
        "processSteps": row["process_steps"],
        "translationModel": row["translation_model"],
        "createdAt": _iso_or_none(row["created_ms"]),
        "translationGroupId": row["translation_group_id"],
        "seriesProfile": None,
        "coverKey": None,
        "deletedAt": _iso_or_none(row["deleted_ms"]),
    }


def project_list_item(row: Row, languages: list[Row]) -> Json:
    """A project row as an item of the project list, with its languages."""
    return {
        **project(row),
        "targetLanguages": [
            {
                "projectId": lang["project_id"],
                "languageCode": lang["language_code"],
                "addedAt": _iso_or_none(lang["added_ms"]),
            }
            for lang in languages
        ],
        "chapterCount": row["chapter_count"],
        "lastChapterAt": row["last_chapter_ms"],
    }


def page(row: Row, *, with_storage_key: bool = False) -> Json:
    """A page row as the service writes a page (its storage key only when asked)."""
    answer = {
        "id": row["id"],
        "chapterId": row["chapter_id"],
        "position": row["position"],
        "createdAt": _iso_or_none(row["created_ms"]),
    }
    if with_storage_key:
        answer[_STORAGE_KEY_FIELD] = row["storage_key"]
    return answer


def _chapter_base(row: Row) -> Json:
    return {
        "id": row["id"],
        "projectId": row["project_id"],
        "position": row["position"],
        "title": row["title"],
        "summary": row["summary"],
        "createdAt": _iso_or_none(row["created_ms"]),
    }


def new_chapter(row: Row, pages: list[Row]) -> Json:
    """A chapter row as the answer to creating it, with its pages."""
    return {
        **_chapter_base(row),
        "assignedUserId": None,
        "createdByUserId": None,
        "deletedAt": None,
        "pages": [page(p) for p in pages],
    }


def chapter_list_item(row: Row, languages: list[Row], exports: list[Row]) -> Json:
    """A chapter row as an item of the chapter list, with its languages and exports."""
    return {
        **_chapter_base(row),
        "pageCount": row["page_count"],
        "started": bool(row["started"]),
        "processing": bool(row["processing"]),
        "failed": bool(row["failed"]),
        "failureReason": row["failure_reason"],
        "status": _lowest_status(lang["status"] for lang in languages),
        "languages": [
            {
                "languageCode": lang["language_code"],
                "status": lang["status"],
                "covered": lang["covered"],
                "failed": bool(lang["failed"]),
                "exporting": bool(lang["exporting"]),
                "models": json.loads(lang["models"]),
            }
            for lang in languages
        ],
        "preparedExports": [
            {
                "languageCode": item["language_code"],
                "format": item["format"],
                "filename": item["filename"],
                "byteSize": item["byte_size"],
                "pageCount": item["page_count"],
                "preparedAt": _iso_or_none(item["prepared_ms"]),
            }
            for item in exports
        ],
        "creditsSpent": row["credits_spent"],
        "lastActivityAt": _iso_or_none(row["activity_ms"]),
    }


def chapter_detail(row: Row, languages: list[Row], project_row: Row, page_count: int) -> Json:
    """A chapter row as `GET /chapters/{id}` answers it."""
    return {
        **_chapter_base(row),
        "pageCount": page_count,
        "processing": bool(row["processing"]),
        "detecting": bool(row["detecting"]),
        "failed": bool(row["failed"]),
        "failureReason": row["failure_reason"],
        "status": _lowest_status(lang["status"] for lang in languages),
        "languages": [
            {
                "languageCode": lang["language_code"],
                "status": lang["status"],
                "untranslated": lang["untranslated"],
            }
            for lang in languages
        ],
        "project": project(project_row),
        "assignee": None,
    }

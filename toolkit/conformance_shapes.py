"""The answers' shapes as the spec and our decisions give them, for `toolkit conformance`:
one checker per field, and what in an answer does not fit."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

__all__ = [
    "CHAPTER_DETAIL",
    "CHAPTER_LIST_ITEM",
    "NEW_CHAPTER",
    "PROJECT",
    "PROJECT_LIST_ITEM",
    "STATUSES",
    "Check",
    "is_iso",
    "is_number",
    "is_whole",
    "mismatches",
]

STATUSES = ("translating", "needs_review", "reviewed")
_EXPORT_FORMATS = ("cbz", "zip", "psd", "clean", "txt", "docx", "source")

Check = Callable[[Any], bool]


def _string(value: Any) -> bool:
    return isinstance(value, str)


def _nullable(check: Check) -> Check:
    return lambda value: value is None or check(value)


def is_number(value: Any) -> bool:
    """Whether a JSON value is a number (a boolean is not)."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def is_whole(value: Any) -> bool:
    """Whether a JSON value is a whole number (a boolean is not)."""
    return isinstance(value, int) and not isinstance(value, bool)


def _boolean(value: Any) -> bool:
    return isinstance(value, bool)


def is_iso(value: Any) -> bool:
    """Whether a JSON value is an ISO 8601 time that carries its zone."""
    if not isinstance(value, str):
        return False
    try:
        return datetime.fromisoformat(value).tzinfo is not None
    except ValueError:
        return False


def _one_of(*choices: str) -> Check:
    return lambda value: value in choices


def _null(value: Any) -> bool:
    return value is None


def _list_of(check: Check) -> Check:
    return lambda value: isinstance(value, list) and all(check(item) for item in value)


def _shaped(fields: dict[str, Check]) -> Check:
    return lambda value: isinstance(value, dict) and not mismatches(value, fields)


PROJECT = {
    "id": _string,
    "name": _string,
    "kind": _one_of("comic", "novel"),
    "sourceLanguage": _string,
    "readingDirection": _one_of("ltr", "rtl", "vertical"),
    "processSteps": _one_of("text", "translate", "clean", "full"),
    "translationModel": _nullable(_string),
    "createdAt": is_iso,
    "translationGroupId": _string,
    "seriesProfile": _null,
    "coverKey": _null,
    "deletedAt": _null,
}
PROJECT_LIST_ITEM = {
    **PROJECT,
    "targetLanguages": _list_of(
        _shaped({"projectId": _string, "languageCode": _string, "addedAt": is_iso})
    ),
    "chapterCount": is_whole,
    "lastChapterAt": _nullable(is_whole),
}
_CHAPTER_BASE = {
    "id": _string,
    "projectId": _string,
    "position": is_whole,
    "title": _nullable(_string),
    "summary": _nullable(_string),
    "createdAt": is_iso,
}
_LIST_LANGUAGE = {
    "languageCode": _string,
    "status": _one_of(*STATUSES),
    "covered": is_whole,
    "failed": _boolean,
    "exporting": _boolean,
    "models": _list_of(_string),
}
_EXPORT = {
    "languageCode": _string,
    "format": _one_of(*_EXPORT_FORMATS),
    "filename": _string,
    "byteSize": is_whole,
    "pageCount": is_whole,
    "preparedAt": is_iso,
}
CHAPTER_LIST_ITEM = {
    **_CHAPTER_BASE,
    "pageCount": is_whole,
    "started": _boolean,
    "processing": _boolean,
    "failed": _boolean,
    "failureReason": _nullable(_string),
    "status": _one_of(*STATUSES),
    "languages": _list_of(_shaped(_LIST_LANGUAGE)),
    "preparedExports": _list_of(_shaped(_EXPORT)),
    "creditsSpent": is_number,
    "lastActivityAt": is_iso,
}
CHAPTER_DETAIL = {
    **_CHAPTER_BASE,
    "pageCount": is_whole,
    "processing": _boolean,
    "detecting": _boolean,
    "failed": _boolean,
    "failureReason": _nullable(_string),
    "status": _one_of(*STATUSES),
    "languages": _list_of(
        _shaped({"languageCode": _string, "status": _one_of(*STATUSES), "untranslated": is_whole})
    ),
    "project": _shaped(PROJECT),
    "assignee": _null,
}
NEW_CHAPTER = {
    **_CHAPTER_BASE,
    "assignedUserId": _null,
    "createdByUserId": _null,
    "deletedAt": _null,
    "pages": _list_of(lambda page: isinstance(page, dict)),
}


def mismatches(value: dict[str, Any], fields: dict[str, Check]) -> list[str]:
    """What in `value` is not as `fields` say: missing, extra or mistyped fields."""
    wrong = [f"{name} missing" for name in fields if name not in value]
    wrong += [f"{name} not expected" for name in value if name not in fields]
    wrong += [
        f"{name}={value[name]!r:.40}"
        for name, check in fields.items()
        if name in value and not check(value[name])
    ]
    return wrong

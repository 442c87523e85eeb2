"""A tiny in-memory stand-in for the service's read routes, for data-pipeline unit tests.

It answers `list_projects`, `list_chapters` and `get_chapter` with resources built by
`Model.from_json` from spec-shaped dicts, so frames, the store and the analysis are
tested on exactly what the client would hand them. Integration tests use the emulator.
"""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from typing import Any

from toolkit.errors import NotFound
from toolkit.models import ChapterDetail, ChapterListItem, Project

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def hours(n: float) -> datetime:
    """`n` hours after T0: the snapshot times the store's unit tests write at."""
    return T0 + timedelta(hours=n)


def iso(when: datetime) -> str:
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def project_json(
    pid: str, *, name: str | None = None, languages: tuple[str, ...] = ("en", "fr"), **extra: Any
) -> dict[str, Any]:
    return {
        "id": pid,
        "name": name or f"Project {pid}",
        "kind": "comic",
        "sourceLanguage": "ja",
        "readingDirection": "rtl",
        "processSteps": "full",
        "translationModel": None,
        "createdAt": iso(T0),
        "translationGroupId": "g1",
        "seriesProfile": None,
        "coverKey": None,
        "deletedAt": None,
        "targetLanguages": [
            {"projectId": pid, "languageCode": code, "addedAt": iso(T0)} for code in languages
        ],
        "chapterCount": 0,
        "lastChapterAt": None,
        **extra,
    }


def chapter_json(
    cid: str,
    pid: str,
    *,
    position: int = 1,
    pages: int = 4,
    covered: int | dict[str, int] = 0,
    untranslated: int | dict[str, int] = 10,
    credits: int = 0,
    status: str = "translating",
    processing: bool = True,
    failed: bool = False,
    reason: str | None = None,
    languages: tuple[str, ...] = ("en", "fr"),
    created: datetime = T0,
    activity: datetime = T0,
    exports: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """A ChapterListItem dict, with the detail's `untranslated` kept under `_untranslated`."""

    def per(value: int | dict[str, int], code: str) -> int:
        return value[code] if isinstance(value, dict) else value

    return {
        "id": cid,
        "projectId": pid,
        "position": position,
        "title": f"Chapter {position}",
        "summary": None,
        "createdAt": iso(created),
        "pageCount": pages,
        "started": True,
        "processing": processing,
        "failed": failed,
        "failureReason": reason,
        "status": status,
        "languages": [
            {
                "languageCode": code,
                "status": status,
                "covered": per(covered, code),
                "failed": failed,
                "exporting": False,
                "models": ["default-model"],
            }
            for code in languages
        ],
        "preparedExports": exports or [],
        "creditsSpent": credits,
        "lastActivityAt": iso(activity),
        "_untranslated": {code: per(untranslated, code) for code in languages},
    }


class FakeService:
    """Projects and chapters as dicts that a test edits between pulls; thread-safe reads."""

    def __init__(self) -> None:
        self.projects: dict[str, dict[str, Any]] = {}
        self.chapters: dict[str, dict[str, Any]] = {}
        self.calls: list[tuple[str, str | None]] = []
        self.last_response_date: str | None = None
        self.date: datetime | None = None
        self._lock = threading.Lock()

    def add_project(self, pid: str, **options: Any) -> dict[str, Any]:
        self.projects[pid] = project_json(pid, **options)
        return self.projects[pid]

    def add_chapter(self, cid: str, pid: str, **options: Any) -> dict[str, Any]:
        self.chapters[cid] = chapter_json(cid, pid, **options)
        return self.chapters[cid]

    def update(self, cid: str, **options: Any) -> None:
        old = self.chapters[cid]
        kept = {
            "position": old["position"],
            "pages": old["pageCount"],
            "credits": old["creditsSpent"],
            "languages": tuple(lang["languageCode"] for lang in old["languages"]),
            "status": old["status"],
            "processing": old["processing"],
            "failed": old["failed"],
            "reason": old["failureReason"],
            "covered": {lang["languageCode"]: lang["covered"] for lang in old["languages"]},
            "untranslated": old["_untranslated"],
            "exports": old["preparedExports"],
            "created": datetime.fromisoformat(old["createdAt"].replace("Z", "+00:00")),
        }
        self.chapters[cid] = chapter_json(cid, old["projectId"], **{**kept, **options})

    def _note(self, route: str, ident: str | None) -> None:
        with self._lock:
            self.calls.append((route, ident))
            if self.date is not None:
                self.last_response_date = self.date.strftime("%a, %d %b %Y %H:%M:%S GMT")

    def list_projects(self) -> list[Project]:
        self._note("list_projects", None)
        projects = []
        for pid, raw in self.projects.items():
            mine = [c for c in self.chapters.values() if c["projectId"] == pid]
            projects.append(Project.from_json({**raw, "chapterCount": len(mine)}))
        return projects

    def list_chapters(self, project_id: str) -> list[ChapterListItem]:
        self._note("list_chapters", project_id)
        if project_id not in self.projects:
            raise NotFound("project not found", status=404)
        mine = [c for c in self.chapters.values() if c["projectId"] == project_id]
        return [ChapterListItem.from_json(c) for c in sorted(mine, key=lambda c: c["position"])]

    def get_chapter(self, chapter_id: str) -> ChapterDetail:
        self._note("get_chapter", chapter_id)
        if chapter_id not in self.chapters:
            raise NotFound("chapter not found", status=404)
        raw = self.chapters[chapter_id]
        detail = {
            **{k: v for k, v in raw.items() if k not in ("languages", "_untranslated")},
            "detecting": False,
            "languages": [
                {"languageCode": code, "status": raw["status"], "untranslated": left}
                for code, left in raw["_untranslated"].items()
            ],
            "project": self.projects[raw["projectId"]],
            "assignee": None,
        }
        return ChapterDetail.from_json(detail)

"""Small helpers for the emulator's tests: uploads, settling runs, exact shapes."""

from __future__ import annotations

from typing import Any

import httpx

PROJECT_FIELDS = {
    "id",
    "name",
    "kind",
    "sourceLanguage",
    "readingDirection",
    "processSteps",
    "translationModel",
    "createdAt",
    "translationGroupId",
    "seriesProfile",
    "coverKey",
    "deletedAt",
}
PROJECT_LIST_FIELDS = PROJECT_FIELDS | {"targetLanguages", "chapterCount", "lastChapterAt"}
CHAPTER_BASE = {"id", "projectId", "position", "title", "summary", "createdAt"}
NEW_CHAPTER_FIELDS = CHAPTER_BASE | {"assignedUserId", "createdByUserId", "deletedAt", "pages"}
LIST_ITEM_FIELDS = CHAPTER_BASE | {
    "pageCount",
    "started",
    "processing",
    "failed",
    "failureReason",
    "status",
    "languages",
    "preparedExports",
    "creditsSpent",
    "lastActivityAt",
}
DETAIL_FIELDS = CHAPTER_BASE | {
    "pageCount",
    "processing",
    "detecting",
    "failed",
    "failureReason",
    "status",
    "languages",
    "project",
    "assignee",
}
PAGE_FIELDS = {"id", "chapterId", "position", "createdAt"}


def plain_client(base_url: str, token: str | None = None) -> httpx.Client:
    """An httpx client for plain http on loopback (no TLS context to build: fast)."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.Client(base_url=base_url, headers=headers, verify=False, timeout=30)


def page_parts(pages: list[bytes], *, names: list[str] | None = None) -> list[tuple[str, Any]]:
    """Multipart `pages` parts for httpx's `files=`."""
    names = names or [f"page-{i + 1}.png" for i in range(len(pages))]
    return [("pages", (name, data, "image/png")) for name, data in zip(names, pages, strict=True)]


def create_chapter(
    api: httpx.Client, project_id: str, pages: list[bytes] | None = None, **fields: Any
) -> httpx.Response:
    data = {key: str(value) for key, value in fields.items()}
    files = page_parts(pages) if pages else None
    return api.post(f"/projects/{project_id}/chapters", data=data, files=files)


def add_pages(
    api: httpx.Client, chapter_id: str, pages: list[bytes], **fields: Any
) -> httpx.Response:
    data = {key: str(value) for key, value in fields.items()}
    return api.post(f"/chapters/{chapter_id}/pages", data=data, files=page_parts(pages))


def settle(emulator: Any, api: httpx.Client, chapter_id: str, *, limit: float = 4 * 3600) -> dict:
    """Advance the manual clock until the chapter stops processing; returns its detail."""
    waited = 0.0
    while True:
        detail = api.get(f"/chapters/{chapter_id}").json()
        if not detail["processing"]:
            return detail
        if waited >= limit:
            raise AssertionError(f"chapter {chapter_id} still processing after {limit} s")
        emulator.advance(300)
        waited += 300


def list_item(api: httpx.Client, project_id: str, chapter_id: str) -> dict:
    items = api.get(f"/projects/{project_id}/chapters").json()
    return next(item for item in items if item["id"] == chapter_id)


def error_of(response: httpx.Response) -> tuple[int, str]:
    """The status and message of an error answer, checking its shape."""
    body = response.json()
    assert set(body) == {"error"}, body
    assert set(body["error"]) == {"status", "message"}, body
    assert body["error"]["status"] == response.status_code
    assert isinstance(body["error"]["message"], str) and body["error"]["message"]
    return response.status_code, body["error"]["message"]

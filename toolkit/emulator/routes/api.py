"""The `/api/v1` routes: authenticate, look up, check the request, call an operation.

Refusals come in DESIGN.md's order (docs/emulator.md lists it with the success statuses).
"""

from __future__ import annotations

import json
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from toolkit.emulator.core.operations import PROCESSING
from toolkit.emulator.core.services import Services, services_of
from toolkit.emulator.core.state import Row
from toolkit.emulator.intake.uploads import (
    StagedPage,
    files_of,
    form_flag,
    read_form,
    text_of,
    whole_number,
)
from toolkit.emulator.routes import shapes
from toolkit.emulator.routes.errors import EmulatorError

__all__ = ["PREFIX", "read_chapter_detail", "routes"]

_MAX_TEXT_CHARACTERS = 200_000


def _workspace_of(request: Request) -> Row:
    header = request.headers.get("authorization", "")
    scheme, _, key = header.partition(" ")
    if scheme.lower() != "bearer" or not key.strip():
        raise EmulatorError(
            401, "missing API key: send the header `Authorization: Bearer <API key>`"
        )
    workspace = services_of(request).state.workspace_by_key(key.strip())
    if workspace is None:
        raise EmulatorError(401, "unknown API key; use the key of your workspace")
    return workspace


def _project(request: Request) -> tuple[Services, Row]:
    services = services_of(request)
    workspace = _workspace_of(request)
    project = services.state.project_in(workspace["id"], request.path_params["project_id"])
    if project is None:
        raise EmulatorError(404, "project not found")
    return services, project


def _chapter(request: Request, *, idle: bool = False) -> tuple[Services, Row]:
    services = services_of(request)
    workspace = _workspace_of(request)
    chapter = services.state.chapter_in(workspace["id"], request.path_params["chapter_id"])
    if chapter is None:
        raise EmulatorError(404, "chapter not found")
    if idle and chapter["processing"]:
        raise EmulatorError(409, PROCESSING)
    return services, chapter


# -- reads (sync: Starlette runs them in its thread pool) ---------------------------------


def list_projects(request: Request) -> JSONResponse:
    services = services_of(request)
    workspace = _workspace_of(request)
    rows = services.state.project_rows(workspace["id"])
    languages = services.state.target_languages([row["id"] for row in rows])
    return JSONResponse([shapes.project_list_item(row, languages[row["id"]]) for row in rows])


def get_project(request: Request) -> JSONResponse:
    _, project = _project(request)
    return JSONResponse(shapes.project(project))


def list_chapters(request: Request) -> JSONResponse:
    services, project = _project(request)
    rows = services.state.chapter_rows(project["id"])
    ids = [row["id"] for row in rows]
    languages = services.state.languages_of(ids)
    exports = services.state.exports_of(ids)
    return JSONResponse(
        [shapes.chapter_list_item(row, languages[row["id"]], exports[row["id"]]) for row in rows]
    )


def get_chapter(request: Request) -> JSONResponse:
    services, chapter = _chapter(request)
    return JSONResponse(read_chapter_detail(services, chapter["id"]))


def read_chapter_detail(services: Services, chapter_id: str) -> dict[str, Any]:
    """A chapter's detail as `GET /chapters/{id}` answers it."""
    chapter = services.state.chapter_any(chapter_id)
    assert chapter is not None
    project = services.state.project(chapter["project_id"])
    assert project is not None
    return shapes.chapter_detail(
        chapter,
        services.state.languages_of([chapter_id])[chapter_id],
        project,
        services.state.page_count(chapter_id),
    )


# -- writes ---------------------------------------------------------------------------


async def create_chapter(request: Request) -> JSONResponse:
    services, project = _project(request)
    form = await read_form(request)
    try:
        position = whole_number(form, "position", what="the chapter number (`position`)")
        staged = form_flag(form, "staged")
        text = await text_of(form, "text")
        uploads = files_of(form, "pages")
        if project["kind"] == "novel":
            text = _novel_text(text, pages=bool(uploads), staged=staged)
        else:
            _check_comic_form(text, pages=bool(uploads), staged=staged)
        pages = [] if staged or project["kind"] == "novel" else await services.files.stage(uploads)
        try:
            created = await run_in_threadpool(
                services.operations.create_chapter,
                project,
                position=position,
                staged=staged,
                pages=pages,
                text=text,
                at=services.now_ms(),
            )
        finally:
            services.files.discard(pages)
    finally:
        await form.close()
    chapter = services.state.chapter_any(created.chapter_id)
    assert chapter is not None
    return JSONResponse(shapes.new_chapter(chapter, created.pages), status_code=201)


def _novel_text(text: str | None, *, pages: bool, staged: bool) -> str:
    if pages or staged:
        raise EmulatorError(
            400, "this project is a novel: send the chapter's text in `text`, not pages or staged"
        )
    if text is None or not text.strip():
        raise EmulatorError(400, "the text is empty; send the chapter's text in `text`")
    if len(text) > _MAX_TEXT_CHARACTERS:
        raise EmulatorError(
            413,
            f"the text is {len(text):,} characters, over the {_MAX_TEXT_CHARACTERS:,}-character "
            "limit; split it into several chapters",
        )
    return text


def _check_comic_form(text: str | None, *, pages: bool, staged: bool) -> None:
    if text is not None:
        raise EmulatorError(400, "this project is a comic: send page images in `pages`, not `text`")
    if not pages and not staged:
        raise EmulatorError(
            400,
            "no page image: send page images in `pages`, or staged=1 to create the chapter empty",
        )


async def add_pages(request: Request) -> JSONResponse:
    services, chapter = _chapter(request, idle=True)
    if chapter["kind"] == "novel":
        raise EmulatorError(
            400, "this is a novel's chapter, which takes no pages; send its text as a new chapter"
        )
    form = await read_form(request)
    try:
        hold = form_flag(form, "hold")
        position = whole_number(form, "position", what="the page number (`position`)")
        pages = await _added_pages(services, form, position=position)
        try:
            rows = await run_in_threadpool(
                services.operations.add_pages,
                chapter["id"],
                pages=pages,
                hold=hold,
                position=position,
                at=services.now_ms(),
            )
        finally:
            services.files.discard(pages)
    finally:
        await form.close()
    body = {
        "chapterId": chapter["id"],
        "pages": [shapes.page(row, with_storage_key=True) for row in rows],
    }
    return JSONResponse(body, status_code=201)


async def _added_pages(
    services: Services, form: FormData, *, position: int | None
) -> list[StagedPage]:
    uploads = files_of(form, "pages")
    if not uploads:
        raise EmulatorError(400, "no page image: send at least one page image in `pages`")
    if position is not None and len(uploads) > 1:
        raise EmulatorError(
            400,
            f"a page number can only be sent with exactly one page, not {len(uploads)}; "
            "send the pages one call each, or without `position`",
        )
    return await services.files.stage(uploads)


async def start_chapter(request: Request) -> JSONResponse:
    services, chapter = _chapter(request, idle=True)
    page_ids = await _page_ids(request) if chapter["started"] else None
    count = await run_in_threadpool(
        services.operations.start, chapter["id"], page_ids=page_ids, at=services.now_ms()
    )
    return JSONResponse({"chapterId": chapter["id"], "pageCount": count}, status_code=202)


async def _page_ids(request: Request) -> list[str] | None:
    raw = await request.body()
    if not raw.strip():
        return None
    try:
        body = json.loads(raw)
    except ValueError as exc:
        raise EmulatorError(400, 'the body must be JSON like {"pageIds": ["..."]}') from exc
    ids = body.get("pageIds") if isinstance(body, dict) else None
    if ids is None:
        return None
    if not isinstance(ids, list) or not all(isinstance(item, str) for item in ids):
        raise EmulatorError(400, "`pageIds` must be a list of page id strings")
    return ids


async def rescan_chapter(request: Request) -> JSONResponse:
    services, chapter = _chapter(request, idle=True)
    cleared = await run_in_threadpool(
        services.operations.rescan, chapter["id"], at=services.now_ms()
    )
    return JSONResponse({"queued": True, "clearedRegions": cleared}, status_code=202)


PREFIX = "/api/v1"

routes = [
    Route(f"{PREFIX}/projects", list_projects, methods=["GET"]),
    Route(f"{PREFIX}/projects/{{project_id}}", get_project, methods=["GET"]),
    Route(f"{PREFIX}/projects/{{project_id}}/chapters", list_chapters, methods=["GET"]),
    Route(f"{PREFIX}/projects/{{project_id}}/chapters", create_chapter, methods=["POST"]),
    Route(f"{PREFIX}/chapters/{{chapter_id}}", get_chapter, methods=["GET"]),
    Route(f"{PREFIX}/chapters/{{chapter_id}}/pages", add_pages, methods=["POST"]),
    Route(f"{PREFIX}/chapters/{{chapter_id}}/start", start_chapter, methods=["POST"]),
    Route(f"{PREFIX}/chapters/{{chapter_id}}/rescan", rescan_chapter, methods=["POST"]),
]

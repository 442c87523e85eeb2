"""Multipart uploads: reading the form within limits, and page files kept on disk.

A page is renamed into place only once its call has succeeded, so a refused call leaves
no file; the limits are in docs/emulator.md ("Page uploads").
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

from starlette.concurrency import run_in_threadpool
from starlette.datastructures import FormData, UploadFile
from starlette.exceptions import HTTPException
from starlette.requests import Request

from toolkit.emulator.core.limits import MAX_DIGITS, MAX_POSITION
from toolkit.emulator.core.state import new_uuid
from toolkit.emulator.intake.imaging import MAX_PAGE_BYTES, check_page
from toolkit.emulator.routes.errors import EmulatorError

__all__ = [
    "MAX_FILES_PER_CALL",
    "MAX_TEXT_BYTES",
    "PageFolder",
    "StagedPage",
    "files_of",
    "form_flag",
    "read_form",
    "text_of",
    "whole_number",
]

MAX_FILES_PER_CALL = 1000
MAX_TEXT_BYTES = 4 * 1024 * 1024
_CHUNK = 1024 * 1024
_EXTENSIONS = {"PNG": "png", "JPEG": "jpg", "WEBP": "webp", "GIF": "gif", "BMP": "bmp"}


async def read_form(request: Request) -> FormData:
    """The request's form; an unreadable or oversized body is a 400 or 413 answer."""
    try:
        return await request.form(
            max_files=MAX_FILES_PER_CALL, max_fields=100, max_part_size=MAX_TEXT_BYTES
        )
    except HTTPException as exc:
        detail = str(exc.detail)
        too_big = "maximum size" in detail or "Too many files" in detail
        status = 413 if too_big else 400
        raise EmulatorError(status, f"the upload could not be read: {detail}") from exc
    except ValueError as exc:
        # python-multipart's parse errors (a body whose parts are not the boundary the
        # Content-Type names) are ValueErrors, which Starlette 0.44 (the floor) lets through.
        raise EmulatorError(
            400, f"the upload could not be read as the multipart form its Content-Type says: {exc}"
        ) from exc


def files_of(form: FormData, field: str) -> list[UploadFile]:
    """The files sent in `field`; a plain text value there is a 400."""
    items = form.getlist(field)
    files = [item for item in items if isinstance(item, UploadFile)]
    if len(files) != len(items):
        raise EmulatorError(
            400, f"`{field}` must carry image files (multipart file parts), not text values"
        )
    return files


def form_flag(form: FormData, field: str) -> bool:
    """A `the value 1` flag such as `staged` or `hold`."""
    value = form.get(field)
    if value is None:
        return False
    if not isinstance(value, str):
        raise EmulatorError(400, f"`{field}` must be the value 1, not a file")
    text = value.strip().lower()
    if text in {"1", "true"}:
        return True
    if text in {"", "0", "false"}:
        return False
    raise EmulatorError(400, f"`{field}` must be the value 1, not {value!r}")


def whole_number(form: FormData, field: str, *, what: str) -> int | None:
    """An optional whole number from 1 to `MAX_POSITION`; anything else is a 400."""
    value = form.get(field)
    if value is None or (isinstance(value, str) and value.strip() == ""):
        return None
    text = value.strip() if isinstance(value, str) else ""
    if (
        not text.isascii()
        or not text.isdigit()
        or len(text) > MAX_DIGITS
        or not 1 <= int(text) <= MAX_POSITION
    ):
        shown = repr(value) if len(text) <= MAX_DIGITS else f"{len(text):,} digits"
        raise EmulatorError(
            400, f"{what} must be a whole number from 1 to {MAX_POSITION:,}, not {shown}"
        )
    return int(text)


async def text_of(form: FormData, field: str) -> str | None:
    """A text field, also accepted as a file part (UTF-8) for long texts."""
    value = form.get(field)
    if value is None or isinstance(value, str):
        return value
    raw = await value.read(MAX_TEXT_BYTES + 1)
    if len(raw) > MAX_TEXT_BYTES:
        raise EmulatorError(413, f"`{field}` is over {MAX_TEXT_BYTES:,} bytes; send less text")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise EmulatorError(400, f"`{field}` is not UTF-8 text; send it UTF-8 encoded") from exc


@dataclass(frozen=True)
class StagedPage:
    """An upload copied and checked, waiting under a temporary name."""

    name: str
    temp_path: Path
    extension: str
    lines: int
    byte_size: int


class PageFolder:
    """The folder holding page images: `<state file>-pages/`, or a temporary folder."""

    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)

    async def stage(self, uploads: list[UploadFile]) -> list[StagedPage]:
        """Copy and check every upload; on a refusal, nothing stays behind."""
        staged: list[StagedPage] = []
        try:
            for number, upload in enumerate(uploads, start=1):
                staged.append(await self._stage_one(upload, number))
        except BaseException:
            self.discard(staged)
            raise
        return staged

    async def _stage_one(self, upload: UploadFile, number: int) -> StagedPage:
        name = upload.filename or f"#{number}"
        temp_path = self.root / f".upload-{new_uuid()}"
        digest = hashlib.sha256()
        size = 0
        try:
            await upload.seek(0)
            with temp_path.open("wb") as out:
                while chunk := await upload.read(_CHUNK):
                    size += len(chunk)
                    if size > MAX_PAGE_BYTES:
                        break  # checked below; no need to copy the rest
                    digest.update(chunk)
                    out.write(chunk)
            image = await run_in_threadpool(
                check_page, temp_path, name=name, digest=digest.digest(), byte_size=size
            )
        except BaseException:
            temp_path.unlink(missing_ok=True)
            raise
        extension = _EXTENSIONS.get(image.format, "tif")
        return StagedPage(name, temp_path, extension, image.lines, image.byte_size)

    def stage_bytes(self, data: bytes, *, name: str) -> StagedPage:
        """Stage an image held in memory (the demo's generated pages)."""
        temp_path = self.root / f".upload-{new_uuid()}"
        temp_path.write_bytes(data)
        try:
            image = check_page(
                temp_path, name=name, digest=hashlib.sha256(data).digest(), byte_size=len(data)
            )
        except BaseException:
            temp_path.unlink(missing_ok=True)
            raise
        extension = _EXTENSIONS.get(image.format, "tif")
        return StagedPage(name, temp_path, extension, image.lines, image.byte_size)

    def commit(self, page: StagedPage, page_id: str) -> str:
        """Move a staged page into place; returns its file name."""
        file_name = f"{page_id}.{page.extension}"
        os.replace(page.temp_path, self.root / file_name)
        return file_name

    def discard(self, pages: list[StagedPage]) -> None:
        for page in pages:
            page.temp_path.unlink(missing_ok=True)

    def remove(self, file_name: str) -> None:
        with contextlib.suppress(OSError):
            (self.root / file_name).unlink()

"""Page image checks (415 by content, 422, 413), text limits, and what a refusal leaves."""

from __future__ import annotations

import gzip
import io
import re

import pytest
from emulator_helpers import add_pages, create_chapter, error_of, page_parts
from PIL import Image

from toolkit.emulator.intake.imaging import MAX_PAGE_BYTES

SVG = b'<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><rect/></svg>'


def _files_in(emulator) -> list[str]:
    return sorted(p.name for p in emulator.services.files.root.iterdir())


def _image(fmt: str, **kwargs) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (40, 60), "white").save(buffer, fmt, **kwargs)
    return buffer.getvalue()


@pytest.mark.parametrize(
    "data",
    [
        SVG,
        b'\xef\xbb\xbf<?xml version="1.0"?>\n<!-- drawn -->\n' + SVG,
        gzip.compress(SVG),
        b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj\n",
        b"<!DOCTYPE html><html><body>not a page</body></html>",
    ],
    ids=["svg", "svg-with-prolog", "svgz", "pdf", "html"],
)
def test_non_raster_named_png_is_415(emulator, api, comic_project, data):
    response = create_chapter(api, comic_project["id"], [data])
    status, message = error_of(response)
    assert status == 415
    assert "page-1.png" in message
    assert api.get(f"/projects/{comic_project['id']}/chapters").json() == []


def test_an_unsupported_raster_type_is_415(api, comic_project):
    status, _ = error_of(create_chapter(api, comic_project["id"], [_image("ICO")]))
    assert status == 415


@pytest.mark.parametrize("kind", ["garbage", "truncated-png"])
def test_undecodable_image_is_422(api, comic_project, make_page, kind):
    data = b"\x00\x01 not an image at all" * 20 if kind == "garbage" else make_page(1)[:400]
    status, message = error_of(create_chapter(api, comic_project["id"], [data]))
    assert status == 422
    assert "cannot be opened" in message


def test_oversized_file_is_413(emulator, api, comic_project, make_page):
    big = make_page(2) + b"\x00" * (MAX_PAGE_BYTES + 1)
    status, message = error_of(create_chapter(api, comic_project["id"], [big]))
    assert status == 413 and "too large" in message


def test_too_many_pixels_is_413(api, comic_project):
    buffer = io.BytesIO()
    Image.new("1", (8000, 6000)).save(buffer, "PNG")
    status, message = error_of(create_chapter(api, comic_project["id"], [buffer.getvalue()]))
    assert status == 413 and "pixels" in message


@pytest.mark.parametrize("fmt", ["JPEG", "WEBP", "GIF", "BMP", "TIFF"])
def test_raster_formats_are_taken(api, comic_project, fmt):
    assert create_chapter(api, comic_project["id"], [_image(fmt)]).status_code == 201


def test_refused_upload_leaves_no_file_and_no_chapter(emulator, api, comic_project, pages):
    response = create_chapter(api, comic_project["id"], [pages[0], SVG, pages[1]])
    assert response.status_code == 415
    assert _files_in(emulator) == []
    assert api.get(f"/projects/{comic_project['id']}/chapters").json() == []


def test_accepted_pages_are_kept_on_disk(emulator, api, comic_project, pages):
    chapter = create_chapter(api, comic_project["id"], pages).json()
    stored = _files_in(emulator)
    assert sorted(f"{p['id']}.png" for p in chapter["pages"]) == stored
    on_disk = {name: (emulator.services.files.root / name).read_bytes() for name in stored}
    assert sorted(on_disk.values()) == sorted(pages)


def test_added_pages_carry_the_storage_key(api, comic_project, pages):
    chapter = create_chapter(api, comic_project["id"], staged=1).json()
    response = add_pages(api, chapter["id"], pages[:2], hold=1)
    assert response.status_code == 201
    body = response.json()
    assert set(body) == {"chapterId", "pages"}
    assert body["chapterId"] == chapter["id"]
    for page in body["pages"]:
        keys = [k for k in page if re.fullmatch(r"sourceImage\w+Key", k)]
        assert keys == ["sourceImageS3Key"]
        assert page[keys[0]].endswith(f"/chapters/{chapter['id']}/pages/{page['id']}.png")
        assert set(page) == {"id", "chapterId", "position", "createdAt", "sourceImageS3Key"}


def test_add_pages_checks_images_too(api, comic_project, pages):
    chapter = create_chapter(api, comic_project["id"], staged=1).json()
    assert error_of(add_pages(api, chapter["id"], [SVG]))[0] == 415
    assert error_of(add_pages(api, chapter["id"], [b"junk" * 50]))[0] == 422
    assert api.get(f"/chapters/{chapter['id']}").json()["pageCount"] == 0


def test_pages_field_with_text_instead_of_files_is_400(api, comic_project):
    response = api.post(
        f"/projects/{comic_project['id']}/chapters", files=[("pages", (None, b"not a file"))]
    )
    assert error_of(response)[0] == 400


def test_text_over_200000_characters_is_413(api, novel_project):
    status, message = error_of(create_chapter(api, novel_project["id"], text="字" * 200_001))
    assert status == 413 and "200,000" in message


def test_text_of_exactly_200000_characters_is_taken(api, novel_project):
    text = ("字" * 99 + "\n") * 2_000
    assert len(text) == 200_000
    assert create_chapter(api, novel_project["id"], text=text).status_code == 201


def test_text_may_come_as_a_file_part(api, novel_project):
    response = api.post(
        f"/projects/{novel_project['id']}/chapters",
        files=[("text", ("chapter.txt", "一\n二\n".encode(), "text/plain"))],
    )
    assert response.status_code == 201


def test_a_huge_text_field_is_413_not_a_crash(api, novel_project):
    response = api.post(
        f"/projects/{novel_project['id']}/chapters",
        files=[("text", (None, b"x" * (5 * 1024 * 1024)))],
    )
    assert error_of(response)[0] == 413


def test_staged_ignores_pages_unchecked(emulator, api, comic_project):
    response = api.post(
        f"/projects/{comic_project['id']}/chapters",
        data={"staged": "1"},
        files=page_parts([SVG]),
    )
    assert response.status_code == 201
    assert response.json()["pages"] == []
    assert _files_in(emulator) == []


def test_a_body_that_is_not_the_form_its_type_says_is_400_not_a_crash(api, comic_project):
    # A part boundary other than the one the Content-Type names, as schemathesis sent:
    # python-multipart 0.0.9 (the declared floor) raised from inside Starlette's form
    # reader and the emulator answered 500.
    body = b"--other\r\n0--other--\r\n"
    response = api.post(
        f"/projects/{comic_project['id']}/chapters",
        content=body,
        headers={"Content-Type": "multipart/form-data; boundary=named"},
    )
    status, message = error_of(response)
    assert status == 400 and "could not be read" in message

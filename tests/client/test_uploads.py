from __future__ import annotations

import gzip
import io
import struct
import tracemalloc
import zlib

import pytest
from page_images import make_page

from toolkit.client.uploads import (
    _MAX_TEXT_CHARS,
    check_form,
    check_image,
    check_page_position,
    check_position,
    check_text,
    prepare_pages,
)
from toolkit.errors import InvalidUpload

SVG = b'<?xml version="1.0"?>\n<svg xmlns="http://www.w3.org/2000/svg" width="10"></svg>'


def png_chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def test_paths_bytes_and_file_objects_are_prepared_for_streaming(tmp_path):
    path = tmp_path / "p1.png"
    path.write_bytes(make_page(1))
    handle = io.BytesIO(make_page(2, fmt="JPEG"))
    handle.read(10)  # left mid-file by the caller: it is still sent whole
    with prepare_pages([path, make_page(3), handle]) as upload:
        names = [(p.filename, p.content_type) for p in upload.pages]
        assert names == [
            ("p1.png", "image/png"),
            ("page-002.png", "image/png"),
            ("page-003.jpg", "image/jpeg"),
        ]
        assert all(p.file.tell() == 0 for p in upload.pages)
        owned = upload.pages[0].file
        assert [field for field, _ in upload.multipart()] == ["pages"] * 3
    assert owned.closed, "a file the toolkit opened is closed after the upload"
    assert not handle.closed, "the caller's file object stays theirs"


def test_file_objects_keep_their_own_name(tmp_path):
    path = tmp_path / "scan 7.webp"
    path.write_bytes(make_page(7, fmt="WEBP"))
    with path.open("rb") as handle, prepare_pages([handle]) as upload:
        assert upload.pages[0].filename == "scan 7.webp"
        assert upload.pages[0].content_type == "image/webp"


@pytest.mark.parametrize("name", ["cover.png", "page.svg", "noext"])
def test_an_svg_is_refused_by_its_content_whatever_its_name(tmp_path, name):
    path = tmp_path / name
    path.write_bytes(SVG)
    with pytest.raises(InvalidUpload, match="SVG") as caught:
        prepare_pages([path])
    assert caught.value.item == str(path)
    assert name in str(caught.value)


def test_a_compressed_svg_is_refused_too():
    with pytest.raises(InvalidUpload, match=r"page 2 \(bytes\): is an SVG"):
        prepare_pages([make_page(1), gzip.compress(b"\xef\xbb\xbf  " + SVG)])


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"this is not an image at all", r"none of the formats .*\(PNG, JPEG, WebP, GIF, BMP"),
        (b"", "empty"),
        (make_page(0)[:-40], "truncated"),
    ],
)
def test_what_pillow_cannot_open_is_refused_with_the_reason(data, reason):
    with pytest.raises(InvalidUpload, match=reason):
        prepare_pages([data])


def test_a_png_with_a_damaged_chunk_is_refused():
    page = bytearray(make_page(0))
    page[-20] ^= 0xFF  # inside the last IDAT chunk
    with pytest.raises(InvalidUpload, match="CRC"):
        prepare_pages([bytes(page)])


def test_a_refusal_closes_the_files_already_opened(tmp_path, monkeypatch):
    good = tmp_path / "good.png"
    good.write_bytes(make_page(1))
    opened = []
    real_open = open

    def spy(path, mode="r", *args, **kwargs):
        handle = real_open(path, mode, *args, **kwargs)
        opened.append(handle)
        return handle

    monkeypatch.setattr("builtins.open", spy)
    with pytest.raises(InvalidUpload, match=r"bad\.png"):
        prepare_pages([good, tmp_path / "bad.png"])
    assert opened and all(handle.closed for handle in opened)


def test_file_objects_must_be_binary_and_seekable(tmp_path):
    text_file = tmp_path / "t.txt"
    text_file.write_text("x")
    with text_file.open("r") as handle, pytest.raises(InvalidUpload, match="'rb'"):
        prepare_pages([handle])

    class Pipe(io.RawIOBase):
        def readable(self) -> bool:
            return True

        def seekable(self) -> bool:
            return False

    with pytest.raises(InvalidUpload, match="cannot seek"):
        prepare_pages([Pipe()])


def test_a_missing_file_and_a_non_page_are_refused(tmp_path):
    with pytest.raises(InvalidUpload, match="cannot be read"):
        prepare_pages([tmp_path / "missing.png"])
    with pytest.raises(InvalidUpload, match="int is not a page"):
        prepare_pages([42])  # type: ignore[list-item]


def test_a_single_page_not_in_a_list_gets_a_clear_error(tmp_path):
    with pytest.raises(TypeError, match="wrap a single page in a list"):
        prepare_pages(str(tmp_path / "p.png"))  # type: ignore[arg-type]
    with pytest.raises(InvalidUpload, match="no pages"):
        prepare_pages([])


def test_checking_a_large_png_reads_it_in_bounded_pieces(tmp_path):
    """A 24 MB page is checked with well under a megabyte of memory."""
    path = tmp_path / "huge.png"
    ihdr = struct.pack(">IIBBBBB", 4000, 4000, 8, 2, 0, 0, 0)
    idat = bytes(24 * 1024 * 1024)  # one giant chunk: Pillow's own verify() would read it whole
    path.write_bytes(
        b"\x89PNG\r\n\x1a\n"
        + png_chunk(b"IHDR", ihdr)
        + png_chunk(b"IDAT", idat)
        + png_chunk(b"IEND", b"")
    )
    del idat
    with path.open("rb") as handle:
        tracemalloc.start()
        try:
            assert check_image(handle, "huge.png") == "PNG"
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert handle.tell() == 0
    assert peak < 1024 * 1024


@pytest.mark.parametrize(("given", "expected"), [(None, None), (1, 1), (12, 12), (3.0, 3)])
def test_whole_positions_of_one_or_more_pass(given, expected):
    assert check_position(given) == expected


@pytest.mark.parametrize(
    ("given", "reason"),
    [(0, "below 1"), (-4, "below 1"), (2.5, "not a whole number"), ("3", "whole number"),
     (True, "whole number")],
)  # fmt: skip
def test_positions_below_one_or_not_whole_are_refused(given, reason):
    with pytest.raises(InvalidUpload, match=reason):
        check_position(given)


def test_a_page_position_needs_exactly_one_page():
    check_page_position(None, 3)
    check_page_position(2, 1)
    with pytest.raises(InvalidUpload, match="with 3 pages"):
        check_page_position(2, 3)


def test_text_must_be_present_and_within_the_limit():
    assert check_text("a" * _MAX_TEXT_CHARS) == "a" * _MAX_TEXT_CHARS
    for empty in ("", " \n\t "):
        with pytest.raises(InvalidUpload, match="empty"):
            check_text(empty)
    with pytest.raises(InvalidUpload, match="200,001 characters"):
        check_text("a" * (_MAX_TEXT_CHARS + 1))
    with pytest.raises(InvalidUpload, match="must be a str"):
        check_text(b"bytes")


def test_forms_a_project_kind_does_not_take_are_refused():
    check_form("comic", "pages", where="project 'p'")
    check_form("novel", "text", where="project 'p'")
    with pytest.raises(InvalidUpload, match=r"novel: it takes text.*first page: a\.png"):
        check_form("novel", "pages", where="project 'p'", first_page="a.png")
    with pytest.raises(InvalidUpload, match="cannot be staged"):
        check_form("novel", "staged", where="project 'p'")
    with pytest.raises(InvalidUpload, match="comic: it takes page images"):
        check_form("comic", "text", where="project 'p'")

"""Checks on pages, text and positions before anything is sent, and the streamed page files.

```python
with prepare_pages(["p1.png", b"...", open("p3.jpg", "rb")]) as upload:
    httpx.post(url, files=upload.multipart())     # streamed in 64 KB reads
```

What is checked, and why that way, is in docs/client.md ("Checks before sending").
"""

from __future__ import annotations

import io
import numbers
import os
import struct
import warnings
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import IO, Literal

from toolkit.errors import InvalidUpload

__all__ = [
    "Form",
    "MultipartFile",
    "PageSource",
    "PageUpload",
    "PreparedPage",
    "check_form",
    "check_image",
    "check_page_position",
    "check_position",
    "check_text",
    "prepare_pages",
]

PageSource = str | os.PathLike[str] | bytes | bytearray | memoryview | IO[bytes]
MultipartFile = tuple[str, tuple[str | None, IO[bytes] | bytes, str | None]]

_MAX_TEXT_CHARS = 200_000
_SNIFF_BYTES = 4096
_READ_BLOCK = 64 * 1024
_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_EXTENSIONS = {"JPEG": "jpg", "TIFF": "tif"}
# What a refusal tells a person to send: the raster formats the service is known to read.
_PAGE_FORMATS = "PNG, JPEG, WebP, GIF, BMP or TIFF"


@dataclass
class PreparedPage:
    """One checked page, ready to stream: `file` is rewound; `owned` files are ours to close."""

    label: str
    filename: str
    content_type: str
    file: IO[bytes]
    owned: bool = False


@dataclass
class PageUpload:
    """Checked pages; a context manager that closes the files it opened."""

    pages: list[PreparedPage] = field(default_factory=list)

    def multipart(self) -> list[MultipartFile]:
        """The `files=` argument for httpx: one repeated `pages` field per page."""
        return [("pages", (p.filename, p.file, p.content_type)) for p in self.pages]

    def close(self) -> None:
        for page in self.pages:
            if page.owned:
                page.file.close()

    def __enter__(self) -> PageUpload:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __len__(self) -> int:
        return len(self.pages)


def prepare_pages(pages: Iterable[PageSource]) -> PageUpload:
    """Check every page and open it for streaming; close the result (or use `with`).

    Args:
        pages: The pages in order, each a path, bytes, or a binary file object that can
            seek (it is read once to check it and again to send it).

    Returns:
        The checked pages; closing it closes the files it opened (not yours).

    Raises:
        TypeError: One page was given rather than a list of pages.
        InvalidUpload: No pages, or a page that cannot be read, is empty, an SVG, or
            not an image Pillow opens; the message names the page.
    """
    if isinstance(pages, str | bytes | bytearray | memoryview | os.PathLike) or hasattr(
        pages, "read"
    ):
        raise TypeError("pages must be a list of pages: wrap a single page in a list, [page]")
    upload = PageUpload()
    try:
        for number, source in enumerate(pages, start=1):
            upload.pages.append(_prepare(source, number))
    except BaseException:
        upload.close()
        raise
    if not upload.pages:
        raise InvalidUpload("no pages given: pass at least one page image")
    return upload


def check_position(position: object, *, what: str = "position") -> int | None:
    """A chapter or page number as an int; `None` stays `None` (the service picks)."""
    if position is None:
        return None
    if isinstance(position, bool) or not isinstance(position, numbers.Real):
        raise InvalidUpload(
            f"{what} must be a whole number of 1 or more, not {position!r}", item=what
        )
    if isinstance(position, numbers.Integral):
        value = int(position)
    elif float(position).is_integer():
        value = int(float(position))
    else:
        raise InvalidUpload(f"{what} {position!r} is not a whole number", item=what)
    if value < 1:
        raise InvalidUpload(f"{what} {value} is below 1: numbers start at 1", item=what)
    return value


def check_page_position(position: int | None, page_count: int) -> None:
    """A page number may only come with exactly one page (it says where that page goes)."""
    if position is not None and page_count != 1:
        raise InvalidUpload(
            f"position={position} was given with {page_count} pages: a page number places "
            "exactly one page; send the pages one call each, or leave position out",
            item="position",
        )


def check_text(text: object) -> str:
    """Check a novel chapter's text: a non-empty str of at most 200,000 characters.

    Args:
        text: The chapter's text.

    Returns:
        The text, unchanged.

    Raises:
        InvalidUpload: It is not a str, is blank, or is over the limit.
    """
    if not isinstance(text, str):
        raise InvalidUpload(
            f"text must be a str, not {type(text).__name__}: decode it first", item="text"
        )
    if not text.strip():
        raise InvalidUpload("text is empty: a novel chapter needs its text", item="text")
    if len(text) > _MAX_TEXT_CHARS:
        raise InvalidUpload(
            f"text is {len(text):,} characters, over the service's limit of "
            f"{_MAX_TEXT_CHARS:,}: split it into several chapters",
            item="text",
        )
    return text


Form = Literal["pages", "staged", "text"]


def check_form(kind: str | None, form: Form, *, where: str, first_page: str | None = None) -> None:
    """Refuse a form the project's kind does not take: pages or staging for a novel, text
    for a comic. `where` names the project or chapter for the message."""
    if kind == "novel" and form == "pages":
        page = f" (first page: {first_page})" if first_page else ""
        raise InvalidUpload(
            f"{where} is a novel: it takes text, not page images{page}; "
            "create a chapter with text=... instead",
            item=first_page,
        )
    if kind == "novel" and form == "staged":
        raise InvalidUpload(
            f"{where} is a novel: a novel chapter cannot be staged; create it with text=...",
            item="staged",
        )
    if kind == "comic" and form == "text":
        raise InvalidUpload(
            f"{where} is a comic: it takes page images, not text; pass pages=[...]",
            item="text",
        )


def _prepare(source: object, number: int) -> PreparedPage:
    label, file, owned = _open(source, number)
    try:
        image_format = check_image(file, label)
    except BaseException:
        if owned:
            file.close()
        raise
    from PIL import Image

    name = getattr(file, "name", None)
    if isinstance(name, str):
        filename = os.path.basename(name)
    else:
        filename = f"page-{number:03d}.{_EXTENSIONS.get(image_format, image_format.lower())}"

    content_type = Image.MIME.get(image_format, "application/octet-stream")
    return PreparedPage(label, filename, content_type, file, owned)


def _open(source: object, number: int) -> tuple[str, IO[bytes], bool]:
    """The page's label for messages, a binary file positioned at 0, and whether we own it."""
    if isinstance(source, str | os.PathLike):
        path = os.fspath(source)
        try:
            return str(path), open(path, "rb"), True
        except OSError as exc:
            raise InvalidUpload(f"{path}: cannot be read ({exc.strerror})", item=path) from exc
    if isinstance(source, bytes | bytearray | memoryview):
        # BytesIO over bytes shares the buffer until written to: no copy for bytes.
        data = source if isinstance(source, bytes) else bytes(source)
        return f"page {number} (bytes)", io.BytesIO(data), False
    if hasattr(source, "read"):
        name = getattr(source, "name", None)
        label = str(name) if isinstance(name, str) else f"page {number} (file object)"
        if isinstance(source, io.TextIOBase):
            raise InvalidUpload(f"{label}: opened in text mode; open it with 'rb'", item=label)
        if not (hasattr(source, "seek") and getattr(source, "seekable", lambda: True)()):
            raise InvalidUpload(
                f"{label}: the file object cannot seek, and a page is read once to check "
                "it and again to send it; pass a path or bytes instead",
                item=label,
            )
        source.seek(0)
        return label, source, False  # type: ignore[return-value]
    raise InvalidUpload(
        f"page {number}: {type(source).__name__} is not a page; "
        "pass a path, bytes or a binary file object",
        item=f"page {number}",
    )


def check_image(file: IO[bytes], label: str) -> str:
    """Check one page image: refuse an empty file, an SVG, or a file Pillow cannot open.

    Reads only the header (and, for PNG, streams the chunks); rewinds the file after.

    Args:
        file: The image, opened in binary mode and able to seek.
        label: How the messages name the page, e.g. its path.

    Returns:
        Pillow's name of the format, e.g. "PNG" or "JPEG".

    Raises:
        InvalidUpload: The file is empty, an SVG, or not an image Pillow opens (or a
            PNG whose chunks are damaged).
    """
    try:
        head = file.read(_SNIFF_BYTES)
        if not head:
            raise InvalidUpload(f"{label}: the file is empty", item=label)
        if _looks_like_svg(head):
            raise InvalidUpload(
                f"{label}: is an SVG, which the service does not take; "
                "export it as PNG or JPEG first",
                item=label,
            )
        file.seek(0)
        image_format = _identify(file, label)
        if image_format == "PNG":
            file.seek(0)
            _verify_png(file, label)
        return image_format
    finally:
        file.seek(0)


def _looks_like_svg(head: bytes) -> bool:
    """True when the first bytes of a file are SVG markup (plain or gzip-compressed)."""
    if head.startswith(b"\x1f\x8b"):
        try:
            head = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(head, _SNIFF_BYTES)
        except zlib.error:
            return False
    text = head.removeprefix(b"\xef\xbb\xbf").lstrip().lower()
    return text.startswith(b"<") and b"<svg" in text


def _identify(file: IO[bytes], label: str) -> str:
    from PIL import Image, UnidentifiedImageError

    try:
        with warnings.catch_warnings():
            # We decode no pixels, so the bomb warning says nothing about this check.
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            with Image.open(file) as image:
                image_format = image.format
    except Image.DecompressionBombError as exc:
        raise InvalidUpload(
            f"{label}: has more pixels than Pillow will open safely ({exc})", item=label
        ) from exc
    # Pillow's plugins raise a zoo of types for damaged headers; all mean "cannot open".
    # Its "cannot identify" message names the file object's repr (`<_io.BytesIO object
    # at 0x...>`), which says nothing to a person: the label names the file instead.
    except UnidentifiedImageError as exc:
        raise InvalidUpload(
            f"{label}: cannot be opened as an image: it is none of the formats pages are "
            f"sent in ({_PAGE_FORMATS}); export the page as PNG or JPEG and send that",
            item=label,
        ) from exc
    except Exception as exc:
        raise InvalidUpload(
            f"{label}: cannot be opened as an image ({exc}); check that it opens in an "
            "image viewer, or export it again as PNG or JPEG",
            item=label,
        ) from exc
    if not image_format:
        raise InvalidUpload(f"{label}: Pillow cannot tell its image format", item=label)
    return image_format


def _verify_png(file: IO[bytes], label: str) -> None:
    """Check the CRC of every PNG chunk, up to IEND, in bounded reads."""

    def damaged(reason: str) -> InvalidUpload:
        return InvalidUpload(f"{label}: damaged PNG, {reason}; re-export the image", item=label)

    if file.read(len(_PNG_SIGNATURE)) != _PNG_SIGNATURE:
        raise damaged("bad signature")
    while True:
        header = file.read(8)
        if len(header) < 8:
            raise damaged("the file ends before its IEND chunk (truncated)")
        length, chunk_type = struct.unpack(">I4s", header)
        crc = zlib.crc32(chunk_type)
        for block in _blocks(file, length):
            crc = zlib.crc32(block, crc)
        stored = file.read(4)
        if len(stored) < 4:
            raise damaged("the file ends inside a chunk (truncated)")
        if struct.unpack(">I", stored)[0] != crc:
            raise damaged(f"chunk {chunk_type.decode('latin-1')!r} fails its CRC check")
        if chunk_type == b"IEND":
            return


def _blocks(file: IO[bytes], length: int) -> Iterator[bytes]:
    remaining = length
    while remaining:
        block = file.read(min(remaining, _READ_BLOCK))
        if not block:
            return
        remaining -= len(block)
        yield block

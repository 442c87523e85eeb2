"""Checks on uploaded page images, and the number of text lines a page holds.

A page is judged by its bytes, never its name or declared type; which status each
refusal gets is in docs/emulator.md ("Page uploads").
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from pathlib import Path

from PIL import Image, UnidentifiedImageError

from toolkit.emulator.routes.errors import EmulatorError

__all__ = ["MAX_PAGE_BYTES", "MAX_PAGE_PIXELS", "RASTER_FORMATS", "check_page"]

MAX_PAGE_BYTES = 20 * 1024 * 1024
MAX_PAGE_PIXELS = 40_000_000
RASTER_FORMATS = frozenset({"PNG", "JPEG", "WEBP", "GIF", "BMP", "TIFF"})
MIN_LINES, MAX_LINES = 3, 14

_SNIFF_BYTES = 4096
_ACCEPTED = "PNG, JPEG, WebP, GIF, BMP or TIFF"


@dataclass(frozen=True)
class _PageImage:
    format: str
    lines: int
    byte_size: int


def _lines_for(digest: bytes) -> int:
    """Lines of text on a page, from the SHA-256 of its bytes."""
    return MIN_LINES + int.from_bytes(digest[:4], "big") % (MAX_LINES - MIN_LINES + 1)


def check_page(path: Path, *, name: str, digest: bytes, byte_size: int) -> _PageImage:
    """Check one stored upload; raise `EmulatorError` with 413, 415 or 422 when refused."""
    if byte_size > MAX_PAGE_BYTES:
        raise _too_large(name, f"{byte_size:,} bytes is over the {MAX_PAGE_BYTES:,}-byte limit")
    with path.open("rb") as handle:
        head = handle.read(_SNIFF_BYTES)
    kind = _non_raster_kind(head)
    if kind is not None:
        raise EmulatorError(
            415, f"page {name!r} is {kind}, not a raster image; send a {_ACCEPTED} image"
        )
    image_format = _decode(path, name=name)
    return _PageImage(format=image_format, lines=_lines_for(digest), byte_size=byte_size)


def _non_raster_kind(head: bytes) -> str | None:
    """Name the non-raster type the first bytes show, or None."""
    if head.startswith(b"\x1f\x8b"):
        text = _gunzip_head(head)
        if text is None:
            return "gzip-compressed data"
        head = text
    if head.startswith(b"%PDF"):
        return "a PDF document"
    start = head.lstrip(b"\xef\xbb\xbf").lstrip().lower()
    if b"<svg" in start or start.startswith(b"<!doctype svg"):
        return "an SVG image"
    if start.startswith((b"<?xml", b"<!doctype", b"<html", b"<")):
        return "a markup document"
    return None


def _gunzip_head(head: bytes) -> bytes | None:
    try:
        return zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(head, _SNIFF_BYTES)
    except zlib.error:
        return None


def _decode(path: Path, *, name: str) -> str:
    """Open and fully decode the image; returns its format."""
    try:
        with Image.open(path) as image:
            image_format = image.format or "unknown"
            if image_format not in RASTER_FORMATS:
                raise EmulatorError(
                    415, f"page {name!r} is a {image_format} file; send a {_ACCEPTED} image"
                )
            width, height = image.size
            if width * height > MAX_PAGE_PIXELS:
                raise _too_large(
                    name, f"{width}x{height} pixels is over the {MAX_PAGE_PIXELS:,}-pixel limit"
                )
            image.load()
    except EmulatorError:
        raise
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as exc:
        raise _too_large(name, "it has too many pixels") from exc
    except UnidentifiedImageError as exc:
        raise EmulatorError(
            422, f"page {name!r} cannot be opened as an image; send a {_ACCEPTED} image"
        ) from exc
    except (OSError, SyntaxError, ValueError, EOFError) as exc:
        raise EmulatorError(
            422, f"page {name!r} cannot be opened: the image is damaged or cut short ({exc})"
        ) from exc
    return image_format


def _too_large(name: str, why: str) -> EmulatorError:
    return EmulatorError(413, f"page {name!r} is too large: {why}; send a smaller image")

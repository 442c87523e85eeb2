"""Sample chapters for the demo, the notebooks and the tests.

Comic pages are drawn with Pillow so that they look like pages: a title on the first
page, panels with borders, some scenery, characters, speech balloons with short lines of
dialogue and a page number. They are written once, by `_write_samples()`, to
`data/samples/comic/chapter-NN/page-NN.png` and committed, so that every run uploads the
same bytes (the emulator derives a page's line count from its bytes). Novel chapters are
plain text files in `data/samples/novel/`, written by hand.

Decisions:
- Pages are 480 x 680 pixels in a 16-level grey palette: big enough to read, small
  enough that all samples stay a few hundred KB.
- The samples ship inside the package (package data, some 160 KB) and are read through
  `importlib.resources`, so `toolkit demo` works the same from a checkout, a wheel or an
  sdist (issue 36: a wheel without them crashed the demo). Where a `root` given holds
  no pages, comic pages are rendered in memory; a missing novel text is an error naming
  where it was expected.
"""

from __future__ import annotations

import io
import random
import textwrap
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from importlib.resources.abc import Traversable

    from PIL import Image, ImageDraw, ImageFont

__all__ = ["COMIC_CHAPTERS", "comic_chapter", "novel_chapter", "novel_chapters", "page_png"]

_SAMPLES: Traversable = resources.files("toolkit") / "data" / "samples"
"""The samples shipped with the package (a folder on disk in every ordinary install)."""
_PAGE_SIZE = (480, 680)
# Pages per sample comic chapter; the demo and notebooks upload these.
COMIC_CHAPTERS: dict[int, int] = {1: 4, 2: 3, 3: 5}

_TITLES = {1: "The Lantern Keeper", 2: "Low Tide", 3: "Signal Fires"}
_DIALOGUE = [
    "Did you see the light?",
    "It came from the old pier.",
    "Nobody goes there now.",
    "Then who lit the lantern?",
    "Hurry, the tide is turning!",
    "I heard footsteps.",
    "Stay behind me.",
    "This map is wrong...",
    "Look! A door in the sea wall.",
    "We should wait for morning.",
    "No. Tonight, or never.",
    "Grandfather kept a key like this.",
    "The fog is rolling in.",
    "Can you hear the bell?",
    "It rings only for ships.",
    "There are no ships left.",
    "Then it rings for us.",
    "Quiet!",
    "What was that?",
    "Keep the lantern low.",
]
# Panel layouts: rows of relative heights, each row split into relative widths.
_LAYOUTS: list[list[tuple[float, list[float]]]] = [
    [(1.0, [1.0]), (1.2, [1.0, 1.0]), (1.0, [1.4, 1.0])],
    [(1.3, [1.0, 1.6]), (1.0, [1.0]), (1.1, [1.0, 1.0, 1.0])],
    [(1.0, [1.0, 1.0]), (1.6, [1.0]), (1.0, [1.0, 1.3])],
    [(1.0, [1.0]), (1.0, [1.0, 1.0]), (1.0, [1.0, 1.0])],
]

_Box = tuple[int, int, int, int]


def _font(size: int) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    from PIL import ImageFont

    # Pillow's bundled font: the same on every machine, no system fonts needed.
    return ImageFont.load_default(size=size)


def _panels(layout: list[tuple[float, list[float]]], area: _Box, gutter: int) -> list[_Box]:
    left, top, right, bottom = area
    total_h = sum(h for h, _ in layout)
    usable_h = bottom - top - gutter * (len(layout) - 1)
    boxes: list[_Box] = []
    y = float(top)
    for height, widths in layout:
        row_h = usable_h * height / total_h
        usable_w = right - left - gutter * (len(widths) - 1)
        x = float(left)
        for width in widths:
            cell_w = usable_w * width / sum(widths)
            boxes.append((round(x), round(y), round(x + cell_w), round(y + row_h)))
            x += cell_w + gutter
        y += row_h + gutter
    return boxes


def _scenery(draw: ImageDraw.ImageDraw, box: _Box, rng: random.Random) -> None:
    left, top, right, bottom = box
    horizon = rng.randint(top + (bottom - top) // 3, bottom - (bottom - top) // 4)
    # Sky tone, then the sea or the street as hatching below the horizon.
    draw.rectangle([left, top, right, horizon], fill=rng.choice([230, 215, 200]))
    for x in range(left - (bottom - horizon), right, 9):
        draw.line([x, bottom, x + (bottom - horizon), horizon], fill=150, width=1)
    if rng.random() < 0.6:
        r = rng.randint(10, 22)
        cx, cy = rng.randint(left + r, right - r), rng.randint(top + r, max(top + r, horizon - r))
        draw.ellipse([cx - r, cy - r, cx + r, cy + r], fill=255, outline=60, width=2)
    for _ in range(rng.randint(1, 3)):
        w, h = rng.randint(20, 60), rng.randint(20, max(21, (horizon - top) * 2 // 3))
        x = rng.randint(left, max(left, right - w))
        draw.rectangle([x, horizon - h, x + w, horizon], fill=rng.choice([90, 120, 170]))
        for wy in range(horizon - h + 6, horizon - 6, 12):
            draw.rectangle([x + 5, wy, x + 10, wy + 5], fill=240)


def _figure(draw: ImageDraw.ImageDraw, box: _Box, rng: random.Random) -> tuple[int, int]:
    """A simple character; returns where its head is, for a balloon's tail."""
    left, top, right, bottom = box
    r = max(8, min(right - left, bottom - top) // 9)
    cx = rng.randint(left + 2 * r, max(left + 2 * r, right - 2 * r))
    cy = bottom - r * 4
    draw.ellipse([cx - r, cy - r, cx + r, cy + r], fill=255, outline=0, width=2)
    draw.line([cx - r // 3, cy - 2, cx - r // 3, cy + 1], fill=0, width=2)
    draw.line([cx + r // 3, cy - 2, cx + r // 3, cy + 1], fill=0, width=2)
    draw.polygon(
        [(cx - r, bottom), (cx - r // 2, cy + r), (cx + r // 2, cy + r), (cx + r, bottom)],
        fill=rng.choice([40, 70, 100]),
        outline=0,
    )
    return cx, cy - r


def _balloon(
    draw: ImageDraw.ImageDraw, box: _Box, text: str, speaker: tuple[int, int], size: int
) -> None:
    font = _font(size)
    lines = textwrap.wrap(text, width=max(8, (box[2] - box[0]) // (size * 2 // 3) - 2))
    widths = [draw.textlength(line, font=font) for line in lines]
    text_w, text_h = max(widths), len(lines) * (size + 3)
    pad_x, pad_y = size, size * 2 // 3
    bw, bh = int(text_w + 2 * pad_x), int(text_h + 2 * pad_y)
    x0 = max(box[0] + 6, min(speaker[0] - bw // 2, box[2] - 6 - bw))
    y0 = box[1] + 8
    tail_base = (x0 + bw // 2, y0 + bh - 4)
    tip = (speaker[0], min(speaker[1] - 4, box[3] - 4))
    if tip[1] > y0 + bh:
        draw.polygon([tail_base, (tail_base[0] + 14, tail_base[1]), tip], fill=255, outline=0)
    draw.ellipse([x0, y0, x0 + bw, y0 + bh], fill=255, outline=0, width=2)
    for i, line in enumerate(lines):
        lx = x0 + (bw - widths[i]) / 2
        draw.text((lx, y0 + pad_y + i * (size + 3)), line, fill=0, font=font)


def _panel(width: int, height: int, rng: random.Random) -> Image.Image:
    """One panel drawn on its own image, so that nothing spills over its border."""
    from PIL import Image, ImageDraw

    panel = Image.new("L", (width, height), 255)
    draw = ImageDraw.Draw(panel)
    box = (0, 0, width, height)
    _scenery(draw, box, rng)
    if rng.random() < 0.8:
        speaker = _figure(draw, box, rng)
        _balloon(draw, box, rng.choice(_DIALOGUE), speaker, size=13)
    return panel


def _render_page(chapter: int, page: int) -> Image.Image:
    """One comic page, the same for the same chapter and page number."""
    from PIL import Image, ImageDraw

    rng = random.Random(chapter * 1000 + page)
    width, height = _PAGE_SIZE
    image = Image.new("L", _PAGE_SIZE, 255)
    draw = ImageDraw.Draw(image)
    top = 24
    if page == 1:
        title = f"Chapter {chapter}: {_TITLES.get(chapter, 'Untitled')}"
        draw.text((width / 2, 30), title, fill=0, font=_font(22), anchor="mm")
        top = 56
    layout = _LAYOUTS[(chapter + page) % len(_LAYOUTS)]
    for box in _panels(layout, (20, top, width - 20, height - 40), gutter=10):
        image.paste(_panel(box[2] - box[0], box[3] - box[1], rng), box[:2])
        draw.rectangle(box, outline=0, width=3)
    draw.text((width / 2, height - 20), str(page), fill=0, font=_font(16), anchor="mm")
    # A 16-level palette keeps the PNG small while the text stays smooth.
    return image.quantize(colors=16)


def page_png(chapter: int, page: int) -> bytes:
    """A rendered page as PNG bytes."""
    buffer = io.BytesIO()
    _render_page(chapter, page).save(buffer, "PNG", optimize=True)
    return buffer.getvalue()


def comic_chapter(chapter: int, *, root: Path | None = None) -> list[Path] | list[bytes]:
    """The pages of sample comic chapter `chapter`, in reading order.

    Paths to the shipped files (or those under `root`), else the pages rendered in memory.
    """
    if chapter not in COMIC_CHAPTERS:
        raise ValueError(f"no sample comic chapter {chapter}; choose from {sorted(COMIC_CHAPTERS)}")
    folder = (root or _SAMPLES) / "comic" / f"chapter-{chapter:02d}"
    found = _files(folder, "page-", ".png")
    if found and all(isinstance(page, Path) for page in found):
        return [Path(str(page)) for page in found]
    if found:  # a package read from a zip: the bytes, not paths
        return [page.read_bytes() for page in found]
    return [page_png(chapter, page) for page in range(1, COMIC_CHAPTERS[chapter] + 1)]


def _files(folder: Traversable, prefix: str, suffix: str) -> list[Traversable]:
    """The files of `folder` named `prefix...suffix`, by name (none if it is missing)."""
    if not folder.is_dir():
        return []
    named = (f for f in folder.iterdir() if f.name.startswith(prefix) and f.name.endswith(suffix))
    return sorted(named, key=lambda f: f.name)


def novel_chapter(chapter: int, *, root: Path | None = None) -> str:
    """The text of sample novel chapter `chapter`."""
    path = (root or _SAMPLES) / "novel" / f"chapter-{chapter:02d}.txt"
    if not path.is_file():
        raise FileNotFoundError(
            f"sample novel text {path} is missing; the samples ship in the package's "
            "data/samples folder: reinstall the toolkit"
        )
    return path.read_text(encoding="utf-8")


def novel_chapters(*, root: Path | None = None) -> list[int]:
    """The numbers of the sample novel chapters shipped (or under `root`)."""
    found = _files((root or _SAMPLES) / "novel", "chapter-", ".txt")
    return [int(f.name.removesuffix(".txt").split("-")[1]) for f in found]


def _write_samples(root: Path | None = None) -> list[Path]:
    """Render every sample comic page to `root/comic/` (default: the package's
    `data/samples`, in a checkout)."""
    written = []
    for chapter, count in COMIC_CHAPTERS.items():
        folder = (root or Path(str(_SAMPLES))) / "comic" / f"chapter-{chapter:02d}"
        folder.mkdir(parents=True, exist_ok=True)
        for page in range(1, count + 1):
            path = folder / f"page-{page:02d}.png"
            path.write_bytes(page_png(chapter, page))
            written.append(path)
    return written


if __name__ == "__main__":
    for written_path in _write_samples():
        print(f"{written_path}  {written_path.stat().st_size // 1024} KB")

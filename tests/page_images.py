"""Small raster page images for tests (importable from any test directory)."""

from __future__ import annotations

import io
import random


def make_page(seed: int = 0, *, size: tuple[int, int] = (120, 170), fmt: str = "PNG") -> bytes:
    """A small raster page image; different seeds give different bytes."""
    from PIL import Image, ImageDraw

    rng = random.Random(seed)
    image = Image.new("RGB", size, "white")
    draw = ImageDraw.Draw(image)
    for _ in range(6):
        x, y = rng.randrange(size[0] - 20), rng.randrange(size[1] - 20)
        draw.ellipse([x, y, x + rng.randrange(10, 40), y + rng.randrange(8, 30)], outline="black")
    buffer = io.BytesIO()
    image.save(buffer, fmt)
    return buffer.getvalue()


def make_folder(root, pages_per_chapter: dict[int, int], *, seed: int = 0):
    """A folder of comic chapters, `chapter-NN/page-K.png`, as `toolkit upload` takes it.

    `pages_per_chapter` maps each chapter number to its page count; returns `root`.
    """
    from pathlib import Path

    root = Path(root)
    for number, pages in pages_per_chapter.items():
        folder = root / f"chapter-{number:02d}"
        folder.mkdir(parents=True, exist_ok=True)
        for page in range(1, pages + 1):
            (folder / f"page-{page}.png").write_bytes(make_page(seed + number * 100 + page))
    return root

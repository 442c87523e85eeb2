"""The sample chapters: committed pages that look like pages, and the client accepts them."""

from __future__ import annotations

from pathlib import Path

from PIL import Image

from toolkit import samples
from toolkit.client.uploads import check_text, prepare_pages


def test_committed_pages_are_in_reading_order_and_accepted_by_the_client():
    for chapter, count in samples.COMIC_CHAPTERS.items():
        pages = samples.comic_chapter(chapter)
        assert [Path(p).name for p in pages] == [f"page-{n:02d}.png" for n in range(1, count + 1)]
        with prepare_pages(pages) as upload:
            assert len(upload) == count
        for page in pages:
            with Image.open(page) as image:
                assert image.size == samples._PAGE_SIZE
                assert Path(page).stat().st_size < 30_000  # the samples stay small


def test_pages_are_drawn_with_panels_balloons_and_numbers():
    page = samples._render_page(1, 2).convert("L")
    width, height = page.size
    # Panel borders are black lines across the page; balloons and gutters are white.
    histogram = page.histogram()
    assert histogram[0] > width * 10 and histogram[255] > width * height // 20
    assert samples.page_png(1, 2) == samples.page_png(1, 2)  # the same page every time
    assert samples.page_png(1, 2) != samples.page_png(2, 2)


def test_pages_are_rendered_when_the_folder_is_missing(tmp_path: Path):
    pages = samples.comic_chapter(2, root=tmp_path)
    assert len(pages) == samples.COMIC_CHAPTERS[2]
    assert all(isinstance(p, bytes) and p.startswith(b"\x89PNG") for p in pages)


def test_novel_chapters_are_a_few_thousand_characters():
    numbers = samples.novel_chapters()
    assert numbers == [1, 2]
    for number in numbers:
        text = samples.novel_chapter(number)
        assert 2_000 < len(check_text(text)) < 10_000


def test_write_samples_writes_every_page(tmp_path: Path):
    written = samples._write_samples(tmp_path)
    assert len(written) == sum(samples.COMIC_CHAPTERS.values())
    assert samples.comic_chapter(3, root=tmp_path) == sorted(written)[-5:]

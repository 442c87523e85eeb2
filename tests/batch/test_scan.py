"""`toolkit.batch.scan_folder`: what a folder of chapters holds, and what is wrong in it."""

from __future__ import annotations

import pytest
from page_images import make_folder, make_page

from toolkit.batch import scan_folder
from toolkit.errors import InvalidUpload

SVG = b'<svg xmlns="http://www.w3.org/2000/svg"/>'


def problems(scan) -> list[str]:
    return [str(p) for p in scan.problems]


def test_chapters_in_number_order_pages_in_natural_order(tmp_path):
    make_folder(tmp_path, {10: 1, 2: 1})
    (tmp_path / "ch7 - the storm").mkdir()
    for name in ("page-10.png", "page-2.png", "page-1.png"):
        (tmp_path / "ch7 - the storm" / name).write_bytes(make_page(len(name)))
    (tmp_path / ".DS_Store").write_bytes(b"junk")  # hidden files are not chapters
    (tmp_path / "ch7 - the storm" / "Thumbs.db").write_bytes(b"junk")
    scan = scan_folder(tmp_path, kind="comic")
    assert scan.problems == []
    assert [(c.number, c.name) for c in scan.chapters] == [
        (2, "chapter-02/"), (7, "ch7 - the storm/"), (10, "chapter-10/"),
    ]  # fmt: skip
    storm = scan.chapters[1]
    assert [p.name for p in storm.pages] == ["page-1.png", "page-2.png", "page-10.png"]
    assert storm.size == sum(p.stat().st_size for p in storm.pages)
    assert storm.kind == "comic" and len(storm.digest) == 64


def test_every_problem_is_listed_at_once(tmp_path):
    make_folder(tmp_path, {1: 2, 2: 1, 3: 1, 5: 1})
    (tmp_path / "chapter-01" / "cover.png").write_bytes(SVG)
    (tmp_path / "chapter-02" / "broken.png").write_bytes(b"\x89PNG\r\n\x1a\nnot really")
    (tmp_path / "chapter-03" / "extras").mkdir()
    (tmp_path / "chapter-005").mkdir()  # chapter 5 again
    (tmp_path / "chapter-005" / "p.png").write_bytes(make_page(5))
    (tmp_path / "chapter-04").mkdir()  # empty
    (tmp_path / "bonus").mkdir()  # no number
    (tmp_path / "chapter-00").mkdir()
    (tmp_path / "notes.md").write_text("to do")
    scan = scan_folder(tmp_path, kind="comic")
    found = problems(scan)
    svg = "chapter-01/cover.png: is an SVG, which the service does not take; export it as PNG"
    assert f"{svg} or JPEG first" in found
    assert any(p.startswith("chapter-02/broken.png: cannot be opened as an image") for p in found)
    assert "chapter-03/extras: a folder inside a chapter folder: pages only" in found
    assert "chapter-04/: no page images in it" in found
    assert "bonus: no chapter number in its name (use chapter-01, ...)" in found
    assert "chapter-00: chapter numbers start at 1" in found
    assert "notes.md: not a chapter: expected a folder of page images or a .txt file" in found
    assert "chapter-05/: chapter 5 again (also chapter-005/)" in found
    assert [c.name for c in scan.chapters] == ["chapter-005/"]


def test_novel_chapters_are_utf8_text_files(tmp_path):
    (tmp_path / "chapter-2.txt").write_text("Second.\n", encoding="utf-8")
    (tmp_path / "chapter-1.txt").write_bytes("\ufeffFirst line.\nSecond line.\n".encode())
    (tmp_path / "chapter-3.txt").write_bytes(b"\xff\xfe\x00")
    (tmp_path / "chapter-4.txt").write_text("   \n")
    scan = scan_folder(tmp_path, kind="novel")
    assert [(c.number, c.text) for c in scan.chapters] == [
        (1, "First line.\nSecond line.\n"), (2, "Second.\n"),
    ]  # fmt: skip
    assert problems(scan) == [
        "chapter-3.txt: is not UTF-8 text; save it as UTF-8",
        "chapter-4.txt: text is empty: a novel chapter needs its text",
    ]


def test_a_chapter_of_the_other_kind_is_a_problem(tmp_path):
    make_folder(tmp_path, {1: 1})
    (tmp_path / "chapter-02.txt").write_text("Text.\n")
    assert problems(scan_folder(tmp_path, kind="comic")) == [
        "chapter-02.txt: a text chapter, but the project is a comic: its chapters are folders "
        "of pages"
    ]
    assert "both chapter folders and .txt files" in problems(scan_folder(tmp_path))[0]


def test_an_empty_or_missing_folder(tmp_path):
    assert problems(scan_folder(tmp_path)) == [
        f"{tmp_path.name}: no chapters found: expected chapter-01/ folders or .txt files"
    ]
    with pytest.raises(InvalidUpload, match="does not exist: give the folder"):
        scan_folder(tmp_path / "nowhere")
    (tmp_path / "file.txt").write_text("x")
    with pytest.raises(InvalidUpload, match="is not a folder"):
        scan_folder(tmp_path / "file.txt")

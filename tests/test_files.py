"""Files the toolkit keeps for itself are written whole or not at all: the upload record,
the held pages' journal, the watch's check record and the kept run stages all go
through `toolkit.files`, so a writer that fails half-way (a full disk, a value that does
not serialise, a kill) leaves the file as it was and nothing beside it."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pyarrow as pa
import pytest

from toolkit.files import write_arrow, write_text_whole, write_whole


def test_a_write_that_fails_half_way_leaves_the_file_before_and_no_temporary(
    tmp_path: Path,
) -> None:
    target = tmp_path / "record.json"
    write_text_whole(target, '{"chapters": 1}')

    def half(path: str) -> None:
        Path(path).write_text('{"chapt', encoding="utf-8")
        raise OSError(28, "No space left on device")

    with pytest.raises(OSError, match="No space left"):
        write_whole(target, half)
    assert target.read_text(encoding="utf-8") == '{"chapters": 1}'
    assert sorted(p.name for p in tmp_path.iterdir()) == ["record.json"]


def test_a_new_file_appears_whole_with_the_folders_usual_mode(tmp_path: Path) -> None:
    target = tmp_path / "journal.json"
    write_text_whole(target, "é\n")
    write_text_whole(target, "second\n")
    assert target.read_text(encoding="utf-8") == "second\n"
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(target.stat().st_mode) == 0o666 & ~umask
    assert sorted(p.name for p in tmp_path.iterdir()) == ["journal.json"]


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_a_folder_that_cannot_be_written_raises_and_keeps_the_file(tmp_path: Path) -> None:
    target = tmp_path / "record.json"
    write_text_whole(target, "before")
    tmp_path.chmod(0o555)
    try:
        with pytest.raises(PermissionError):
            write_text_whole(target, "after")
    finally:
        tmp_path.chmod(0o755)
    assert target.read_text(encoding="utf-8") == "before"


def test_an_arrow_file_reads_back_with_its_types_and_metadata(tmp_path: Path) -> None:
    table = pa.table(
        {"code": pa.array(["a", "b", "a"]).dictionary_encode(), "n": pa.array([1, None, 3])}
    ).replace_schema_metadata({"toolkit": "{}"})
    write_whole(tmp_path / "stage.arrow", lambda path: write_arrow(path, table))
    with pa.OSFile(str(tmp_path / "stage.arrow")) as source:
        read = pa.ipc.open_file(source).read_all()
    assert read.equals(table, check_metadata=True)

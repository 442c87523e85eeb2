"""Files the toolkit keeps for itself: written whole or not at all, so a reader, another
process or a crash mid-write sees the file before or the file after, never half of one;
and tables kept as Arrow files.

The new content goes to a temporary file beside the target, which is then renamed over
it (a rename within a folder replaces a file in one step on POSIX and Windows)."""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable
from pathlib import Path
from typing import Final

import pyarrow as pa

__all__ = ["write_arrow", "write_text_whole", "write_whole"]

# LZ4: 30,000 chapters x a month's run stages are 186 MiB as they are, 39 MiB so, written
# in 0.35-0.4 s and read in 0.7-0.8 s; zstd made 18 MiB but read in 2.4-2.7 s (load 8).
_COMPRESSED: Final = pa.ipc.IpcWriteOptions(compression="lz4")


def write_whole(path: str | os.PathLike[str], write: Callable[[str], object]) -> None:
    """Make `path` by `write(temporary)`, a path beside it, then rename that into place.

    Raises what `write` or the rename raises (`OSError` for a folder that cannot be
    written or a full disk); the target is then as it was and the temporary is gone."""
    folder, name = os.path.split(os.fspath(path))
    # Named per writer, so two processes never rename each other's half-written file;
    # hidden, so listings of the folder pass over it; made with the umask's mode, as any
    # file the toolkit writes (mkstemp's would be 0600).
    temporary = os.path.join(folder, f".{name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    try:
        write(temporary)
        os.replace(temporary, path)
    finally:
        if os.path.exists(temporary):
            os.remove(temporary)


def write_text_whole(path: str | os.PathLike[str], text: str) -> None:
    """`path` holds `text` (UTF-8) whole, or is as it was. Raises `OSError`."""
    write_whole(path, lambda temporary: Path(temporary).write_text(text, encoding="utf-8"))


def write_arrow(path: str | os.PathLike[str], table: pa.Table, *, compressed: bool = True) -> None:
    """`table` as an Arrow IPC file (LZ4 unless not `compressed`: then a reader can map
    it and read a few rows without reading it whole), which `pyarrow.ipc.open_file`
    reads back with its schema, metadata and dictionaries. Raises `OSError` or
    `pyarrow.ArrowException`."""
    options = _COMPRESSED if compressed else pa.ipc.IpcWriteOptions()
    with (
        pa.OSFile(os.fspath(path), "wb") as sink,
        pa.ipc.new_file(sink, table.schema, options=options) as writer,
    ):
        writer.write_table(table)

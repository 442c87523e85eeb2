"""The process's stderr with native libraries' panics kept off it.

delta-rs (through `object_store`) panics in its worker threads when the disk fills in
the middle of a write (`Already shut down`, object_store's buffered.rs), and then
returns the error the store turns into a `StoreError`, one line. Rust's panic hook
writes the panic, and with `RUST_BACKTRACE` a backtrace, straight to file descriptor 2:
Python never sees it, so no `except` can keep it off, and neither can an environment
variable (`RUST_BACKTRACE=0` drops the backtrace, not the panic's lines; the hook is
delta-rs' to set, and its Python package offers no way to).

`panics_kept_off_stderr()` routes descriptor 2 through a pipe while it is open. A
thread copies what comes to the real stderr as it comes (a progress bar's partial lines
too), except a panic's block (`thread '...' panicked at ...` up to its last backtrace
line), which goes to the `toolkit` logger at DEBUG instead. The `toolkit` command opens
it for its whole life; `SnapshotStore` for each of its writes, so a notebook (whose
kernel shows what reaches descriptor 2 in the cell) or a program sees the one-line
error only. Descriptor 2 is the process's: the blocks of several threads and nested
ones share one pipe, routed while any is open.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import select
import sys
import threading
from collections.abc import Iterator

__all__ = ["PanicFilter", "panics_kept_off_stderr"]

log = logging.getLogger("toolkit")

_HEADER = re.compile(rb"^thread '[^'\n]*'(?: \(\d+\))? panicked at ")
_START = b"thread '"
# A partial line is held back this long at most (it may be a panic's first bytes).
_HOLD_SECONDS = 0.2


class PanicFilter:
    """What of a byte stream reaches the terminal: everything but panics' blocks.

    `feed` takes the bytes as they come and returns those to show now; `flush` the ones
    held back (a blank line or a partial line that may begin a panic), when no more
    came for a while or the stream ended. Rust's hook writes a blank line, the header
    (`thread 'NAME' (ID) panicked at FILE:LINE:COL:`), the message, then either a note
    (`note: run with RUST_BACKTRACE=1 ...`) or `stack backtrace:`, its indented frames
    and, unless the backtrace is full, a closing note.
    """

    def __init__(self) -> None:
        self.pending = b""
        self.panic: list[bytes] | None = None  # the lines of the panic being dropped
        self.frames = False  # inside its backtrace

    def feed(self, data: bytes) -> bytes:
        self.pending += data
        shown: list[bytes] = []
        while self.pending:
            end = self.pending.find(b"\n")
            if end < 0:
                if self.panic is None and not _may_start_panic(self.pending):
                    shown.append(self.pending)
                    self.pending = b""
                break
            line = self.pending[: end + 1]
            if self.panic is not None:
                if self.frames and not line[:1].isspace() and not line.startswith(b"note: "):
                    self._end_panic()  # a full backtrace ends at its last frame
                    continue
                self.pending = self.pending[end + 1 :]
                self.panic.append(line)
                self.frames = self.frames or line.startswith(b"stack backtrace:")
                if line.startswith(b"note: "):
                    self._end_panic()
                continue
            if _HEADER.match(line):
                self.pending = self.pending[end + 1 :]
                self.panic = [line]
                continue
            if line == b"\n":  # Rust writes a blank line before the header
                rest = self.pending[1:]
                after = rest.find(b"\n")
                if after < 0 and _may_start_panic(rest):
                    break  # shown once the next line is known not to be a panic's
                if after >= 0 and _HEADER.match(rest[: after + 1]):
                    self.pending = rest
                    continue
            shown.append(line)
            self.pending = self.pending[end + 1 :]
        return b"".join(shown)

    def flush(self, *, ended: bool = False) -> bytes:
        """What is held back, shown now. A panic still open stays open (symbolising a
        backtrace takes a while) unless the stream `ended`."""
        if self.panic is not None:
            if not ended:
                return b""
            self._end_panic()
        held, self.pending = self.pending, b""
        return held

    def _end_panic(self) -> None:
        text = b"".join(self.panic or []).decode(errors="replace").strip()
        log.debug("a native library panicked (kept off the terminal):\n%s", text)
        self.panic = None
        self.frames = False


def _may_start_panic(partial: bytes) -> bool:
    return partial.startswith(_START) or _START.startswith(partial)


class _Route:
    """Descriptor 2's route through the filter: open while any block is (`users`)."""

    lock = threading.Lock()
    users = 0
    terminal: int | None = None  # the real stderr, while routed
    copier: threading.Thread | None = None


@contextlib.contextmanager
def panics_kept_off_stderr() -> Iterator[None]:
    """Descriptor 2 through a `PanicFilter` until the block ends (see the module)."""
    with _Route.lock:
        if _Route.users == 0:
            _open_route()
        _Route.users += 1
    try:
        yield
    finally:
        with _Route.lock:
            _Route.users -= 1
            if _Route.users == 0:
                _close_route()


def _open_route() -> None:
    try:
        terminal = os.dup(2)
    except OSError:  # no stderr at all (a windowless process): nothing to keep off
        return
    if os.name != "posix":  # select() takes no pipe on Windows: stderr as it is
        os.close(terminal)
        return
    reading, writing = os.pipe()
    with contextlib.suppress(ValueError, OSError):
        sys.stderr.flush()
    os.dup2(writing, 2)
    os.close(writing)
    _Route.terminal = terminal
    _Route.copier = threading.Thread(
        target=_copy, args=(reading, terminal), name="toolkit-stderr", daemon=True
    )
    _Route.copier.start()


def _close_route() -> None:
    terminal, copier = _Route.terminal, _Route.copier
    _Route.terminal = _Route.copier = None
    if terminal is None or copier is None:
        return
    with contextlib.suppress(ValueError, OSError):
        sys.stderr.flush()
    os.dup2(terminal, 2)  # closes the pipe's last writer: the copier reads its end
    copier.join(timeout=5)
    if not copier.is_alive():  # else a child process still holds the pipe open
        os.close(terminal)


def _copy(reading: int, terminal: int) -> None:
    """The copier thread: the pipe to the terminal through a `PanicFilter`."""
    kept = PanicFilter()
    try:
        while True:
            ready, _, _ = select.select([reading], [], [], _HOLD_SECONDS)
            if not ready:
                _write(terminal, kept.flush())
                continue
            data = os.read(reading, 65536)
            if not data:
                break
            _write(terminal, kept.feed(data))
        _write(terminal, kept.flush(ended=True))
    finally:
        os.close(reading)


def _write(terminal: int, data: bytes) -> None:
    with contextlib.suppress(OSError):  # a closed terminal takes nothing
        while data:
            data = data[os.write(terminal, data) :]

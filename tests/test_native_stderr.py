"""The command's stderr, and the process's while the store writes, keep a native
library's panic off the terminal and everything else on it, as it comes
(tests/test_cli_errors.py and tests/store/test_store_damage.py have the real full disk)."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from toolkit.native_stderr import PanicFilter

ROOT = Path(__file__).resolve().parent.parent
HEADER = (
    b"\nthread 'tokio-rt-worker' (21162) panicked at /home/runner/.cargo/registry/src/"
    b"object_store-0.13.2/src/buffered.rs:369:41:\nAlready shut down\n"
)
PANICS = {
    # RUST_BACKTRACE unset
    "no backtrace": HEADER
    + b"note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n",
    # RUST_BACKTRACE=1
    "backtrace": HEADER
    + b"stack backtrace:\n   0: __rustc::rust_begin_unwind\n             at /rustc/x.rs:1:2\n"
    b"note: Some details are omitted, run with `RUST_BACKTRACE=full` for a verbose "
    b"backtrace.\n",
    # RUST_BACKTRACE=full: no closing note, the frames end at the next unindented line
    "full backtrace": HEADER
    + b"stack backtrace:\n   0:     0x7f00 - std::backtrace\n   1:     0x7f01 - main\n",
}
AFTER = b"toolkit snapshot: could not write to store/chapters: the disk is full\n"


def python(code: str) -> subprocess.CompletedProcess[str]:
    """`code` run in a Python process of its own (its descriptor 2 is the test's to read)."""
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, env={**os.environ, "PYTHONPATH": str(ROOT)})  # fmt: skip


def shown(chunks: list[bytes]) -> bytes:
    kept = PanicFilter()
    return b"".join(kept.feed(chunk) for chunk in chunks) + kept.flush(ended=True)


@pytest.mark.parametrize("panic", PANICS.values(), ids=PANICS.keys())
def test_a_panic_is_kept_off_and_the_lines_around_it_shown(panic):
    progress = b"Simulated day:   0%|          | 0/1\r"
    assert shown([progress, panic, AFTER]) == progress + AFTER
    before = b"toolkit snapshot: warning: a retry\n"
    assert shown([before + panic + AFTER]) == before + AFTER


@pytest.mark.parametrize("panic", PANICS.values(), ids=PANICS.keys())
def test_a_panic_written_byte_by_byte_is_kept_off_too(panic):
    stream = b"warning: one\n" + panic + panic + AFTER
    assert shown([stream[i : i + 1] for i in range(len(stream))]) == b"warning: one\n" + AFTER


def test_a_partial_line_is_shown_at_once_unless_it_may_begin_a_panic():
    kept = PanicFilter()
    assert kept.feed(b"\rSimulated day:  50%") == b"\rSimulated day:  50%"
    assert kept.feed(b"thr") == b""  # perhaps `thread '...' panicked`
    assert kept.feed(b"ee lines\n") == b"three lines\n"
    assert kept.feed(b"\n") == b""  # a blank line last: perhaps Rust's before a panic
    assert kept.flush() == b"\n"  # nothing followed for a while: it was just a blank line


def test_lines_that_only_look_like_a_panic_are_shown():
    text = b"thread 'main' finished\nthread 'x' panicked?\n"
    assert shown([text]) == text


def test_a_kept_off_panic_is_logged_at_debug(caplog):
    with caplog.at_level(logging.DEBUG, logger="toolkit"):
        shown([PANICS["no backtrace"]])
    (record,) = caplog.records
    assert record.levelno == logging.DEBUG and "Already shut down" in record.getMessage()


def test_the_command_shows_its_stderr_and_keeps_a_panic_off_it():
    # A panic written to descriptor 2 while a command runs, as delta-rs' threads do.
    code = (
        "import os, sys; from toolkit import cli\n"
        "def run(args):\n"
        "    print('before', file=sys.stderr)\n"
        f"    os.write(2, {PANICS['backtrace']!r})\n"
        "    print('after', file=sys.stderr)\n"
        "cli._demo = run\n"
        "sys.exit(cli.main(['demo']))\n"
    )
    ran = python(code)
    assert (ran.returncode, ran.stderr) == (0, "before\nafter\n")


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts /proc/self/fd")
def test_nested_blocks_and_threads_share_one_route_and_stderr_is_whole_after():
    # The command's block around the store's, and writes side by side in threads: each
    # panic kept off, each line shown, and descriptor 2 the real stderr again after.
    code = (
        "import os, threading\n"
        "from toolkit.native_stderr import panics_kept_off_stderr as kept\n"
        "def write(n):\n"
        "    for _ in range(20):\n"
        "        with kept():\n"
        f"            os.write(2, {PANICS['no backtrace']!r})\n"
        "    os.write(2, b'thread %d\\n' % n)\n"
        "fds = sorted(os.listdir('/proc/self/fd'))\n"
        "with kept():\n"
        "    threads = [threading.Thread(target=write, args=(n,)) for n in range(4)]\n"
        "    [t.start() for t in threads]\n"
        "    [t.join() for t in threads]\n"
        "    with kept():\n"
        f"        os.write(2, {PANICS['backtrace']!r})\n"
        "os.write(2, b'after\\n')\n"
        "write(9)\n"
        "print(sorted(os.listdir('/proc/self/fd')) == fds)\n"
    )
    ran = python(code)
    assert ran.returncode == 0, ran.stderr
    lines = ran.stderr.splitlines()
    assert sorted(lines[:4]) == [f"thread {n}" for n in range(4)]
    assert lines[4:] == ["after", "thread 9"]
    assert ran.stdout == "True\n"  # no descriptor left open: every copier ended

"""Loaded only under tests/wallclock/run_at.sh: libfaketime makes `time.sleep` fail.

With the monotonic clock left real (FAKETIME_DONT_FAKE_MONOTONIC=1, else thread waits
hang), Python 3.11's `time.sleep` gets EINVAL from the faked `clock_nanosleep`; a
`select` with no descriptors waits the same time and is not faked.
"""

import select
import time


def _sleep(seconds: float) -> None:
    if seconds > 0:
        select.select([], [], [], seconds)


time.sleep = _sleep

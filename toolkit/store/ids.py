"""Snapshot ids: UUIDv7-shaped, sorting by snapshot time, unique across processes."""

from __future__ import annotations

import secrets
import time
from datetime import UTC, datetime

__all__ = ["new_id"]


def new_id(when: datetime) -> str:
    """A UUIDv7-shaped id that sorts by `when`, then by the moment it was made.

    The first 60 bits are `when` (milliseconds, then the sub-millisecond part), so ids
    sort as their snapshot times do; the next 52 bits are the wall clock in
    microseconds, so two ids for the same `when` sort in the order they were made, by
    whichever process; 10 random bits keep two processes in the same microsecond apart.
    """
    micros = int(when.astimezone(UTC).timestamp() * 1_000_000)
    millis, sub = divmod(micros, 1000)
    sub12 = sub * 4096 // 1000
    made = time.time_ns() // 1000 & ((1 << 52) - 1)
    value = (millis & ((1 << 48) - 1)) << 80 | 0x7 << 76 | sub12 << 64
    value |= 0b10 << 62 | made << 10 | secrets.randbits(10)
    text = f"{value:032x}"
    return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"

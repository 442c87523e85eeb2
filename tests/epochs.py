"""The instants the suite's emulators start at (see tests/conftest.py's `epoch`)."""

from __future__ import annotations

from datetime import UTC, datetime

# The suite's default instant: a Wednesday morning, far from any day or week boundary.
SUITE_START = datetime(2026, 11, 18, 9, 0, tzinfo=UTC)

# The instants where calendars and daily maintenance go wrong, if they do.
EPOCHS = {
    "morning": SUITE_START,
    "before-midnight": datetime(2026, 11, 18, 23, 40, tzinfo=UTC),
    # 00:30 UTC on the last Sunday of October: summer time ends in Europe at 01:00 UTC.
    "summer-time-ends": datetime(2026, 10, 25, 0, 30, tzinfo=UTC),
    "new-year": datetime(2026, 12, 31, 23, 30, tzinfo=UTC),
    "leap-day": datetime(2028, 2, 29, 9, 0, tzinfo=UTC),
}

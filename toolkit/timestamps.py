"""Times as the service and HTTP write them, read as timezone-aware UTC datetimes.

One place for the three formats: ISO 8601 in bodies and events, milliseconds since 1970
(`lastChapterAt`), and the HTTP date of the `Date` and `Retry-After` headers.
"""

from __future__ import annotations

from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any


def parse_time(value: Any) -> datetime | None:
    """An ISO 8601 time as an aware datetime (UTC when it has no zone); None for None or "".

    Raises `ValueError` when the text is not an ISO 8601 time.
    """
    if value is None or value == "":
        return None
    parsed = datetime.fromisoformat(str(value))
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def parse_millis(value: Any) -> datetime | None:
    """Milliseconds since 1970 as an aware UTC datetime."""
    if value is None:
        return None
    return datetime.fromtimestamp(float(value) / 1000, tz=UTC)


def parse_http_date(value: Any) -> datetime | None:
    """An HTTP date (`Date`, `Retry-After`) in UTC; None when absent or unreadable."""
    if value is None:
        return None
    try:
        parsed = parsedate_to_datetime(str(value))
    except (TypeError, ValueError):
        return None
    return parsed.astimezone(UTC) if parsed.tzinfo else parsed.replace(tzinfo=UTC)

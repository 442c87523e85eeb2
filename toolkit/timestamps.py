"""Times as the service and HTTP write them, read as timezone-aware UTC datetimes.

One place for the three formats: ISO 8601 in bodies and events, milliseconds since 1970
(`lastChapterAt`), and the HTTP date of the `Date` and `Retry-After` headers.
"""

from __future__ import annotations

from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import TYPE_CHECKING, Any, TypeAlias

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["When", "in_hours", "parse_http_date", "parse_millis", "parse_time", "utc"]

# A moment a user gives (`since`, `until`, `at`, `as_of`): a naive one is UTC, except
# where a function takes a `tz` to read it in.
When: TypeAlias = "datetime | pd.Timestamp | str"


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
    """An HTTP date (`Date`, `Retry-After`) in UTC; None when absent or unreadable.

    The one reader of HTTP dates. Every form RFC 9110 allows reads as UTC whatever the
    machine's zone: IMF-fixdate (`GMT`), the obsolete RFC 850 and asctime forms, and
    numeric zones; `-0000` ("zone unknown" in RFC 5322), which the standard library
    leaves naive, is UTC here, never local time. A two-digit RFC 850 year is read as the
    standard library does (00-68 -> 20xx, 69-99 -> 19xx), right for any date sent today.
    """
    if value is None:
        return None
    try:
        parsed = parsedate_to_datetime(str(value))
    except (TypeError, ValueError):
        return None
    return parsed.astimezone(UTC) if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def utc(when: When) -> datetime:
    """A time as an aware UTC datetime, to the microsecond.

    Args:
        when: A datetime, a pandas Timestamp or ISO 8601 text; a naive one is taken as
            UTC.

    Returns:
        The same instant in UTC.
    """
    if type(when) is datetime:  # to the microsecond already, and any year: no pandas
        return when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)
    import pandas as pd  # here, so that the client (which reads times too) loads no pandas

    stamp = pd.Timestamp(when)
    stamp = stamp.tz_localize(UTC) if stamp.tzinfo is None else stamp.tz_convert(UTC)
    return stamp.floor("us").to_pydatetime()


def in_hours(spans: pd.Series) -> pd.Series:
    """Durations (a Series of timedeltas) in hours, as floats; a missing one stays missing."""
    hours: pd.Series = spans.dt.total_seconds() / 3600
    return hours

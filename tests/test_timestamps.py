from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from toolkit.timestamps import parse_http_date, parse_millis, parse_time


def test_iso_times_are_aware_and_a_zoneless_one_is_utc():
    assert parse_time("2026-01-02T03:04:05Z") == datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    assert parse_time("2026-01-02T03:04:05") == datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    plus_two = parse_time("2026-01-02T05:04:05+02:00")
    assert plus_two == datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    assert plus_two is not None and plus_two.utcoffset() == timedelta(hours=2)
    assert parse_time(None) is None and parse_time("") is None
    with pytest.raises(ValueError):
        parse_time("next tuesday")


def test_milliseconds_since_1970():
    assert parse_millis(86_400_000) == datetime(1970, 1, 2, tzinfo=UTC)
    assert parse_millis(None) is None


def test_http_dates_in_utc_and_unreadable_ones_are_none():
    expected = datetime(2026, 11, 23, 18, 0, 0, tzinfo=UTC)
    assert parse_http_date("Mon, 23 Nov 2026 18:00:00 GMT") == expected
    assert parse_http_date("Mon, 23 Nov 2026 20:00:00 +0200") == expected
    shifted = parse_http_date("Mon, 23 Nov 2026 20:00:00 +0200")
    assert shifted is not None and shifted.tzinfo == UTC
    assert parse_http_date("soon") is None
    assert parse_http_date(None) is None

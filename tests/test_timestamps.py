from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta, timezone

import pytest

from toolkit.timestamps import parse_http_date, parse_millis, parse_time, utc


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


@pytest.fixture
def new_york(monkeypatch):
    """The process's local zone set to one that is not UTC, as on a laptop in New York."""
    monkeypatch.setenv("TZ", "America/New_York")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


@pytest.mark.parametrize(
    "value",
    [
        "Mon, 23 Nov 2026 16:00:00 GMT",  # IMF-fixdate, what RFC 9110 asks servers to send
        "Mon, 23 Nov 2026 16:00:00 -0000",  # RFC 5322's "zone unknown": still UTC here
        "Mon, 23 Nov 2026 16:00:00 +0000",
        "Mon, 23 Nov 2026 16:00:00 UT",
        "Mon, 23 Nov 2026 11:00:00 -0500",
        "Monday, 23-Nov-26 16:00:00 GMT",  # obsolete RFC 850 form
        "Mon Nov 23 16:00:00 2026",  # obsolete asctime form, always UTC
    ],
)
def test_every_http_date_form_is_utc_whatever_the_local_zone(new_york, value):
    assert time.localtime(0).tm_gmtoff != 0  # the zone really is not UTC
    parsed = parse_http_date(value)
    assert parsed == datetime(2026, 11, 23, 16, 0, 0, tzinfo=UTC)
    assert parsed is not None and parsed.tzinfo == UTC


def test_the_lost_create_bound_reads_minus_zero_as_utc_too(new_york):
    import httpx

    from toolkit.client.flows import earliest_arrival

    answer = httpx.Response(409, headers={"Date": "Mon, 23 Nov 2026 16:00:00 -0000"})
    assert earliest_arrival(answer, 0.0) == datetime(2026, 11, 23, 16, 0, 0, tzinfo=UTC)


def test_utc_reads_a_naive_time_as_utc_and_converts_an_aware_one():
    paris = timezone(timedelta(hours=1))
    assert utc(datetime(2026, 11, 18, 9, 0)) == datetime(2026, 11, 18, 9, 0, tzinfo=UTC)
    assert utc(datetime(2026, 11, 18, 10, 0, tzinfo=paris)).tzinfo is UTC
    assert utc("2026-11-18T10:00:00+01:00") == datetime(2026, 11, 18, 9, 0, tzinfo=UTC)
    # A datetime needs no pandas, so the ends of its range are UTC too (the store's
    # "every period is past" bound is datetime.max).
    assert utc(datetime.max) == datetime.max.replace(tzinfo=UTC)

"""`toolkit.formatting`: the rules figures follow in panels, notebooks and the command."""

from __future__ import annotations

from datetime import UTC, datetime

import pandas as pd
import pytest

import toolkit as tk
from toolkit.formatting import (
    as_texts,
    count,
    escape,
    hours,
    missing,
    moment,
    size,
    text_table,
    utc_second,
    whole,
    whole_or_dash,
)


def test_values_read_as_a_person_expects():
    assert (count(1, "page"), count(0, "page"), count(1200, "page")) == (
        "1 page",
        "0 pages",
        "1,200 pages",
    )
    assert count(2, "box", "boxes") == "2 boxes"
    assert (whole(1234.0), whole(2.5), whole(None), whole(pd.NA)) == ("1,234", "3", "", "")
    assert (hours(0.04), hours(0.42), hours(7.46), hours(31.2), hours(float("nan"))) == (
        "2 min",
        "25 min",
        "7.5 h",
        "31.2 h",
        "",
    )
    assert moment(datetime(2026, 11, 21, 14, 5, 59, tzinfo=UTC)) == "2026-11-21 14:05"
    assert (size(812), size(4_200), size(3_100_000), size(1_200_000_000)) == (
        "812 B", "4.2 kB", "3.1 MB", "1.2 GB",
    )  # fmt: skip
    assert text_table([{"a": "1", "bb": "xyz"}, {"a": "100", "bb": ""}]) == "a    bb\n1    xyz\n100"


def test_a_notebook_table_has_no_na_whole_credits_rounded_hours_and_names_not_ids():
    frame = pd.DataFrame(
        {
            "project_id": pd.array(["0c6e1f3a-5d2b-4e8f-9a7c-1b2d3e4f5a6b", None], dtype="string"),
            "project": ["Moonlit Harbor", "River of Stars"],
            "credits": pd.array([12.0, None], dtype="Float64"),
            "hours": [0.4166, 12.7],
            "failed": pd.array([True, None], dtype="boolean"),
            "failure_reason": ["The run stalled with no progress for 2 hours " * 3, None],
            "chapters": pd.array([3, None], dtype="Int64"),
        }
    )
    html = tk.table(frame).to_html()
    assert "<NA>" not in html and "nan" not in html and "None" not in html
    assert "0c6e1f3a" not in html and "project_id" not in html
    assert ">12<" in html and ">25 min<" in html and ">12.7 h<" in html and ">yes<" in html
    assert "white-space: normal" in html  # long reasons wrap, in full
    assert ("The run stalled with no progress for 2 hours " * 3).strip() in html


def test_counts_pandas_made_floats_show_whole_and_prices_per_page_keep_decimals():
    frame = pd.DataFrame(
        {
            "project": ["Moonlit Harbor", "River of Stars"],
            "count": [8.0, 3.0],  # as `describe()` gives it
            "mean": [1.25, 2.0],
            "rework": [4.0, 0.5],
            "credits_per_page_language": [1.0, 0.5],
        }
    )
    html = tk.table(frame).to_html()
    assert ">8<" in html and "8.0" not in html and ">1.25<" in html
    assert ">4<" in html and ">1<" in html  # rework: whole credits, halves up
    assert ">0.50<" in html  # a price per page is not a sum of credits


def test_daily_periods_show_as_dates_and_headers_as_the_registry_labels():
    days = pd.DatetimeIndex(["2026-11-25", "2026-11-26"], tz="UTC", name="period")
    frame = pd.DataFrame({"rework_credits": [1.0, 2.0], "lines_per_hour": [185.0, 16.667]}, days)
    html = tk.table(frame).to_html()
    assert ">2026-11-26<" in html and "00:00" not in html
    assert ">credits spent on re-runs<" in html and "rework_credits" not in html
    assert ">lines translated per hour<" in html
    assert ">185.00<" in html and ">16.67<" in html


def test_text_shows_a_frame_for_the_terminal_by_the_notebook_rules():
    frame = pd.DataFrame(
        {
            "project_id": ["p1", "p2"],
            "project": ["Moonlit Harbor", "River of Stars"],
            "credits": [252.0, None],
            "hours_p50": [0.38, 13.0],
            "failure_rate": [0.265, 0.0],
            "finish_p50": pd.to_datetime(["2026-11-27 18:35:52.99", None], utc=True),
        }
    )
    lines = tk.formatting.text(frame).splitlines()
    assert lines[0].split("  ")[0] == "project"  # ids left out beside names, words for `_`
    assert "project id" not in lines[0] and "time to finish, likely (p50)" in lines[0]
    first, second = lines[1].split(), lines[2].split()
    assert first[2:] == ["252", "23", "min", "26%", "2026-11-27", "18:35"]
    assert second[3:] == ["-", "13.0", "h", "0%", "-"]  # missing: a dash, never NaN or 0


def test_text_for_html_is_escaped_once_for_text_and_attributes():
    assert escape(None) == "" and escape(3) == "3"
    assert escape('Moon <b>&</b> "Sun"') == "Moon &lt;b&gt;&amp;&lt;/b&gt; &quot;Sun&quot;"


def test_a_utc_time_to_the_second_says_its_zone():
    # The store's messages tell two snapshots a second apart by it.
    assert (
        utc_second(datetime(2026, 11, 21, 14, 5, 9, 700, tzinfo=UTC)) == "2026-11-21 14:05:09 UTC"
    )


def test_a_page_s_count_is_whole_with_separators_and_a_dash_where_there_is_no_data():
    """The weekly and agency pages show a figure with no data as a dash, never blank
    and never 0 (a blank cell reads as a layout fault, a 0 as a count)."""
    assert whole_or_dash(1234) == "1,234"
    assert whole_or_dash(12.0) == "12"
    assert whole_or_dash(0) == "0"
    for nothing in (None, float("nan"), pd.NA, pd.NaT):
        assert whole_or_dash(nothing) == "–"
        assert missing(nothing)
    assert not any(missing(value) for value in (0, "", "text", ["fr"], pd.Timestamp(0)))


@pytest.mark.parametrize(
    "values",
    [
        # Times whose text depends on the whole column (seconds, fractions), with a gap.
        ["2026-01-01T10:00", "2026-01-02T00:00", None, "2026-01-01T10:00"],
        ["2026-01-01", "2026-01-02", "2026-01-01"],
        ["2026-01-01T00:00:00.5", "2026-01-02", None],
        [],
    ],
)
def test_texts_made_once_per_value_read_as_astype_makes_them(values):
    times = pd.Series(
        pd.to_datetime(values, utc=True, format="ISO8601"), dtype="datetime64[us, UTC]"
    )
    for column in (times, times.dt.tz_localize(None), times.set_axis(range(7, 7 + len(times)))):
        pd.testing.assert_series_equal(as_texts(column), column.astype(str))
    numbers = pd.Series([1.5, None, 2.0, 1.5])
    pd.testing.assert_series_equal(as_texts(numbers), numbers.astype(str))

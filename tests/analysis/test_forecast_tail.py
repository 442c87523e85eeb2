"""The work after the last line, fitted as the service runs it (`analysis.work`)."""

from __future__ import annotations

import pandas as pd
import pytest

from toolkit.analysis.work import CLEAN, LETTER, PACKAGE, _fit_tail


def test_one_run_is_read_as_packaging_per_language_not_per_page():
    # One 3-page `text` run into 3 languages whose tail took 1.5 minutes: the service
    # packages each language in turn, half a minute each; a 16-page chapter in three
    # languages then takes 1.5 minutes too, not 8.
    tail = _fit_tail(pd.DataFrame({"units": [3.0], "languages": [3.0], "hours": [1.5 / 60]}))
    assert tail is not None
    assert tail.per_language == pytest.approx(0.5 / 60)
    assert tail.per_page == tail.per_page_language == 0
    assert tail.hours(16, 3, 3) * 60 == pytest.approx(1.5)
    # One run: a band as wide as the tail itself either way.
    assert tail.band(1.5 / 60, 0.0) == (pytest.approx(-1.5 / 60), pytest.approx(1.5 / 60))


def test_a_lettered_run_is_split_into_its_parts_and_the_band_narrows_with_runs():
    # `full`: 4 s cleaning a page, 2 s lettering a page per language, 30 s packaging
    # a language (the emulator's run engine).
    shapes = [(3, 1), (10, 2), (16, 3), (6, 2), (20, 1)]
    hours = [(4 * pages + 2 * pages * langs + 30 * langs) / 3600 for pages, langs in shapes]
    runs = pd.DataFrame({"units": [float(p) for p, _ in shapes],
                         "languages": [float(n) for _, n in shapes], "hours": hours})  # fmt: skip
    tail = _fit_tail(runs, (PACKAGE, CLEAN, LETTER))
    assert tail is not None
    assert (tail.per_page * 3600, tail.per_page_language * 3600, tail.per_language * 3600) == (
        pytest.approx(4),
        pytest.approx(2),
        pytest.approx(30),
    )
    one = _fit_tail(runs.iloc[:1], (PACKAGE, CLEAN, LETTER))
    assert one is not None
    # Of a 16-page chapter into 3 languages, 3.2 minutes of tail: +-3.2 from one run,
    # +-1.4 from five (3.2 / sqrt(5)).
    hours = tail.hours(16, 3, 3)
    assert tail.band(hours, 0.0)[1] == pytest.approx(hours / 5**0.5)
    assert one.band(hours, 0.0)[1] == pytest.approx(hours)


def test_runs_of_other_steps_share_the_pooled_fit():
    # A `text` run (packaging only) and a `clean` run (cleaning too): cleaning is
    # learned from the second only.
    runs = pd.DataFrame(
        {
            "units": [8.0, 10.0, 5.0],
            "languages": [2.0, 1.0, 1.0],
            "hours": [60 / 3600, 70 / 3600, 30 / 3600],
            "cleaned": [False, True, False],
            "lettered": [False, False, False],
        }
    )
    tail = _fit_tail(runs)
    assert tail is not None
    assert tail.per_language * 3600 == pytest.approx(30)
    assert tail.per_page * 3600 == pytest.approx(4)

"""The forecast's track record on a history whose outcome is known: hourly snapshots of
two one-chapter projects of 1,000 lines. "Steady" translates 100 lines an hour and is
done at hour 10; "Slowing" does the same until hour 5, then 50 an hour, done at hour 15.

Replayed every 3 hours (a 3-hour window in 1-hour bins):

- Steady, at hours 3, 6 and 9: p50 at hour 10 every time, inside the band, no error.
- Slowing at hour 3: p50 at 10, done at 15: 5 hours early. At 6: the slow hour is one
  bin of four (the window reaches back to the snapshot before it), 450 lines left at
  87.5 an hour: p50 at 11.1, 3.9 hours early. No run had finished at either: nothing
  bounds the work after the last line, the p90 is open and the band holds (before
  issue 40 it added one snapshot interval and missed both). At 9 and 12: the window
  holds only the slow pace, p50 at 15: inside, no error. 4 of 4.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from datafakes import FakeService, hours
from pandas.testing import assert_frame_equal

import toolkit as tk
from toolkit import analysis
from toolkit.analysis.accuracy import replay_scores
from toolkit.analysis.calibration import Calibration
from toolkit.analysis.forecast import forecast_seen
from toolkit.analysis.observed import Observed, observe
from toolkit.analysis.replayed import REPLAYED, replays, replays_ahead
from toolkit.store import SnapshotStore

# The ninth pass (docs/testing.md): in the slow group, which CI runs as its own step.
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> SnapshotStore:
    return _history(tmp_path_factory.mktemp("accuracy") / "store", ("p1", "p2"))


def _history(path, projects: tuple[str, ...]) -> SnapshotStore:
    """The hourly history of the module's docstring, with the projects asked for."""
    service = FakeService()
    store = SnapshotStore(path)
    for pid, name in (("p1", "Steady"), ("p2", "Slowing")):
        if pid not in projects:
            continue
        service.add_project(pid, name=name, languages=("en",))
        service.add_chapter(f"c-{pid}", pid, languages=("en",), covered=0, untranslated=1000)
    for hour in range(17):
        steady = min(100 * hour, 1000)
        slowing = min(100 * hour if hour <= 5 else 500 + 50 * (hour - 5), 1000)
        for pid, covered in (("p1", steady), ("p2", slowing)):
            if pid not in projects:
                continue
            done = covered == 1000
            moved = hour if not done else (10 if pid == "p1" else 15)
            service.update(f"c-{pid}", covered=covered, untranslated=1000 - covered,
                           processing=not done, status="needs_review" if done else "translating",
                           activity=hours(moved))  # fmt: skip
        store.write(tk.pull(service, details="all"), at=hours(hour))
    return store


def test_replays_score_the_band_and_the_p50_against_what_happened(store):
    record = analysis.forecast_accuracy(store, every="3h", window="3h", freq="1h")
    record = record.set_index("project_id")
    steady, slowing = record.loc["p1"], record.loc["p2"]
    assert steady["project"] == "Steady"
    assert (steady["replays"], steady["inside"], steady["inside_share"]) == (3, 3, 1.0)
    assert steady["p50_error_hours"] == pytest.approx(0, abs=1e-6)
    # Until a run has finished nothing bounds the work after the last line: the band's
    # p90 is open (issue 40), so the late finishes of the replays made before the first
    # finish (hour 10) are inside it; the p50 still says how early the forecast was.
    assert (slowing["replays"], slowing["inside"], slowing["inside_share"]) == (4, 4, 1.0)
    # Median of -5, -3.86, 0 and 0 hours (the middle two): the forecast was early.
    assert slowing["p50_error_hours"] == pytest.approx(-(3 + 6 / 7) / 2, abs=1e-3)


def test_the_horizon_scores_only_outcomes_known_within_it(store):
    near = analysis.forecast_accuracy(store, horizon="2h", every="3h", window="3h", freq="1h")
    # Within 2 hours: Steady's replay at hour 9 (done at 10). Slowing's bands all reach
    # past the horizon with the work not done by then: not scored yet.
    assert near["project_id"].tolist() == ["p1"]
    assert near["replays"].tolist() == [1] and near["inside"].tolist() == [1]
    bounded = analysis.forecast_accuracy(store, every="3h", window="3h", freq="1h",
                                         since=hours(5), until=hours(10))  # fmt: skip
    assert bounded.set_index("project_id")["replays"].to_dict() == {"p1": 2, "p2": 2}
    empty = analysis.forecast_accuracy(store, since=hours(40))
    assert empty.empty and list(empty.columns)[:2] == ["project_id", "project"]


def _replayed(store: SnapshotStore, table: str, as_of: pd.Timestamp) -> pd.DataFrame:
    """The store's `table` at `as_of`, in the columns a replay reads."""
    whole = store.as_of(table, as_of)
    return whole[[column for column in whole.columns if column in REPLAYED[table]]]


def test_the_replays_see_each_snapshot_as_a_forecast_made_there_does(store):
    # Read together (one read, then the change log rolled forward), each replay's tables
    # are the store's at its snapshot, and its forecast the one made there.
    obs = observe(store)
    ticks = [hours(h) for h in (2, 3, 7, 7, 12, 16)]  # a repeated tick replays twice
    seen = list(replays(obs, ticks, stall_after=pd.Timedelta("90min")))
    assert [s.as_of for s in seen] == [pd.Timestamp(t) for t in ticks]
    for replayed in seen:
        for table in ("chapters", "languages", "projects"):
            assert_frame_equal(getattr(replayed, table), _replayed(store, table, replayed.as_of))
        made = analysis.forecast(store, window="3h", freq="1h", until=replayed.as_of)
        assert_frame_equal(
            forecast_seen(obs, replayed, by="project_id", window="3h", freq="1h"), made
        )


@pytest.mark.parametrize("ahead", [False, True], ids=["read-in-turn", "read-ahead"])
def test_the_replays_roll_chapters_that_come_and_go(tmp_path, ahead):
    # Rolled forward by key numbers from the snapshot before the first replayed: keys
    # whose texts sort otherwise than they came ("c-10" before "c-9"), two languages
    # each, a chapter deleted and one added between replays, a replay at the first
    # snapshot (none before it): each replay's tables are still the store's there,
    # whether the chapters' changes were read in turn or ahead (the weekly page's way).
    service, store = FakeService(), SnapshotStore(tmp_path / "store")
    service.add_project("p1", name="Steady", languages=("en", "de"))
    for n in (9, 10, 2):
        service.add_chapter(f"c-{n}", "p1", languages=("en", "de"), covered=0, untranslated=100)
    for hour in range(6):
        if hour == 2:
            del service.chapters["c-10"]
        if hour == 3:
            service.add_chapter("c-1", "p1", languages=("de", "en"), covered=0, untranslated=100)
        service.update("c-9", covered={"en": 10 * hour, "de": 5 * hour}, processing=True,
                       status="translating", activity=hours(hour))  # fmt: skip
        store.write(tk.pull(service, details="all"), at=hours(hour))
    ticks = [hours(h) for h in (0, 2, 3, 3, 5)]
    obs = observe(store)
    if ahead:
        replays_ahead(obs, ticks)
    seen = list(replays(obs, ticks, stall_after=pd.Timedelta("90min")))
    # A read ahead is used once: the view does not hold the changes after.
    assert not [key for key in obs.memo if "chapters_changes" in key]
    assert [s.as_of for s in seen] == [pd.Timestamp(t) for t in ticks]
    for replayed in seen:
        for table in ("chapters", "languages", "projects"):
            assert_frame_equal(getattr(replayed, table), _replayed(store, table, replayed.as_of))
    assert "c-10" not in set(seen[1].chapters["chapter_id"])
    assert "c-1" in set(seen[2].chapters["chapter_id"])


def test_the_band_is_set_by_its_own_record(store, tmp_path):
    # Hourly replays: each scored one is a conformity score; the width is the
    # ceil((n + 1) x 0.8)-th smallest of them (split conformal).
    record = dict(every="1h", window="3h", freq="1h")
    calibration = analysis.band_calibration(store, **record)
    scores = np.sort(
        replay_scores(observe(store), by="project_id", horizon="24h", stall_after="90min",
                      since=None, until=None, tz=None, **record)["score"].to_numpy()
    )  # fmt: skip
    n = len(scores)
    assert calibration.replays == n > 4
    assert calibration.width == pytest.approx(scores[math.ceil((n + 1) * 0.8) - 1])
    # Every band held here (the p90 is open until a run finishes, and p10 never came
    # after the finish): the record asks for no widening.
    assert calibration.held == n and calibration.width <= 0
    early = analysis.band_calibration(store, **record, until=hours(3))
    assert early.replays < 4 and early.width is None  # too few for 80%
    assert "too few to calibrate" in early.says()

    # A record that asks for half the time to p50 more on each side: p10 and p90 move by
    # that, an open p90 stays open, and the band says how it was set.
    wider = Calibration("project_id", 0.5, 20, 12, 0.8)
    plain = analysis.forecast(store, window="3h", freq="1h", until=hours(12))
    plain = plain.set_index("project_id")
    made = analysis.forecast(store, window="3h", freq="1h", until=hours(12),
                             calibration=wider).set_index("project_id")  # fmt: skip
    half = (plain["finish_p50"] - plain["as_of"]) / 2
    assert made["finish_p10"].equals(plain["finish_p10"] - half)
    assert made["finish_p90"].equals(plain["finish_p90"] + half)  # NaT stays NaT
    assert made["finish_p50"].equals(plain["finish_p50"])
    assert made["band"].str.contains("calibrated on 20 past replays, of which 12 held").all()
    with pytest.raises(ValueError, match="band_calibration"):
        analysis.forecast(store, by="chapter_id", calibration=wider)


def test_the_same_replays_asked_twice_of_one_view_are_equal_and_their_own(store):
    """The weekly page, explain and the calibration each ask one view for the same
    replays: the second answer is equal, and changing one answer changes no other."""
    obs = observe(store)
    asked = dict(by="project_id", horizon="24h", every="1h", window="3h", freq="1h",
                 stall_after="90min", since=None, until=None, tz=None)  # fmt: skip
    first = replay_scores(obs, **asked)
    second = replay_scores(obs, **asked)
    assert_frame_equal(first, second)
    first["score"] = 0.0
    assert_frame_equal(replay_scores(obs, **asked), second)
    fresh = replay_scores(Observed(store, keep=False), **asked)  # made again
    assert_frame_equal(fresh, second)
    assert len(replay_scores(obs, **{**asked, "until": hours(3)})) < len(second)

"""Periods at the clock changes: in a zone with summer time, an hour is a real hour.

When summer time ends, the local hour 02:00-03:00 (Paris) or 01:00-02:00 (New York)
happens twice; each time is two real hours, and must be two periods with two labels
(02:00+02:00, then 02:00+01:00), each holding what happened in it. When summer time
starts, the skipped local hour holds nothing, and the periods on either side are whole.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pandas as pd
import pytest
from page_images import make_page
from pandas.testing import assert_frame_equal

from toolkit import analysis
from toolkit.analysis.calendar import period_starts
from toolkit.store import SnapshotStore

# Zone, the UTC instant its clocks change, and whether summer time ends there.
CHANGES = [
    ("Europe/Paris", datetime(2026, 10, 25, 1, 0, tzinfo=UTC), "ends"),
    ("Europe/Paris", datetime(2026, 3, 29, 1, 0, tzinfo=UTC), "starts"),
    ("America/New_York", datetime(2026, 11, 1, 6, 0, tzinfo=UTC), "ends"),
    ("America/New_York", datetime(2026, 3, 8, 7, 0, tzinfo=UTC), "starts"),
]
IDS = [f"{zone.split('/')[1]}-summer-time-{kind}" for zone, _, kind in CHANGES]


def _every_quarter_hour(change: datetime) -> pd.Series:
    times = pd.date_range(change - timedelta(hours=3), change + timedelta(hours=3), freq="15min")
    return pd.Series(times.as_unit("us"))


@pytest.mark.parametrize(("zone", "change", "kind"), CHANGES, ids=IDS)
@pytest.mark.parametrize("freq", ["1h", "30min", "15min"])
def test_hourly_and_finer_periods_are_real_hours(zone, change, kind, freq):
    times = _every_quarter_hour(change)
    starts = period_starts(times, freq, zone)
    assert str(starts.dt.tz) == zone
    length = pd.Timedelta(freq)
    # Each time lies in its own period: at or after its start, before the next one.
    assert (starts <= times).all()
    assert ((times - starts.dt.tz_convert("UTC")) < length).all()
    # As many periods as the same times have in UTC: no two real hours share a label.
    assert starts.nunique() == period_starts(times, freq).nunique()


ENDINGS = [(zone, change) for zone, change, kind in CHANGES if kind == "ends"]


@pytest.mark.parametrize(("zone", "change"), ENDINGS, ids=[zone for zone, _ in ENDINGS])
def test_the_repeated_hour_has_two_labels(zone, change):
    before, after = change - timedelta(minutes=30), change + timedelta(minutes=30)
    starts = period_starts(pd.Series([before, after]), "h", zone)
    # The same local time on the wall, an hour apart in reality.
    assert starts[0].strftime("%H:%M") == starts[1].strftime("%H:%M")
    assert starts[1] - starts[0] == pd.Timedelta(hours=1)
    assert starts[0].utcoffset() - starts[1].utcoffset() == pd.Timedelta(hours=1)


@pytest.mark.parametrize(("zone", "change", "kind"), CHANGES, ids=IDS)
def test_days_start_at_local_midnight_around_a_change(zone, change, kind):
    times = _every_quarter_hour(change)
    starts = period_starts(times, "D", zone)
    assert (starts.dt.hour == 0).all() and (starts.dt.minute == 0).all()
    assert (starts <= times).all()
    assert ((times - starts) < pd.Timedelta(hours=25)).all()


def _observe_the_change(emulator, workspace, client, tmp_path, change: datetime):
    """Chapters uploaded every half hour from two hours before `change` to two after,
    a snapshot every half hour; the store and the ledger."""
    ws = workspace["id"]
    project = emulator.create_project(
        ws, name="Night shift", kind="comic", source_language="ja", reading_direction="rtl",
        process_steps="translate", target_languages=["en", "fr"],
    )  # fmt: skip
    store = SnapshotStore(tmp_path / "store")
    emulator.advance((change - timedelta(hours=2) - emulator.now()).total_seconds())
    store.take(client)
    for step in range(8):
        pages = [make_page(step * 10 + i) for i in range(2 + step % 3)]
        client.create_chapter(project["id"], pages=pages)
        emulator.advance(1800)
        store.take(client)
    emulator.advance(3600)
    store.take(client)
    return store, emulator.ledger(ws)


FIGURES = {
    "credit_spend": (lambda store, **o: analysis.credit_spend(store, freq="h", **o), "credits"),
    "throughput": (lambda store, **o: analysis.throughput(store, freq="h", **o), "lines"),
    "finished": (lambda store, **o: analysis.finished(store, freq="h", **o), "runs"),
}


@pytest.mark.parametrize(
    ("epoch", "zone"),
    [(change - timedelta(hours=3), zone) for zone, change, _ in CHANGES],
    ids=IDS,
    indirect=["epoch"],
)
@pytest.mark.slow
def test_every_figure_by_the_hour_across_a_change(
    emulator, workspace, client, tmp_path, epoch, zone
):
    change = epoch + timedelta(hours=3)
    store, ledger = _observe_the_change(emulator, workspace, client, tmp_path, change)
    charged = sum(charge["credits"] for charge in ledger["charges"])
    assert analysis.credit_spend(store, freq="h")["credits"].sum() == charged
    for name, (figure, measure) in FIGURES.items():
        in_utc, local = figure(store), figure(store, tz=zone)
        assert str(local["period"].dt.tz) == zone, name
        assert local[measure].sum() == in_utc[measure].sum() > 0, name
        # The same real hours, each with the same amount, whatever the labels.
        by_hour = local.assign(period=local["period"].dt.tz_convert("UTC"))
        per_hour = by_hour.groupby("period")[measure].sum()
        assert per_hour.to_dict() == in_utc.groupby("period")[measure].sum().to_dict(), name
        assert local["period"].nunique() == in_utc["period"].nunique(), name
    # The forecast reads its rates from hourly bins: the same bins, the same forecast.
    local, in_utc = analysis.forecast(store, freq="h", tz=zone), analysis.forecast(store, freq="h")
    times = [column for column in local if str(local[column].dtype).endswith(f"{zone}]")]
    assert times  # the finish times, shown in the zone
    assert_frame_equal(local.astype({column: in_utc[column].dtype for column in times}), in_utc)

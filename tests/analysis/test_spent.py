"""Money at the moment it was spent (`analysis.spent`): a first run is paid at its
chapter's creation, so a charge at 23:50 on 31 January first seen by the 00:30
snapshot counts in January, in `monthly_spend` and in a budget's period alike; a
re-scan, which no event dates, counts at the snapshot that showed it."""

from __future__ import annotations

from datetime import UTC, datetime

import pandas as pd
import pytest
from ledger import true_runs
from page_images import make_page

from toolkit import analysis
from toolkit.client import Client
from toolkit.emulator import Emulator
from toolkit.store import SnapshotStore

COMIC = {"kind": "comic", "source_language": "ja", "reading_direction": "rtl",
         "process_steps": "translate", "target_languages": ["en", "fr"]}  # fmt: skip
NIGHT = datetime(2027, 1, 31, 23, 30, tzinfo=UTC)


@pytest.fixture
def boundary(tmp_path):
    """Snapshots at 23:30 and 23:40 on 31 January, a chapter created at 23:50, then the
    00:30 snapshot; a re-scan at 00:40 seen by the 01:30 snapshot."""
    with Emulator(clock="manual", start=NIGHT) as emulator:
        ws = emulator.create_workspace(name="Boundary", credits=10_000)
        project = emulator.create_project(ws["id"], name="Night", **COMIC)
        store = SnapshotStore(tmp_path / "store")
        with Client(base_url=emulator.url, api_key=ws["apiKey"]) as client:
            store.take(client)
            emulator.advance(600)
            store.take(client)  # 23:40
            emulator.advance(600)
            chapter = client.create_chapter(project["id"], pages=[make_page(n) for n in range(6)])
            emulator.advance(2400)
            store.take(client)  # 00:30
            emulator.advance(600)
            client.rescan_chapter(chapter.id)
            emulator.advance(3000)
            store.take(client)  # 01:30
        truth = true_runs(emulator, ws["id"])[chapter.id]
    return store, project["id"], truth


def test_a_first_run_is_charged_at_the_chapters_creation(boundary):
    store, project_id, truth = boundary
    first, rescan = truth
    found = analysis.charges(store)
    assert found["source"].tolist() == ["created", "snapshot"]
    assert found["charged_at"].iloc[0] == first.started_at  # 23:50 on 31 January
    assert found["credits"].tolist() == [first.credits, rescan.credits] == [12, 12]
    # The re-scan at 00:40 lies between the 00:30 and 01:30 snapshots: at the later.
    assert found["charged_at"].iloc[1] == store.snapshots()["snapshot_at"].iloc[-1]

    january = analysis.spend_in(store, since="2027-01-01", until="2027-02-01")
    february = analysis.spend_in(store, since="2027-02-01", until="2027-03-01")
    assert january.set_index("project_id")["credits"].to_dict() == {project_id: 12}
    assert february.set_index("project_id")["credits"].to_dict() == {project_id: 12}
    assert february["project"].tolist() == ["Night"]

    months = analysis.monthly_spend(store).iloc[0]
    assert (months["month"], months["this_month"]) == ("2027-02", 12)
    assert (months["previous_month"], months["last_month"]) == ("2027-01", 12)


def test_an_empty_store_has_no_charges(tmp_path):
    store = SnapshotStore(tmp_path / "empty")
    assert analysis.charges(store).empty
    assert analysis.spend_in(store, since=pd.Timestamp("2027-01-01", tz="UTC")).empty


def test_spend_in_any_period_is_the_charges_in_it_summed_per_project(demo_day):
    # spend_in reads only its period's charges (from the run table's numbers), in the
    # order `charges` lists them: the same sums as the whole history's charges, cut.
    every = analysis.charges(demo_day)
    assert every["project_id"].nunique() > 1
    times = demo_day.snapshots()["snapshot_at"]
    bounds = [None, times.iloc[1], every["charged_at"].iloc[len(every) // 2], times.iloc[-1]]
    for since in bounds:
        for until in [b for b in bounds if b is not None and (since is None or b > since)]:
            cut = every[every["charged_at"] >= since] if since is not None else every
            cut = cut[cut["charged_at"] < until]
            sums = cut.groupby(cut["project_id"].astype(object))[["credits", "rework_credits"]]
            expected = sums.sum().reset_index()
            found = analysis.spend_in(demo_day, since=since, until=until)
            assert found["project_id"].tolist() == expected["project_id"].tolist()
            for column in ("credits", "rework_credits"):
                assert found[column].tolist() == expected[column].tolist(), (since, until)

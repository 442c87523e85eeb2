"""Whole histories against the ledger: a 6-hour day that starts after the uploads, and
two weeks of snapshots with gaps; every figure from the snapshots alone and with events."""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from deltalake import DeltaTable
from ledger import check_runs, events, true_runs
from page_images import make_page
from pandas.testing import assert_frame_equal

from toolkit import analysis
from toolkit.cli import main
from toolkit.client import Client
from toolkit.emulator import Emulator
from toolkit.errors import OldStoreLayout
from toolkit.store import SnapshotStore
from toolkit.store import columns as store_columns
from toolkit.store import diff as store_diff
from toolkit.store import engine as store_engine
from toolkit.store import log as store_log
from toolkit.store import query as store_query
from toolkit.store import writing as store_writing
from toolkit.store.snapshot_store import StoreUpgraded


def simulate(
    emulator,
    workspace,
    client,
    store,
    *,
    webhook: str,
    steps: int,
    hours: int,
    gap: range,
    failing: float,
):
    """Upload comics and novels at every step but the last, let `hours` pass, snapshot
    (except during `gap`), re-scan what failed; the baseline right after the first
    uploads, with their runs going. The events go to `webhook`."""
    ws = workspace["id"]
    common = {"source_language": "ja", "reading_direction": "rtl", "process_steps": "translate"}
    comic = emulator.create_project(ws, name="Moon", kind="comic", target_languages=["en", "fr"],
                                    **common)  # fmt: skip
    single = emulator.create_project(ws, name="Solo", kind="comic", target_languages=["en"],
                                     **common)  # fmt: skip
    novel = emulator.create_project(ws, name="River", kind="novel", target_languages=["en"],
                                    **common)  # fmt: skip
    emulator.add_webhook(ws, webhook, ["chapter.finished", "chapter.failed"], allow_private=True)
    emulator.set_faults(failure_rate=failing, stall_rate=0.1, seed=13)
    client.create_chapter(single["id"], pages=[make_page(999)])  # its only chapter
    for step in range(steps):
        if step < steps - 1:
            client.create_chapter(comic["id"], pages=[make_page(step * 3 + i) for i in range(3)])
            if step % 2 == 0:
                client.create_chapter(novel["id"], text="A line of the story.\n" * 25)
        if step == 0:
            store.take(client)
        emulator.advance(hours * 3600)
        if step not in gap:
            store.take(client)
        for chapter in client.list_chapters(comic["id"]):
            if chapter.failed and not chapter.processing:
                client.rescan_chapter(chapter.id)
    emulator.advance(3 * 3600)
    store.take(client)


def check_figures(store, emulator, workspace):
    runs = check_runs(store, emulator, workspace["id"])
    truth = true_runs(emulator, workspace["id"])
    seen = set(runs["chapter_id"])
    ledger = emulator.ledger(workspace["id"])
    paid_after = {c["chapterId"]: 0 for c in ledger["charges"]}
    baseline_spent = _baseline_spent(store)
    for charge in ledger["charges"]:
        paid_after[charge["chapterId"]] += charge["credits"]
    # Spend and rework per chapter: the ledger's after the baseline, in whole credits.
    spend = analysis.credit_spend(store, freq="D", by="chapter_id")
    per_chapter = spend.groupby("chapter_id")[["credits", "rework_credits"]].sum()
    for chapter in seen:
        credits = paid_after[chapter] - baseline_spent.get(chapter, 0)
        rework = sum(r.credits for r in truth[chapter] if r.rework and r.credits) - sum(
            r.credits for r in truth[chapter] if r.rework and chapter in baseline_spent
            and _before_baseline(r, store)
        )  # fmt: skip
        got = per_chapter.loc[chapter] if chapter in per_chapter.index else None
        assert (got["credits"] if got is not None else 0) == credits
        assert (got["rework_credits"] if got is not None else 0) == rework
        assert float(rework).is_integer()
    # Cycle times: every finished run, its duration exact where its start is.
    cycles = analysis.cycle_times(store)
    assert len(cycles) == (runs["outcome"] == "finished").sum()
    for row in cycles[cycles["started_source"] == "created"].itertuples(index=False):
        (run,) = [r for r in truth[row.chapter_id] if r.finished_at == row.finished_at]
        assert row.hours == (run.finished_at - run.started_at).total_seconds() / 3600
    # Lead times: upload to the first finished run, failures and re-scans between.
    leads = analysis.lead_times(store)
    for row in leads.itertuples(index=False):
        done = [r for r in truth[row.chapter_id] if r.outcome == "finished"]
        assert row.reviewable_at == done[0].finished_at
        assert row.uploaded_at == truth[row.chapter_id][0].started_at
        assert row.runs == truth[row.chapter_id].index(done[0]) + 1
    quantiles = leads.groupby("project")["hours"].quantile(0.9)
    assert set(quantiles.index) <= {"Moon", "Solo", "River"}
    return runs


def _baseline_spent(store) -> dict[str, float]:
    manifest = store.snapshots()
    first = store.history("chapters", until=manifest["snapshot_at"].iloc[0])
    return dict(zip(first["chapter_id"], first["credits_spent"], strict=True))


def _before_baseline(run, store) -> bool:
    return run.started_at <= store.snapshots()["snapshot_at"].iloc[0]


@dataclass(frozen=True)
class History:
    """A simulated history: the emulator that ran it (its ledger and deliveries are the
    truth) and the store that watched it. Shared by the tests of the module: read it,
    never write to it."""

    emulator: Any
    workspace: dict[str, Any]
    root: Path

    def store(self, tmp_path: Path, *, with_events: bool) -> SnapshotStore:
        """The store as the snapshots left it, or a copy of it with the events recorded."""
        if not with_events:
            return SnapshotStore(self.root)
        shutil.copytree(self.root, tmp_path / "store")
        store = SnapshotStore(tmp_path / "store")
        store.record_events(events(self.emulator))
        return store


@pytest.fixture(scope="module")
def histories(tmp_path_factory, webhook_url) -> Iterator[Callable[..., History]]:
    """Simulate once, check many times: `histories(start, steps=..., ...)` simulates a
    history the first time it is asked for and hands the same one out after (the events
    change only what is read, so the tests with and without them share it)."""
    made: dict[tuple[Any, ...], History] = {}
    with contextlib.ExitStack() as running:

        def history(start: datetime, **simulation: Any) -> History:
            key = (start, *sorted(simulation.items()))
            if key not in made:
                emulator = running.enter_context(Emulator(clock="manual", start=start))
                workspace = emulator.create_workspace(name="Test workspace", credits=10_000)
                root = tmp_path_factory.mktemp("history") / "store"
                with Client(base_url=emulator.url, api_key=workspace["apiKey"]) as client:
                    store = SnapshotStore(root)
                    simulate(emulator, workspace, client, store, webhook=webhook_url, **simulation)
                made[key] = History(emulator, workspace, root)
            return made[key]

        yield history


@pytest.mark.epochs
@pytest.mark.parametrize("with_events", [False, True])
@pytest.mark.slow
def test_a_six_hour_day_that_starts_after_the_uploads(histories, epoch, tmp_path, with_events):
    day = histories(epoch, steps=6, hours=1, gap=range(0), failing=0.5)
    store = day.store(tmp_path, with_events=with_events)
    runs = check_figures(store, day.emulator, day.workspace)
    assert (runs["kind"] == "rescan").any()
    assert analysis.price_estimate(store, runs["project_id"].iloc[0], pages=20, languages=1) == 20


# The outage takes 11 s either way: both cases run in the slow group, where CI runs them
# too (the default group's 300 s budget had a margin of 7 s left).
@pytest.mark.slow
@pytest.mark.parametrize("with_events", [False, True])
def test_two_weeks_with_an_outage(histories, epoch, tmp_path, with_events):
    weeks = histories(epoch, steps=56, hours=6, gap=range(20, 26), failing=0.2)
    store = weeks.store(tmp_path, with_events=with_events)
    runs = check_figures(store, weeks.emulator, weeks.workspace)
    assert runs["outcome"].isin(["stalled"]).any()
    finished = analysis.finished(store, freq="W-MON", by="project_id")
    assert finished["runs"].sum() == (runs["outcome"] == "finished").sum()
    weekly = analysis.credit_spend(store, freq="W-MON", tz="Europe/Paris")
    assert (weekly["period"].dt.day_of_week == 0).all()
    assert str(weekly["period"].dt.tz) == "Europe/Paris"
    assert weekly["credits"].sum() == runs["credits"].sum()
    assert runs["run_id"].is_unique


def _without(column: str):
    """`stored_schema` of a toolkit whose stores had no `column`."""
    current = store_columns.stored_schema

    def stored_schema(table: str):
        found = current(table)
        return found.remove(found.get_field_index(column)) if column in found.names else found

    return stored_schema


class Formats:
    """Takes every snapshot into one store per format a toolkit has written: `current`;
    `flag_only`, from before `_previous` (rows flagged `_changed`, no previous values);
    `legacy`, from before `_changed` (neither column); and `mixed`, written as `legacy`
    for its first snapshots and as `current` after. (The other way round cannot happen:
    a toolkit from before `_previous` cannot append to a table that has it.)"""

    NAMES = ("current", "flag_only", "legacy", "mixed")

    def __init__(self, root, emulator, monkeypatch) -> None:
        self.stores = {name: SnapshotStore(root / name) for name in self.NAMES}
        self.emulator, self.monkeypatch = emulator, monkeypatch
        self.taken = 0

    def take(self, client):
        # Twice a minute apart, so that runs going show progress alone in between.
        for _ in range(2):
            for name, store in self.stores.items():
                with self.monkeypatch.context() as old_toolkit:
                    if name != "current" and not (name == "mixed" and self.taken >= 6):
                        # An earlier toolkit neither upgrades a store nor refuses one.
                        old_toolkit.setattr(store_engine, "is_current", lambda m: True)
                    if name == "legacy" or (name == "mixed" and self.taken < 6):
                        for module in (store_columns, store_diff, store_writing):
                            old_toolkit.setattr(module, "TRACKED", {})
                    elif name == "flag_only":
                        for module in (store_log, store_writing, store_engine, store_query):
                            old_toolkit.setattr(module, "stored_schema", _without("_previous"))
                    if name == "mixed" and self.taken == 6:
                        with pytest.warns(StoreUpgraded, match="chapters: .* given `_changed`"):
                            store.take(client)  # the current toolkit's first take upgrades
                    else:
                        store.take(client)
            self.taken += 1
            self.emulator.advance(60)


# In the slow group: 13 s of the default group's five minutes (2026-11-29: 300.5 s).
@pytest.mark.slow
@pytest.mark.epochs("morning", "before-midnight")  # the upgrade, then the daily merge
def test_stores_written_by_earlier_toolkits_read_the_same_figures(
    emulator, workspace, client, tmp_path, monkeypatch, capsys, webhook_url
):
    formats = Formats(tmp_path, emulator, monkeypatch)
    simulate(emulator, workspace, client, formats, webhook=webhook_url, steps=6, hours=1,
             gap=range(0), failing=0.5)  # fmt: skip
    stores = formats.stores
    columns = {
        name: DeltaTable(str(tmp_path / name / "chapters")).schema().to_arrow().names
        for name in stores
    }
    assert "_changed" not in columns["legacy"] and "_previous" not in columns["flag_only"]
    # The mixed store was upgraded by the current toolkit's first take; the others are
    # refused until `toolkit store migrate` upgrades them, saying what it did.
    for name in ("legacy", "flag_only"):
        with pytest.raises(OldStoreLayout, match=f"toolkit store migrate {tmp_path / name}"):
            stores[name].changes("chapters")
        assert main(["store", "migrate", str(tmp_path / name)]) == 0
        assert "given `_changed` and `_previous`" in capsys.readouterr().out
        assert main(["store", "migrate", str(tmp_path / name)]) == 0
        assert "already in the current layout" in capsys.readouterr().out
    changes = {name: store.changes("chapters") for name, store in stores.items()}
    # Every store now flags the same rows and keeps the values they changed from.
    expected_changes = changes["current"][["idx", "chapter_id", "_changed", "_previous"]]
    assert not expected_changes["_changed"].all()
    assert expected_changes.loc[expected_changes["_changed"], "_previous"].notna().all()
    for name in ("flag_only", "legacy", "mixed"):
        assert_frame_equal(
            changes[name][["idx", "chapter_id", "_changed", "_previous"]], expected_changes,
            obj=name,
        )  # fmt: skip
    expected = analysis.runs(stores["current"])
    for name in ("flag_only", "legacy", "mixed"):
        assert_frame_equal(analysis.runs(stores[name]), expected, obj=name)
        for figure in (analysis.throughput, analysis.credit_spend):
            assert_frame_equal(
                figure(stores[name], freq="1h"), figure(stores["current"], freq="1h"), obj=name
            )
    check_figures(stores["current"], emulator, workspace)

"""The review stage against the emulator's review admin route: three chapters finish,
two are reviewed at known times, one waits; the backlog and the lag come out as the
clock says, and the forecast's `reviewed_p50` adds the learned lag to its finish."""

from __future__ import annotations

import pandas as pd
import pytest
from ledger import events
from page_images import make_page

from toolkit import analysis
from toolkit.analysis import review_moves as moves_module
from toolkit.analysis.observed import Observed, observe
from toolkit.analysis.review import review_lag_hours, review_lags, review_moves
from toolkit.store import SnapshotStore

COMIC = {"kind": "comic", "source_language": "ja", "reading_direction": "rtl",
         "process_steps": "translate", "target_languages": ["en"]}  # fmt: skip


def test_backlog_lag_and_reviews_per_day_follow_the_review_route(
    emulator, workspace, client, tmp_path, monkeypatch
):
    project = emulator.create_project(workspace["id"], name="Reviewed", **COMIC)
    quiet = emulator.create_project(workspace["id"], name="Nothing to review", **COMIC)
    store = SnapshotStore(tmp_path / "store")
    store.take(client)
    chapters = [client.create_chapter(project["id"], pages=[make_page(n)]).id for n in range(3)]
    emulator.advance(900)  # all three at needs_review
    store.take(client)
    listed = {c.id: c for c in client.list_chapters(project["id"])}
    ready = {c: pd.Timestamp(listed[c].last_activity_at) for c in chapters}

    reviewed_at = {}
    for chapter, wait in zip(chapters[:2], (1800, 5400), strict=True):
        emulator.advance(wait)
        emulator.review_chapter(chapter)
        reviewed_at[chapter] = pd.Timestamp(emulator.now())
        store.take(client)
    emulator.advance(3600)
    store.take(client)
    as_of = store.snapshots()["snapshot_at"].iloc[-1]

    backlog = analysis.review_backlog(store).set_index("project_id")
    assert quiet["id"] not in backlog.index
    row = backlog.loc[project["id"]]
    assert row["project"] == "Reviewed" and row["waiting"] == 1
    waited = (as_of - ready[chapters[2]]).total_seconds() / 3600
    assert abs(row["oldest_wait_hours"] - waited) < 1e-6
    # Two reviews over the 2.5 hours the store has seen, not over the 7-day window.
    span = (as_of - store.snapshots()["snapshot_at"].iloc[0]) / pd.Timedelta(days=1)
    assert row["reviews_per_day"] == pytest.approx(2 / span)
    lags = [(reviewed_at[c] - ready[c]).total_seconds() / 3600 for c in chapters[:2]]
    assert abs(row["review_lag_hours"] - sum(lags) / 2) < 1e-6

    # The lags pair the moves as a plain merge_asof does when every chapter was seen
    # waiting.
    obs = observe(store)
    paired = paired_lags(review_moves(obs, as_of)).groupby("project_id")["hours"].median()
    assert review_lag_hours(obs, as_of).to_dict() == pytest.approx(paired.to_dict())

    # The moves are read in no order (DuckDB's, which a parallel scan may change): the
    # answers are the same whatever order the rows come in.
    read = moves_module.answer

    def backwards(obs, sql):
        found = read(obs, sql)
        return found.iloc[::-1].reset_index(drop=True) if sql == moves_module._MOVES.format(first=0,
            as_of=as_of.isoformat()) else found  # fmt: skip

    monkeypatch.setattr(moves_module, "answer", backwards)
    shuffled = Observed(store, version=store.version())
    pd.testing.assert_frame_equal(review_moves(shuffled, as_of), review_moves(obs, as_of))
    pd.testing.assert_frame_equal(review_lags(shuffled, as_of), review_lags(obs, as_of))
    pd.testing.assert_frame_equal(analysis.review_backlog(shuffled), analysis.review_backlog(obs))
    monkeypatch.undo()

    # A page lets go of the moves once it has its backlog (`forget_moves`): the reviews
    # and waits behind it are kept, and the moves asked again are read again, the same.
    backlog_first = analysis.review_backlog(obs)
    lags_first = review_lags(obs, as_of)
    moves_module.forget_moves(obs)
    assert not [k for k in obs.memo if k.startswith(("review_moves", "review_moves_read"))]
    assert [k for k in obs.memo if k.startswith(("reviews_seen:", "waiting_for_review:"))]
    pd.testing.assert_frame_equal(review_lags(obs, as_of), lags_first)
    pd.testing.assert_frame_equal(analysis.review_backlog(obs), backlog_first)

    # Before any review: one row, all three waiting, no lag yet.
    early = analysis.review_backlog(store, until=store.snapshots()["snapshot_at"].iloc[1])
    assert early["waiting"].tolist() == [3] and early["review_lag_hours"].isna().all()

    # New work in the project: its reviewed finish is its finish plus the median lag.
    client.create_chapter(project["id"], pages=[make_page(n) for n in range(10, 30)])
    for _ in range(4):
        emulator.advance(60)
        store.take(client)
    seen = analysis.forecast(store, window="4min", freq="1min").set_index("project_id")
    lag = pd.Timedelta(hours=row["review_lag_hours"])
    assert seen.loc[project["id"], "reviewed_p50"] == seen.loc[project["id"], "finish_p50"] + lag


def paired_lags(moves: pd.DataFrame) -> pd.DataFrame:
    """Per review: `chapter_id, project_id, reviewed_at, hours` since the chapter was
    last ready before it (reviews of chapters never seen ready are left out)."""
    ready = moves[moves["move"] == "ready"].sort_values("at")
    done = moves[moves["move"] == "reviewed"].sort_values("at")
    if done.empty or ready.empty:  # no pair (and merge_asof refuses empty Arrow keys)
        none = done.iloc[:0]
        return pd.DataFrame({"chapter_id": none["chapter_id"], "project_id": none["project_id"],
                             "reviewed_at": none["at"],
                             "hours": pd.Series(dtype="float64", index=none.index)})  # fmt: skip
    paired = pd.merge_asof(done, ready[["chapter_id", "at"]].rename(columns={"at": "ready_at"}),
                           left_on="at", right_on="ready_at", by="chapter_id")  # fmt: skip
    paired = paired[paired["ready_at"].notna()]
    hours = (paired["at"] - paired["ready_at"]).dt.total_seconds() / 3600
    return pd.DataFrame({"chapter_id": paired["chapter_id"], "project_id": paired["project_id"],
                         "reviewed_at": paired["at"], "hours": hours})  # fmt: skip


def test_a_review_faster_than_the_snapshots_counts_in_the_lag(
    emulator, workspace, client, tmp_path, webhook_url
):
    """Two chapters: one seen waiting, then reviewed 2 hours after it was ready; one
    finished and reviewed 1 hour later between two snapshots (never seen waiting). With
    the `chapter.finished` events in the store, its lag is exact; without them, it is
    placed in the middle of the snapshot before and the review: counted, never dropped."""
    project = emulator.create_project(workspace["id"], name="Fast", **COMIC)
    emulator.add_webhook(workspace["id"], webhook_url, ["chapter.finished"])
    with_events = SnapshotStore(tmp_path / "events")
    without = SnapshotStore(tmp_path / "none")
    for store in (with_events, without):
        store.take(client)
    slow = client.create_chapter(project["id"], pages=[make_page(1)]).id
    emulator.advance(900)
    for store in (with_events, without):
        store.take(client)
    fast = client.create_chapter(project["id"], pages=[make_page(2)]).id
    emulator.advance(900)
    listed = {c.id: c for c in client.list_chapters(project["id"])}
    ready = {c: pd.Timestamp(listed[c].last_activity_at) for c in (slow, fast)}
    emulator.advance(
        (ready[fast] + pd.Timedelta(hours=1) - pd.Timestamp(emulator.now())).total_seconds()
    )
    emulator.review_chapter(fast)  # 1 hour after it was ready, before any snapshot saw it
    waited = pd.Timestamp(emulator.now()) - ready[slow]
    emulator.advance((pd.Timedelta(hours=2) - waited).total_seconds())
    emulator.review_chapter(slow)  # 2 hours after it was ready
    for store in (with_events, without):
        store.take(client)
    with_events.record_events(events(emulator))
    as_of = with_events.snapshots()["snapshot_at"].iloc[-1]

    lags = review_lags(observe(with_events), as_of).set_index("chapter_id")
    assert lags.loc[fast, "source"] == "event" and lags.loc[slow, "source"] == "snapshot"
    assert lags.loc[fast, "hours"] == pytest.approx(1, abs=1e-6)
    assert lags.loc[slow, "hours"] == pytest.approx(2, abs=1e-6)
    assert review_lag_hours(observe(with_events), as_of)[project["id"]] == pytest.approx(1.5)
    backlog = analysis.review_backlog(with_events).set_index("project_id")
    assert backlog.loc[project["id"], "review_lag_hours"] == pytest.approx(1.5)

    bounded = review_lags(observe(without), as_of).set_index("chapter_id")
    assert bounded.loc[fast, "source"] == "bounds"
    before = without.snapshots()["snapshot_at"].iloc[1]
    reviewed = bounded.loc[fast, "reviewed_at"]
    assert bounded.loc[fast, "ready_at"] == before + (reviewed - before) / 2

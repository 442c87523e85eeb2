"""The review moves kept in the store beside the run stages: read back as built, read
by the review figures instead of the chapters' log, let go by a page, named by `store
check` when they differ from the snapshots, and never used for an earlier moment."""

from __future__ import annotations

import dataclasses
import shutil
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from epochs import SUITE_START
from page_images import make_page

from toolkit import analysis
from toolkit.analysis import review_moves as moves_module
from toolkit.analysis import run_store
from toolkit.analysis.observed import Observed
from toolkit.analysis.review import review_lags
from toolkit.analysis.review_moves import ReviewMoves, forget_moves, moves_at
from toolkit.analysis.run_check import check_runs_kept, stages_equal
from toolkit.analysis.run_store import FOLDER, Keeper, decode, encode
from toolkit.cli import main
from toolkit.client import Client
from toolkit.emulator import Emulator
from toolkit.store import SnapshotStore

COMIC = {"kind": "comic", "source_language": "ja", "reading_direction": "rtl",
         "process_steps": "translate", "target_languages": ["en"]}  # fmt: skip


@pytest.fixture(scope="module")
def reviewed(tmp_path_factory) -> Iterator[Path]:
    """A store whose chapters were made ready and reviewed over several snapshots (the
    tests write into copies)."""
    root = tmp_path_factory.mktemp("moves") / "store"
    with Emulator(clock="manual", start=SUITE_START) as emulator:
        workspace = emulator.create_workspace(name="Test workspace", credits=10_000)
        project = emulator.create_project(workspace["id"], name="Reviewed", **COMIC)
        with Client(base_url=emulator.url, api_key=workspace["apiKey"]) as client:
            store = SnapshotStore(root)
            store.take(client)
            chapters = [client.create_chapter(project["id"], pages=[make_page(n)]).id
                        for n in range(4)]  # fmt: skip
            emulator.advance(900)
            store.take(client)
            for chapter in chapters[:3]:
                emulator.advance(1800)
                emulator.review_chapter(chapter)
                store.take(client)
            emulator.advance(3600)
            store.take(client)
    yield root


@pytest.fixture
def every_stage_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    """A test store's moves are read in milliseconds: kept however quick."""
    monkeypatch.setattr(run_store, "KEEP_AFTER_SECONDS", 0.0)


def copy(root: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(root, tmp_path / "store", ignore=shutil.ignore_patterns(FOLDER)))


def query_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """From here on, reading the moves from the chapters' log fails the test."""

    def refuse(obs, sql):
        raise AssertionError("the moves were read from the log, not the kept stage")

    monkeypatch.setattr(moves_module, "answer", refuse)


def test_the_review_figures_read_the_kept_moves_and_answer_the_same(
    reviewed, tmp_path, monkeypatch, every_stage_kept
):
    root = copy(reviewed, tmp_path)
    store = SnapshotStore(root)
    reference = Observed(store, keep=False)
    backlog = analysis.review_backlog(reference)
    assert backlog["waiting"].sum() == 1 and backlog["reviews_per_day"].sum() > 0
    assert analysis.review_backlog(Observed(store)).equals(backlog)  # builds and keeps
    assert list((root / FOLDER).glob("*/review_moves.arrow"))

    query_refused(monkeypatch)
    again = Observed(SnapshotStore(root))
    pd.testing.assert_frame_equal(analysis.review_backlog(again), backlog, check_exact=True)
    as_of = again.times[-1]
    pd.testing.assert_frame_equal(review_lags(again, as_of), review_lags(reference, as_of))
    assert stages_equal(again.stage(ReviewMoves), reference.stage(ReviewMoves))
    monkeypatch.undo()
    assert check_runs_kept(str(root)) == []


def test_the_moves_read_back_as_they_were_built(reviewed):
    built = Observed(SnapshotStore(reviewed), keep=False).stage(ReviewMoves)
    assert len(built.frame) == 7  # four chapters ready, three of them reviewed
    read = decode(ReviewMoves, encode(built))
    assert stages_equal(read, built)
    # The texts made again from the codes are the query's, dtypes and all.
    pd.testing.assert_frame_equal(read.frame, built.frame, check_exact=True)
    pd.testing.assert_index_equal(read.chapter_ids(), built.chapter_ids(), exact=True)


def test_some_moves_taken_by_position_are_the_frames_rows(reviewed):
    # What the backlog's reviews and the lags' fast reviews take: the frame's rows at
    # those positions, indexed by them, texts made for them alone.
    moves = Observed(SnapshotStore(reviewed), keep=False).stage(ReviewMoves)
    rows = np.array([6, 0, 3], dtype="int64")
    taken = moves.frame_at(rows)
    assert "frame" not in vars(moves)  # the whole frame was not made for them
    pd.testing.assert_frame_equal(taken, moves.frame.take(rows).set_axis(rows), check_exact=True)
    pd.testing.assert_frame_equal(moves.frame_at(None), moves.frame, check_exact=True)
    assert moves.frame_at(np.zeros(0, "int64")).empty


def test_moves_up_to_an_earlier_moment_are_read_from_the_log(
    reviewed, tmp_path, monkeypatch, every_stage_kept
):
    root = copy(reviewed, tmp_path)
    obs = Observed(SnapshotStore(root))
    earlier = obs.times[2]  # one review seen by then
    moves_at(obs, obs.times[-1])  # the last snapshot's: kept
    asked = []
    read = moves_module.answer
    monkeypatch.setattr(moves_module, "answer", lambda o, sql: asked.append(sql) or read(o, sql))
    found = moves_at(obs, earlier)
    assert len(asked) == 1 and (found.frame["move"] == "reviewed").sum() == 1
    assert found is not obs.stage(ReviewMoves)


def test_a_page_lets_go_of_the_kept_moves_and_reads_them_again_the_same(
    reviewed, tmp_path, every_stage_kept
):
    root = copy(reviewed, tmp_path)
    obs = Observed(SnapshotStore(root))
    first = moves_at(obs, obs.times[-1])
    assert obs.has(ReviewMoves)
    forget_moves(obs)
    assert not obs.has(ReviewMoves)
    assert not [k for k in obs.memo if k.startswith("review_moves")]
    assert stages_equal(moves_at(obs, obs.times[-1]), first)


def test_store_check_names_kept_moves_that_differ_and_repair_deletes_them(
    reviewed, tmp_path, capsys, every_stage_kept
):
    root = copy(reviewed, tmp_path)
    store = SnapshotStore(root)
    built = analysis.review_backlog(Observed(store, keep=False))
    obs = Observed(store)
    moves = obs.stage(ReviewMoves)
    wrong = dataclasses.replace(moves, move=1 - moves.move)  # ready for reviewed
    Keeper(store, store.version()).save(ReviewMoves, wrong, obs.manifest, took=1.0)
    assert not analysis.review_backlog(Observed(SnapshotStore(root))).equals(built)
    assert main(["store", "check", "--store", str(root)]) == 1
    out = capsys.readouterr().out
    assert "the review figures' moves kept for the present snapshots differs" in out
    assert main(["store", "check", "--store", str(root), "--repair"]) == 0
    assert not (root / FOLDER).exists()
    pd.testing.assert_frame_equal(analysis.review_backlog(Observed(SnapshotStore(root))), built)


def test_moves_built_from_rows_in_any_order_are_the_same_stage(reviewed):
    obs = Observed(SnapshotStore(reviewed), keep=False)
    frame = moves_module.answer(obs, moves_module._MOVES.format(as_of=obs.times[-1], first=0))
    built = ReviewMoves.of(frame)
    for shuffled in (frame.iloc[::-1], frame.sample(frac=1, random_state=3)):
        assert stages_equal(ReviewMoves.of(shuffled.reset_index(drop=True)), built)


def test_a_new_snapshot_extends_the_kept_moves_with_its_own_alone(
    tmp_path, monkeypatch, every_stage_kept
):
    root = tmp_path / "store"
    with Emulator(clock="manual", start=SUITE_START) as emulator:
        workspace = emulator.create_workspace(name="Test workspace", credits=10_000)
        project = emulator.create_project(workspace["id"], name="Reviewed", **COMIC)
        with Client(base_url=emulator.url, api_key=workspace["apiKey"]) as client:
            store = SnapshotStore(root)

            def chapters(first: int, n: int) -> list[str]:
                return [client.create_chapter(project["id"], pages=[make_page(first + k)]).id
                        for k in range(n)]  # fmt: skip

            older = chapters(0, 3)
            emulator.advance(900)
            store.take(client)
            emulator.review_chapter(older[0])
            store.take(client)
            kept = Observed(SnapshotStore(root))
            analysis.runs(kept)  # the run stages and what an extension starts from
            kept.stage(ReviewMoves)
            # Since: a review of a chapter seen ready before, new chapters made ready
            # (their ids sort among the kept ones), and one reviewed between snapshots.
            emulator.review_chapter(older[1])
            newer = chapters(10, 4)
            emulator.advance(900)
            store.take(client)
            emulator.review_chapter(newer[0])
            emulator.advance(600)
            store.take(client)

    asked = []
    read = moves_module.answer
    monkeypatch.setattr(moves_module, "answer", lambda o, sql, window=None: asked.append(window)
                        or read(o, sql, window))  # fmt: skip
    monkeypatch.setattr(ReviewMoves, "build", classmethod(lambda cls, obs: pytest.fail("built")))
    extended = Observed(SnapshotStore(root))
    moves = extended.stage(ReviewMoves)
    assert asked == [(2, 3)]  # the two snapshots since, read alone
    monkeypatch.undo()
    reference = Observed(SnapshotStore(root), keep=False)
    assert stages_equal(moves, reference.stage(ReviewMoves))
    pd.testing.assert_frame_equal(moves.frame, reference.stage(ReviewMoves).frame)
    assert set(moves.frame["chapter_id"]) == {*older, *newer}
    pd.testing.assert_frame_equal(
        analysis.review_backlog(extended), analysis.review_backlog(reference), check_exact=True
    )
    assert check_runs_kept(str(root)) == []

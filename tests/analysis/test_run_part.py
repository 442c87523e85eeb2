"""The update after a snapshot (`Observed.update`, `analysis.update_runs`) keeps a part
over the last state kept whole (`run_part`), and its first reader joins it: the stages
then equal the pipeline's, value for value, after one part, a chain of parts, a part
whose base is gone, and a part joined by `toolkit store check`; the base of a part kept
is never dropped; and a store that keeps nothing keeps nothing after an update."""

from __future__ import annotations

import contextlib
import json
import shutil
from pathlib import Path

import pyarrow as pa
import pytest
import test_run_store
from scenarios import RUN, pages
from test_run_store import another_snapshot, assert_stages_are_the_pipelines, copy

from toolkit import analysis, cli
from toolkit.analysis import run_extend, run_part
from toolkit.analysis.observed import Observed
from toolkit.analysis.run_check import STAGES, check_runs_kept
from toolkit.analysis.run_store import BASIS, FOLDER, PART, Keeper
from toolkit.store import SnapshotStore

# The scenario store, and every stage kept however quick: `test_run_store`'s fixtures.
seen = test_run_store.seen
every_stage_kept = test_run_store.every_stage_kept


@pytest.fixture(autouse=True)
def parts_of_any_share(monkeypatch: pytest.MonkeyPatch) -> None:
    """The scenario's chapters are few, and each test's snapshot also sees the chapters
    the tests before it made (one emulator): a part however much of the store it
    touches, or whether one is kept would depend on the tests' order."""
    monkeypatch.setattr(run_part, "MOST_TOUCHED", 1.0)


def state_of(root: Path) -> Path:
    """The folder of the store's present state (whether or not anything is kept)."""
    store = SnapshotStore(root)
    return root / FOLDER / Keeper(store, store.version()).state(store.snapshots())


def base_named(state: Path) -> str | None:
    """The base a state's basis names (None: the state is a base)."""
    with pa.OSFile(str(state / f"{BASIS}.arrow")) as source:
        meta = json.loads(pa.ipc.open_file(source).schema.metadata[b"toolkit"])
    return meta["base"]


def kept_whole(root: Path) -> tuple[Path, SnapshotStore]:
    store = SnapshotStore(root)
    for kind in STAGES:
        Observed(store, keep_after=0).stage(kind)
    return state_of(root), store


def test_parts_kept_after_each_snapshot_join_into_the_full_build(seen, tmp_path):
    emulator, client, root = seen
    root = copy(root, tmp_path)
    base, store = kept_whole(root)
    for page in (2010, 2030, 2050):  # a part over the base, then parts over parts
        another_snapshot(emulator, client, store, first_page=page)
        assert Observed(SnapshotStore(root)).update(join_past=1.0)
        state = state_of(root)
        assert (state / f"{PART}.arrow").exists()
        assert not (state / "transitions.arrow").exists()  # the stages are not written
        assert base_named(state) == base.name
        assert base.is_dir()  # the base is kept while a part is joined with it
    assert_stages_are_the_pipelines(root)
    assert (state / "transitions.arrow").exists()  # joined by its reader: a base now
    assert base_named(state) is None
    assert check_runs_kept(str(root)) == []


def test_a_part_whose_base_is_gone_is_built_whole(seen, tmp_path):
    emulator, client, root = seen
    root = copy(root, tmp_path)
    base, store = kept_whole(root)
    another_snapshot(emulator, client, store, first_page=2110)
    assert Observed(SnapshotStore(root)).update(join_past=1.0)
    shutil.rmtree(base)
    assert_stages_are_the_pipelines(root)
    assert base_named(state_of(root)) is None  # what the next snapshot extends


def test_store_check_joins_a_part_and_compares_it(seen, tmp_path):
    emulator, client, root = seen
    root = copy(root, tmp_path)
    _, store = kept_whole(root)
    another_snapshot(emulator, client, store, first_page=2210)
    assert Observed(SnapshotStore(root)).update(join_past=1.0)
    assert check_runs_kept(str(root)) == []
    assert (state_of(root) / "run_table.arrow").exists()


def test_a_part_of_more_than_a_tenth_of_the_chapters_is_kept_whole(seen, tmp_path, monkeypatch):
    # However many chapters the tests before made: a part of any is more than none.
    monkeypatch.setattr(run_extend, "_MOST_IN_PART", 0.0)
    emulator, client, root = seen
    root = copy(root, tmp_path)
    _, store = kept_whole(root)
    another_snapshot(emulator, client, store, first_page=2310)
    assert analysis.update_runs(SnapshotStore(root))
    state = state_of(root)
    assert (state / "run_table.arrow").exists() and not (state / f"{PART}.arrow").exists()
    assert_stages_are_the_pipelines(root)


def test_the_bases_of_parts_kept_outlive_the_states_dropped(seen, tmp_path):
    emulator, client, root = seen
    root = copy(root, tmp_path)
    base, store = kept_whole(root)
    for page in range(2410, 2490, 20):  # more parts than states kept beside the newest
        another_snapshot(emulator, client, store, first_page=page)
        assert Observed(SnapshotStore(root)).update(join_past=1.0)
    states = sorted(p.name for p in (root / FOLDER).iterdir())
    assert base.name in states and len(states) == 4  # the newest, two before it, the base
    assert_stages_are_the_pipelines(root)


def test_a_store_that_keeps_no_stages_keeps_nothing_after_an_update(seen, tmp_path):
    emulator, client, root = seen
    root = copy(root, tmp_path)
    another_snapshot(emulator, client, SnapshotStore(root), first_page=2510)
    assert not analysis.update_runs(SnapshotStore(root))
    assert not (root / FOLDER).exists()


def test_a_part_reads_back_as_it_was_kept(seen, tmp_path):
    emulator, client, root = seen
    root = copy(root, tmp_path)
    _, store = kept_whole(root)
    another_snapshot(emulator, client, store, first_page=2610)
    assert Observed(SnapshotStore(root)).update(join_past=1.0)
    keeper = Keeper(store, store.version())
    part = run_part.read_part(keeper, state_of(root).name)
    assert part is not None and part.charges is not None and part.runs is not None
    assert len(part.chapters) >= 1 and part.rows.num_rows >= 1
    assert run_part.read_part(keeper, "no-such-state") is None


def test_toolkit_snapshot_keeps_the_part_of_a_store_that_keeps_stages(
    seen, tmp_path, monkeypatch, capsys
):
    # What a cron job runs: the next page or figure then joins the part, not the log.
    emulator, client, root = seen
    root = copy(root, tmp_path)
    _, store = kept_whole(root)
    projects = store.latest("projects")
    comic = projects[projects["kind"] == "comic"]["project_id"].iloc[0]
    client.create_chapter(str(comic), pages=pages(2710, 2))
    emulator.advance(RUN)
    monkeypatch.setattr(cli, "_client", lambda args, *more: contextlib.nullcontext(client))
    assert cli.main(["snapshot", "--store", str(root)]) == 0
    assert (state_of(root) / f"{BASIS}.arrow").exists()  # a part, or the stages whole
    assert "Traceback" not in capsys.readouterr().err
    assert_stages_are_the_pipelines(root)

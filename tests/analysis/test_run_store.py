"""The run stages a store keeps (`run_store`) read as the pipeline builds them: every run
figure read from them equals, frame for frame, the figure worked out from the change log
(the reference path, `Observed(store, keep=False)`), on the store that saw every awkward
case of the reference queries, with and without events; a later snapshot, a file that
does not read and one with wrong values are each handled as a user expects, and
`toolkit store check` names and repairs a wrong one. The part the update keeps after a
snapshot (`run_part`) joins into the same stages (the last section)."""

from __future__ import annotations

import contextlib
import json
import math
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from aged_states import aged
from deltalake import DeltaTable
from epochs import SUITE_START
from ledger import events
from scenarios import RUN, pages
from test_reference_runs import awkward_cases

import toolkit as tk
from toolkit import analysis, cli
from toolkit.analysis import run_extend, run_part, run_store, run_touched
from toolkit.analysis.charges import Charges
from toolkit.analysis.observed import Observed
from toolkit.analysis.prices import Prices
from toolkit.analysis.run_check import STAGES, check_runs_kept, stages_equal
from toolkit.analysis.run_store import (
    BASIS,
    FOLDER,
    KEPT,
    LANGUAGES,
    PART,
    SAMPLES,
    Keeper,
    decode,
    encode,
)
from toolkit.analysis.run_table import RunTable
from toolkit.analysis.runs import RunFrame, paid_pages, rescans_seen, runs_ended
from toolkit.analysis.transitions import Transitions
from toolkit.cli import main
from toolkit.client import Client
from toolkit.emulator import Emulator
from toolkit.store import SnapshotStore

# Every figure that stands on the run stages, as a user asks it.
FIGURES = {
    "runs": {},
    "cycle_times": {},
    "lead_times": {},
    "failures": {},
    "failure_rates": {},
    "finished": {"freq": "D"},
    "credit_spend": {"freq": "1D"},
    "throughput": {"freq": "1D"},
    "charges": {},
    "spend_in": {},
    "price_per_page": {},
    "price_per_chapter": {},
    "stalled": {},
    "stuck": {},
    "review_backlog": {},
    "monthly_spend": {},
}


@pytest.fixture(scope="module", autouse=True)
def every_stage_kept() -> Iterator[None]:
    """The scenario's stages build in milliseconds, under `KEEP_AFTER_SECONDS`: these
    tests keep them all, as a long history's are."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(run_store, "KEEP_AFTER_SECONDS", 0.0)
        yield


@pytest.fixture(scope="module")
def seen(tmp_path_factory, webhook_url) -> Iterator[tuple[Emulator, Client, Path]]:
    """An emulator still running and the folder of a store that saw every awkward case
    (the tests write into copies)."""
    root = tmp_path_factory.mktemp("kept") / "store"
    with Emulator(clock="manual", start=SUITE_START) as emulator:
        workspace = emulator.create_workspace(name="Test workspace", credits=10_000)
        with Client(base_url=emulator.url, api_key=workspace["apiKey"]) as client:
            awkward_cases(emulator, workspace, client, SnapshotStore(root), webhook_url)
            yield emulator, client, root


def copy(root: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(root, tmp_path / "store", ignore=shutil.ignore_patterns(FOLDER)))


def figures(obs: Observed) -> dict[str, object]:
    return {name: getattr(analysis, name)(obs, **asked) for name, asked in FIGURES.items()}


def assert_same_figures(built: dict[str, object], read: dict[str, object]) -> None:
    for name, figure in built.items():
        if isinstance(figure, pd.DataFrame):
            pd.testing.assert_frame_equal(figure, read[name], check_exact=True, obj=name)
        else:
            assert figure == read[name], name


def kept_files(root: Path) -> list[str]:
    return sorted(p.name for p in (root / FOLDER).glob("*/*.arrow"))


def not_built(monkeypatch: pytest.MonkeyPatch) -> None:
    """From here on, a kept stage built instead of read fails the test."""
    for kind in STAGES:

        def refuse(cls, obs, kind=kind):
            raise AssertionError(f"{kind.__name__} was built, not read")

        monkeypatch.setattr(kind, "build", classmethod(refuse))


@pytest.mark.parametrize("with_events", [False, True])
@pytest.mark.slow
def test_every_run_figure_read_from_the_kept_stages_equals_the_pipeline(
    seen, tmp_path, monkeypatch, with_events
):
    emulator, _, root = seen
    root = copy(root, tmp_path)
    if with_events:
        SnapshotStore(root).record_events(events(emulator))
    reference = Observed(SnapshotStore(root), keep=False)
    built = figures(reference)
    assert not (root / FOLDER).exists()  # the reference path keeps nothing
    first = figures(Observed(SnapshotStore(root)))  # builds and keeps
    # Each stage, and what the next snapshot's stages are extended from.
    assert kept_files(root) == sorted(
        f"{name}.arrow" for name in [*KEPT.values(), BASIS, LANGUAGES, SAMPLES]
    )
    not_built(monkeypatch)
    again = Observed(SnapshotStore(root))
    read = figures(again)
    assert_same_figures(built, first)
    assert_same_figures(built, read)
    for kind in STAGES:
        assert stages_equal(reference.stage(kind), again.stage(kind)), kind.__name__
        # Shared by every figure of a view, built or read: no figure can write into one.
        for stage in (reference.stage(kind), again.stage(kind)):
            arrays = [v for v in stage.__dict__.values() if isinstance(v, np.ndarray)]
            assert not any(a.flags.writeable for a in arrays), kind.__name__
    assert built["runs"]["rework"].sum() > 0  # the awkward cases are all there
    monkeypatch.undo()
    assert check_runs_kept(str(root)) == []


def test_a_later_snapshot_reads_its_own_stages_never_the_ones_before(seen, tmp_path):
    emulator, client, root = seen
    root = copy(root, tmp_path)
    store = SnapshotStore(root)
    before = analysis.runs(Observed(store))
    projects = store.latest("projects")
    project = projects[projects["kind"] == "comic"]["project_id"].iloc[0]
    client.create_chapter(str(project), pages=pages(900, 2))
    emulator.advance(RUN)
    store.take(client)
    after = analysis.runs(Observed(SnapshotStore(root)))
    assert len(after) == len(before) + 1
    pd.testing.assert_frame_equal(after, analysis.runs(Observed(SnapshotStore(root), keep=False)))
    assert len(list((root / FOLDER).iterdir())) == 2  # the state before, kept a while


def test_events_recorded_later_are_another_state(seen, tmp_path):
    emulator, _, root = seen
    root = copy(root, tmp_path)
    without = analysis.runs(Observed(SnapshotStore(root)))
    SnapshotStore(root).record_events(events(emulator))
    with_events = analysis.runs(Observed(SnapshotStore(root)))
    assert (with_events["finished_source"] == "event").any()
    assert not (without["finished_source"] == "event").any()


def test_a_kept_file_that_does_not_read_is_built_again(seen, tmp_path):
    _, _, root = seen
    root = copy(root, tmp_path)
    built = analysis.credit_spend(Observed(SnapshotStore(root), keep=False))
    analysis.credit_spend(Observed(SnapshotStore(root)))
    (path,) = (root / FOLDER).glob("*/run_table.arrow")
    path.write_bytes(path.read_bytes()[:100])  # a crash, a full disk
    assert len(check_runs_kept(str(root))) == 1  # named, not repaired
    pd.testing.assert_frame_equal(analysis.credit_spend(Observed(SnapshotStore(root))), built)
    assert check_runs_kept(str(root)) == []  # the read built and kept it again


def test_a_save_killed_before_its_rename_leaves_no_stage_and_reads_as_before(
    seen, tmp_path, monkeypatch
):
    # A kill -9 between writing a stage's temporary file and renaming it into place:
    # the temporary file stays behind (as a kill leaves it) and no stage is kept.
    _, _, root = seen
    root = copy(root, tmp_path)
    built = analysis.runs(Observed(SnapshotStore(root), keep=False))

    def killed(source, target):
        raise OSError("killed")

    monkeypatch.setattr("toolkit.files.os.replace", killed)
    monkeypatch.setattr("toolkit.files.os.remove", lambda path: None)
    pd.testing.assert_frame_equal(analysis.runs(Observed(SnapshotStore(root))), built)
    monkeypatch.undo()
    assert kept_files(root) == [] and list((root / FOLDER).glob("*/.*.tmp"))
    pd.testing.assert_frame_equal(analysis.runs(Observed(SnapshotStore(root))), built)
    assert "run_frame.arrow" in kept_files(root)
    assert check_runs_kept(str(root)) == []


def test_store_check_names_a_kept_stage_that_differs_and_repair_deletes_it(seen, tmp_path, capsys):
    _, _, root = seen
    root = copy(root, tmp_path)
    store = SnapshotStore(root)
    built = analysis.credit_spend(Observed(store, keep=False))
    obs = Observed(store)
    table = obs.stage(RunTable)
    wrong = RunTable(**{**table.__dict__, "credits": table.credits * 2})
    keeper = Keeper(store, store.version())
    keeper.save(RunTable, wrong, obs.manifest, took=1.0)  # as a toolkit with a fault would
    assert not analysis.credit_spend(Observed(SnapshotStore(root))).equals(built)
    assert main(["store", "check", "--store", str(root)]) == 1
    out = capsys.readouterr().out
    assert "runs: " in out and "run table kept for the present snapshots differs" in out
    assert "--repair deletes the kept run stages" in out
    assert main(["store", "check", "--store", str(root), "--repair"]) == 0
    assert not (root / FOLDER).exists()
    pd.testing.assert_frame_equal(analysis.credit_spend(Observed(SnapshotStore(root))), built)


def test_a_store_that_cannot_be_written_is_read_as_before(seen, tmp_path):
    _, _, root = seen
    root = copy(root, tmp_path)
    (root / FOLDER).write_text("not a folder")  # any write under it fails
    built = analysis.runs(Observed(SnapshotStore(root), keep=False))
    pd.testing.assert_frame_equal(analysis.runs(Observed(SnapshotStore(root))), built)


def test_tables_written_behind_stop_at_the_first_that_cannot_be_written(tmp_path):
    # An extension writes its stages, then the languages and the basis, from a thread
    # (`Keeper.write_behind`): a basis must never stand beside a stage not written.
    table = pa.table({"x": [1]})
    state = tmp_path / "state"
    state.mkdir()
    behind = run_store._Behind(moved=False)
    behind.submit(state, "transitions", table)
    behind.submit(tmp_path / "gone", "charges", table)  # a folder that is not there
    behind.submit(state, BASIS, table)
    behind.join()
    assert [p.name for p in state.iterdir()] == ["transitions.arrow"]
    # Nor is anything written when the store moved on since the stages were read.
    moved = run_store._Behind(moved=True)
    moved.submit(state, BASIS, table)
    moved.join()
    assert not (state / f"{BASIS}.arrow").exists()


def test_each_stage_reads_back_as_it_was_built(seen):
    _, _, root = seen
    obs = Observed(SnapshotStore(root), keep=False)
    for kind in (Transitions, Prices, Charges, RunTable, RunFrame):
        stage = obs.stage(kind)
        assert stages_equal(decode(kind, encode(stage)), stage), kind.__name__
    rows = obs.stage(Transitions).rows
    assert isinstance(rows["chapter_id"].dtype, pd.CategoricalDtype)
    assert obs.stage(RunTable).failure_reason.dtype == np.dtype(object)


def test_columns_read_alone_from_the_kept_stages_answer_as_the_stages(seen, tmp_path):
    # The pages paid and the re-scans seen read two columns of each kept stage without
    # reading the stages (a watch cycle asks for nothing else of them): the same
    # answers as from the stages read whole, and none read meanwhile.
    _, _, root = seen
    root = copy(root, tmp_path)
    analysis.runs(Observed(SnapshotStore(root)))  # builds and keeps the stages
    alone, whole = Observed(SnapshotStore(root)), Observed(SnapshotStore(root), keep=False)
    assert alone.kept_columns(Charges, ["paid"]) is not None
    paid, rescans = paid_pages(alone), rescans_seen(alone)
    assert not alone._stages  # answered from the columns alone
    pd.testing.assert_series_equal(paid, paid_pages(whole), check_exact=True)
    pd.testing.assert_frame_equal(rescans, rescans_seen(whole), check_exact=True)
    assert len(rescans) and (paid > 0).any()  # the awkward cases re-scan and pay
    # The spend by project takes each run's chapter and project so too.
    spend = analysis.credit_spend(alone, "1D", "project_id")
    pd.testing.assert_frame_equal(spend, analysis.credit_spend(whole, "1D", "project_id"))
    # And the runs a failure rate frames, their texts from those columns alone.
    since = pd.Timestamp(SUITE_START)
    ended = runs_ended(alone, since=since)
    pd.testing.assert_frame_equal(ended, runs_ended(whole, since=since))
    assert ended["outcome"].nunique() > 1  # finished and failed runs
    # And the charges a budget sums, and their list.
    for asked in (analysis.spend_in, analysis.charges):
        pd.testing.assert_frame_equal(asked(alone), asked(whole), obj=asked.__name__)
    assert Transitions not in alone._stages and Charges not in alone._stages
    # A column the file does not hold, or a stage already read: ask the stage.
    assert alone.kept_columns(Charges, ["no such column"]) is None
    alone.stage(Charges)
    assert alone.kept_columns(Charges, ["paid"]) is None


@pytest.mark.parametrize("storage", ["pyarrow", "python"])
def test_texts_read_back_in_the_storage_they_were_built_in(storage):
    # pandas reads Arrow's "string" back in its default storage (Python objects on
    # pandas 2.2, Arrow on 3): a kept runs frame on the lowest versions read back
    # `string[python]` where the pipeline built `string[pyarrow]`.
    texts = pd.array(["a/1", None, "b/2"], dtype=f"string[{storage}]")
    frame = pd.DataFrame({"run_id": texts, "credits": pd.array([1.0, None, 2.0], "Float64")})
    read = decode(RunFrame, encode(RunFrame(frame))).frame
    pd.testing.assert_frame_equal(read, frame, check_exact=True)
    assert read["run_id"].dtype.storage == storage


def test_a_kept_runs_frame_of_no_runs_joins_as_the_pipelines(seen, tmp_path):
    # Equal values are not enough: pandas cannot join on a text column without an Arrow
    # chunk, which a file of no rows read back with (seeds 25 and 36: `lead_times` of a
    # store with no run failed where the pipeline's answered).
    _, _, root = seen
    root = copy(root, tmp_path)
    store = SnapshotStore(root)
    obs = Observed(store, keep=False)
    keeper = Keeper(store, store.version())
    for frame in (obs.stage(RunFrame).frame, obs.stage(RunFrame).frame.iloc[:0]):
        keeper.save(RunFrame, RunFrame(frame), obs.manifest, took=1.0)
        read = keeper.load(RunFrame, obs.manifest).frame
        assert chunks(read) == chunks(frame)
        last = read.groupby("chapter_id", observed=True)["run_id"].last().rename("last_run")
        assert len(read[["chapter_id"]].join(last, on="chapter_id")) == len(frame)


def chunks(frame: pd.DataFrame) -> dict[str, int]:
    """How many Arrow chunks each Arrow-backed column has."""
    backed = {c: getattr(frame[c].array, "_pa_array", None) for c in frame.columns}
    return {c: a.num_chunks for c, a in backed.items() if isinstance(a, pa.ChunkedArray)}


def test_a_store_whose_stages_build_quickly_keeps_none(seen, tmp_path, monkeypatch):
    """A small store (a notebook's first days, a test's) is read as it was written: no
    `_runs` folder, no write on a read, for stages that rebuild in less time than the
    threshold."""
    monkeypatch.setattr(run_store, "KEEP_AFTER_SECONDS", 3600.0)
    root = tmp_path / "store"
    shutil.copytree(seen[2], root)
    shutil.rmtree(root / FOLDER, ignore_errors=True)
    built = analysis.runs(Observed(SnapshotStore(root), keep=False))
    pd.testing.assert_frame_equal(analysis.runs(Observed(SnapshotStore(root))), built)
    assert not (root / FOLDER).exists()


class ExtendedAtEachSnapshot(SnapshotStore):
    """A store that, after each snapshot, asks its run stages (extended from the state
    before when one is kept) and records whether each equals the full build."""

    def __init__(self, root, emulator=None) -> None:
        super().__init__(root)
        self.emulator = emulator
        self.checked: list[tuple[int, bool, dict[str, bool]]] = []
        self.states = 0  # the most states `_runs` held after a snapshot

    def take(self, client, *args, **kwargs):
        taken = super().take(client, *args, **kwargs)
        if self.emulator is not None:
            self.record_events(events(self.emulator))
        extended = Observed(SnapshotStore(self.root), keep_after=0)
        asked = {kind: extended.stage(kind) for kind in STAGES}
        reference = Observed(SnapshotStore(self.root), keep=False)
        equal = {k.__name__: stages_equal(v, reference.stage(k)) for k, v in asked.items()}
        self.checked.append((len(self.snapshots()), extended.extended, equal))
        self.states = max(self.states, len(list((Path(self.root) / FOLDER).iterdir())))
        return taken


# A full build after every snapshot, twice: the slow group's (40 s). The default group
# keeps one extension (`test_a_snapshot_after_a_kept_state_is_extended_from_it`), and
# every seeded history checks each of its snapshots the same way.
@pytest.mark.slow
@pytest.mark.parametrize("with_events", [False, True])
def test_stages_extended_at_each_snapshot_equal_the_full_build(
    tmp_path, webhook_url, monkeypatch, with_events
):
    extensions = extensions_counted(monkeypatch)
    with Emulator(clock="manual", start=SUITE_START) as emulator:
        workspace = emulator.create_workspace(name="Test workspace", credits=10_000)
        store = ExtendedAtEachSnapshot(tmp_path / "store", emulator if with_events else None)
        with Client(base_url=emulator.url, api_key=workspace["apiKey"]) as client:
            awkward_cases(emulator, workspace, client, store, webhook_url)
    wrong = [(n, equal) for n, _, equal in store.checked if not all(equal.values())]
    assert wrong == []
    assert len(store.checked) > 5
    assert sum(extensions) >= len(store.checked) // 2, extensions  # most were extended
    assert store.states <= 3  # the state written and the two newest before it


def test_a_learned_price_that_moved_builds_the_charges_and_runs_whole(seen, tmp_path, monkeypatch):
    """When the whole history's learned prices differ from the kept state's, the
    transitions are spliced but the charges and the run table are built from them whole
    (every run's split may move): still the full build's, value for value."""
    emulator, client, root = seen
    root = copy(root, tmp_path)
    store = SnapshotStore(root)
    for kind in STAGES:
        Observed(store, keep_after=0).stage(kind)
    monkeypatch.setattr(run_part, "_same_prices", lambda before, now: False)
    made = extensions_counted(monkeypatch)
    another_snapshot(emulator, client, store, first_page=1010)
    assert_stages_are_the_pipelines(root)
    assert made == [True]


def extensions_counted(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Whether each extension asked from here on was made (False: built whole)."""
    made: list[bool] = []
    real = run_extend.extend

    def counted(obs, keeper):
        found = real(obs, keeper)
        made.append(found is not None)
        return found

    monkeypatch.setattr(run_extend, "extend", counted)
    return made


def another_snapshot(emulator, client, store: SnapshotStore, first_page: int) -> None:
    projects = store.latest("projects")
    project = projects[projects["kind"] == "comic"]["project_id"].iloc[0]
    client.create_chapter(str(project), pages=pages(first_page, 2))
    emulator.advance(RUN)
    store.take(client)


def assert_stages_are_the_pipelines(root: Path) -> None:
    extended = Observed(SnapshotStore(root), keep_after=0)
    reference = Observed(SnapshotStore(root), keep=False)
    for kind in STAGES:
        assert stages_equal(extended.stage(kind), reference.stage(kind)), kind.__name__


def test_a_snapshot_after_a_kept_state_is_extended_from_it(seen, tmp_path, monkeypatch):
    emulator, client, root = seen
    root = copy(root, tmp_path)
    store = SnapshotStore(root)
    for kind in STAGES:
        Observed(store, keep_after=0).stage(kind)
    made = extensions_counted(monkeypatch)
    another_snapshot(emulator, client, store, first_page=950)
    assert_stages_are_the_pipelines(root)
    assert made == [True]
    assert check_runs_kept(str(root)) == []


def test_a_store_whose_stages_only_the_weekly_page_asked_extends_them_after_a_snapshot(
    seen, tmp_path, monkeypatch
):
    # The page reads the run table, never the runs frame: the basis of the next state's
    # extension is kept with the run table, or a store only paged was built whole at
    # every snapshot.
    emulator, client, root = seen
    root = copy(root, tmp_path)
    store = SnapshotStore(root)
    Observed(store, keep_after=0).stage(RunTable)
    assert {"run_table.arrow", f"{BASIS}.arrow"} <= set(kept_files(root))
    assert "run_frame.arrow" not in kept_files(root)
    made = extensions_counted(monkeypatch)
    another_snapshot(emulator, client, store, first_page=1110)
    Observed(SnapshotStore(root), keep_after=0).stage(RunTable)
    assert made == [True]
    assert_stages_are_the_pipelines(root)


def test_a_store_repaired_since_its_kept_state_is_built_whole(seen, tmp_path, monkeypatch):
    """A foreign commit undone by `store check --repair` (a restore): the commits since
    the kept state are not only a snapshot's, so nothing is extended from it."""
    emulator, client, root = seen
    root = copy(root, tmp_path)
    store = SnapshotStore(root)
    for kind in STAGES:
        Observed(store, keep_after=0).stage(kind)
    chapter = str(store.latest("chapters")["chapter_id"].iloc[0])
    DeltaTable(str(root / "chapters")).delete(f"chapter_id = '{chapter}'")
    assert main(["store", "check", "--store", str(root), "--repair"]) == 0
    made = extensions_counted(monkeypatch)
    another_snapshot(emulator, client, SnapshotStore(root), first_page=970)
    assert_stages_are_the_pipelines(root)
    assert made == [False]


def kept_copy(seen, tmp_path: Path) -> tuple[Path, SnapshotStore, Observed]:
    """A copy of the scenario store with every stage kept for its state, and the
    `Observed` that kept them."""
    root = copy(seen[2], tmp_path)
    store = SnapshotStore(root)
    obs = Observed(store, keep_after=0)
    for kind in STAGES:
        obs.stage(kind)
    return root, store, obs


@pytest.mark.slow
def test_store_check_names_a_wrong_stage_carried_into_an_extension(seen, tmp_path, capsys):
    """A wrong stage kept for one state is carried, for the chapters untouched, into the
    next state's extension: `store check` compares that state's stages with a build."""
    emulator, client, _ = seen
    root, store, obs = kept_copy(seen, tmp_path)
    table = obs.stage(RunTable)
    wrong = RunTable(**{**table.__dict__, "credits": table.credits * 2})
    Keeper(store, store.version()).save(RunTable, wrong, obs.manifest, took=1.0)
    another_snapshot(emulator, client, store, first_page=990)
    for kind in STAGES:
        Observed(SnapshotStore(root), keep_after=0).stage(kind)
    assert main(["store", "check", "--store", str(root)]) == 1
    assert "run table kept for the present snapshots differs" in capsys.readouterr().out
    assert main(["store", "check", "--store", str(root), "--repair"]) == 0
    assert_stages_are_the_pipelines(root)


def test_a_project_renamed_since_works_its_chapters_out_whole_beside_the_rows_since(
    seen, tmp_path, monkeypatch
):
    """The chapters of a project whose names changed since the kept state are worked out
    over their whole history (every row carries them); the other touched chapters have
    their rows since added to their kept ones: both in one extension, equal to the full
    build. (The emulator renames no project: the kept basis is made to remember another
    name, which is what a rename since looks like to the extension.)"""
    emulator, client, _ = seen
    root, store, obs = kept_copy(seen, tmp_path)
    keeper = Keeper(store, store.version())
    basis = keeper.load_table(BASIS, keeper.state(obs.manifest))
    assert basis is not None
    meta = json.loads(basis.schema.metadata[b"toolkit"])
    chapters = store.latest("chapters")["project_id"].astype(str).value_counts()
    projects = store.latest("projects")
    used = str(projects[projects["kind"] == "comic"]["project_id"].iloc[0])  # another_snapshot's
    others = [
        p for p in meta["projects"] if p["project_id"] != used and chapters.get(p["project_id"])
    ]
    renamed = min(others, key=lambda p: chapters[p["project_id"]])
    renamed["project"] = "a name it had before"
    keeper.save_table(
        BASIS, basis.replace_schema_metadata({"toolkit": json.dumps(meta)}), obs.manifest
    )
    split: list[tuple[int, int]] = []
    real = run_touched.touched

    def counted(*args):
        found, whole = real(*args)
        split.append((len(found - whole), len(whole)))
        return found, whole

    monkeypatch.setattr(run_touched, "touched", counted)
    made = extensions_counted(monkeypatch)
    another_snapshot(emulator, client, store, first_page=1010)
    assert_stages_are_the_pipelines(root)
    assert made == [True]
    # Its chapters (one trashed before, in the kept rows too) whole, the others since.
    assert split[0][0] > 0 and split[0][1] >= chapters[renamed["project_id"]]


# `stalled` reads the latest snapshot alone, the review backlog the review moves.
ALONE = [name for name in FIGURES if name not in ("stalled", "review_backlog")]


@pytest.mark.slow
def test_each_run_figure_asked_alone_extends_its_stages_after_a_snapshot(
    seen, tmp_path, monkeypatch
):
    # Last in the module: it moves the shared emulator on after every other test.
    # Whatever figure a store was asked (a watch's checks, a page, one notebook cell),
    # the state it kept is one the next snapshot's stages extend from. Each figure on a
    # copy of its own; the same new snapshot taken into every copy.
    emulator, client, root = seen
    copies = {name: copy(root, tmp_path / name) for name in ALONE}
    for name, folder in copies.items():
        getattr(analysis, name)(Observed(SnapshotStore(folder), keep_after=0), **FIGURES[name])
    projects = SnapshotStore(root).latest("projects")
    comic = projects[projects["kind"] == "comic"]["project_id"].iloc[0]
    client.create_chapter(str(comic), pages=pages(1130, 2))
    emulator.advance(RUN)
    made = extensions_counted(monkeypatch)
    for name, folder in copies.items():
        SnapshotStore(folder).take(client)
        getattr(analysis, name)(Observed(SnapshotStore(folder), keep_after=0), **FIGURES[name])
    assert made == [True] * len(ALONE), dict(zip(ALONE, made, strict=False))


# -- The update after a snapshot: a part over the last state kept whole (`run_part`) ---
# `Observed.update` / `analysis.update_runs` keep a part, and its first reader joins it:
# the stages then equal the pipeline's after one part, a chain of parts, a part whose
# base is gone, and a part joined by `toolkit store check`; the base of a part kept is
# never dropped; a store that keeps nothing keeps nothing after an update.


@pytest.fixture
def parts_of_any_share(monkeypatch: pytest.MonkeyPatch) -> None:
    """The scenario's chapters are few, and each test's snapshot also sees the chapters
    the tests before it made (one emulator): a part however much of the store it
    touches, or whether one is kept would depend on the tests' order. Not 1.0 (nor
    `join_past`, in the tests' updates): the chapters created since count too, and
    after the slow tests (`-m ""`) they outnumbered the base's (20 touched, 18 kept)."""
    monkeypatch.setattr(run_part, "MOST_TOUCHED", math.inf)


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


@pytest.mark.slow
def test_parts_kept_after_each_snapshot_join_into_the_full_build(
    parts_of_any_share, seen, tmp_path
):
    emulator, client, root = seen
    root = copy(root, tmp_path)
    base, store = kept_whole(root)
    for page in (2010, 2030, 2050):  # a part over the base, then parts over parts
        another_snapshot(emulator, client, store, first_page=page)
        assert Observed(SnapshotStore(root)).update(join_past=math.inf)
        state = state_of(root)
        assert (state / f"{PART}.arrow").exists()
        assert not (state / "transitions.arrow").exists()  # the stages are not written
        assert base_named(state) == base.name
        assert base.is_dir()  # the base is kept while a part is joined with it
    assert_stages_are_the_pipelines(root)
    assert (state / "transitions.arrow").exists()  # joined by its reader: a base now
    assert base_named(state) is None
    assert check_runs_kept(str(root)) == []


def test_snapshots_committed_out_of_order_since_a_kept_state_keep_no_part(
    parts_of_any_share, seen, tmp_path
):
    # Two writers: the later pull commits first, so the new snapshots' changes are worked
    # out from the states before (not linear), which a part over the log since (its
    # files alone: `SnapshotStore.asking(since=)`) cannot do. The reader builds whole.
    emulator, client, root = seen
    root = copy(root, tmp_path)
    _, store = kept_whole(root)
    pulls = []
    for page in (2910, 2930):
        project = store.latest("projects").query("kind == 'comic'")["project_id"].iloc[0]
        client.create_chapter(str(project), pages=pages(page, 2))
        pulls.append((emulator.advance(RUN), tk.pull(client)))
    for at, workspace in reversed(pulls):
        SnapshotStore(root).write(workspace, at=at)
    snapshots = SnapshotStore(root).snapshots()
    assert snapshots["base_id"].iloc[-1] != snapshots["snapshot_id"].iloc[-2]
    assert not Observed(SnapshotStore(root)).update(join_past=math.inf)
    assert_stages_are_the_pipelines(root)


def a_part_kept(seen, tmp_path: Path, first_page: int) -> tuple[Path, Path, SnapshotStore]:
    """A copy of the scenario store with its stages kept whole (the base), then one more
    snapshot and its update, which keeps a part: the store's folder, the base's, the
    store."""
    emulator, client, root = seen
    root = copy(root, tmp_path)
    base, store = kept_whole(root)
    another_snapshot(emulator, client, store, first_page=first_page)
    assert Observed(SnapshotStore(root)).update(join_past=math.inf)
    return root, base, store


def test_a_part_whose_base_is_gone_is_built_whole(parts_of_any_share, seen, tmp_path):
    root, base, _ = a_part_kept(seen, tmp_path, first_page=2110)
    shutil.rmtree(base)
    assert_stages_are_the_pipelines(root)
    assert base_named(state_of(root)) is None  # what the next snapshot extends


def test_store_check_joins_a_part_and_compares_it(parts_of_any_share, seen, tmp_path):
    root, _, _ = a_part_kept(seen, tmp_path, first_page=2210)
    assert check_runs_kept(str(root)) == []
    assert (state_of(root) / "run_table.arrow").exists()


def test_a_part_of_more_than_a_tenth_of_the_chapters_is_kept_whole(
    parts_of_any_share, seen, tmp_path, monkeypatch
):
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


@pytest.mark.slow  # 4.5 s: more snapshots than states kept
def test_the_bases_of_parts_kept_outlive_the_states_dropped(parts_of_any_share, seen, tmp_path):
    emulator, client, root = seen
    root = copy(root, tmp_path)
    base, store = kept_whole(root)
    for page in range(2410, 2490, 20):  # more parts than states kept beside the newest
        another_snapshot(emulator, client, store, first_page=page)
        assert Observed(SnapshotStore(root)).update(join_past=math.inf)
    states = sorted(p.name for p in (root / FOLDER).iterdir())
    assert base.name in states and len(states) == 4  # the newest, two before it, the base
    assert_stages_are_the_pipelines(root)


@pytest.mark.slow  # 5 s: two snapshots, their updates and a join
def test_the_base_of_an_hourly_part_outlives_its_age(parts_of_any_share, seen, tmp_path):
    # Each hour's update keeps a part over a base kept an hour or more before: older than
    # a stale state, and the new part's own file, which names its base to every save, is
    # written after its charges' and runs'. The first reader joins the part with it.
    emulator, client, root = seen
    root = copy(root, tmp_path)
    base, store = kept_whole(root)
    for page in (2710, 2730):  # a part over the base, then a part over that part
        aged(root / FOLDER, 3600)
        another_snapshot(emulator, client, store, first_page=page)
        assert Observed(SnapshotStore(root)).update(join_past=math.inf)
        assert base.is_dir() and base_named(state_of(root)) == base.name
    reader = Observed(SnapshotStore(root))
    reader.stage(RunTable)
    assert reader.extended, "the part was joined with its base, not built whole"
    assert_stages_are_the_pipelines(root)


def start_of_the_next_snapshot(seen, root: Path, store: SnapshotStore, first_page: int) -> str:
    """Another snapshot, and the kept state its update starts from, once the update kept
    its part and the stages join into the pipeline's."""
    emulator, client, _ = seen
    another_snapshot(emulator, client, store, first_page=first_page)
    obs = Observed(SnapshotStore(root))
    start = run_extend.kept_start(obs, Keeper(obs.store, obs.store.version()))
    assert start is not None
    assert obs.update(join_past=math.inf)
    assert_stages_are_the_pipelines(root)
    return start.state


@pytest.mark.slow  # 3 s: two snapshots, their updates and a build
def test_a_stage_saved_late_into_an_older_state_does_not_make_it_the_start(
    parts_of_any_share, seen, tmp_path
):
    # A notebook's view of the base state asks a new question after the update kept a
    # part, and saves a stage into the base's folder: the folder is the newest by its
    # time, yet the next snapshot's part is over the part, the newest state kept.
    root, base, store = a_part_kept(seen, tmp_path, first_page=2750)
    part = state_of(root)
    later = part.stat().st_mtime + 60
    os.utime(base, (later, later))
    assert start_of_the_next_snapshot(seen, root, store, first_page=2770) == part.name


@pytest.mark.slow  # 3 s: two snapshots, their updates and a build
def test_a_newest_state_whose_basis_does_not_read_is_passed_over(
    parts_of_any_share, seen, tmp_path
):
    # The part's basis garbled (a faulty copy): the next snapshot starts from the base,
    # the newest state that still reads, rather than building the stages whole.
    root, base, store = a_part_kept(seen, tmp_path, first_page=2790)
    (state_of(root) / f"{BASIS}.arrow").write_bytes(b"not an Arrow file")
    assert start_of_the_next_snapshot(seen, root, store, first_page=2810) == base.name


def test_a_store_that_keeps_no_stages_keeps_nothing_after_an_update(
    parts_of_any_share, seen, tmp_path
):
    emulator, client, root = seen
    root = copy(root, tmp_path)
    another_snapshot(emulator, client, SnapshotStore(root), first_page=2510)
    assert not analysis.update_runs(SnapshotStore(root))
    assert not (root / FOLDER).exists()


def test_a_part_reads_back_as_it_was_kept(parts_of_any_share, seen, tmp_path):
    root, _, store = a_part_kept(seen, tmp_path, first_page=2610)
    keeper = Keeper(store, store.version())
    part = run_part.read_part(keeper, state_of(root).name)
    assert part is not None and part.charges is not None and part.runs is not None
    assert len(part.chapters) >= 1 and part.rows.num_rows >= 1
    assert run_part.read_part(keeper, "no-such-state") is None


def test_toolkit_snapshot_keeps_the_part_of_a_store_that_keeps_stages(
    parts_of_any_share, seen, tmp_path, monkeypatch, capsys
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


def test_a_part_over_a_part_whose_prices_moved_is_priced_whole(
    parts_of_any_share, seen, tmp_path, monkeypatch
):
    # The first part's learned prices moved from the base's (as a test says: once), so
    # it keeps rows only; the part over it must not price its chapters apart either.
    answers = iter([False])
    monkeypatch.setattr(run_part, "_same_prices", lambda a, b: next(answers, True))
    root, _, store = a_part_kept(seen, tmp_path, first_page=2810)
    emulator, client, _ = seen
    another_snapshot(emulator, client, store, first_page=2830)
    assert Observed(SnapshotStore(root)).update(join_past=math.inf)
    keeper = Keeper(store, store.version())
    part = run_part.read_part(keeper, state_of(root).name)
    assert part is not None and part.charges is None
    assert_stages_are_the_pipelines(root)

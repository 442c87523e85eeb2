"""The history benchmark's reference queries compute the same figures as the analysis.

Issue 11 holds each run figure to at most 1.2x the best single DuckDB query for the same
figure; `toolkit/analysis/sql/runs.py` is that query (the runs worked out entirely in
DuckDB, and each figure's last step on them). A comparison is only fair if the query
gives the very frame the function gives, so this drives the emulator through the cases
where the two could part (re-scans and added pages inside one interval, held pages, a
failure re-scanned, a chapter trashed while it ran, an outage, a novel uploaded again
after failing) and compares every figure, from the snapshots alone and with the events.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest
from epochs import SUITE_START
from ledger import events
from scenarios import (
    RUN,
    as_many_held_pages_as_ran,
    held_pages_started_hours_after_a_rescan,
    pages,
    pages_run_beside_pages_held_before,
    pages_run_rescanned_and_held_in_one_interval,
    rescan_with_more_pages_held_than_ran,
    rescans_and_added_pages_in_one_interval,
)
from windows import (
    ALL_BY,
    assert_explained_lines_equal_the_whole,
    assert_finished_windows_equal_the_whole,
    assert_seen_reads_the_workspace,
    assert_windows_equal_the_whole,
)

from toolkit import analysis
from toolkit.analysis.sql import (
    ASKED_WITH,
    FIGURES,
    REFERENCES,
    figure_frame,
    reference_runs,
    run_figure,
)
from toolkit.analysis.sql.spark import register_tables, run_figures_spark, spark_script
from toolkit.client import Client
from toolkit.emulator import Emulator
from toolkit.store import SnapshotStore


@pytest.fixture(scope="module")
def seen(tmp_path_factory, webhook_url) -> Iterator[tuple[Emulator, Path]]:
    """The emulator and the folder of a store that saw every awkward case, simulated once
    for the module: the tests read it (events go into a copy)."""
    root = tmp_path_factory.mktemp("reference") / "store"
    with Emulator(clock="manual", start=SUITE_START) as emulator:
        workspace = emulator.create_workspace(name="Test workspace", credits=10_000)
        with Client(base_url=emulator.url, api_key=workspace["apiKey"]) as client:
            awkward_cases(emulator, workspace, client, SnapshotStore(root), webhook_url)
        yield emulator, root


def awkward_cases(emulator, workspace, client, store, webhook: str) -> None:
    """Every awkward case, snapshots taken into `store` at chosen moments; the events go
    to `webhook`."""
    emulator.add_webhook(workspace["id"], webhook, ["chapter.finished", "chapter.failed"],
                         allow_private=True)  # fmt: skip
    comic = emulator.create_project(
        workspace["id"], name="Moonlit Harbor", kind="comic", source_language="ja",
        reading_direction="rtl", process_steps="translate", target_languages=["en", "fr"],
    )  # fmt: skip
    novel = emulator.create_project(
        workspace["id"], name="River of Stars", kind="novel", source_language="zh",
        reading_direction="ltr", process_steps="translate", target_languages=["en", "es"],
    )  # fmt: skip
    going = client.create_chapter(comic["id"], pages=pages(0, 2))
    store.take(client)  # the baseline, one run going
    rescans_and_added_pages_in_one_interval(emulator, client, store, comic["id"], first_page=10)
    # Held pages, a re-scan that leaves them waiting, then they start and all re-run.
    held = client.add_pages(going.id, pages(50, 3), hold=True)
    store.take(client)
    client.rescan_chapter(going.id)
    emulator.advance(RUN)
    store.take(client)
    client.start_chapter(going.id, page_ids=[p.id for p in held.pages])
    emulator.advance(RUN)
    client.rescan_chapter(going.id)
    emulator.advance(RUN)
    store.take(client)
    # A re-scan and pages held in one interval, the held pages started hours later.
    held_pages_started_hours_after_a_rescan(emulator, client, store, comic["id"], first_page=90)
    as_many_held_pages_as_ran(emulator, client, store, comic["id"], first_page=110)
    rescan_with_more_pages_held_than_ran(emulator, client, store, comic["id"], first_page=130)
    # Pages run, a re-scan and pages held in one interval, told from a re-scan and pages
    # run by the files' page count, or by a later re-scan's price (seeds 0 and 63).
    for failing in (False, True):
        pages_run_rescanned_and_held_in_one_interval(
            emulator, client, store, comic["id"], first_page=160 + 30 * failing, failing=failing
        )
    # A re-scan and as many pages held, told from those pages run by the files (seed
    # 111); pages run beside pages held before, the files short by the held (seeds 4, 82).
    held_pages_started_hours_after_a_rescan(
        emulator, client, store, comic["id"], first_page=220, held_pages=3, held_first=True
    )
    pages_run_beside_pages_held_before(emulator, client, store, comic["id"], first_page=240)
    # Pages added to a failed chapter run, seen running, and stall: the new failure
    # reason is that run's end, not a run of its own (seed 83).
    emulator.set_faults(failure_rate=1.0, seed=3)
    stalls = client.create_chapter(comic["id"], pages=pages(140, 2))
    emulator.advance(RUN)
    store.take(client)
    emulator.set_faults(stall_rate=1.0, seed=3)
    client.add_pages(stalls.id, pages(150, 1))
    emulator.advance(5)
    store.take(client)
    emulator.set_faults()
    emulator.advance(3 * 3600)
    store.take(client)
    # Failures, re-scanned; an outage with no snapshot for six hours.
    emulator.set_faults(failure_rate=0.5, seed=11)
    for round_ in range(4):
        chapter = client.create_chapter(comic["id"], pages=pages(60 + round_ * 10, 2))
        emulator.advance(RUN)
        store.take(client)
        if client.get_chapter(chapter.id).failed:
            client.rescan_chapter(chapter.id)
        emulator.advance(6 * 3600 if round_ == 1 else 60)
    # A novel that fails, trashed and uploaded again at its position; a comic chapter
    # trashed while it runs.
    emulator.set_faults(failure_rate=1.0, seed=1)
    failed = client.create_chapter(novel["id"], text="A line of the story.\n" * 30, position=4)
    emulator.advance(RUN)
    store.take(client)
    emulator.set_faults()
    emulator.trash_chapter(failed.id)
    client.create_chapter(novel["id"], text="A line of the story.\n" * 30, position=4)
    running = client.create_chapter(comic["id"], pages=pages(120, 3))
    emulator.advance(5)
    store.take(client)
    emulator.trash_chapter(running.id)
    emulator.advance(RUN)
    store.take(client)


def _seen_store(seen, tmp_path, *, with_events: bool) -> Path:
    """The awkward cases' store; with its events recorded, a copy of it that has them
    (the module's store stays as the other tests read it)."""
    emulator, root = seen
    if not with_events:
        return Path(root)
    copy = Path(shutil.copytree(root, tmp_path / "store"))
    SnapshotStore(copy).record_events(events(emulator))
    return copy


# Each case costs 7-19 s: both run in the slow group (in CI as well; the default group's
# budget, docs/testing.md's ninth pass). The rules' SQL stays in the default group through
# tests/test_cli_sql.py.
@pytest.mark.parametrize("with_events", [False, True])
@pytest.mark.slow
def test_each_reference_query_gives_the_figure_of_its_function(seen, tmp_path, with_events):
    root = _seen_store(seen, tmp_path, with_events=with_events)
    store = SnapshotStore(root)
    found = analysis.runs(store)
    assert set(found["kind"].dropna()) == {"first", "rescan", "added_pages", "held_start"}
    assert {"failed", "finished"} <= set(found["outcome"].dropna())
    assert found["rework"].sum() > 0
    for name in REFERENCES:
        figure = getattr(analysis, name)(SnapshotStore(store.root), **ASKED_WITH.get(name, {}))
        reference = reference_runs(SnapshotStore(store.root), last=REFERENCES[name])
        assert len(figure), name
        pd.testing.assert_frame_equal(
            reference.reset_index(drop=True), figure.reset_index(drop=True), obj=name
        )


# Both cases in the slow group (7 s and more each): the default group keeps the same
# rules' SQL against the figures in `test_each_reference_query_gives_the_figure_of_its_function`.
@pytest.mark.slow
@pytest.mark.parametrize("with_events", [False, True])
def test_duckdb_on_the_delta_tables_alone_gives_each_figure(seen, tmp_path, with_events):
    # What a user runs where the store is (`toolkit sql`, DuckDB over the tables, no
    # toolkit reader between): the same frames as the toolkit's functions.
    root = _seen_store(seen, tmp_path, with_events=with_events)
    assert set(FIGURES) >= {"runs", "cycle_times", "credit_spend", "throughput"}
    for name in FIGURES:
        figure = getattr(analysis, name)(SnapshotStore(root), **ASKED_WITH.get(name, {}))
        found = run_figure(name, str(root))
        assert len(figure), name
        pd.testing.assert_frame_equal(
            found.reset_index(drop=True), figure.reset_index(drop=True), obj=name
        )
    spend = run_figure("credit_spend", str(root))
    assert spend["rework_credits"].sum() > 0  # the rework is there to be compared


# Every window of the awkward cases: the slow group's (9 s); the seeded histories check
# windows of each of theirs, and the store's property test the windows' rows.
@pytest.mark.slow
@pytest.mark.parametrize("with_events", [False, True])
def test_a_figure_for_a_window_equals_the_whole_history_cut_to_it(seen, tmp_path, with_events):
    # Windows that start before each snapshot of every awkward case: runs begun before
    # the window and ended in it, re-scans at its first snapshot, the six-hour outage.
    root = _seen_store(seen, tmp_path, with_events=with_events)
    assert_windows_equal_the_whole(SnapshotStore(root), "the awkward cases", ALL_BY)
    assert_explained_lines_equal_the_whole(SnapshotStore(root), "the awkward cases")
    assert_finished_windows_equal_the_whole(SnapshotStore(root), "the awkward cases")
    assert_seen_reads_the_workspace(SnapshotStore(root), "the awkward cases")


@pytest.fixture(scope="module")
def spark(tmp_path_factory) -> Iterator[object]:
    """A local Spark session, as small as Spark runs (one core, 1 GiB), its tables in a
    folder of the test's; skipped where pyspark, or the Java it runs on, is not
    installed."""
    sql = pytest.importorskip("pyspark.sql")
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        pytest.skip("pyspark is installed but no Java to run it on")
    session = (
        sql.SparkSession.builder.master("local[1]")
        .appName("toolkit-reference-runs")
        .config("spark.driver.memory", "1g")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.warehouse.dir", str(tmp_path_factory.mktemp("warehouse")))
        # A few rows: compiling the held pages' walk (a large expression) costs more
        # than it saves.
        .config("spark.sql.codegen.wholeStage", "false")
        .getOrCreate()
    )
    yield session
    session.stop()


# Some forty steps, each a Spark job, on one shared core: minutes, not the default 300 s.
@pytest.mark.timeout(1800)
@pytest.mark.parametrize("with_events", [False, True])
def test_spark_on_the_delta_tables_alone_gives_each_figure(spark, seen, tmp_path, with_events):
    # `spark` first: where it skips, the awkward cases' store is not built for nothing.
    # The same SQL on Spark, step by step, over the Parquet files the tables' logs list
    # (no Delta Lake package needed): the same frames as the toolkit's functions.
    root = _seen_store(seen, tmp_path, with_events=with_events)
    found = run_figures_spark(spark, str(root), read="files")
    assert set(found) == set(FIGURES)
    for name in FIGURES:
        figure = getattr(analysis, name)(SnapshotStore(root), **ASKED_WITH.get(name, {}))
        pd.testing.assert_frame_equal(
            found[name].reset_index(drop=True), figure.reset_index(drop=True), obj=name
        )
    assert found["credit_spend"]["rework_credits"].sum() > 0


@pytest.mark.timeout(1800)
def test_the_spark_sql_script_gives_the_figure_step_by_step(spark, seen, tmp_path):
    # What `spark-sql -f` runs (`toolkit sql FIGURE --engine spark --print`): its
    # statements as printed, each step a table the next reads, after its `delta.` lines
    # (no Delta Lake package here: the tables are registered under the same names).
    emulator, root = seen
    root = Path(shutil.copytree(root, tmp_path / "store"))
    SnapshotStore(root).record_events(events(emulator))
    assert register_tables(spark, str(root), read="files")
    script = spark_script("credit_spend", str(root), events=True)
    statements = [s.strip() for s in script.split(";\n") if s.strip()]
    tables = [s for s in statements if "delta.`" in s]
    assert len(tables) == 6  # manifest, the four snapshot tables, events
    for statement in statements:
        if statement not in tables:
            found = spark.sql(statement)
    figure = analysis.credit_spend(SnapshotStore(root), freq="1D")
    pd.testing.assert_frame_equal(figure_frame(found.toArrow()), figure)

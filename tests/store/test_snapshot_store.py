from __future__ import annotations

import os
from datetime import UTC, date, datetime, timedelta

import duckdb
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from datafakes import T0, FakeService, hours
from deltalake import DeltaTable, write_deltalake
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pandas.testing import assert_frame_equal
from processes import assert_every_snapshot_is_its_writers, run_together, take_as_writer

import toolkit as tk
from toolkit.errors import OldStoreLayout
from toolkit.frames import schema
from toolkit.store import SnapshotStore
from toolkit.store import columns as store_columns
from toolkit.store import diff as store_diff
from toolkit.store import engine as store_engine
from toolkit.store import ids as _store_ids
from toolkit.store import tables as _store_tables
from toolkit.store import views as store_views
from toolkit.store import writing as store_writing
from toolkit.store.snapshot_store import StoreUpgraded


def fake_workspace(service: FakeService) -> tk.Workspace:
    return tk.pull(service, details="all")


def sort(frame: pd.DataFrame, table: str) -> pd.DataFrame:
    keys = list(schema.KEYS[table])
    if "snapshot_at" in frame.columns:
        keys = ["snapshot_at", "snapshot_id", *keys]
    return frame.sort_values(keys, ignore_index=True)


def stamped(ws: tk.Workspace, table: str, snapshot_id: str, at: datetime) -> pd.DataFrame:
    frame = ws.table(table).copy()
    frame.insert(0, "snapshot_at", pd.Series([at] * len(frame), dtype="datetime64[us, UTC]"))
    frame.insert(0, "snapshot_id", pd.Series([snapshot_id] * len(frame), dtype=schema.TEXT_DTYPE))
    return frame


def assert_same(actual: pd.DataFrame, expected: pd.DataFrame, table: str) -> None:
    assert_frame_equal(sort(actual, table), sort(expected, table))


def test_a_snapshot_reads_back_with_identical_values_and_dtypes(tmp_path, service):
    store = SnapshotStore(tmp_path / "store")
    ws = fake_workspace(service)
    info = store.write(ws, at=hours(0))
    for table in schema.SNAPSHOT_TABLES:
        expected = stamped(ws, table, info.snapshot_id, hours(0))
        assert_same(store.latest(table), expected, table)
        # A fresh object reads the files, not what the writer kept in memory.
        assert_same(SnapshotStore(tmp_path / "store").latest(table), expected, table)


def test_all_null_columns_and_empty_tables_keep_their_dtypes_in_the_files(tmp_path, service):
    store = SnapshotStore(tmp_path)
    ws = tk.pull(service, details="none")  # untranslated all null, exports empty
    store.write(ws, at=hours(0))
    fresh = SnapshotStore(tmp_path)
    languages = fresh.latest("languages")
    assert languages["untranslated"].isna().all()
    assert languages["untranslated"].dtype == pd.Int64Dtype()
    exports = fresh.latest("exports")
    assert exports.empty
    assert_frame_equal(exports, schema.empty_frame(schema.with_snapshot(schema.EXPORTS)))


def test_manifest_rows_say_what_each_take_did(tmp_path, service):
    store = SnapshotStore(tmp_path)
    info = store.take(service, details="all", at=hours(1))
    manifest = store.snapshots()
    assert list(manifest.columns) == [
        "snapshot_id", "snapshot_at", "details", "requests", "seconds",
        "rows_projects", "rows_chapters", "rows_languages", "rows_exports", "workspace",
        "base_id", "full", "keeps_previous", "commits",
    ]  # fmt: skip
    row = manifest.iloc[0]
    assert row["snapshot_id"] == info.snapshot_id
    assert row["snapshot_at"] == pd.Timestamp(hours(1))
    assert (row["details"], row["requests"]) == ("all", 1 + 2 + 2)
    assert (row["rows_projects"], row["rows_chapters"], row["rows_languages"]) == (2, 2, 3)
    assert row["seconds"] >= 0
    assert manifest["requests"].dtype == pd.Int64Dtype()
    text = str(info)
    assert text.startswith(f"snapshot {info.snapshot_id} at 2026-03-02 10:00:00 UTC: 2 projects")
    assert "\n" not in text and "5 requests" in text
    assert repr(info) == f"<SnapshotInfo {text}>"


def test_snapshot_time_is_at_else_the_service_date_else_the_local_clock(tmp_path, service):
    store = SnapshotStore(tmp_path)
    assert store.take(service, at="2026-03-02 12:00").snapshot_at == hours(3)  # naive = UTC
    service.date = hours(5)
    assert store.take(service).snapshot_at == hours(5)
    service.date, service.last_response_date = None, None
    before = datetime.now(UTC)
    assert before - timedelta(seconds=1) <= store.take(service).snapshot_at <= datetime.now(UTC)


def test_changed_details_reads_only_what_moved_since_the_latest_snapshot(tmp_path, service):
    store = SnapshotStore(tmp_path)
    store.take(service, details="all", at=hours(0))
    service.update("c2", processing=False, covered=3, untranslated=0, status="needs_review",
                   activity=hours(0.5))  # fmt: skip
    service.update("c1", processing=False)  # settled, lastActivityAt unchanged
    service.calls.clear()
    # A new object: the previous state comes from the files.
    info = SnapshotStore(tmp_path).take(service, details="changed", at=hours(1))
    assert [i for r, i in service.calls if r == "get_chapter"] == ["c2"]
    assert info.requests == 1 + 2 + 1
    latest = store.latest("languages").set_index(["chapter_id", "language_code"])
    assert latest.loc[("c1", "fr"), "untranslated"] == 6  # carried over
    assert latest.loc[("c2", "en"), "untranslated"] == 0


# The history must be what storing every snapshot whole would give, whatever is stored.

operation = st.one_of(
    st.tuples(st.just("add"), st.integers(0, 5)),
    st.tuples(st.just("progress"), st.integers(0, 5)),
    st.tuples(st.just("remove"), st.integers(0, 5)),
    st.tuples(st.just("same"), st.just(0)),
)


def apply(service: FakeService, op: tuple[str, int], step: int) -> None:
    kind, n = op
    cid = f"c{n}"
    if kind == "add" and cid not in service.chapters:
        service.add_chapter(cid, "p1", position=n + 10, covered=0, credits=4)
    elif kind == "progress" and cid in service.chapters:
        service.update(cid, covered=step, credits=4 + step, activity=hours(step))
    elif kind == "remove" and cid in service.chapters:
        del service.chapters[cid]


# In the slow group: 20 histories with their windows take 20 s of the default group's
# five minutes (2026-11-29: 300 s on two cores without it moved).
@pytest.mark.slow
@settings(
    max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(ops=st.lists(operation, min_size=1, max_size=6), shuffle=st.randoms(use_true_random=False))
def test_history_as_of_and_latest_equal_whole_snapshots(tmp_path_factory, ops, shuffle):
    root = tmp_path_factory.mktemp("store")
    service = FakeService()
    service.add_project("p1", languages=("en",))
    pulls = []
    for step, op in enumerate(ops):
        apply(service, op, step)
        pulls.append((hours(step), fake_workspace(service)))
    # Written in a shuffled order by two store objects: bases are then often not the
    # snapshot just before, as with concurrent takes and backfills.
    order = list(range(len(pulls)))
    shuffle.shuffle(order)
    writers = [SnapshotStore(root), SnapshotStore(root)]
    ids = {}
    for n, i in enumerate(order):
        ids[i] = writers[n % 2].write(pulls[i][1], at=pulls[i][0]).snapshot_id
    reader = SnapshotStore(root)
    for table in ("chapters", "languages"):
        expected = pd.concat(
            [stamped(ws, table, ids[i], at) for i, (at, ws) in enumerate(pulls)], ignore_index=True
        )
        assert_same(reader.history(table), expected, table)
        for i, (at, ws) in enumerate(pulls):
            assert_same(reader.as_of(table, at), stamped(ws, table, ids[i], at), table)
        last_at, last_ws = pulls[-1]
        assert_same(
            reader.latest(table), stamped(last_ws, table, ids[len(pulls) - 1], last_at), table
        )
    if len(pulls) >= 4:  # windows worth their cost: a state before and a window after
        assert_windows_read_the_window_and_the_state_before(reader, "languages")


def assert_windows_read_the_window_and_the_state_before(store: SnapshotStore, table: str) -> None:
    """For every window of snapshots: `<table>_changes` holds the state at the snapshot
    before it (stamped with that one, `_changed` null) and then the window's own changes,
    exactly as the whole log has them; `<table>` holds the window's snapshots' rows."""
    manifest = store.snapshots()
    whole = store.changes(table)
    columns = ["snapshot_id", "snapshot_at", *schema.SNAPSHOT_TABLES[table].names]

    def same(actual: pd.DataFrame, expected: pd.DataFrame) -> None:
        # The SQL answers text and categories as the query's types, the readers as theirs.
        def values(frame: pd.DataFrame) -> pd.DataFrame:
            ordered = sort(frame, table)
            return ordered.astype(object).where(ordered.notna(), None)

        assert_frame_equal(values(actual), values(expected), check_dtype=False)

    middle = len(manifest) // 2
    for first in range(len(manifest)):
        # From each snapshot to the end; a window of one snapshot only in the middle
        # (every one doubled the default group's longest test).
        for last in sorted({len(manifest) - 1, *([first] if first == middle else [])}):
            read = store.query(f"SELECT * FROM {table}_changes", window=(first, last))
            own = whole[whole["idx"].between(first, last)]
            same(read[read["idx"] >= first][[*columns, "_changed"]], own[[*columns, "_changed"]])
            state = read[read["idx"] < first]
            if first == 0:
                assert state.empty
            else:
                before = manifest["snapshot_at"].iloc[first - 1]
                assert set(state["idx"]) <= {first - 1}
                assert state["_changed"].isna().all() and not state["_deleted"].any()
                assert (state["snapshot_at"] == before).all()
                same(state[columns], store.as_of(table, before)[columns])
            rows = store.query(f"SELECT * FROM {table}", window=(first, last))
            times = manifest["snapshot_at"].iloc[[first, last]]
            same(rows, store.history(table, since=times.iloc[0], until=times.iloc[1]))


def test_a_window_outside_the_snapshots_is_refused(tmp_path, service):
    store = SnapshotStore(tmp_path)
    store.take(service, at=hours(0))
    with pytest.raises(ValueError, match=r"not snapshots of this store \(positions 0 to 0"):
        store.query("SELECT count(*) FROM chapters_changes", window=(0, 1))


def test_a_store_object_reading_again_after_other_commits_sees_the_new_order(tmp_path):
    # Found by the property test above: a change worked out for a snapshot out of order
    # must move when a snapshot committed later by another writer lands before it.
    service = FakeService()
    service.add_project("p1", languages=("en",))
    pulls = []
    for step in range(6):
        if step == 3:
            service.add_chapter("c0", "p1")
        pulls.append((hours(step), tk.pull(service)))
    writers = [SnapshotStore(tmp_path), SnapshotStore(tmp_path)]
    for n, i in enumerate((0, 4, 2, 1, 5, 3)):
        writers[n % 2].write(pulls[i][1], at=pulls[i][0])
    history = SnapshotStore(tmp_path).history("chapters")
    assert history["snapshot_at"].tolist() == [pd.Timestamp(hours(h)) for h in (3, 4, 5)]


def test_history_filters_by_time_and_project(tmp_path, service):
    store = SnapshotStore(tmp_path)
    for step in range(4):
        service.update("c1", covered=step)
        store.take(service, at=hours(step))
    window = store.history("languages", since=hours(1), until=hours(2), project_ids=["p1"])
    assert sorted(window["snapshot_at"].unique()) == [
        pd.Timestamp(hours(1)),
        pd.Timestamp(hours(2)),
    ]
    assert set(window["project_id"]) == {"p1"}
    assert window.groupby("snapshot_at")["covered"].first().tolist() == [1, 2]
    assert store.history("chapters", since=hours(9)).empty
    assert store.as_of("chapters", hours(-1)).empty


@pytest.mark.slow  # 4.5-5 s: the default group stays under five minutes
def test_full_snapshots_are_written_periodically_and_change_nothing_visible(
    tmp_path, service, monkeypatch
):
    monkeypatch.setattr(store_writing, "_FULL_EVERY", 3)
    store = SnapshotStore(tmp_path)
    for step in range(7):
        service.update("c1", covered=step)
        store.take(service, at=hours(step))
    full = store._manifest().column("full").to_pylist()
    assert full == [True, False, False, True, False, False, True]
    history = SnapshotStore(tmp_path).history("languages", project_ids=["p1"])
    assert history.groupby("snapshot_at")["covered"].first().tolist() == list(range(7))
    # A window's state before it starts from the full snapshot before it.
    for table in ("chapters", "languages"):
        assert_windows_read_the_window_and_the_state_before(SnapshotStore(tmp_path), table)


def test_unchanged_rows_are_not_written_again(tmp_path, service):
    store = SnapshotStore(tmp_path)
    store.take(service, at=hours(0))
    service.update("c1", covered=5)
    store.take(service, at=hours(1))
    changes = store.query("SELECT snapshot_at, chapter_id FROM languages_changes ORDER BY 1, 2")
    second = changes[changes["snapshot_at"] == pd.Timestamp(hours(1))]
    assert second["chapter_id"].tolist() == ["c1", "c1"]  # both languages of c1, nothing else


def old_toolkit(monkeypatch: pytest.MonkeyPatch) -> None:
    """Write as a toolkit from before `_changed` did: no flag, no upgrade."""
    for module in (store_columns, store_diff, store_writing):
        monkeypatch.setattr(module, "TRACKED", {})
    monkeypatch.setattr(store_engine, "is_current", lambda manifest: True)
    # This is the current code with the old writer's rules, so its first take records
    # layout 3: rows without the mark then place the store at 2 again, as when an old
    # toolkit writes to a store already upgraded.


def test_a_store_written_before_the_changed_flag_is_upgraded_by_the_next_take(
    tmp_path, service, monkeypatch
):
    # A store an earlier toolkit wrote has no `_changed`: a reader refuses it, saying how
    # to upgrade; the next take upgrades it first, and the rows then carry the flags
    # as if the current toolkit had written them.
    with monkeypatch.context() as patched:
        old_toolkit(patched)
        old = SnapshotStore(tmp_path)
        old.take(service, at=hours(0))
        service.update("c1", covered=5)
        old.take(service, at=hours(1))
        service.update("c1", untranslated=2)  # not a column `_changed` follows
        old.take(service, at=hours(2))
    assert "_changed" not in DeltaTable(str(tmp_path / "languages")).schema().to_arrow().names
    with pytest.raises(OldStoreLayout, match=f"toolkit store migrate {tmp_path}"):
        SnapshotStore(tmp_path).history("languages")
    store = SnapshotStore(tmp_path)
    service.update("c1", covered=6)
    with pytest.warns(StoreUpgraded, match="languages: .* given `_changed` and `_previous`"):
        store.take(service, at=hours(3))
    assert "_changed" in DeltaTable(str(tmp_path / "languages")).schema().to_arrow().names
    changes = SnapshotStore(tmp_path).changes("languages", project_ids=["p1"])
    flags = changes.groupby("idx")["_changed"].agg(lambda f: f.tolist()).to_dict()
    assert flags == {0: [True, True], 1: [True, True], 2: [False, False], 3: [True, True]}
    previous = changes.set_index("idx")["_previous"]
    assert [p["existed"] for p in previous.loc[0]] == [False, False]
    assert [p["covered"] for p in previous.loc[3]] == [5, 5]
    latest = SnapshotStore(tmp_path).latest("languages")
    assert_same(latest, stamped(fake_workspace(service), "languages", latest["snapshot_id"][0],
                                hours(3)), "languages")  # fmt: skip


def test_the_first_take_of_a_day_merges_a_store_an_earlier_toolkit_wrote(
    tmp_path, service, monkeypatch
):
    # The daily merge used to sort by `_changed` in tables that had none yet (a take
    # that changed no language left `languages` without the column) and crashed.
    with monkeypatch.context() as patched:
        old_toolkit(patched)
        SnapshotStore(tmp_path).take(service, at=hours(0))
        service.update("c1", covered=5)
        SnapshotStore(tmp_path).take(service, at=hours(1))
    service.update("c1", credits=20)  # chapters only
    with pytest.warns(StoreUpgraded):
        SnapshotStore(tmp_path).take(service, at=hours(24))
    assert SnapshotStore(tmp_path).latest("chapters")["credits_spent"].tolist()[0] == 20


# Crash safety: a write that stops at any step leaves the store as it was.


def data_files(root) -> list[str]:
    """Every Parquet data file under the store, referenced by a table or not."""
    return sorted(
        os.path.join(folder, name)
        for folder, _, names in os.walk(root)
        if "_delta_log" not in folder
        for name in names
        if name.endswith(".parquet")
    )


def test_a_take_interrupted_at_any_step_leaves_the_store_readable_and_unchanged(
    tmp_path, service, monkeypatch
):
    store = SnapshotStore(tmp_path)
    store.take(service, at=hours(0))
    before = {t: store.latest(t) for t in schema.SNAPSHOT_TABLES}
    service.update("c1", covered=9, credits=12)
    service.add_chapter("c9", "p2", position=2, languages=("en",))
    service.add_project("p3")
    writes = 0
    real = _store_tables.Tables.append

    def counting(self, *args, **kwargs):
        nonlocal writes
        writes += 1
        return real(self, *args, **kwargs)

    monkeypatch.setattr(_store_tables.Tables, "append", counting)
    SnapshotStore(tmp_path / "probe").take(service, at=hours(1))
    steps = writes  # commits one snapshot makes, the manifest last
    assert steps >= 4

    for fail_at in range(1, steps + 1):
        calls = 0

        def failing(self, *args, _fail_at=fail_at, **kwargs):
            nonlocal calls
            calls += 1
            if calls == _fail_at:
                raise OSError("disk full (injected)")
            return real(self, *args, **kwargs)

        monkeypatch.setattr(_store_tables.Tables, "append", failing)
        with pytest.raises(OSError, match="injected"):
            # A later hour each time: a rerun of the same hour would finish the snapshot.
            SnapshotStore(tmp_path).take(service, at=hours(1 + fail_at / 100))
        monkeypatch.setattr(_store_tables.Tables, "append", real)
        reader = SnapshotStore(tmp_path)
        assert len(reader.snapshots()) == 1
        for table, frame in before.items():
            assert_same(reader.latest(table), frame, table)
        assert len(reader.history("chapters")) == 2

    # The next take works and shows everything.
    SnapshotStore(tmp_path).take(service, at=hours(2))
    reader = SnapshotStore(tmp_path)
    assert len(reader.snapshots()) == 2
    assert "c9" in set(reader.latest("chapters")["chapter_id"])


def test_a_take_rerun_after_a_crash_finishes_the_snapshot_it_started(
    tmp_path, service, monkeypatch
):
    store = SnapshotStore(tmp_path)
    store.take(service, at=hours(0))
    service.update("c1", covered=9, credits=12)
    service.add_chapter("c9", "p2", position=2, languages=("en",))
    ws = tk.pull(service)
    real = _store_tables.Tables.append
    written = []

    def crash_before_manifest(self, name, *args, **kwargs):
        if name == "manifest":
            raise OSError("killed (injected)")
        written.append(name)
        return real(self, name, *args, **kwargs)

    monkeypatch.setattr(_store_tables.Tables, "append", crash_before_manifest)
    with pytest.raises(OSError, match="injected"):
        SnapshotStore(tmp_path).write(ws, at=hours(1))
    monkeypatch.undo()
    assert written and len(SnapshotStore(tmp_path).snapshots()) == 1
    appended = []

    def counting(self, name, *args, **kwargs):
        appended.append(name)
        return real(self, name, *args, **kwargs)

    monkeypatch.setattr(_store_tables.Tables, "append", counting)
    info = SnapshotStore(tmp_path).write(ws, at=hours(1))  # the same snapshot again
    assert appended == ["manifest"]  # every table already held it
    reader = SnapshotStore(tmp_path)
    for table in schema.SNAPSHOT_TABLES:
        assert_same(reader.latest(table), stamped(ws, table, info.snapshot_id, hours(1)), table)
    changes = reader.changes("chapters")
    assert changes["snapshot_id"].isin(reader.snapshots()["snapshot_id"]).all()


def test_a_file_cut_off_mid_write_is_never_visible(tmp_path, service, monkeypatch):
    store = SnapshotStore(tmp_path)
    store.take(service, at=hours(0))

    def torn(*args, **kwargs):
        folder = tmp_path / "chapters"
        (folder / "part-00000-torn.parquet").write_bytes(b"PAR1 half a file")
        raise OSError("power cut (injected)")

    monkeypatch.setattr(_store_tables, "write_deltalake", torn)
    service.update("c1", covered=9)
    with pytest.raises(OSError, match="injected"):
        store.take(service, at=hours(1))
    monkeypatch.undo()
    reader = SnapshotStore(tmp_path)
    assert len(reader.snapshots()) == 1
    assert len(reader.history("chapters")) == 2
    # The torn file is in no table's log: Delta readers never see it.
    for table in schema.SNAPSHOT_TABLES:
        assert not any("torn" in uri for uri in reader._tables.files(table))


# Two processes writing into one store.


@pytest.mark.slow
def test_two_processes_taking_snapshots_into_one_store_lose_nothing(tmp_path):
    count = 8
    writers = [(str(tmp_path), None, name, count) for name in ("a", "b")]
    run_together(take_as_writer, writers, timeout=120)
    assert_every_snapshot_is_its_writers(SnapshotStore(tmp_path), 2, count)
    # Days went by: the takes merged past days' files as they went.
    commits = DeltaTable(str(tmp_path / "chapters")).history()
    assert any(c.get("toolkit.operation") == "merge" for c in commits)


# Maintenance, events, queries, other filesystems.


def test_compaction_merges_files_and_changes_no_answer(tmp_path, service):
    store = SnapshotStore(tmp_path, auto_compact=False)
    for step in range(6):
        service.update("c1", covered=step)
        store.take(service, at=hours(step * 6))  # spans two days
    before = {t: store.history(t) for t in schema.SNAPSHOT_TABLES}
    files_before = len(store._tables.files("languages"))
    merged = store.compact()
    assert merged["manifest"] == 6 and merged["languages"] == 6
    assert files_before == 6 and len(store._tables.files("languages")) == 1  # one a week
    fresh = SnapshotStore(tmp_path)
    for table, frame in before.items():
        assert_frame_equal(fresh.history(table), frame)
    store.take(service, at=hours(40))  # new small files beside the merged ones
    assert len(SnapshotStore(tmp_path).snapshots()) == 7


def test_merged_files_keep_the_flagged_rows_first(tmp_path, service):
    # Runs and line counts are read from the `_changed` rows alone; a merged file that
    # holds them together lets a reader skip the rest.
    store = SnapshotStore(tmp_path, auto_compact=False)
    for step in range(8):
        if step % 2:
            service.update("c1", activity=hours(step), untranslated=9 - step)  # progress
        else:
            service.update("c1", covered=step, credits=step)
        store.take(service, at=hours(step))
    before = store.history("chapters")
    store.compact()
    for table in ("chapters", "languages"):
        (merged,) = store._tables.files(table)
        rows = pq.read_table(merged.removeprefix("file://")).to_pandas()
        flagged = rows["_changed"].fillna(True).to_numpy()
        assert 0 < flagged.sum() < len(rows)
        assert not flagged[int(flagged.sum()) :].any()  # every flagged row comes first
        keys = [*schema.KEYS[table], "snapshot_id"]
        for part in (rows[flagged], rows[~flagged]):
            assert part[keys].equals(part[keys].sort_values(keys))
    assert_frame_equal(SnapshotStore(tmp_path).history("chapters"), before)


def file_spans(store: SnapshotStore, table: str) -> list[tuple[date, date]]:
    """The first and last snapshot day of each of the table's files, in order."""
    actions = pa.table(store._tables.get(table).get_add_actions(flatten=True))
    lows, highs = actions["min.snapshot_at"].to_pylist(), actions["max.snapshot_at"].to_pylist()
    return sorted((low.date(), high.date()) for low, high in zip(lows, highs, strict=True))


@pytest.mark.slow  # 4.5-5 s: the default group stays under five minutes
def test_takes_merge_past_days_and_weeks_as_they_go(tmp_path, service):
    plain = SnapshotStore(tmp_path / "plain", auto_compact=False)
    store = SnapshotStore(tmp_path / "auto")
    # Twice a day (09:00 and 21:00, each pair across a midnight) for ten days from a
    # Monday: every day past is merged as the takes cross it, as four a day would be.
    for step in range(20):
        service.update("c1", covered=step)
        ws = tk.pull(service)
        plain.write(ws, at=hours(step * 12))
        store.write(ws, at=hours(step * 12))
    spans = file_spans(store, "languages")
    # The first week in one file, then a file per past day, then today's small files.
    assert spans[0] == (hours(0).date(), hours(156).date())
    assert len(spans) < 20 / 2
    # The manifest, read whole by every question, keeps a file a month: this month's
    # past days in one file.
    assert sum(high < hours(19 * 12).date() for _, high in file_spans(store, "manifest")) == 1
    for table in schema.SNAPSHOT_TABLES:
        drop = ["snapshot_id"]  # the two stores gave their snapshots their own ids
        assert_frame_equal(store.history(table).drop(columns=drop),
                           plain.history(table).drop(columns=drop))  # fmt: skip


def test_the_manifest_keeps_a_file_a_month(tmp_path, service):
    store = SnapshotStore(tmp_path)
    start = datetime(2026, 3, 29, 12, tzinfo=UTC)
    for step in range(12):  # six days across the end of March
        service.update("c1", covered=step)
        store.take(service, at=start + timedelta(hours=12 * step))
    spans = file_spans(store, "manifest")
    today = (start + timedelta(hours=12 * 11)).date()
    march = [span for span in spans if span[1] < datetime(2026, 4, 1).date()]
    april = [span for span in spans if span[0] >= datetime(2026, 4, 1).date() and span[1] < today]
    assert march == [(start.date(), datetime(2026, 3, 31).date())]
    assert len(april) == 1
    assert len(store.snapshots()) == 12


def test_a_reader_on_an_older_version_keeps_its_files_through_a_compaction(tmp_path, service):
    store = SnapshotStore(tmp_path, auto_compact=False)
    for step in range(3):
        service.update("c1", covered=step)
        store.take(service, at=hours(step))
    before = store.history("languages")
    listed = store._tables.files("languages")  # a reader in another process lists...
    store.compact()  # ...a compaction merges them meanwhile...
    for uri in listed:  # ...and the files it listed are still there (retention)
        pq.read_table(uri)
    assert_frame_equal(SnapshotStore(tmp_path).history("languages"), before)
    assert len(store._tables.files("languages")) == 1


def test_events_are_recorded_and_read_once_per_webhook_id(tmp_path):
    store = SnapshotStore(tmp_path)
    event = {
        "webhook_id": "msg_1",
        "type": "chapter.finished",
        "timestamp": "2026-03-02T10:00:00Z",
        "data": {"chapterId": "c1", "projectId": "p1", "position": 1},
        "received_at": "2026-03-02T10:00:01Z",
    }
    assert store.record_events([event]) == 1
    store.record_events([{**event, "received_at": "2026-03-02T10:05:00Z"}])  # a repeat
    failed = {"webhook_id": "msg_2", "type": "chapter.failed", "data": {"chapterId": "c2"}}
    store.record_events([{**event, **failed, "timestamp": "2026-03-02T11:00:00Z"}])
    events = store.history("events")
    assert list(events.columns) == list(schema.EVENTS.names)
    assert events["webhook_id"].tolist() == ["msg_1", "msg_2"]
    assert events.loc[0, "received_at"] == pd.Timestamp("2026-03-02T10:00:01Z")
    assert (events.loc[0, "chapter_id"], events.loc[0, "project_id"]) == ("c1", "p1")
    assert events.loc[1, "project_id"] is pd.NA
    assert '"position":1' in events.loc[0, "data"]
    assert store.history("events", until="2026-03-02T10:30:00Z")["webhook_id"].tolist() == ["msg_1"]
    assert store.history("events", project_ids=["p1"])["webhook_id"].tolist() == ["msg_1"]
    store.compact()
    assert_frame_equal(SnapshotStore(tmp_path).history("events"), events)
    assert len(store._tables.files("events")) == 1
    with pytest.raises(ValueError, match="webhook_id"):
        store.record_events([{"type": "x", "timestamp": "2026-03-02T10:00:00Z", "data": {}}])


def test_sql_queries_see_every_snapshot_and_the_change_log(tmp_path, service):
    store = SnapshotStore(tmp_path)
    for step in range(3):
        service.update("c1", covered=step)
        store.take(service, at=hours(step))
    per = store.query("SELECT snapshot_at, count(*) AS n FROM chapters GROUP BY 1 ORDER BY 1")
    assert per["n"].tolist() == [2, 2, 2]
    assert store.query("SELECT count(*) AS n FROM snapshots")["n"].tolist() == [3]
    top = store.query("SELECT max(covered) AS m FROM languages WHERE chapter_id = 'c1'")
    assert top["m"].tolist() == [2]
    assert store.query("SELECT count(*) AS n FROM events")["n"].tolist() == [0]
    # A view is made when the SQL names it, whatever its quoting and comments.
    commented = store.query(
        "-- one row per chapter\n"
        "SELECT '--' AS dashes, count(*) AS n FROM \"chapters\" -- of chapters_changes\n"
        "WHERE snapshot_at = (SELECT max(snapshot_at) FROM snapshots)"
    )
    assert commented.to_dict("records") == [{"dashes": "--", "n": 2}]
    same_line = store.query("SELECT 'a--b' AS t, count(*) AS n FROM languages_changes")
    assert same_line["t"].tolist() == ["a--b"] and same_line["n"].iloc[0] >= 3


def test_sql_queries_join_the_callers_own_frames(tmp_path, service):
    store = SnapshotStore(tmp_path)
    for step in range(3):
        service.update("c1", covered=step)
        store.take(service, at=hours(step))
    mine = pd.DataFrame({"chapter_id": ["c1"], "team": ["north"]})
    joined = store.query(
        "SELECT team, count(*) AS n FROM languages_changes JOIN mine USING (chapter_id) "
        "GROUP BY team",
        frames={"mine": mine},
    )
    plain = store.query("SELECT count(*) AS n FROM languages_changes WHERE chapter_id = 'c1'")
    assert joined.to_dict("records") == [{"team": "north", "n": int(plain["n"].iloc[0])}]
    assert int(plain["n"].iloc[0]) >= 3
    # The frame is the caller's for that query only; a view that is not there is the
    # SQL's fault, said as such (not a damaged store), with the views there are.
    with pytest.raises(tk.QueryError, match=r"mine.*The views are snapshots, projects"):
        store.query("SELECT * FROM mine")
    with pytest.raises(tk.QueryError, match="syntax error"):
        store.query("SELEC 1")


def test_several_queries_over_one_opening_answer_as_each_alone(tmp_path, service, monkeypatch):
    store = SnapshotStore(tmp_path)
    for step in range(3):
        service.update("c1", covered=step)
        store.take(service, at=hours(step))
    first = "SELECT chapter_id, max(covered) AS top FROM languages_changes GROUP BY 1 ORDER BY 1"
    second = "SELECT n.chapter_id, c.title FROM chapters c JOIN ids n USING (chapter_id) ORDER BY 1"
    opened = []
    expose = store_views.expose
    monkeypatch.setattr(
        store_engine, "expose", lambda *a, **k: opened.append(a[3]) or expose(*a, **k)
    )
    with store.asking(["chapters", "languages"]) as ask:
        tops = ask.arrow(first)
        titles = ask.arrow(second, frames={"ids": tops.select(["chapter_id"])})
        # The SQL's faults are said as `query_arrow` says them, and the opening lives on.
        with pytest.raises(tk.QueryError, match="syntax error"):
            ask.arrow("SELEC 1")
        with pytest.raises(tk.QueryError, match="exports_changes"):
            ask.arrow("SELECT * FROM exports_changes")  # not among the tables opened
        assert ask.arrow("SELECT count(*) AS n FROM snapshots").to_pylist() == [{"n": 3}]
    assert sorted(opened) == ["chapters", "languages"]  # once each, for five queries
    assert tops.equals(store.query_arrow(first))
    assert titles.equals(store.query_arrow(second, frames={"ids": tops.select(["chapter_id"])}))
    # What the block does is its own: an error of the caller's is not a damaged store.
    with pytest.raises(KeyError), store.asking(["chapters"]) as ask:
        ask.arrow("SELECT 1 AS one")
        raise KeyError("the caller's")


def test_queries_of_the_snapshots_since_read_their_files_alone(tmp_path, service):
    store = SnapshotStore(tmp_path)
    for step in range(5):
        service.update("c1", covered=step)
        store.take(service, at=hours(step))

    def since(first):
        at = hours(first).isoformat()
        return (
            "SELECT chapter_id, idx, covered FROM languages_changes "
            f"WHERE idx >= {first} AND snapshot_at >= '{at}'::TIMESTAMPTZ ORDER BY 2"
        )

    recent = since(3)
    named = (
        "SELECT DISTINCT c.project_id, p.name "
        "FROM chapters_changes c JOIN projects p USING (project_id)"
    )
    every = "SELECT count(*) AS n FROM languages_changes"

    def count(ask):
        return ask(every).column("n")[0].as_py()

    with store.asking(["languages", "chapters", "projects"], since=3, whole=["projects"]) as ask:
        assert ask.arrow(recent).equals(store.query_arrow(recent))
        assert ask.arrow(named).equals(store.query_arrow(named))  # the projects whole
        # The logs hold the files of the snapshots since alone: a query that reads
        # further back is answered from them (what `since` says a caller must not ask).
        assert 0 < count(ask.arrow) < count(store.query_arrow)
    # A snapshot taken with an earlier time from the position on: its change is worked
    # out from the states before, so the logs are whole.
    service.update("c1", covered=9)
    store.take(service, at=hours(2) + timedelta(minutes=30))
    recent = since(2)
    with store.asking(["languages"], since=2) as ask:
        assert ask.arrow(recent).equals(store.query_arrow(recent))
        assert count(ask.arrow) == count(store.query_arrow)


@pytest.mark.parametrize("statistics", [True, False])
def test_a_view_of_the_files_since_keeps_every_file_it_cannot_rule_out(tmp_path, statistics):
    # A table another engine wrote without file statistics: nothing tells its files
    # apart, so the view holds them all (a file left out would be rows lost unsaid).
    kept = pa.schema([("snapshot_at", schema.TIME), ("n", pa.int64())])
    settings = None if statistics else {"delta.dataSkippingNumIndexedCols": "0"}
    for hour in range(3):
        rows = pa.table({"snapshot_at": [hours(hour)], "n": [hour]}, schema=kept)
        write_deltalake(tmp_path / "t", rows, mode="append", configuration=settings)
    con = duckdb.connect()
    store_views.expose(_store_tables.Tables(str(tmp_path)), con, "v", "t", kept, since=hours(2))
    seen = [n for (n,) in con.execute("SELECT n FROM v ORDER BY n").fetchall()]
    assert seen == ([2] if statistics else [0, 1, 2])


def test_an_empty_store_answers_with_empty_frames(tmp_path):
    store = SnapshotStore(tmp_path / "nothing-yet")
    assert_frame_equal(store.snapshots(), schema.empty_frame(store_columns.MANIFEST_STORED))
    assert_frame_equal(
        store.latest("chapters"), schema.empty_frame(schema.with_snapshot(schema.CHAPTERS))
    )
    assert store.history("languages").empty
    assert store.workspace() is None
    assert store.query("SELECT count(*) AS n FROM chapters")["n"].tolist() == [0]
    with pytest.raises(ValueError, match="no table named 'pages'"):
        store.latest("pages")


def test_default_location_comes_from_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("CTS_STORE", str(tmp_path / "from-env"))
    assert SnapshotStore().root == str(tmp_path / "from-env")
    assert repr(SnapshotStore(tmp_path)) == f"SnapshotStore({str(tmp_path)!r})"


def test_snapshot_ids_sort_by_time_then_by_creation():
    same = [_store_ids.new_id(T0) for _ in range(50)]
    assert same == sorted(same) and len(set(same)) == 50
    later = _store_ids.new_id(T0 + timedelta(microseconds=1))
    assert later > same[-1]
    assert _store_ids.new_id(T0 - timedelta(days=1)) < same[0]


def test_emulator_snapshots_round_trip_through_parquet_unchanged(
    emulator, client, comic_project, novel_project, pages, tmp_path
):
    client.create_chapter(comic_project["id"], pages=pages)
    client.create_chapter(novel_project["id"], text="One.\nTwo.\nThree.\n")
    store = SnapshotStore(tmp_path)
    first = store.take(client, details="all")
    assert first.snapshot_at == emulator.now().replace(microsecond=0)  # the Date header
    emulator.advance(600)
    ws = tk.pull(client, details="all")
    info = store.write(ws)
    fresh = SnapshotStore(tmp_path)
    for table in schema.SNAPSHOT_TABLES:
        expected = stamped(ws, table, info.snapshot_id, info.snapshot_at)
        assert_same(fresh.latest(table), expected, table)
    assert len(fresh.history("chapters")) == 4


def test_frames_edited_after_a_write_do_not_change_what_the_store_holds(tmp_path, service):
    store = SnapshotStore(tmp_path)
    ws = tk.pull(service)
    store.write(ws, at=hours(0))
    ws.languages.loc[:, "covered"] = 99  # the caller reuses its frames for the next hour
    store.write(ws, at=hours(1))
    covered = store.history("languages").groupby("snapshot_at")["covered"].max().tolist()
    assert covered == [4, 99]


def test_a_workspace_label_is_kept_with_each_snapshot_and_never_a_key(tmp_path, service):
    store = SnapshotStore(tmp_path, workspace="prod")
    store.take(service, at=hours(0))
    store.take(service, at=hours(1), workspace="staging")
    SnapshotStore(tmp_path).take(service, at=hours(2))
    labels = SnapshotStore(tmp_path).snapshots()["workspace"]
    assert str(labels.dtype).startswith("string")
    assert labels.tolist()[:2] == ["prod", "staging"] and labels.isna().tolist()[2]
    # Snapshots are still diffed against the one before, whatever its label.
    assert len(SnapshotStore(tmp_path).history("chapters")) == 3 * 2

"""`toolkit.store.diff.diff` takes a join-free path when both snapshots list the same keys in the
same order; it must find exactly the rows the join finds (nulls, lists and all)."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
from hypothesis import given, settings
from hypothesis import strategies as st

from toolkit.frames import schema
from toolkit.store.connection import connect
from toolkit.store.diff import _aligned_diff, diff

texts = st.none() | st.sampled_from(["", "a", "b"])
counts = st.none() | st.integers(0, 3)
flags = st.none() | st.booleans()
models = st.none() | st.lists(st.none() | st.sampled_from(["", "m1", "m2"]), max_size=3)


def _row(chapter: str) -> st.SearchStrategy[dict[str, object]]:
    return st.fixed_dictionaries(
        {
            "chapter_id": st.just(chapter),
            "project_id": texts,
            "language_code": st.just("en"),
            "status": texts,
            "covered": counts,
            "untranslated": counts,
            "failed": flags,
            "exporting": flags,
            "models": models,
        }
    )


@st.composite
def snapshots(draw: st.DrawFn) -> tuple[pa.Table, pa.Table]:
    """Two language tables over the same chapters, in the same order."""
    chapters = [f"c{i}" for i in range(draw(st.integers(0, 12)))]
    old = [draw(_row(c)) for c in chapters]
    # Each new row is the old one or a fresh draw, so some rows match and some differ.
    new = [row if draw(st.booleans()) else draw(_row(row["chapter_id"])) for row in old]
    return (
        schema.from_rows(new, schema.LANGUAGES),
        schema.from_rows(old, schema.LANGUAGES),
    )


def _by_key(table: pa.Table) -> pa.Table:
    keys = [(k, "ascending") for k in schema.KEYS["languages"]]
    return table.sort_by([*keys, ("_deleted", "ascending")])


@settings(max_examples=100, deadline=None)
@given(snapshots())
def test_aligned_path_finds_what_the_join_finds(pair: tuple[pa.Table, pa.Table]) -> None:
    new, old = pair
    fast = _aligned_diff("languages", new, old)
    assert fast is not None
    # Reversed, the keys no longer line up, so diff falls back to the join.
    reversed_new = new.take(pa.array(range(new.num_rows - 1, -1, -1), pa.int64()))
    con = connect()
    try:
        joined = diff(con, "languages", reversed_new, old)
    finally:
        con.close()
    assert _by_key(schema.conform(fast, joined.schema)).equals(_by_key(joined))


def test_keys_out_of_line_take_the_join() -> None:
    old = schema.from_rows(
        [{"chapter_id": "a", "language_code": "en"}, {"chapter_id": "b", "language_code": "en"}],
        schema.LANGUAGES,
    )
    swapped = old.take(pa.array([1, 0]))
    assert _aligned_diff("languages", swapped, old) is None
    assert _aligned_diff("languages", old.slice(0, 1), old) is None
    unkeyed = old.set_column(0, "chapter_id", pc.if_else(pa.array([True, False]), None, "b"))
    assert _aligned_diff("languages", unkeyed, unkeyed) is None


@settings(max_examples=100, deadline=None)
@given(snapshots())
def test_changed_flags_rows_whose_coverage_or_failure_changed(
    pair: tuple[pa.Table, pa.Table],
) -> None:
    # `_changed` is what lets the analysis skip progress-only rows: a row it misses would
    # lose lines or runs, so it must be exactly "coverage or failure differs, or gone";
    # `_previous` is what the analysis compares a flagged row with, so it must be the
    # row's coverage and failure at the snapshot before.
    new, old = pair
    before = {row["chapter_id"]: row for row in old.to_pylist()}
    for row in diff(connect(), "languages", new, old).to_pylist():
        was = before[row["chapter_id"]]
        moved = row["covered"] != was["covered"] or row["failed"] != was["failed"]
        assert row["_changed"] == (row["_deleted"] or moved)
        followed = {"existed": True, "covered": was["covered"], "failed": was["failed"]}
        assert row["_previous"] == (followed if row["_changed"] else None)
    gone = diff(connect(), "languages", new.slice(0, 0), old).to_pylist()
    assert all(row["_changed"] for row in gone)
    assert [row["_previous"] for row in gone] == [
        {"existed": True, "covered": row["covered"], "failed": row["failed"]} for row in gone
    ]  # a deletion: the row as it was
    fresh = diff(connect(), "languages", new, old.slice(0, 0)).to_pylist()
    assert all(row["_changed"] and row["_previous"] == {"existed": False, "covered": None,
               "failed": None} for row in fresh)  # fmt: skip

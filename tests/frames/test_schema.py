from __future__ import annotations

from datetime import UTC, datetime

import pandas as pd
import pyarrow as pa
import pytest
from pandas.testing import assert_frame_equal

from toolkit.frames import schema

# DESIGN.md's Tables contract, written out once more so that a drift in schema.py fails.
CONTRACT = {
    "projects": [
        "project_id", "name", "kind", "source_language", "reading_direction", "process_steps",
        "translation_model", "target_languages", "chapter_count", "last_chapter_at", "created_at",
    ],
    "chapters": [
        "chapter_id", "project_id", "position", "title", "summary", "page_count", "started",
        "processing", "failed", "failure_reason", "status", "credits_spent", "last_activity_at",
        "created_at", "state",
    ],
    "languages": [
        "chapter_id", "project_id", "language_code", "status", "covered", "untranslated",
        "failed", "exporting", "models",
    ],
    "exports": [
        "chapter_id", "project_id", "language_code", "format", "filename", "byte_size",
        "page_count", "prepared_at",
    ],
    "events": [
        "webhook_id", "type", "timestamp", "received_at", "chapter_id", "project_id", "data",
    ],
    # The toolkit's own table beside the contract's (docs/store.md, "Translation groups").
    "project_groups": ["project_id", "translation_group_id"],
}  # fmt: skip

TEXT = pd.StringDtype()
COUNT = pd.Int64Dtype()
FLAG = pd.BooleanDtype()
TIME = pd.DatetimeTZDtype(unit="us", tz="UTC")
LIST = pd.ArrowDtype(pa.list_(pa.string()))


def expected_dtype(table: str, column: str) -> object:
    if column == "status":
        return schema.STATUS_DTYPE
    if column in {"target_languages", "models"}:
        return LIST
    if column in {"started", "processing", "failed", "exporting"}:
        return FLAG
    if column.endswith("_at") or column == "timestamp":
        return TIME
    counts = {"chapter_count", "position", "page_count", "credits_spent", "covered"}
    if column in counts | {"untranslated", "byte_size"}:
        return COUNT
    return TEXT


@pytest.mark.parametrize("table", list(CONTRACT))
def test_every_table_has_the_contract_columns_and_dtypes_even_when_empty(table):
    frame = schema.empty_frame(schema._TABLES[table])
    assert list(frame.columns) == CONTRACT[table]
    for column in frame.columns:
        assert frame[column].dtype == expected_dtype(table, column), column


def test_status_is_an_ordered_categorical_in_workflow_order():
    status = schema.STATUS_DTYPE
    assert status.ordered
    assert list(status.categories) == ["translating", "needs_review", "reviewed"]
    values = pd.Series(["reviewed", "translating", "needs_review"], dtype=status)
    assert values.min() == "translating"
    assert (values > "translating").tolist() == [True, False, True]


def test_snapshot_history_rows_lead_with_snapshot_id_and_time():
    frame = schema.empty_frame(schema.with_snapshot(schema.CHAPTERS))
    assert list(frame.columns[:2]) == ["snapshot_id", "snapshot_at"]
    assert frame["snapshot_at"].dtype == TIME


def test_nulls_stay_null_and_survive_pandas_round_trip():
    rows = [
        {"chapter_id": "c1", "language_code": "en", "status": "needs_review", "covered": 7,
         "untranslated": None, "failed": False, "models": ["m1", "m2"]},
        {"chapter_id": "c2", "language_code": "fr", "status": None, "covered": None,
         "untranslated": None, "failed": None, "models": None},
    ]  # fmt: skip
    table = schema.from_rows(rows, schema.LANGUAGES)
    frame = schema.to_pandas(table, schema.LANGUAGES)
    assert frame["untranslated"].isna().all()  # all-null column keeps its dtype
    assert frame["untranslated"].dtype == COUNT
    assert frame["project_id"].isna().all() and frame["project_id"].dtype == TEXT
    assert frame.loc[1, "covered"] is pd.NA
    assert frame.loc[0, "models"] == ["m1", "m2"]
    back = schema.to_pandas(schema.from_pandas(frame, schema.LANGUAGES), schema.LANGUAGES)
    assert_frame_equal(back, frame)


def test_times_are_microsecond_utc_whatever_zone_they_came_in():
    from datetime import timedelta, timezone

    tokyo = timezone(timedelta(hours=9))
    table = schema.from_rows(
        [{"project_id": "p", "created_at": datetime(2026, 1, 2, 9, 0, 0, 123456, tzinfo=tokyo)}],
        schema.PROJECTS,
    )
    frame = schema.to_pandas(table, schema.PROJECTS)
    assert frame.loc[0, "created_at"] == pd.Timestamp("2026-01-02 00:00:00.123456", tz="UTC")


def test_conform_adds_missing_columns_as_null_and_drops_unknown_ones():
    table = pa.table({"chapter_id": ["c1"], "extra": [1]})
    conformed = schema.conform(table, schema.CHAPTERS)
    assert conformed.schema.names == CONTRACT["chapters"]
    assert conformed.column("credits_spent").null_count == 1


def test_a_frame_missing_columns_is_refused_with_a_hint():
    with pytest.raises(ValueError, match="lacks the columns"):
        schema.from_pandas(pd.DataFrame({"chapter_id": ["c1"]}), schema.CHAPTERS)


def test_unknown_table_names_are_refused_with_the_list():
    with pytest.raises(ValueError, match="projects, chapters"):
        schema.table_schema("pages")


def test_naive_time_conversion_is_not_guessed():
    # Arrow refuses to mix naive and aware values rather than guessing a zone.
    aware = datetime(2026, 1, 1, tzinfo=UTC)
    table = schema.from_rows([{"project_id": "p", "created_at": aware}], schema.PROJECTS)
    assert table.column("created_at").type == pa.timestamp("us", tz="UTC")


def test_frames_are_editable_in_every_column():
    rows = [
        {
            "chapter_id": "c1",
            "credits_spent": 1,
            "last_activity_at": datetime(2026, 1, 1, tzinfo=UTC),
        }
    ]
    frame = schema.to_pandas(schema.from_rows(rows, schema.CHAPTERS), schema.CHAPTERS)
    later = pd.Timestamp("2026-02-01", tz="UTC")
    frame.loc[0, "last_activity_at"] = later
    frame.loc[0, "status"] = "reviewed"
    frame.loc[0, "credits_spent"] = 5
    assert frame.loc[0, ["last_activity_at", "status", "credits_spent"]].tolist() == [
        later,
        "reviewed",
        5,
    ]

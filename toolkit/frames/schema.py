"""One Arrow schema per table: the column contract of frames, the store and its files.

Every table is built against its schema here, written to Parquet with it and turned into
pandas through `to_pandas`, so a frame has the same dtypes whether it came from the
service or from the store. The dtype table is in docs/frames.md.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

import pandas as pd
import pyarrow as pa

from toolkit.frames.states import fill_states
from toolkit.models import STATUS_ORDER

__all__ = [
    "CHAPTERS",
    "COUNT",
    "EVENTS",
    "EXPORTS",
    "FLAG",
    "KEYS",
    "LANGUAGES",
    "MANIFEST",
    "NUMBER",
    "PROJECTS",
    "PROJECT_GROUPS",
    "SNAPSHOT_TABLES",
    "STATE",
    "STATUS_DTYPE",
    "TEXT",
    "TEXT_DTYPE",
    "TEXT_LIST",
    "TIME",
    "TIME_DTYPE",
    "VERSIONED_TABLES",
    "conform",
    "empty_frame",
    "from_pandas",
    "from_rows",
    "table_schema",
    "to_pandas",
    "with_snapshot",
]

TEXT = pa.string()
COUNT = pa.int64()
FLAG = pa.bool_()
NUMBER = pa.float64()
TIME = pa.timestamp("us", tz="UTC")
TEXT_LIST = pa.list_(pa.string())

STATUS_DTYPE = pd.CategoricalDtype(list(STATUS_ORDER), ordered=True)
# Texts in every frame the toolkit makes: Arrow-backed on every pandas. pandas 3's
# default `string` is this dtype; pandas 2.2's keeps Python objects, so a frame mixing
# the two (or a frame of no rows beside one with rows) had another dtype there than the
# same figure elsewhere, or than its SQL definition (docs/testing.md, the lowest versions).
TEXT_DTYPE: Final = pd.StringDtype("pyarrow")
# And its times: microseconds in UTC, as the store keeps them (`TIME`).
TIME_DTYPE: Final = pd.DatetimeTZDtype(unit="us", tz="UTC")


def _status_dtype(values: pd.Series) -> pd.CategoricalDtype:
    """`STATUS_DTYPE`, with any status the toolkit does not know kept as its text and
    ordered before `translating`: whatever it means, the toolkit cannot count it done."""
    unknown = sorted(set(values.dropna().unique()) - set(STATUS_ORDER))
    return pd.CategoricalDtype([*unknown, *STATUS_ORDER], ordered=True) if unknown else STATUS_DTYPE


_DTYPE_TAG = b"toolkit.dtype"


def _status(name: str = "status") -> pa.Field:
    return pa.field(name, TEXT, metadata={_DTYPE_TAG: b"status"})


# A column the toolkit works out from the others (`states`): stored when written, and
# worked out on read where a row lacks it (a store written before the column existed).
_DERIVED_TAG = b"toolkit.derived"
STATE = pa.field("state", TEXT, metadata={_DERIVED_TAG: b"state"})


PROJECTS = pa.schema(
    [
        ("project_id", TEXT),
        ("name", TEXT),
        ("kind", TEXT),
        ("source_language", TEXT),
        ("reading_direction", TEXT),
        ("process_steps", TEXT),
        ("translation_model", TEXT),
        ("target_languages", TEXT_LIST),
        ("chapter_count", COUNT),
        ("last_chapter_at", TIME),
        ("created_at", TIME),
    ]
)

# The service's `translationGroupId` of each project, apart from `PROJECTS`, whose columns
# are DESIGN.md's contract: a row per project at every snapshot taken since the toolkit
# kept it, null where the service sent none; a project with no row has no group on record
# (a snapshot an earlier toolkit took). docs/store.md, "A table added since: the
# projects' translation groups".
PROJECT_GROUPS = pa.schema([("project_id", TEXT), ("translation_group_id", TEXT)])

CHAPTERS = pa.schema(
    [
        ("chapter_id", TEXT),
        ("project_id", TEXT),
        ("position", COUNT),
        ("title", TEXT),
        ("summary", TEXT),
        ("page_count", COUNT),
        ("started", FLAG),
        ("processing", FLAG),
        ("failed", FLAG),
        ("failure_reason", TEXT),
        _status(),
        ("credits_spent", COUNT),
        ("last_activity_at", TIME),
        ("created_at", TIME),
        STATE,
    ]
)

LANGUAGES = pa.schema(
    [
        ("chapter_id", TEXT),
        ("project_id", TEXT),
        ("language_code", TEXT),
        _status(),
        ("covered", COUNT),
        ("untranslated", COUNT),
        ("failed", FLAG),
        ("exporting", FLAG),
        ("models", TEXT_LIST),
    ]
)

EXPORTS = pa.schema(
    [
        ("chapter_id", TEXT),
        ("project_id", TEXT),
        ("language_code", TEXT),
        ("format", TEXT),
        ("filename", TEXT),
        ("byte_size", COUNT),
        ("page_count", COUNT),
        ("prepared_at", TIME),
    ]
)

EVENTS = pa.schema(
    [
        ("webhook_id", TEXT),
        ("type", TEXT),
        ("timestamp", TIME),
        ("received_at", TIME),
        ("chapter_id", TEXT),
        ("project_id", TEXT),
        ("data", TEXT),
    ]
)

MANIFEST = pa.schema(
    [
        ("snapshot_id", TEXT),
        ("snapshot_at", TIME),
        ("details", TEXT),
        ("requests", COUNT),
        ("seconds", NUMBER),
        ("rows_projects", COUNT),
        ("rows_chapters", COUNT),
        ("rows_languages", COUNT),
        ("rows_exports", COUNT),
        # A label the user gives the snapshot's workspace (SnapshotStore(..., workspace=)),
        # shown and filtered on, never part of a key; null when none was given.
        ("workspace", TEXT),
    ]
)

# The tables a snapshot holds, in the order a snapshot is written: the service's four,
# then the projects' translation groups.
SNAPSHOT_TABLES: dict[str, pa.Schema] = {
    "projects": PROJECTS,
    "chapters": CHAPTERS,
    "languages": LANGUAGES,
    "exports": EXPORTS,
    "project_groups": PROJECT_GROUPS,
}
_TABLES: dict[str, pa.Schema] = {**SNAPSHOT_TABLES, "events": EVENTS}
# Every table whose Delta version names what a store holds (`SnapshotStore.version()`).
VERSIONED_TABLES: tuple[str, ...] = (*SNAPSHOT_TABLES, "events", "manifest")

# The columns that name one row of a snapshot table: a row's identity across snapshots.
KEYS: dict[str, tuple[str, ...]] = {
    "projects": ("project_id",),
    "chapters": ("chapter_id",),
    "languages": ("chapter_id", "language_code"),
    "exports": ("chapter_id", "language_code", "format", "filename"),
    "project_groups": ("project_id",),
}

_SNAPSHOT_FIELDS: tuple[pa.Field, ...] = (
    pa.field("snapshot_id", TEXT),
    pa.field("snapshot_at", TIME),
)


def table_schema(name: str) -> pa.Schema:
    """The schema of a table by name, with a message listing the names when it is unknown."""
    if name not in _TABLES:
        raise ValueError(f"no table named {name!r}; the tables are {', '.join(_TABLES)}")
    return _TABLES[name]


def with_snapshot(schema: pa.Schema) -> pa.Schema:
    """`schema` with `snapshot_id` and `snapshot_at` in front, as stored history rows have."""
    return pa.schema([*_SNAPSHOT_FIELDS, *schema])


def _pandas_dtype(arrow_type: pa.DataType) -> Any:
    if pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type):
        return TEXT_DTYPE
    if pa.types.is_integer(arrow_type):
        return pd.Int64Dtype()
    if pa.types.is_floating(arrow_type):
        return pd.Float64Dtype()
    if pa.types.is_boolean(arrow_type):
        return pd.BooleanDtype()
    if pa.types.is_timestamp(arrow_type):
        return TIME_DTYPE
    if pa.types.is_list(arrow_type):
        return pd.ArrowDtype(arrow_type)
    return None


def conform(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """`table` with exactly the columns of `schema`, in its order and of its types.

    Columns the table lacks come back all null, except a chapter's `state`, which is
    derived from the row where it is missing; columns the schema lacks are dropped.
    Field metadata comes from `schema`, whatever the source carried.
    """
    columns = []
    for field in schema:
        if field.name in table.column_names:
            column = table.column(field.name)
            if column.type != field.type:
                column = column.cast(field.type)
        else:
            column = pa.nulls(table.num_rows, field.type)
        columns.append(column)
    conformed = pa.Table.from_arrays(columns, schema=schema)
    if any(f.metadata and f.metadata.get(_DERIVED_TAG) == b"state" for f in schema):
        index = schema.get_field_index("state")
        conformed = conformed.set_column(index, schema.field(index), fill_states(conformed))
    return conformed


def to_pandas(table: pa.Table, schema: pa.Schema) -> pd.DataFrame:
    """Arrow to pandas, once, with the dtypes docs/frames.md lists."""
    table = conform(table, schema)
    frame: pd.DataFrame = table.to_pandas(types_mapper=_pandas_dtype)
    for field in schema:
        if field.metadata and field.metadata.get(_DTYPE_TAG) == b"status":
            frame[field.name] = frame[field.name].astype(_status_dtype(frame[field.name]))
        elif pa.types.is_timestamp(field.type):
            # Arrow hands times over as read-only views, which pandas 3 fails to assign
            # into; a copy makes the frame as editable as any other.
            frame[field.name] = frame[field.name].copy()
    return frame


def from_pandas(frame: pd.DataFrame, schema: pa.Schema) -> pa.Table:
    """A frame with (at least) the columns of `schema` as an Arrow table of that schema."""
    derived = {f.name for f in schema if f.metadata and f.metadata.get(_DERIVED_TAG)}
    missing = [name for name in schema.names if name not in frame.columns]
    if derived.intersection(missing):
        # A frame built before the column existed: the state is worked out from the row.
        frame = frame.assign(**dict.fromkeys(derived.intersection(missing)))
        missing = [name for name in missing if name not in derived]
    if missing:
        raise ValueError(
            f"the frame lacks the columns {missing}; build it with toolkit.frames "
            "or read it from the store, which give every column of the table"
        )
    columns = []
    for field in schema:
        series = frame[field.name]
        if isinstance(series.dtype, pd.CategoricalDtype):
            columns.append(_from_categories(series, field.type))
        else:
            columns.append(pa.array(series, type=field.type, from_pandas=True))
    return conform(pa.Table.from_arrays(columns, schema=schema), schema)


def _from_categories(series: pd.Series, type_: pa.DataType) -> pa.Array:
    """A categorical column as Arrow values: each category converted once and taken by
    code (converting 100,000 rows through Python objects cost a snapshot seconds)."""
    codes = series.cat.codes.to_numpy()
    words = pa.array(series.cat.categories.to_numpy(object), type=type_, from_pandas=True)
    return words.take(pa.array(codes, mask=codes < 0))


def from_rows(rows: Sequence[Mapping[str, Any]], schema: pa.Schema) -> pa.Table:
    """Python dicts (one per row, keyed by column name) as an Arrow table of `schema`."""
    return pa.Table.from_pylist(list(rows), schema=schema)


def empty_frame(schema: pa.Schema) -> pd.DataFrame:
    """A frame with no rows and the columns and dtypes of `schema`."""
    return to_pandas(schema.empty_table(), schema)

"""Array helpers of the run pipeline: columns of the transitions frame as plain numpy
arrays, and the few grouped steps numpy lacks (rank within a group, carry forward); and
`looked_up`, the one way the analyses look values up by key in a frame that may be empty.

The pipeline works on numpy arrays because a year holds some 700,000 transition rows
and 200,000 runs; these helpers are how a stage reads a column of that size once.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any, Final

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

NO_TIME: Final = np.iinfo("int64").min
"""A time that is not known, in int64 microseconds (numpy's NaT)."""
FAR: Final = np.iinfo("int64").max
"""Later than any time: an open end, a sort key after every start."""


def among(values: np.ndarray, chosen: Collection[Any]) -> np.ndarray:
    """Whether each of `values` (ids, as objects) is one of `chosen`. Compared as
    objects: pandas' own texts, Arrow-backed, took 0.028 s for 100,000 ids where objects
    take 0.006 s, and an extension asks it several times."""
    return np.asarray(pd.Index(values, dtype=object).isin(list(chosen)), bool)


def looked_up(keys: pd.Series, table: pd.Series) -> pd.Series:
    """`table`'s values at `keys` (null where a key is absent), on `keys`' index, in
    `table`'s dtype where it can hold a null.

    `keys.map(table)` says the same, but through an empty `table` pandas first casts its
    values to float64: times and durations then fail (`TypeError: Cannot cast
    DatetimeArray to dtype float64`, the 24-hour demo's crash in issue 36) and texts come
    back as floats. `table`'s index must be unique, as for `map`.
    """
    found = table.reindex(pd.Index(keys.to_numpy(), dtype=object))
    return pd.Series(found.array, index=keys.index, name=keys.name, copy=False)


def positions_in(keys: pd.Series | pd.Index, index: pd.Index) -> np.ndarray:
    """Where each of `keys` (texts) stands in `index` (unique texts), -1 where it is
    absent: hashed in Arrow. pandas' `map` through an index of 100,000 Python texts
    hashes every key as an object, 0.08 s a call, and the replays of a weekly page ask
    at each of their snapshots (0.01 s here). Texts already in Arrow are taken as they
    are: made from 100,000 Python texts, each side was 0.016 s of every replay."""
    looked = pa.array(keys, from_pandas=True)
    wanted = pa.array(index, from_pandas=True)
    if wanted.type != looked.type:  # `string` beside `large_string`, or an empty index
        wanted = wanted.cast(looked.type)
    found = pc.index_in(looked, value_set=wanted)
    return np.asarray(found.fill_null(-1).to_numpy(zero_copy_only=False), "int64")


def is_true(values: pd.Series) -> np.ndarray:
    """A nullable boolean column as plain bools, null as False."""
    if values.dtype == np.dtype(bool):
        return np.asarray(values.to_numpy(), bool)  # the transitions' flags: no copy
    return np.asarray(values.fillna(False).to_numpy(bool), bool)


def to_float(values: pd.Series) -> np.ndarray:
    """A nullable count as floats, null as 0."""
    if isinstance(values.dtype, np.dtype) and values.dtype.kind in "iuf":
        return np.asarray(np.nan_to_num(values.to_numpy("float64"), nan=0.0), "float64")
    return np.asarray(values.astype("Float64").fillna(0).to_numpy("float64"), "float64")


def to_micros(values: pd.Series) -> np.ndarray:
    """A nullable time column as int64 microseconds, null as `NO_TIME`."""
    stamped = pd.to_datetime(values, utc=True)
    out = stamped.to_numpy("datetime64[us]").astype("int64")
    return np.where(stamped.isna().to_numpy(), NO_TIME, out)


def moment_micros(moment: pd.Timestamp) -> int:
    """One moment as `to_micros` gives a time column's: int64 microseconds, UTC."""
    return int(to_micros(pd.Series([moment]))[0])


def category_codes(values: pd.Series) -> np.ndarray:
    """A categorical column's codes (-1 for null)."""
    return np.asarray(values.cat.codes.to_numpy(), "int64")


def text_objects(texts: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """Arrow texts as an array of Python ones (null as None), made by Arrow: a third of
    the time of `to_pylist` (5 against 15 ms for 100,000 chapters' ids)."""
    return np.asarray(texts.to_numpy(zero_copy_only=False), object)


def texts_at(values: pd.Series, at: np.ndarray) -> np.ndarray:
    """A categorical text column's values at rows `at`, as an object array, null as
    None (taken by code: no text is converted)."""
    categories = np.array([*values.cat.categories, None], object)
    return np.asarray(categories[category_codes(values)[at]], object)  # -1: the None


def taken(column: pd.Series, at: np.ndarray) -> pd.Series:
    """A categorical column's values at rows `at`, taken by code (no text is copied)."""
    dtype = column.dtype
    assert isinstance(dtype, pd.CategoricalDtype)
    picked = np.asarray(column.cat.codes.to_numpy()[at], "int64")
    return pd.Series(pd.Categorical.from_codes(picked, dtype=dtype), copy=False)


def rank_within(groups: np.ndarray) -> np.ndarray:
    """Each element's position among the equal values before it (`groups` sorted): a
    chapter's k-th row, a row's k-th run."""
    first = np.ones(len(groups), bool)
    first[1:] = groups[1:] != groups[:-1]
    ranked: np.ndarray = np.arange(len(groups)) - np.maximum.accumulate(
        np.where(first, np.arange(len(groups)), 0)
    )
    return ranked


def carried(values: np.ndarray, set_at: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """`values` where `set_at`, elsewhere the value of the last element set before it in
    the same group (0 when none); elements are in group order."""
    last = np.maximum.accumulate(np.where(set_at, np.arange(len(values)), -1))
    found = last >= 0
    same = found & (groups[np.maximum(last, 0)] == groups)
    result: np.ndarray = np.where(same, values[np.maximum(last, 0)], 0.0)
    return result


def unconsolidated(columns: Mapping[str, Any], n: int) -> pd.DataFrame:
    """A frame of these columns, each kept as its own array: `pd.DataFrame(dict)` copies
    columns of one dtype into a 2-D block, which for hundreds of thousands of rows costs
    more than anything done with them afterwards."""
    frame = pd.DataFrame(index=pd.RangeIndex(n))
    for name, values in columns.items():
        frame[name] = as_column(values)
    return frame


def as_column(values: Any) -> Any:
    """Values to set as a frame's column as they are: pandas turns an object array of
    texts into its string dtype on the way in (some 30 ms for a year's runs), which
    reading them back as objects undoes again."""
    if isinstance(values, np.ndarray) and values.dtype == object:
        return pd.Series(values, dtype=object, copy=False)
    return values


def words_by_code(coded: np.ndarray, words: Sequence[str] | pd.Index | np.ndarray) -> pa.Array:
    """Each code's word as Arrow large strings (-1: null): the words are few, the codes
    many, and a take copies each text once."""
    vocabulary = pa.array(list(words), pa.large_string())
    return vocabulary.take(pa.array(coded, pa.int64(), mask=np.asarray(coded) < 0))


def texts_by_code(
    coded: np.ndarray, words: Sequence[str] | pd.Index | np.ndarray
) -> pd.arrays.ArrowStringArray:
    """`words_by_code` as the toolkit's string dtype, straight from Arrow (pandas keeps
    large strings as they are: no second copy)."""
    return pd.arrays.ArrowStringArray(words_by_code(coded, words))

"""Joins of frames that may be empty: `outer_merged`, the one way the analyses and
reports join two frames on several keys keeping the rows of both."""

from __future__ import annotations

from typing import Any

import pandas as pd
import pyarrow as pa

__all__ = ["outer_merged"]


def outer_merged(
    left: pd.DataFrame, right: pd.DataFrame, on: list[str], **options: Any
) -> pd.DataFrame:
    """`left.merge(right, how="outer", on=on, ...)`, also when both are empty: a grouping
    of no rows leaves its Arrow text keys with no chunk at all, and pandas cannot join two
    such keys on several columns (seed 1081 of the histories: a timeline asked before
    the first snapshot with a change)."""
    return _with_a_chunk(left, on).merge(_with_a_chunk(right, on), how="outer", on=on, **options)


def _with_a_chunk(frame: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
    empty = [
        c for c in columns
        if isinstance(frame[c].dtype, pd.ArrowDtype | pd.StringDtype)
        and hasattr(frame[c].array, "__arrow_array__")
        and pa.chunked_array(frame[c].array.__arrow_array__()).num_chunks == 0
    ]  # fmt: skip
    if not empty:
        return frame
    frame = frame.copy()
    for c in empty:
        kind = pa.chunked_array(frame[c].array.__arrow_array__()).type
        frame[c] = pd.Series(
            pd.array(pa.chunked_array([pa.array([], kind)]), dtype=frame[c].dtype),
            index=frame.index,
        )
    return frame

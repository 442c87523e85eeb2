"""The analysis' array helpers where their inputs come in several forms."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from toolkit.analysis._arrays import positions_in
from toolkit.frames.schema import TEXT_DTYPE

KEYS = ["c-2", "c-9", None, "c-10", "c-2"]
INDEX = ["c-10", "c-1", "c-2"]


@pytest.mark.parametrize("keys_dtype", [object, TEXT_DTYPE])
@pytest.mark.parametrize("index_dtype", [object, TEXT_DTYPE])
def test_positions_in_are_the_same_whether_the_texts_are_pythons_or_arrows(keys_dtype, index_dtype):
    # The replays look Arrow ids up among Arrow ids, the latest snapshot's answer among
    # Python texts: each mix gives each key's position, -1 where absent or null.
    keys = pd.Series(KEYS, dtype=keys_dtype)
    found = positions_in(keys, pd.Index(INDEX, dtype=index_dtype))
    assert found.tolist() == [2, -1, -1, 0, 2]
    assert found.dtype == np.int64
    as_index = positions_in(pd.Index(KEYS, dtype=keys_dtype), pd.Index(INDEX, dtype=index_dtype))
    assert as_index.tolist() == [2, -1, -1, 0, 2]


@pytest.mark.parametrize("index_dtype", [object, TEXT_DTYPE])
def test_nothing_is_found_in_an_empty_index(index_dtype):
    keys = pd.Series(["c-1", "c-2"], dtype=TEXT_DTYPE)
    assert positions_in(keys, pd.Index([], dtype=index_dtype)).tolist() == [-1, -1]

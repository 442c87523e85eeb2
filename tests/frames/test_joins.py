"""`toolkit.frames.joins.outer_merged`: an outer join on several keys keeps the rows
of both sides, also when both are empty groupings (whose Arrow text keys have no chunk)."""

from __future__ import annotations

import pandas as pd

from toolkit.frames.joins import outer_merged


def _changes() -> pd.DataFrame:
    ids = pd.Series(["c1", "c2", "c1"], dtype="string[pyarrow]")
    return pd.DataFrame({"chapter_id": ids, "idx": [0, 0, 1], "covered": [3, 4, 5]})


def test_an_outer_join_of_two_empty_groupings_is_empty_with_both_sides_columns():
    # As a timeline asked before the first snapshot with a change (histories seed 1081).
    none = _changes().loc[lambda f: f["idx"] > 5]
    sums = none.groupby(["chapter_id", "idx"], as_index=False).sum()
    joined = outer_merged(none[["chapter_id", "idx"]], sums, on=["chapter_id", "idx"])
    assert joined.empty
    assert list(joined.columns) == ["chapter_id", "idx", "covered"]
    assert joined["chapter_id"].dtype == "string[pyarrow]"


def test_an_outer_join_keeps_the_rows_of_both_sides():
    changes = _changes()
    left = changes.loc[changes["idx"] == 0, ["chapter_id", "idx"]]
    right = changes.loc[changes["chapter_id"] == "c1"]
    joined = outer_merged(left, right, on=["chapter_id", "idx"]).sort_values(["chapter_id", "idx"])
    assert joined[["chapter_id", "idx"]].to_numpy().tolist() == [["c1", 0], ["c1", 1], ["c2", 0]]
    assert joined["covered"].tolist()[:2] == [3, 5] and pd.isna(joined["covered"].iloc[2])

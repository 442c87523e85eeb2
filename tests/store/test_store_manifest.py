"""`store.snapshots()` is the manifest docs/store.md describes: every column it names,
with honest dtypes, and the page's manifest queries run over a real store."""

from __future__ import annotations

import re
from pathlib import Path

import duckdb
import pandas as pd
import pytest
from datafakes import FakeService, hours
from deltalake import DeltaTable

import toolkit as tk
from toolkit.store import SnapshotStore

DOCS = (Path(__file__).parents[2] / "docs" / "store.md").read_text()
SQL_BLOCKS = re.findall(r"```sql\n(.*?)```", DOCS, re.S)

DTYPES = {
    "snapshot_id": "string",
    "snapshot_at": "datetime64[us, UTC]",
    "details": "string",
    "requests": "Int64",
    "seconds": "Float64",
    "rows_projects": "Int64",
    "rows_chapters": "Int64",
    "rows_languages": "Int64",
    "rows_exports": "Int64",
    "workspace": "string",
    "base_id": "string",
    "full": "boolean",
    "keeps_previous": "boolean",
    "commits": "string",
}


def documented_columns() -> list[str]:
    """The columns the page's "The manifest's columns:" sentence names, in its order."""
    sentence = re.search(r"The manifest's columns: (.*?)\(below\)\.", DOCS, re.S)
    assert sentence, "docs/store.md no longer lists the manifest's columns"
    # Backticked names that open a list item, not the `take`-style words inside parentheses.
    text = re.sub(r"\([^()]*(\([^()]*\)[^()]*)*\)", "", sentence.group(1))
    return re.findall(r"`(\w+)`", text)


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> SnapshotStore:
    """Four hourly snapshots and a backfill between two of them (a snapshot based on
    another than the one before it), labelled with a workspace."""
    service = FakeService()
    service.add_project("p1")
    store = SnapshotStore(tmp_path_factory.mktemp("manifest") / "store", workspace="prod")
    for hour in (0, 1, 2, 3):
        service.add_chapter(f"c{hour}", "p1", position=hour + 1, covered=1)
        store.write(tk.pull(service, details="all"), at=hours(hour))
    store.write(tk.pull(service, details="all"), at=hours(1.5))
    return store


def test_snapshots_has_every_manifest_column_the_docs_name_with_its_dtype(store):
    manifest = store.snapshots()
    assert documented_columns() == list(DTYPES)
    assert {name: str(dtype) for name, dtype in manifest.dtypes.items()} == DTYPES
    assert manifest["snapshot_at"].is_monotonic_increasing
    assert manifest["workspace"].tolist() == ["prod"] * 5
    assert manifest["full"].tolist() == [True, False, False, False, False]
    assert manifest["keeps_previous"].all()
    assert manifest["base_id"].iloc[1:].notna().all() and pd.isna(manifest["base_id"].iloc[0])


def test_the_docs_query_for_unlinked_snapshots_finds_the_one_after_the_backfill(store):
    (unlinked,) = [sql for sql in SQL_BLOCKS if "base_id IS DISTINCT FROM previous" in sql]
    manifest = store.snapshots()
    ids = manifest["snapshot_id"].tolist()
    after_backfill = ids[manifest["snapshot_at"].tolist().index(hours(2))]

    through_the_toolkit = store.query(unlinked.replace("FROM manifest", "FROM snapshots"))
    con = duckdb.connect()
    con.register("manifest", DeltaTable(f"{store.root}/manifest").to_pyarrow_dataset())
    straight_from_delta = con.sql(unlinked).fetchall()

    assert through_the_toolkit["snapshot_id"].tolist() == [after_backfill]
    assert straight_from_delta == [(after_backfill,)]


def test_commits_read_with_json_extract_as_the_docs_say(store):
    assert "json_extract(commits, '$.chapters.version')" in DOCS
    versions = store.query(
        "SELECT snapshot_id, CAST(json_extract(commits, '$.chapters.version') AS BIGINT) AS v "
        "FROM snapshots ORDER BY snapshot_id"
    )
    assert versions["snapshot_id"].tolist() == store.snapshots()["snapshot_id"].tolist()
    assert versions["v"].notna().all() and versions["v"].is_unique

"""Other engines read the store with no code of ours: the DuckDB, Polars and pandas
blocks of docs/store.md run against a store written by `toolkit snapshot`, and give the
toolkit's own answers for the current state, the state as of a time and the history."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

from toolkit.cli import main
from toolkit.store import SnapshotStore
from toolkit.store import writing as store_module

DOCS = Path(__file__).parents[2] / "docs" / "store.md"
BLOCK = re.compile(r"<!-- engine: (\w+) -->\n```python\n(.*?)```", re.S)
COLUMNS = ["chapter_id", "page_count", "credits_spent", "processing", "last_activity_at"]


def engine_blocks() -> dict[str, str]:
    return dict(BLOCK.findall(DOCS.read_text()))


def test_the_docs_show_every_engine():
    assert set(engine_blocks()) == {"duckdb", "polars", "pandas"}


def _frame(result) -> pd.DataFrame:
    return result if isinstance(result, pd.DataFrame) else result.to_pandas()


def _rows(frame: pd.DataFrame, columns: list[str]) -> list[tuple]:
    frame = _frame(frame)[columns].copy()
    for column in columns:
        if str(frame[column].dtype).startswith("datetime64"):
            frame[column] = pd.to_datetime(frame[column], utc=True).dt.as_unit("us")
    frame = frame.astype(object).where(frame.notna(), None)
    return sorted(map(tuple, frame.itertuples(index=False)), key=repr)


@pytest.mark.parametrize("engine", ["duckdb", "polars", "pandas"])
@pytest.mark.slow
def test_engines_read_current_state_as_of_and_history_like_the_toolkit(
    engine, emulator, workspace, client, comic_project, novel_project, pages, tmp_path,
    monkeypatch, capsys,
):  # fmt: skip
    monkeypatch.setattr(store_module, "_FULL_EVERY", 3)
    monkeypatch.setenv("CTS_BASE_URL", emulator.url)
    monkeypatch.setenv("CTS_API_KEY", workspace["apiKey"])
    root = tmp_path / "store"
    monkeypatch.setenv("CTS_STORE", str(root))
    made = []
    for hour in range(5):
        if hour in (0, 2):
            made.append(client.create_chapter(comic_project["id"], pages=pages))
        if hour == 1:
            client.create_chapter(novel_project["id"], text="One.\nTwo.\n")
        if hour == 3:
            emulator.trash_chapter(made[0].id)
        assert main(["snapshot", "--details", "all"]) == 0
        emulator.advance(3600)
    capsys.readouterr()
    store = SnapshotStore(root)
    manifest = store.snapshots()
    when = manifest["snapshot_at"].iloc[3].to_pydatetime()  # after the trash

    namespace = {"root": str(root), "when": when}
    exec(compile(engine_blocks()[engine], f"docs/store.md ({engine})", "exec"), namespace)

    assert _rows(namespace["current"], COLUMNS) == _rows(store.latest("chapters"), COLUMNS)
    assert _rows(namespace["as_of"], COLUMNS) == _rows(store.as_of("chapters", when), COLUMNS)
    assert len(_frame(namespace["as_of"])) == len(store.as_of("chapters", when)) > 0
    shown = ["snapshot_id", "snapshot_at", *COLUMNS]
    assert _rows(namespace["history"], shown) == _rows(store.history("chapters"), shown)

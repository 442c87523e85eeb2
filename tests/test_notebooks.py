"""The committed notebooks show what today's code produces (issue 36: their tables were
raw pandas, index and underscores, long after every cell called `tk.table`).

Read from the files, never re-executed (nbval runs the notebooks; their figures move with
the clock): each notebook was run top to bottom by `python -m tests.notebooks_refresh`
after its code last changed, and each table it shows is drawn by `tk.table`."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path
from typing import Any

import pytest
from notebooks_refresh import KEY, NOTEBOOKS, code_hash

PATHS = sorted(NOTEBOOKS.glob("*.ipynb"))
REFRESH = "run `python -m tests.notebooks_refresh {}` and commit the notebook"


def _read(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


def _code(notebook: dict[str, Any]) -> list[dict[str, Any]]:
    return [cell for cell in notebook["cells"] if cell["cell_type"] == "code"]


def _text(value: str | list[str]) -> str:
    return "".join(value) if isinstance(value, list) else value


def test_there_are_notebooks():
    assert [p.name for p in PATHS][:4] == [
        "01-quickstart.ipynb", "02-throughput.ipynb", "03-credit-audit.ipynb",
        "04-operations.ipynb",
    ]  # fmt: skip


@pytest.mark.parametrize("path", PATHS, ids=[p.stem for p in PATHS])
def test_the_outputs_were_made_from_the_code_as_committed(path):
    notebook = _read(path)
    made_from = notebook["metadata"].get(KEY, {}).get("code_sha256")
    assert made_from == code_hash(notebook), (
        f"{path.name}: its code changed since its outputs were made; " + REFRESH.format(path.stem)
    )


@pytest.mark.parametrize("path", PATHS, ids=[p.stem for p in PATHS])
def test_every_cell_ran_once_in_order_without_an_error(path):
    cells = _code(_read(path))
    assert [cell["execution_count"] for cell in cells] == list(range(1, len(cells) + 1)), (
        f"{path.name} was not run top to bottom in one kernel; " + REFRESH.format(path.stem)
    )
    errors = [o for cell in cells for o in cell["outputs"] if o["output_type"] == "error"]
    assert errors == []


def _ends_in_a_table(source: str) -> bool:
    """True when the cell's last statement is a `tk.table(...)` call (its result shown)."""
    body = ast.parse(source).body
    last = body[-1] if body else None
    return (
        isinstance(last, ast.Expr)
        and isinstance(last.value, ast.Call)
        and ast.unparse(last.value.func) == "tk.table"
    )


HEADER = re.compile(r"<th [^>]*class=\"col_heading[^>]*>([^<]*)</th>")  # column headers


@pytest.mark.parametrize("path", PATHS, ids=[p.stem for p in PATHS])
def test_every_table_shown_is_drawn_by_tk_table(path):
    tables = 0
    for cell in _code(_read(path)):
        shown = [_text(o["data"]["text/html"]) for o in cell["outputs"]
                 if "text/html" in o.get("data", {})]  # fmt: skip
        assert not [html for html in shown if 'class="dataframe"' in html], (
            f"{path.name}: a raw pandas table in a cell starting "
            f"{_text(cell['source'])[:60]!r}; " + REFRESH.format(path.stem)
        )
        if not _ends_in_a_table(_text(cell["source"])):
            continue
        tables += 1
        (html,) = shown  # one table: the cell's result
        assert '<table id="T_' in html  # a pandas Styler's, as tk.table returns
        headers = [h for h in HEADER.findall(html) if h.strip()]
        assert headers and not [h for h in headers if "_" in h]  # words, not column names
    if path.stem != "04-operations":  # the panels' notebook shows no table
        assert tables > 0


def test_a_cell_ending_in_a_table_is_told_from_one_that_does_not():
    assert _ends_in_a_table("x = 1\ntk.table(frame)")
    assert not _ends_in_a_table("tk.table(frame)\nx = 1")
    assert not _ends_in_a_table("frame.head()")

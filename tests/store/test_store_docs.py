"""docs/store.md restates parts of the store's code; these tests keep the two equal.

A column added to `TRACKED` or a new kind of finding in `store/check.py` fails here until
the page says it too (issue 44 item 4: docs that restate code are checked against it).
"""

from __future__ import annotations

import ast
import re
import typing
from pathlib import Path

from toolkit.store import ledger
from toolkit.store.columns import TRACKED

ROOT = Path(__file__).resolve().parents[2]
PAGE = (ROOT / "docs" / "store.md").read_text()


def _section(title: str) -> str:
    return PAGE.split(f"\n## {title}", 1)[1].split("\n## ", 1)[0]


def test_the_page_names_the_columns_changed_follows():
    paragraph = PAGE.split("**`_changed`.**", 1)[1].split("\n\n", 1)[0]
    listed = re.search(r"\(a chapter's (.*?); a language's (.*?)\)", paragraph, re.S)
    assert listed is not None, "the `_changed` paragraph lists the followed columns"
    chapters, languages = (re.findall(r"`(\w+)`", part) for part in listed.groups())
    assert (chapters, languages) == (list(TRACKED["chapters"]), list(TRACKED["languages"]))
    assert set(TRACKED) == {"chapters", "languages"}


def _kinds_in_check() -> set[str]:
    # The kinds check.py writes itself (the first argument of each StoreFinding), the
    # ones it passes on from the ledger's disagreements (`Kind`), and the one the command
    # adds for the run stages a store keeps (toolkit/analysis/run_check.py).
    written = set()
    for path in (
        ROOT / "toolkit" / "store" / "check.py",
        ROOT / "toolkit" / "analysis" / "run_check.py",
        ROOT / "toolkit" / "store" / "latest_check.py",
    ):
        written |= {
            node.args[0].value
            for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, ast.Call)
            and getattr(node.func, "id", None) == "StoreFinding"
            and node.args
            and isinstance(node.args[0], ast.Constant)
        }
    return written | set(typing.get_args(ledger.Kind))


def test_the_page_describes_each_kind_of_finding_and_no_other():
    section = _section("Damaged stores: `toolkit store check`")
    described = set()
    for line in section.splitlines():
        if line.startswith("- **"):
            head = line.split(":", 1)[0]
            described |= set(re.findall(r"\*\*(\w+)\*\*", head))
    assert described == _kinds_in_check()

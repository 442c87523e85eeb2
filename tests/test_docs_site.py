"""The documentation site builds with `mkdocs build --strict`: no broken link, no
docstring mkdocstrings cannot parse, every page of docs/ in the navigation. The `docs`
extra is part of the README's test install; without it the test fails rather than skip."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import mkdocs  # noqa: F401  # the site's tools, imported so that a missing one fails
import mkdocstrings_handlers.python  # noqa: F401
import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_the_site_builds_strictly_with_every_chapter_and_the_reference(tmp_path):
    site = tmp_path / "site"
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "PYTHONPATH": str(ROOT)}
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(ROOT / "mkdocs.yml"),
         "-d", str(site)],
        capture_output=True, text=True, env=env, cwd=ROOT,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert not re.findall(r"^WARNING.*$", result.stderr, re.M)
    chapters = {path.stem for path in (ROOT / "docs").glob("*.md")}
    nav = (ROOT / "mkdocs.yml").read_text()
    assert [name for name in sorted(chapters) if f" {name}.md" not in nav] == []
    assert chapters <= {path.parent.name for path in site.glob("*/index.html")} | {"index"}
    client = (site / "reference" / "client" / "index.html").read_text()
    assert 'id="toolkit.client.Client.wait_for_chapter"' in client

"""mypy checks the package with the strict settings in pyproject.toml; one run also checks
a sample of a user's code against the package's types."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# The overloads make mixing modes (pages with text) a type error, not only a run-time one.
MODES = (
    "import toolkit as tk\n"
    "def modes(client: tk.Client) -> None:\n"
    "    client.create_chapter('p', ['a.png'])\n"
    "    client.create_chapter('p', staged=True, position=3)\n"
    "    client.create_chapter('p', text='Once upon a time')\n"
    "    client.create_chapter('p', ['a.png'], text='both')\n"
)


@pytest.fixture(scope="module")
def errors(tmp_path_factory) -> list[str]:
    """mypy's error lines for the package and the sample, from one run: a strict run
    takes a minute, and a second one for six lines would take as long again."""
    sample = tmp_path_factory.mktemp("typed") / "modes.py"
    sample.write_text(MODES)
    # Naming a module makes mypy ignore pyproject's `packages`, so the package is named
    # too (mypy takes no file beside a package); the rest of the config applies.
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "-p", "toolkit", "-m", "modes"],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
        env={**os.environ, "MYPYPATH": str(sample.parent)},
    )  # fmt: skip
    lines = [line for line in result.stdout.splitlines() if ": error:" in line]
    assert lines or result.returncode == 0, result.stdout + result.stderr
    return lines


def test_the_package_type_checks(errors):
    assert [line for line in errors if "modes.py:" not in line] == []


def test_create_chapter_takes_one_mode_at_a_time(errors):
    (error,) = [line for line in errors if "modes.py:" in line]
    assert "modes.py:6:" in error and "No overload variant" in error

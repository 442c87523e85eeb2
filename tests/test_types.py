"""mypy checks the package with the strict settings in pyproject.toml."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_package_type_checks():
    # The config (packages, strictness, per-module exceptions) is pyproject's [tool.mypy].
    result = subprocess.run(
        [sys.executable, "-m", "mypy"], cwd=ROOT, capture_output=True, text=True, timeout=600
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_create_chapter_takes_one_mode_at_a_time(tmp_path):
    # The overloads make mixing modes (pages with text) a type error, not only a run-time one.
    sample = tmp_path / "modes.py"
    sample.write_text(
        "import toolkit as tk\n"
        "def modes(client: tk.Client) -> None:\n"
        "    client.create_chapter('p', ['a.png'])\n"
        "    client.create_chapter('p', staged=True, position=3)\n"
        "    client.create_chapter('p', text='Once upon a time')\n"
        "    client.create_chapter('p', ['a.png'], text='both')\n"
    )
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", str(sample)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    errors = [line for line in result.stdout.splitlines() if ": error:" in line]
    assert len(errors) == 1 and "modes.py:6:" in errors[0], result.stdout
    assert "No overload variant" in errors[0]

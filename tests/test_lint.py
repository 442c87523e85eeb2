from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _ruff(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ruff", *args, "toolkit", "tests"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )


pytestmark = pytest.mark.skipif(
    shutil.which("ruff") is None and not (Path(sys.executable).parent / "ruff").exists(),
    reason="ruff is not installed (pip install -e '.[test]')",
)


def test_the_code_passes_ruff_lint():
    result = _ruff("check", "--no-cache")
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_code_is_ruff_formatted():
    result = _ruff("format", "--check", "--no-cache")
    assert result.returncode == 0, result.stdout + result.stderr

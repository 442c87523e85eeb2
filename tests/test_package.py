from __future__ import annotations

import email.parser
import shutil
import subprocess
import sys
import tomllib
import zipfile
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as metadata_version
from pathlib import Path
from typing import Any

import pytest

import toolkit

ROOT = Path(__file__).resolve().parents[1]
DISTRIBUTION = "chapter-translation-toolkit"


def test_all_is_sorted_and_every_public_name_resolves():
    assert toolkit.__all__ == sorted(toolkit.__all__)
    missing = [name for name in toolkit.__all__ if getattr(toolkit, name, None) is None]
    assert missing == []


def test_import_stays_light():
    # `import toolkit` must not pull in pandas, pyarrow or matplotlib: notebooks and the
    # command start quickly and only pay for what they use.
    code = (
        "import sys, toolkit; "
        "print(sorted(m for m in ('pandas', 'pyarrow', 'matplotlib', 'httpx') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def _pyproject() -> dict[str, Any]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def test_the_wheel_says_who_it_is_what_licence_and_what_it_needs(tmp_path):
    # Built from a copy: an in-tree build leaves build/lib behind, and a later wheel would
    # carry files deleted since.
    source = tmp_path / "source"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(ROOT / "toolkit", source / "toolkit", ignore=ignore)
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, source / name)
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", str(source), "-w", str(tmp_path)],
        check=True,
        capture_output=True,
    )
    (wheel_path,) = tmp_path.glob("*.whl")
    project = _pyproject()
    with zipfile.ZipFile(wheel_path) as wheel:
        names = wheel.namelist()
        info = next(n.split("/")[0] for n in names if n.endswith(".dist-info/METADATA"))
        metadata = email.parser.Parser().parsestr(wheel.read(f"{info}/METADATA").decode())
        entry_points = wheel.read(f"{info}/entry_points.txt").decode()
    assert (metadata["Name"], metadata["Version"]) == (DISTRIBUTION, project["version"])
    assert metadata["License-Expression"] == "MIT"
    assert f"{info}/licenses/LICENSE" in names
    assert "Typing :: Typed" in metadata.get_all("Classifier")
    plain = [r for r in metadata.get_all("Requires-Dist") if "extra ==" not in r]
    assert plain == project["dependencies"]
    assert "toolkit = toolkit.cli:main" in entry_points
    assert "toolkit = toolkit.pytest_plugin" in entry_points
    assert {"toolkit/py.typed", "toolkit/emulator/routes/openapi.json"} <= set(names)


def test_the_version_comes_from_the_installed_distribution():
    try:
        installed = metadata_version(DISTRIBUTION)
    except PackageNotFoundError:
        pytest.fail(f"{DISTRIBUTION} is not installed here: run `pip install -e .` again")
    assert installed == _pyproject()["version"]
    assert toolkit.__version__ == installed


def test_toolkit_version_prints_it_and_succeeds():
    command = Path(sys.executable).parent / "toolkit"
    result = subprocess.run([command, "--version"], capture_output=True, text=True)
    assert (result.returncode, result.stdout) == (0, f"toolkit {toolkit.__version__}\n")

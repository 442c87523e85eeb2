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


# Run with a meta-path finder that refuses the notebook and plotting stacks, as if the
# slim install (no `notebooks` extra) and no matplotlib were all there is.
WITHOUT_NOTEBOOKS_OR_PLOTS = """
import importlib.abc, sys

class Missing(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in {"ipywidgets", "IPython", "matplotlib"}:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)

sys.meta_path.insert(0, Missing())

import toolkit as tk
import toolkit.pytest_plugin
from toolkit.emulator import Emulator
from toolkit.samples import page_png

with Emulator(clock="manual") as emulator:
    workspace = emulator.create_workspace("Slim", credits=100)
    with tk.Client(base_url=emulator.url, api_key=workspace["apiKey"]) as client:
        assert client.list_projects() == []
    tk.webhooks.Receiver("whsec_" + "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").close()
    assert page_png(1, 1).startswith(b"\\x89PNG")
try:
    tk.widgets
except ModuleNotFoundError as error:
    print(error)
"""


def test_the_plugin_and_emulator_need_no_notebook_or_plotting_stack_and_widgets_name_the_extra():
    result = subprocess.run(
        [sys.executable, "-c", WITHOUT_NOTEBOOKS_OR_PLOTS], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == (
        "toolkit.widgets needs ipywidgets, which a plain install of the toolkit leaves out; "
        "install the notebooks extra: pip install 'chapter-translation-toolkit[notebooks]'"
    )


def test_the_notebook_stack_is_an_extra_that_the_test_and_browser_extras_bring():
    project = _pyproject()
    assert not [d for d in project["dependencies"] if d.startswith("ipywidgets")]
    extras = project["optional-dependencies"]
    assert extras["notebooks"] == ["ipywidgets>=8.1"]
    for extra in ("test", "browser"):
        assert f"{DISTRIBUTION}[notebooks]" in extras[extra]

from __future__ import annotations

import email.parser
import os
import shutil
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as metadata_version
from pathlib import Path
from typing import Any

import pytest
from epochs import SUITE_START

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


# What a distribution is built from: the files a checkout's `pip install .` reads.
SOURCES = ("toolkit", "pyproject.toml", "README.md", "LICENSE", "CHANGELOG.md", "MANIFEST.in")


@pytest.fixture(scope="module")
def dists(tmp_path_factory) -> tuple[Path, Path]:
    """The sdist, and the wheel built from it (as `uv build` and `pip install sdist` do).

    Built from a copy: an in-tree build leaves build/lib behind, and a later wheel would
    carry files deleted since."""
    tmp = tmp_path_factory.mktemp("dist")
    source = tmp / "source"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in SOURCES:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, source / name, ignore=ignore)
        else:
            shutil.copy(ROOT / name, source / name)
    subprocess.run(
        [sys.executable, "-m", "uv", "build", "-q", "--out-dir", str(tmp / "dist"), str(source)],
        check=True,
        capture_output=True,
    )
    (sdist,) = (tmp / "dist").glob("*.tar.gz")
    (wheel,) = (tmp / "dist").glob("*.whl")
    return sdist, wheel


@pytest.mark.slow
def test_the_wheel_says_who_it_is_what_licence_and_what_it_needs(dists):
    wheel_path = dists[1]
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
    assert _samples(names) == SAMPLES
    urls = dict(url.split(", ", 1) for url in metadata.get_all("Project-URL"))
    assert set(urls) == {"Documentation", "Changelog", "Source"}


# The sample chapters the demo uploads, as shipped in the package.
SAMPLES = sorted(
    [f"toolkit/data/samples/comic/chapter-{c:02d}/page-{p:02d}.png"
     for c, pages in ((1, 4), (2, 3), (3, 5)) for p in range(1, pages + 1)]
    + [f"toolkit/data/samples/novel/chapter-{n:02d}.txt" for n in (1, 2)]
)  # fmt: skip


def _samples(names: list[str]) -> list[str]:
    return sorted(n for n in names if "/data/samples/" in n and n.endswith((".png", ".txt")))


def test_the_sdist_carries_the_package_and_its_samples_and_no_tests(dists):
    with tarfile.open(dists[0]) as sdist:
        names = [name.split("/", 1)[1] for name in sdist.getnames() if "/" in name]
    assert _samples(names) == SAMPLES
    assert {"pyproject.toml", "README.md", "LICENSE", "CHANGELOG.md"} <= set(names)
    assert not [n for n in names if n.startswith(("tests/", "notebooks/", "docs/"))]


@pytest.mark.slow
def test_the_installed_wheel_runs_the_demo_outside_the_checkout(dists, tmp_path):
    """What a user gets: the wheel in a fresh venv, `toolkit demo` run in a folder far from
    the checkout (issue 36: the wheel lacked the novel samples and the demo crashed)."""
    venv = tmp_path / "venv"
    uv = [sys.executable, "-m", "uv"]
    subprocess.run([*uv, "venv", "-q", "--python", sys.executable, str(venv)], check=True)
    python = venv / "bin" / "python"
    subprocess.run(
        [*uv, "pip", "install", "-q", "--python", str(python), str(dists[1])],
        check=True, capture_output=True,
    )  # fmt: skip
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "CTS_STORE")}
    work = tmp_path / "elsewhere"
    work.mkdir()
    done = subprocess.run(
        [venv / "bin" / "toolkit", "demo", "--hours", "2", "--start", SUITE_START.isoformat()],
        cwd=work, env=env, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    page = work / "data" / "demo" / "weekly-report.html"
    assert page.stat().st_size > 10_000
    assert done.stdout.strip().splitlines()[-1].endswith(str(page.resolve()))
    where = subprocess.run(
        [python, "-c", "import toolkit; print(toolkit.__file__)"],
        cwd=work, env=env, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert str(venv) in where and str(ROOT) not in where


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

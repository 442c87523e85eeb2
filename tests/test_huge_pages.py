"""numpy's huge-page advice: off in the `toolkit` command's process, unless numpy's own
variable says what it should be."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from toolkit.cli import main
from toolkit.huge_pages import without_huge_page_advice

try:
    from numpy._core import multiarray  # numpy 2
except ImportError:  # numpy 1.26
    from numpy.core import multiarray  # type: ignore[no-redef]


@pytest.fixture(autouse=True)
def advice_restored() -> Iterator[None]:
    """Each test starts with numpy's advice on and leaves it as it found it."""
    before = multiarray._get_madvise_hugepage()
    multiarray._set_madvise_hugepage(True)
    yield
    multiarray._set_madvise_hugepage(before)


def test_a_command_turns_numpys_huge_page_advice_off(monkeypatch, tmp_path, capsys):
    monkeypatch.delenv("NUMPY_MADVISE_HUGEPAGE", raising=False)
    main(["store", "check", "--store", str(tmp_path / "none")])
    capsys.readouterr()
    assert multiarray._get_madvise_hugepage() is False


@pytest.mark.parametrize("said", ["0", "1"])
def test_numpys_own_variable_decides_when_it_is_set(monkeypatch, said):
    monkeypatch.setenv("NUMPY_MADVISE_HUGEPAGE", said)
    assert without_huge_page_advice() is False
    assert multiarray._get_madvise_hugepage() is True  # as numpy set it at its start


def test_without_the_variable_the_advice_is_turned_off(monkeypatch):
    monkeypatch.delenv("NUMPY_MADVISE_HUGEPAGE", raising=False)
    assert without_huge_page_advice() is True
    assert multiarray._get_madvise_hugepage() is False

"""The notebooks' place in the groups (docs/testing.md, "Ninth pass")."""

from __future__ import annotations

from pathlib import Path

import pytest

# In the slow group (4-14 s each under nbval: the default group's budget). CI runs them
# there, top to bottom, as every notebook.
SLOW = ("02-throughput.ipynb", "03-credit-audit.ipynb", "04-operations.ipynb")


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects by marker
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark the cells of the `SLOW` notebooks slow."""
    here = Path(__file__).parent
    for item in items:
        if item.path.parent == here and item.path.name in SLOW:
            item.add_marker(pytest.mark.slow)

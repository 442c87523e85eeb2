"""Fixtures for the emulator's own tests (the shared ones are in tests/conftest.py)."""

from __future__ import annotations

from typing import Any

import pytest
from emulator_helpers import plain_client


@pytest.fixture
def api(emulator, workspace):
    """Plain httpx over loopback, with the workspace's key, at `{base_url}/api/v1`."""
    with plain_client(f"{emulator.url}/api/v1", workspace["apiKey"]) as client:
        yield client


@pytest.fixture
def raw(emulator):
    """Plain httpx over loopback with no credentials, at the emulator's root."""
    with plain_client(emulator.url) as client:
        yield client


@pytest.fixture
def events(emulator) -> list[tuple[str, str, dict[str, Any]]]:
    """Every event the run engine emits through its seam, in order."""
    seen: list[tuple[str, str, dict[str, Any]]] = []
    emulator.services.engine.sinks.append(lambda ws, kind, data: seen.append((ws, kind, data)))
    return seen

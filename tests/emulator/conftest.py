"""Fixtures for the emulator's own tests (the shared ones are in tests/conftest.py)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest


@pytest.fixture
def api(emulator, workspace):
    """Plain httpx over loopback, with the workspace's key, at `{base_url}/api/v1`."""
    headers = {"Authorization": f"Bearer {workspace['apiKey']}"}
    with httpx.Client(base_url=f"{emulator.url}/api/v1", headers=headers, timeout=30) as client:
        yield client


@pytest.fixture
def events(emulator) -> list[tuple[str, str, dict[str, Any]]]:
    """Every event the run engine emits through its seam, in order."""
    seen: list[tuple[str, str, dict[str, Any]]] = []
    emulator.services.engine.sinks.append(lambda ws, kind, data: seen.append((ws, kind, data)))
    return seen

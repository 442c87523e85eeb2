"""Fixtures for the panels' tests (the shared ones are in tests/conftest.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from widget_helpers import Recorder

from toolkit.client import Client


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()


@pytest.fixture
def recorded_client(emulator, workspace, recorder) -> Iterator[Client]:
    with Client(base_url=emulator.url, api_key=workspace["apiKey"], transport=recorder) as c:
        yield c

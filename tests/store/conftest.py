"""The store tests' service: two projects, one chapter each (a module that needs
another defines its own `service`, which pytest takes over this one)."""

from __future__ import annotations

import pytest
from datafakes import FakeService


@pytest.fixture
def service() -> FakeService:
    fake = FakeService()
    fake.add_project("p1", languages=("en", "fr"))
    fake.add_project("p2", languages=("en",))
    fake.add_chapter("c1", "p1", position=1, covered=4, untranslated=6, credits=8)
    fake.add_chapter("c2", "p2", position=1, covered=0, untranslated=3, languages=("en",))
    return fake

"""The demo workspace: three projects, chapters in every state, and a day that passes fast."""

from __future__ import annotations

import time

import pytest
from emulator_helpers import plain_client


@pytest.fixture
def demo(emulator):
    seeded = emulator.seed_demo()
    with plain_client(f"{emulator.url}/api/v1", seeded["apiKey"]) as api:
        yield seeded, api


def _chapters(api):
    items = []
    for project in api.get("/projects").json():
        items += api.get(f"/projects/{project['id']}/chapters").json()
    return items


def test_demo_projects(demo):
    seeded, api = demo
    assert set(seeded) == {"workspaceId", "apiKey"}
    projects = {p["name"]: p for p in api.get("/projects").json()}
    harbor, seoul, river = (
        projects[n] for n in ("Moonlit Harbor", "Seoul Nights", "River of Stars")
    )
    assert (harbor["kind"], harbor["readingDirection"], harbor["processSteps"]) == (
        "comic",
        "rtl",
        "full",
    )
    assert [t["languageCode"] for t in harbor["targetLanguages"]] == ["en", "fr"]
    assert harbor["sourceLanguage"] == "ja"
    assert (seoul["kind"], seoul["readingDirection"], seoul["processSteps"]) == (
        "comic",
        "ltr",
        "translate",
    )
    assert seoul["sourceLanguage"] == "ko"
    assert [t["languageCode"] for t in seoul["targetLanguages"]] == ["en"]
    assert (river["kind"], river["sourceLanguage"]) == ("novel", "zh")
    assert [t["languageCode"] for t in river["targetLanguages"]] == ["en", "es"]
    # The two comics are one translation group (a UUID), the novel its own.
    assert harbor["translationGroupId"] == seoul["translationGroupId"]
    assert river["translationGroupId"] != harbor["translationGroupId"]


def test_demo_has_chapters_in_every_state(demo):
    _, api = demo
    items = _chapters(api)
    statuses = {item["status"] for item in items}
    assert statuses == {"translating", "needs_review", "reviewed"}
    assert any(item["failed"] and "stalled" in item["failureReason"] for item in items)
    assert any(item["failed"] and "stalled" not in item["failureReason"] for item in items)
    assert any(item["processing"] for item in items)
    assert any(not item["started"] for item in items)
    details = [api.get(f"/chapters/{item['id']}").json() for item in items]
    assert any(detail["detecting"] for detail in details)
    assert any(item["preparedExports"] for item in items)
    held = [i for i in items if not i["started"] and i["pageCount"]]
    assert held, "a staged chapter with held pages"


def test_seeding_twice_gives_the_same_workspace(emulator, demo):
    seeded, _ = demo
    assert emulator.seed_demo() == seeded


def test_a_demo_day_passes_quickly_in_hourly_steps(emulator, demo):
    seeded, api = demo
    started = time.monotonic()
    for _ in range(24):
        emulator.advance(3600)
    assert time.monotonic() - started < 5
    items = _chapters(api)
    assert not any(item["processing"] for item in items)
    ledger = emulator.ledger(seeded["workspaceId"])
    assert ledger["balance"] == 5_000 - sum(c["credits"] for c in ledger["charges"])

"""The manual clock (deterministic, advanced by hand) and the realtime clock."""

from __future__ import annotations

import time
from datetime import datetime

import pytest
from emulator_helpers import create_chapter, list_item, plain_client
from epochs import SUITE_START

from toolkit.emulator import Emulator


def _parse(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def test_manual_time_moves_only_when_advanced(emulator, api, comic_project, pages):
    chapter = create_chapter(api, comic_project["id"], pages).json()
    first = api.get(f"/chapters/{chapter['id']}").json()
    for _ in range(20):
        assert api.get(f"/chapters/{chapter['id']}").json() == first
    assert emulator.now() == _parse(chapter["createdAt"])
    emulator.advance(3)
    assert api.get(f"/chapters/{chapter['id']}").json() != first


def test_times_shown_are_the_clocks(emulator, api, comic_project, pages):
    emulator.advance(1000)
    now = emulator.now()
    chapter = create_chapter(api, comic_project["id"], pages).json()
    assert _parse(chapter["createdAt"]) == now
    assert all(_parse(p["createdAt"]) == now for p in chapter["pages"])
    emulator.advance(4)
    item = list_item(api, comic_project["id"], chapter["id"])
    assert 0 < (_parse(item["lastActivityAt"]) - now).total_seconds() <= 4


def _history(make_page) -> list[tuple[float, str, int]]:
    with Emulator(start=SUITE_START) as emu:
        ws = emu.create_workspace("Det", credits=1_000)
        project = emu.create_project(
            ws["id"],
            name="Det",
            kind="comic",
            source_language="ja",
            reading_direction="rtl",
            process_steps="full",
            target_languages=["en", "fr"],
        )
        start = emu.now()
        with plain_client(f"{emu.url}/api/v1", ws["apiKey"]) as api:
            for i in range(2):
                create_chapter(api, project["id"], [make_page(i), make_page(i + 10)])
        emu.advance(3600)
        lines = emu.ledger(ws["id"])["lines"]
        return [
            ((_parse(e["at"]) - start).total_seconds(), e["languageCode"], e["lines"])
            for e in lines
        ]


def test_manual_runs_are_deterministic(make_page):
    first = _history(make_page)
    assert first and first == _history(make_page)


def test_an_hour_on_several_chapters_advances_fast(emulator, api, comic_project, make_page):
    for i in range(5):
        create_chapter(api, comic_project["id"], [make_page(i * 10 + j) for j in range(8)])
    started = time.monotonic()
    emulator.advance(3600)
    assert time.monotonic() - started < 1.0
    items = api.get(f"/projects/{comic_project['id']}/chapters").json()
    assert all(item["status"] == "needs_review" for item in items)


def test_realtime_clock_runs_by_itself(make_page):
    with Emulator(clock="realtime", speed=600, start=SUITE_START) as emu:
        ws = emu.create_workspace("Live", credits=100)
        project = emu.create_project(
            ws["id"],
            name="Live",
            kind="comic",
            source_language="ko",
            reading_direction="ltr",
            process_steps="text",
            target_languages=["en"],
        )
        with plain_client(f"{emu.url}/api/v1", ws["apiKey"]) as api:
            chapter = create_chapter(api, project["id"], [make_page(1)]).json()
            deadline = time.monotonic() + 15
            while api.get(f"/chapters/{chapter['id']}").json()["processing"]:
                assert time.monotonic() < deadline, "the realtime run did not finish"
                time.sleep(0.05)
            detail = api.get(f"/chapters/{chapter['id']}").json()
        assert detail["status"] == "needs_review"
        elapsed = (emu.now() - _parse(chapter["createdAt"])).total_seconds()
        assert elapsed >= 40  # a one-page run takes about a simulated minute
        with pytest.raises(Exception, match="409"):
            emu.advance(10)

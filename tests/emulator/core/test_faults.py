"""Injected faults: failing and stalling runs, 503s and latency, all seeded."""

from __future__ import annotations

import time

from emulator_helpers import add_pages, create_chapter, error_of, list_item, plain_client, settle
from epochs import SUITE_START

from toolkit.emulator import Emulator


def _sentences(text: str) -> int:
    return sum(text.count(mark) for mark in ".!?")


def test_a_failing_run_stops_part_way_through_translating(
    emulator, api, comic_project, pages, events
):
    emulator.set_faults(failure_rate=1.0, seed=5)
    chapter = create_chapter(api, comic_project["id"], pages).json()
    detail = settle(emulator, api, chapter["id"])
    assert detail["failed"] is True and detail["processing"] is False
    assert detail["status"] == "translating"
    assert _sentences(detail["failureReason"]) == 1
    assert "failed" in detail["failureReason"]
    item = list_item(api, comic_project["id"], chapter["id"])
    assert all(lang["failed"] for lang in item["languages"])
    assert item["preparedExports"] == []
    total = sum(lang["untranslated"] for lang in detail["languages"])
    assert total > 0  # it stopped before the end
    (failed,) = [data for _, kind, data in events if kind == "chapter.failed"]
    assert failed == {
        "chapterId": chapter["id"],
        "projectId": comic_project["id"],
        "position": 1,
        "title": None,
        "failureReason": detail["failureReason"],
    }
    assert "chapter.finished" not in [kind for _, kind, _ in events]


def test_a_stalled_run_is_abandoned_after_two_hours(emulator, api, comic_project, pages, events):
    emulator.set_faults(stall_rate=1.0, seed=2)
    chapter = create_chapter(api, comic_project["id"], pages).json()
    emulator.advance(300)
    stuck = list_item(api, comic_project["id"], chapter["id"])
    assert stuck["processing"] is True and stuck["failed"] is False
    emulator.advance(3600)
    later = list_item(api, comic_project["id"], chapter["id"])
    assert later["processing"] is True
    assert later["languages"] == stuck["languages"]  # no progress
    assert later["lastActivityAt"] == stuck["lastActivityAt"]
    assert error_of(api.post(f"/chapters/{chapter['id']}/rescan"))[0] == 409
    emulator.advance(3600)
    detail = api.get(f"/chapters/{chapter['id']}").json()
    assert detail["processing"] is False and detail["failed"] is True
    reason = detail["failureReason"]
    assert _sentences(reason) == 1
    for word in ("stalled", "abandoned", "retried"):
        assert word in reason
    assert [kind for _, kind, _ in events] == ["chapter.failed"]
    assert api.post(f"/chapters/{chapter['id']}/rescan").status_code == 202


def test_failed_stays_true_while_added_pages_run(emulator, api, comic_project, pages):
    emulator.set_faults(failure_rate=1.0, seed=1)
    chapter = create_chapter(api, comic_project["id"], pages[:2]).json()
    settle(emulator, api, chapter["id"])
    emulator.set_faults()
    add_pages(api, chapter["id"], pages[2:])
    running = api.get(f"/chapters/{chapter['id']}").json()
    assert running["processing"] is True and running["failed"] is True
    done = settle(emulator, api, chapter["id"])
    assert done["failed"] is True and done["failureReason"]


def _fates(seed: int, runs: int, make_page) -> list[bool]:
    with Emulator(start=SUITE_START) as emu:
        ws = emu.create_workspace("Fates", credits=1_000)
        project = emu.create_project(
            ws["id"],
            name="Fates",
            kind="comic",
            source_language="ja",
            reading_direction="rtl",
            process_steps="text",
            target_languages=["en"],
        )
        emu.set_faults(failure_rate=0.5, seed=seed)
        with plain_client(f"{emu.url}/api/v1", ws["apiKey"]) as api:
            ids = [
                create_chapter(api, project["id"], [make_page(i)]).json()["id"] for i in range(runs)
            ]
            emu.advance(3600)
            return [api.get(f"/chapters/{i}").json()["failed"] for i in ids]


def test_fates_repeat_for_the_same_seed(make_page):
    first = _fates(7, 8, make_page)
    assert first == _fates(7, 8, make_page)
    assert True in first and False in first


def test_error_rate_answers_503_before_anything_is_done(
    emulator, api, workspace, comic_project, pages
):
    emulator.set_faults(error_rate=1.0, seed=0)
    status, _ = error_of(create_chapter(api, comic_project["id"], pages))
    assert status == 503
    assert error_of(api.get("/projects"))[0] == 503
    assert emulator.now()  # admin routes are not affected
    emulator.set_faults()
    assert api.get(f"/projects/{comic_project['id']}/chapters").json() == []
    assert emulator.get_workspace(workspace["id"])["credits"] == 10_000


def test_error_rate_is_seeded(emulator, api, comic_project):
    def statuses():
        emulator.set_faults(error_rate=0.5, seed=42)
        return [api.get("/projects").status_code for _ in range(20)]

    first = statuses()
    assert first == statuses()
    assert {200, 503} == set(first)


def test_latency_delays_api_answers_only(emulator, api):
    emulator.set_faults(latency_ms=300)
    started = time.monotonic()
    api.get("/projects")
    assert time.monotonic() - started >= 0.3
    started = time.monotonic()
    emulator.now()
    assert time.monotonic() - started < 0.3


def test_bad_fault_settings_are_400(emulator, raw):
    for body in (
        {"failureRate": 1.5},
        {"stallRate": -0.1},
        {"latencyMs": "slow"},
        {"failureRate": 0.7, "stallRate": 0.6},
        {"surprise": 1},
    ):
        response = raw.put(
            "/_emulator/faults",
            json=body,
            headers={"Authorization": f"Bearer {emulator.admin_token}"},
        )
        assert error_of(response)[0] == 400


def test_fault_settings_answer_what_was_set(emulator):
    answer = emulator.set_faults(
        failure_rate=0.25, stall_rate=0.5, latency_ms=0, error_rate=0.1, seed=9
    )
    assert answer == {
        "failureRate": 0.25,
        "stallRate": 0.5,
        "latencyMs": 0,
        "errorRate": 0.1,
        "seed": 9,
    }

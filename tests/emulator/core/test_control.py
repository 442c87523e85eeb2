"""State control: a test holds a chapter (or one language) at a phase, decides how its run
ends, and has it reviewed at a given time, without touching the fault rates."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from emulator_helpers import create_chapter, list_item, settle

from toolkit.emulator import AdminCallError


def _languages(api, project_id: str, chapter_id: str) -> dict[str, dict]:
    return {
        lang["languageCode"]: lang for lang in list_item(api, project_id, chapter_id)["languages"]
    }


def test_a_chapter_held_at_translation_reads_its_pages_and_waits(
    emulator, api, comic_project, pages
):
    chapter = create_chapter(api, comic_project["id"], pages).json()
    emulator.hold(chapter["id"], "translate")
    emulator.advance(3 * 3600)
    detail = api.get(f"/chapters/{chapter['id']}").json()
    assert (detail["processing"], detail["detecting"], detail["failed"]) == (True, False, False)
    assert all(lang["untranslated"] > 0 for lang in detail["languages"])
    assert emulator.control(chapter["id"])["heldAt"] == "translate"
    emulator.release(chapter["id"])
    assert settle(emulator, api, chapter["id"])["status"] == "needs_review"
    assert emulator.control(chapter["id"])["holds"] == []


def test_a_chapter_held_at_reading_stays_detecting(emulator, api, comic_project, pages):
    chapter = create_chapter(api, comic_project["id"], pages).json()
    emulator.hold(chapter["id"], "read")
    emulator.advance(3600)
    detail = api.get(f"/chapters/{chapter['id']}").json()
    assert (detail["processing"], detail["detecting"]) == (True, True)


def test_one_language_held_while_the_other_translates(emulator, api, comic_project, pages):
    chapter = create_chapter(api, comic_project["id"], pages).json()
    emulator.hold(chapter["id"], "translate", language="fr")
    emulator.advance(3 * 3600)
    languages = _languages(api, comic_project["id"], chapter["id"])
    assert languages["en"]["covered"] > 0 and languages["fr"]["covered"] == 0
    emulator.release(chapter["id"])
    settle(emulator, api, chapter["id"])
    languages = _languages(api, comic_project["id"], chapter["id"])
    assert {code: lang["status"] for code, lang in languages.items()} == {
        "en": "needs_review",
        "fr": "needs_review",
    }


def test_the_run_going_now_fails_at_the_step_named(emulator, api, comic_project, pages, events):
    chapter = create_chapter(api, comic_project["id"], pages).json()
    emulator.set_fate(chapter["id"], "fail", step=2)
    detail = settle(emulator, api, chapter["id"])
    assert detail["failed"] is True
    languages = _languages(api, comic_project["id"], chapter["id"])
    assert languages["en"]["covered"] > 0 and languages["fr"]["covered"] == 0  # one page done
    assert [kind for _, kind, _ in events] == ["chapter.failed"]


def test_the_next_run_stalls_and_the_fault_rates_stay_as_they_were(
    emulator, api, comic_project, pages
):
    first = create_chapter(api, comic_project["id"], pages[:1]).json()
    settle(emulator, api, first["id"])
    emulator.set_fate(first["id"], "stall", step=1)
    assert emulator.control(first["id"])["nextRun"] == {"fate": "stall", "step": 0}
    assert api.post(f"/chapters/{first['id']}/rescan").status_code == 202
    emulator.advance(3600)
    assert api.get(f"/chapters/{first['id']}").json()["processing"] is True
    emulator.advance(2 * 3600)
    detail = api.get(f"/chapters/{first['id']}").json()
    assert detail["failed"] is True and "stalled" in detail["failureReason"]
    other = create_chapter(api, comic_project["id"], pages[1:2]).json()  # drawn: no fault
    assert settle(emulator, api, other["id"])["failed"] is False


def test_a_review_happens_at_the_time_named(emulator, api, comic_project, pages):
    chapter = create_chapter(api, comic_project["id"], pages).json()
    settle(emulator, api, chapter["id"])
    at = emulator.now() + timedelta(hours=5)
    scheduled = emulator.review_chapter(chapter["id"], at=at)["reviewAt"]
    assert datetime.fromisoformat(scheduled) == at
    emulator.advance(4 * 3600)
    assert api.get(f"/chapters/{chapter['id']}").json()["status"] == "needs_review"
    emulator.advance(3600)
    assert api.get(f"/chapters/{chapter['id']}").json()["status"] == "reviewed"
    assert emulator.control(chapter["id"])["reviewAt"] is None


def test_a_review_due_while_the_chapter_runs_waits_for_the_run(emulator, api, comic_project, pages):
    chapter = create_chapter(api, comic_project["id"], pages).json()
    emulator.hold(chapter["id"], "package")
    emulator.review_chapter(chapter["id"], at=emulator.now() + timedelta(minutes=1))
    emulator.advance(3 * 3600)
    assert api.get(f"/chapters/{chapter['id']}").json()["status"] == "translating"
    emulator.release(chapter["id"])
    emulator.advance(600)
    assert api.get(f"/chapters/{chapter['id']}").json()["status"] == "reviewed"


@pytest.mark.parametrize(
    ("call", "status", "words"),
    [
        (lambda emu, cid: emu.hold(cid, "dance"), 400, "phase must be one of"),
        (lambda emu, cid: emu.hold(cid, "read", language="en"), 400, "languageCode goes with"),
        (lambda emu, cid: emu.hold(cid, "translate", language="de"), 400, "not translated into"),
        (lambda emu, cid: emu.set_fate(cid, "explode"), 400, "fate must be one of"),
        (lambda emu, cid: emu.set_fate(cid, "fail", step=0), 400, "step must be"),
        (lambda emu, cid: emu.review_chapter(cid, at=emu.now()), 400, "later than"),
        (lambda emu, cid: emu.hold("no-such-chapter", "read"), 404, "not found"),
    ],
)
def test_a_move_that_cannot_be_made_is_refused(
    emulator, api, comic_project, pages, call, status, words
):
    chapter = create_chapter(api, comic_project["id"], pages[:1]).json()
    with pytest.raises(AdminCallError, match=words) as caught:
        call(emulator, chapter["id"])
    assert caught.value.status == status

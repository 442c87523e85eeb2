"""Re-scan: refusals, what it discards, what it charges, and the run it queues."""

from __future__ import annotations

from emulator_helpers import create_chapter, error_of, list_item, settle


def _failed_chapter(emulator, api, project_id, pages):
    emulator.set_faults(failure_rate=1.0, seed=11)
    chapter = create_chapter(api, project_id, pages).json()
    detail = settle(emulator, api, chapter["id"])
    assert detail["failed"] is True
    emulator.set_faults()
    return chapter


def test_rescan_clears_failed_and_runs_again(emulator, api, workspace, comic_project, pages):
    chapter = _failed_chapter(emulator, api, comic_project["id"], pages)
    before = list_item(api, comic_project["id"], chapter["id"])
    translated = sum(lang["covered"] for lang in before["languages"])
    response = api.post(f"/chapters/{chapter['id']}/rescan")
    assert response.status_code == 202
    body = response.json()
    assert set(body) == {"queued", "clearedRegions"}
    assert body["queued"] is True
    # Counted once per source line: never more than what any language had covered.
    assert 0 <= body["clearedRegions"] <= translated
    assert body["clearedRegions"] >= max(lang["covered"] for lang in before["languages"])
    item = list_item(api, comic_project["id"], chapter["id"])
    assert item["failed"] is False and item["failureReason"] is None
    assert item["processing"] is True
    assert item["summary"] is None
    assert item["preparedExports"] == []
    assert [lang["covered"] for lang in item["languages"]] == [0, 0]
    assert [lang["models"] for lang in item["languages"]] == [[], []]
    assert all(lang["failed"] is False for lang in item["languages"])
    done = settle(emulator, api, chapter["id"])
    assert done["status"] == "needs_review" and done["failed"] is False
    charges = emulator.ledger(workspace["id"])["charges"]
    assert [(c["reason"], c["credits"], c["rework"]) for c in charges] == [
        ("create", 6, False),
        ("rescan", 6, True),
    ]


def test_cleared_regions_counts_each_source_line_once(emulator, api, comic_project, pages):
    chapter = create_chapter(api, comic_project["id"], pages).json()
    settle(emulator, api, chapter["id"])
    item = list_item(api, comic_project["id"], chapter["id"])
    en, fr = (lang["covered"] for lang in item["languages"])
    assert en == fr
    body = api.post(f"/chapters/{chapter['id']}/rescan").json()
    assert body["clearedRegions"] == en  # not en + fr


def test_rescan_discards_a_finished_chapters_files(emulator, api, comic_project, pages):
    chapter = create_chapter(api, comic_project["id"], pages[:1]).json()
    settle(emulator, api, chapter["id"])
    emulator.review_chapter(chapter["id"])
    api.post(f"/chapters/{chapter['id']}/rescan")
    item = list_item(api, comic_project["id"], chapter["id"])
    assert item["preparedExports"] == [] and item["status"] == "translating"


def test_rescan_while_processing_is_409(api, comic_project, pages):
    chapter = create_chapter(api, comic_project["id"], pages).json()
    response = api.post(f"/chapters/{chapter['id']}/rescan")
    assert error_of(response) == (409, "chapter already processing")


def test_rescan_of_a_novel_chapter_is_400(emulator, api, novel_project):
    chapter = create_chapter(api, novel_project["id"], text="一\n二").json()
    settle(emulator, api, chapter["id"])
    status, message = error_of(api.post(f"/chapters/{chapter['id']}/rescan"))
    assert status == 400 and "new chapter" in message


def test_rescan_without_pages_is_400(api, comic_project):
    chapter = create_chapter(api, comic_project["id"], staged=1).json()
    status, message = error_of(api.post(f"/chapters/{chapter['id']}/rescan"))
    assert status == 400 and "no pages" in message


def test_rescan_without_enough_credits_is_402(emulator, api, workspace, comic_project, pages):
    chapter = _failed_chapter(emulator, api, comic_project["id"], pages)
    emulator.set_credits(workspace["id"], 5)
    assert error_of(api.post(f"/chapters/{chapter['id']}/rescan"))[0] == 402
    item = list_item(api, comic_project["id"], chapter["id"])
    assert item["failed"] is True and item["processing"] is False
    assert item["creditsSpent"] == 6


def test_rescan_of_unknown_chapter_is_404(api, comic_project):
    assert error_of(api.post("/chapters/nope/rescan")) == (404, "chapter not found")

"""Runs: phases and their timing, progress, prepared files, events, added and held pages."""

from __future__ import annotations

import pytest
from emulator_helpers import add_pages, create_chapter, error_of, list_item, settle

from toolkit.emulator.core.runs import DEFAULT_MODEL


def _detail(api, chapter_id):
    return api.get(f"/chapters/{chapter_id}").json()


def _untranslated(detail):
    return {lang["languageCode"]: lang["untranslated"] for lang in detail["languages"]}


def test_every_phase_is_visible_in_order(emulator, api, comic_project, pages):
    chapter = create_chapter(api, comic_project["id"], pages).json()
    seen = []
    for _ in range(300):
        detail = _detail(api, chapter["id"])
        item = list_item(api, comic_project["id"], chapter["id"])
        exporting = [lang["languageCode"] for lang in item["languages"] if lang["exporting"]]
        if detail["detecting"]:
            phase = "detecting"
        elif exporting:
            phase = "exporting-" + "-".join(exporting)
        elif detail["processing"]:
            left = _untranslated(detail)
            phase = "translating-en" if left["en"] else "translating-fr" if left["fr"] else "art"
        else:
            phase = "done"
        if not seen or seen[-1] != phase:
            seen.append(phase)
        if phase == "done":
            break
        emulator.advance(2)
    assert seen == [
        "detecting",
        "translating-en",
        "translating-fr",
        "art",  # cleaning and lettering (`full`)
        "exporting-en",
        "exporting-fr",
        "done",
    ]


def test_untranslated_falls_and_covered_rises_step_by_step(emulator, api, comic_project, pages):
    chapter = create_chapter(api, comic_project["id"], pages).json()
    emulator.advance(9)  # three pages read
    detail = _detail(api, chapter["id"])
    assert detail["detecting"] is False and detail["processing"] is True
    total = _untranslated(detail)["en"]
    assert total == _untranslated(detail)["fr"] >= 9
    en_left, covered = [], []
    while _untranslated(_detail(api, chapter["id"]))["fr"] == total:
        en_left.append(_untranslated(_detail(api, chapter["id"]))["en"])
        covered.append(
            list_item(api, comic_project["id"], chapter["id"])["languages"][0]["covered"]
        )
        emulator.advance(5)
    steps = sorted(set(en_left), reverse=True)
    assert steps[0] == total and steps[-1] == 0 and len(steps) == 4  # one step per page
    assert all(a + b == total for a, b in zip(en_left, covered, strict=True))


def test_a_finished_run_needs_review_with_summary_models_and_files(
    emulator, api, comic_project, pages
):
    chapter = create_chapter(api, comic_project["id"], pages).json()
    detail = settle(emulator, api, chapter["id"])
    assert detail["status"] == "needs_review"
    assert detail["failed"] is False and detail["failureReason"] is None
    assert detail["summary"]
    assert all(lang["untranslated"] == 0 for lang in detail["languages"])
    item = list_item(api, comic_project["id"], chapter["id"])
    for lang in item["languages"]:
        assert lang["status"] == "needs_review"
        assert lang["models"] == [DEFAULT_MODEL]
        assert lang["covered"] > 0 and lang["exporting"] is False
    files = {(e["languageCode"], e["format"]) for e in item["preparedExports"]}
    assert files == {(lang, fmt) for lang in ("en", "fr") for fmt in ("txt", "clean", "cbz")}
    for export in item["preparedExports"]:
        assert set(export) == {
            "languageCode",
            "format",
            "filename",
            "byteSize",
            "pageCount",
            "preparedAt",
        }
        assert export["pageCount"] == 3 and export["byteSize"] > 0


@pytest.mark.parametrize(
    ("steps", "formats"),
    [("text", {"txt"}), ("translate", {"txt"}), ("clean", {"txt", "clean"})],
)
def test_files_follow_process_steps(emulator, api, workspace, pages, steps, formats):
    project = emulator.create_project(
        workspace["id"],
        name=f"Steps {steps}",
        kind="comic",
        source_language="ko",
        reading_direction="ltr",
        process_steps=steps,
        target_languages=["en"],
        translation_model="webtoon-2",
    )
    chapter = create_chapter(api, project["id"], pages[:1]).json()
    settle(emulator, api, chapter["id"])
    item = list_item(api, project["id"], chapter["id"])
    assert {e["format"] for e in item["preparedExports"]} == formats
    assert item["languages"][0]["models"] == ["webtoon-2"]


def test_a_novel_runs_to_txt_and_docx(emulator, api, novel_project):
    text = "\n".join(f"第{i}行" if i % 3 else "" for i in range(60))
    chapter = create_chapter(api, novel_project["id"], text=text).json()
    detail = settle(emulator, api, chapter["id"])
    assert detail["status"] == "needs_review"
    item = list_item(api, novel_project["id"], chapter["id"])
    lines = sum(1 for line in text.splitlines() if line.strip())
    assert [lang["covered"] for lang in item["languages"]] == [lines, lines]
    formats = {(e["languageCode"], e["format"]) for e in item["preparedExports"]}
    assert formats == {(lang, fmt) for lang in ("en", "es") for fmt in ("txt", "docx")}


def test_twenty_pages_in_two_languages_take_tens_of_minutes(
    emulator, api, comic_project, make_page
):
    chapter = create_chapter(api, comic_project["id"], [make_page(i) for i in range(20)]).json()
    emulator.advance(50)
    assert _detail(api, chapter["id"])["detecting"] is True  # ~3 s per page
    emulator.advance(10 * 60)
    assert _detail(api, chapter["id"])["processing"] is True
    emulator.advance(50 * 60)
    assert _detail(api, chapter["id"])["processing"] is False


def test_lines_come_from_the_image_bytes(emulator, api, comic_project, pages):
    first = create_chapter(api, comic_project["id"], pages[:2]).json()
    second = create_chapter(api, comic_project["id"], list(reversed(pages[:2]))).json()
    settle(emulator, api, first["id"])
    settle(emulator, api, second["id"])
    covered = [
        list_item(api, comic_project["id"], c["id"])["languages"][0]["covered"]
        for c in (first, second)
    ]
    assert covered[0] == covered[1]


def test_events_files_before_finished(emulator, api, workspace, comic_project, pages, events):
    chapter = create_chapter(api, comic_project["id"], pages).json()
    settle(emulator, api, chapter["id"])
    kinds = [kind for _, kind, _ in events]
    assert kinds == ["export.ready"] * 6 + ["chapter.finished"]
    assert {ws for ws, _, _ in events} == {workspace["id"]}
    finished = events[-1][2]
    assert finished == {
        "chapterId": chapter["id"],
        "projectId": comic_project["id"],
        "position": 1,
        "title": None,
        "pageCount": 3,
        "languages": [
            {"languageCode": "en", "status": "needs_review", "failed": False},
            {"languageCode": "fr", "status": "needs_review", "failed": False},
        ],
    }
    item = list_item(api, comic_project["id"], chapter["id"])
    ready = [data for _, kind, data in events if kind == "export.ready"]
    expected = [
        {"chapterId": chapter["id"], "projectId": comic_project["id"], **e}
        for e in item["preparedExports"]
    ]
    assert sorted(ready, key=str) == sorted(expected, key=str)


def test_pages_added_after_a_run_run_by_themselves(emulator, api, comic_project, pages, events):
    chapter = create_chapter(api, comic_project["id"], pages[:2]).json()
    settle(emulator, api, chapter["id"])
    before = list_item(api, comic_project["id"], chapter["id"])
    response = add_pages(api, chapter["id"], pages[2:])
    assert response.status_code == 201
    assert [p["position"] for p in response.json()["pages"]] == [3]
    detail = _detail(api, chapter["id"])
    assert detail["processing"] is True and detail["status"] == "translating"
    emulator.advance(3)
    added = _untranslated(_detail(api, chapter["id"]))["en"]
    assert added > 0  # only the new page's lines wait
    after = settle(emulator, api, chapter["id"])
    assert after["status"] == "needs_review"
    item = list_item(api, comic_project["id"], chapter["id"])
    assert item["languages"][0]["covered"] == before["languages"][0]["covered"] + added
    assert item["creditsSpent"] == before["creditsSpent"] + 2
    assert {e["pageCount"] for e in item["preparedExports"]} == {3}
    assert [kind for _, kind, _ in events].count("chapter.finished") == 2


def test_adding_pages_while_running_is_409(api, comic_project, pages):
    chapter = create_chapter(api, comic_project["id"], pages[:1]).json()
    response = add_pages(api, chapter["id"], pages[1:2])
    assert error_of(response) == (409, "chapter already processing")


def test_held_pages_wait_for_start_with_page_ids(emulator, api, comic_project, pages):
    chapter = create_chapter(api, comic_project["id"], pages[:1]).json()
    settle(emulator, api, chapter["id"])
    held = add_pages(api, chapter["id"], pages[1:], hold=1).json()["pages"]
    assert _detail(api, chapter["id"])["processing"] is False
    assert _detail(api, chapter["id"])["pageCount"] == 3
    emulator.advance(600)
    assert list_item(api, comic_project["id"], chapter["id"])["creditsSpent"] == 2
    start = f"/chapters/{chapter['id']}/start"
    assert error_of(api.post(start))[0] == 400  # no pageIds of its own
    first_page = chapter["pages"][0]["id"]
    assert error_of(api.post(start, json={"pageIds": [first_page]}))[0] == 400  # already ran
    response = api.post(start, json={"pageIds": [held[0]["id"]]})
    assert response.status_code == 202
    assert response.json() == {"chapterId": chapter["id"], "pageCount": 1}
    assert _detail(api, chapter["id"])["processing"] is True
    assert error_of(api.post(start, json={"pageIds": [held[1]["id"]]})) == (
        409,
        "chapter already processing",
    )
    settle(emulator, api, chapter["id"])
    assert error_of(api.post(start, json={"pageIds": [held[0]["id"]]}))[0] == 400  # ran now
    assert list_item(api, comic_project["id"], chapter["id"])["creditsSpent"] == 4


def test_staged_chapter_starts_with_every_page(emulator, api, comic_project, pages):
    chapter = create_chapter(api, comic_project["id"], staged=1).json()
    start = f"/chapters/{chapter['id']}/start"
    assert error_of(api.post(start)) == (400, "upload at least one page before starting")
    add_pages(api, chapter["id"], pages[:2], hold=1)
    assert list_item(api, comic_project["id"], chapter["id"])["started"] is False
    response = api.post(start)
    assert response.status_code == 202
    assert response.json() == {"chapterId": chapter["id"], "pageCount": 2}
    item = list_item(api, comic_project["id"], chapter["id"])
    assert item["started"] is True and item["processing"] is True
    assert item["creditsSpent"] == 4


def test_a_page_without_hold_runs_a_staged_chapter_with_all_its_pages(
    emulator, api, comic_project, pages
):
    chapter = create_chapter(api, comic_project["id"], staged=1).json()
    add_pages(api, chapter["id"], pages[:2], hold=1)
    add_pages(api, chapter["id"], pages[2:])
    item = list_item(api, comic_project["id"], chapter["id"])
    assert item["started"] is True and item["processing"] is True
    assert item["creditsSpent"] == 3 * 2
    settle(emulator, api, chapter["id"])
    assert {
        e["pageCount"]
        for e in list_item(api, comic_project["id"], chapter["id"])["preparedExports"]
    } == {3}


def test_page_numbers_before_and_after_a_run(emulator, api, comic_project, pages, make_page):
    chapter = create_chapter(api, comic_project["id"], staged=1).json()
    add_pages(api, chapter["id"], pages[:2], hold=1)
    replaced = add_pages(api, chapter["id"], [make_page(50)], hold=1, position=2).json()["pages"]
    assert replaced[0]["position"] == 2
    gap = add_pages(api, chapter["id"], [make_page(51)], hold=1, position=7).json()["pages"]
    assert gap[0]["position"] == 7
    assert _detail(api, chapter["id"])["pageCount"] == 3
    too_many = add_pages(api, chapter["id"], pages[:2], hold=1, position=3)
    assert error_of(too_many)[0] == 400
    api.post(f"/chapters/{chapter['id']}/start")
    settle(emulator, api, chapter["id"])
    late = add_pages(api, chapter["id"], [make_page(52)], position=9)
    assert error_of(late)[0] == 409
    appended = add_pages(api, chapter["id"], [make_page(53)]).json()["pages"]
    assert appended[0]["position"] == 8


def test_pages_for_a_novel_chapter_are_400(api, novel_project, pages, emulator):
    chapter = create_chapter(api, novel_project["id"], text="一\n二").json()
    settle(emulator, api, chapter["id"])
    assert error_of(add_pages(api, chapter["id"], pages[:1]))[0] == 400
    assert error_of(api.post(f"/chapters/{chapter['id']}/start"))[0] == 400


def test_add_pages_without_a_page_is_400(api, comic_project):
    chapter = create_chapter(api, comic_project["id"], staged=1).json()
    response = api.post(f"/chapters/{chapter['id']}/pages", data={"hold": "1"})
    assert error_of(response)[0] == 400


def test_review_moves_to_reviewed(emulator, api, comic_project, pages):
    chapter = create_chapter(api, comic_project["id"], pages[:1]).json()
    with pytest.raises(Exception, match="409"):
        emulator.review_chapter(chapter["id"])  # still processing
    settle(emulator, api, chapter["id"])
    detail = emulator.review_chapter(chapter["id"])
    assert detail["status"] == "reviewed"
    assert [lang["status"] for lang in detail["languages"]] == ["reviewed", "reviewed"]
    assert _detail(api, chapter["id"])["status"] == "reviewed"


def test_review_with_nothing_translated_is_409(emulator, api, comic_project):
    chapter = create_chapter(api, comic_project["id"], staged=1).json()
    with pytest.raises(Exception, match="409"):
        emulator.review_chapter(chapter["id"])


def test_overall_status_is_the_lowest_language_status(emulator, api, comic_project, pages):
    chapter = create_chapter(api, comic_project["id"], pages[:1]).json()
    for _ in range(200):
        item = list_item(api, comic_project["id"], chapter["id"])
        statuses = [lang["status"] for lang in item["languages"]]
        if statuses == ["needs_review", "translating"]:
            break
        emulator.advance(2)
    else:
        raise AssertionError("en never reached needs_review before fr")
    assert item["status"] == "translating"
    assert item["processing"] is True

"""Chapter creation, lists and details: shapes, numbering and the 400/409 rows."""

from __future__ import annotations

import pytest
from emulator_helpers import (
    DETAIL_FIELDS,
    LIST_ITEM_FIELDS,
    NEW_CHAPTER_FIELDS,
    PAGE_FIELDS,
    PROJECT_FIELDS,
    create_chapter,
    error_of,
)


def test_comic_chapter_with_pages_answers_a_new_chapter(api, comic_project, pages):
    response = create_chapter(api, comic_project["id"], pages)
    assert response.status_code == 201
    chapter = response.json()
    assert set(chapter) == NEW_CHAPTER_FIELDS
    assert chapter["projectId"] == comic_project["id"]
    assert chapter["position"] == 1
    assert chapter["title"] is None and chapter["summary"] is None
    assert chapter["assignedUserId"] is None and chapter["createdByUserId"] is None
    assert chapter["deletedAt"] is None
    assert [p["position"] for p in chapter["pages"]] == [1, 2, 3]
    for page in chapter["pages"]:
        assert set(page) == PAGE_FIELDS  # the storage key is on the add-pages answer only
        assert page["chapterId"] == chapter["id"]


def test_created_chapter_runs_at_once(api, comic_project, pages):
    chapter = create_chapter(api, comic_project["id"], pages).json()
    detail = api.get(f"/chapters/{chapter['id']}").json()
    assert detail["processing"] is True
    assert detail["detecting"] is True
    assert detail["status"] == "translating"


def test_staged_chapter_is_empty_and_not_started(api, comic_project, pages):
    response = create_chapter(api, comic_project["id"], pages, staged=1)
    assert response.status_code == 201
    chapter = response.json()
    assert chapter["pages"] == []
    (item,) = api.get(f"/projects/{comic_project['id']}/chapters").json()
    assert item["started"] is False
    assert item["processing"] is False
    assert item["pageCount"] == 0
    assert item["status"] == "translating"  # nothing translated yet
    assert item["creditsSpent"] == 0


def test_staged_chapter_also_as_multipart(api, comic_project):
    response = api.post(
        f"/projects/{comic_project['id']}/chapters",
        files=[("staged", (None, b"1")), ("position", (None, b"4"))],
    )
    assert response.status_code == 201
    assert response.json()["position"] == 4


def test_novel_chapter_with_text(api, novel_project):
    response = create_chapter(api, novel_project["id"], text="第一行\n\n第二行\n第三行")
    assert response.status_code == 201
    chapter = response.json()
    assert chapter["pages"] == []
    detail = api.get(f"/chapters/{chapter['id']}").json()
    assert detail["processing"] is True
    assert detail["pageCount"] == 0


def test_position_defaults_to_one_past_the_highest(api, comic_project):
    assert create_chapter(api, comic_project["id"], staged=1, position=7).json()["position"] == 7
    assert create_chapter(api, comic_project["id"], staged=1).json()["position"] == 8


def test_taken_number_is_409(api, comic_project):
    create_chapter(api, comic_project["id"], staged=1, position=3)
    response = create_chapter(api, comic_project["id"], staged=1, position=3)
    assert error_of(response) == (409, "a chapter with that number already exists")
    assert len(api.get(f"/projects/{comic_project['id']}/chapters").json()) == 1


def test_trash_frees_the_number(emulator, api, comic_project):
    first = create_chapter(api, comic_project["id"], staged=1, position=3).json()
    emulator.trash_chapter(first["id"])
    assert create_chapter(api, comic_project["id"], staged=1, position=3).status_code == 201


@pytest.mark.parametrize("position", ["0", "-1", "1.5", "abc", "２"])
def test_bad_chapter_number_is_400(api, comic_project, position):
    status, message = error_of(
        create_chapter(api, comic_project["id"], staged=1, position=position)
    )
    assert status == 400
    assert "whole number" in message


def test_no_page_and_not_staged_is_400(api, comic_project):
    response = api.post(f"/projects/{comic_project['id']}/chapters", data={"position": "1"})
    status, message = error_of(response)
    assert status == 400 and "page" in message


def test_text_on_a_comic_is_400(api, comic_project):
    status, _ = error_of(create_chapter(api, comic_project["id"], text="hello"))
    assert status == 400


@pytest.mark.parametrize("text", ["", "   \n\n  "])
def test_empty_novel_text_is_400(api, novel_project, text):
    status, message = error_of(create_chapter(api, novel_project["id"], text=text))
    assert status == 400 and "empty" in message


def test_pages_on_a_novel_are_400(api, novel_project, pages):
    status, _ = error_of(create_chapter(api, novel_project["id"], pages))
    assert status == 400


def test_bad_request_wins_over_taken_number(api, comic_project):
    create_chapter(api, comic_project["id"], staged=1, position=2)
    response = api.post(f"/projects/{comic_project['id']}/chapters", data={"position": "2"})
    assert error_of(response)[0] == 400


def test_chapter_list_is_ordered_by_number_with_exact_fields(api, comic_project, pages):
    for position in (5, 2, 9):
        create_chapter(api, comic_project["id"], pages[:1], position=position)
    items = api.get(f"/projects/{comic_project['id']}/chapters").json()
    assert [item["position"] for item in items] == [2, 5, 9]
    for item in items:
        assert set(item) == LIST_ITEM_FIELDS
        assert [lang["languageCode"] for lang in item["languages"]] == ["en", "fr"]
        for lang in item["languages"]:
            assert set(lang) == {
                "languageCode",
                "status",
                "covered",
                "failed",
                "exporting",
                "models",
            }
        assert item["preparedExports"] == []
        assert item["pageCount"] == 1
        assert item["started"] is True
        assert item["creditsSpent"] == 2


def test_chapter_detail_has_exact_fields_and_the_single_project(api, comic_project, pages):
    chapter = create_chapter(api, comic_project["id"], pages).json()
    response = api.get(f"/chapters/{chapter['id']}")
    assert response.status_code == 200
    detail = response.json()
    assert set(detail) == DETAIL_FIELDS
    assert set(detail["project"]) == PROJECT_FIELDS
    assert detail["project"]["id"] == comic_project["id"]
    assert detail["assignee"] is None
    assert detail["pageCount"] == 3
    for lang in detail["languages"]:
        assert set(lang) == {"languageCode", "status", "untranslated"}


def test_unknown_chapter_is_404(api, comic_project):
    status, message = error_of(api.get("/chapters/4b1c0e4e-0000-0000-0000-000000000000"))
    assert (status, message) == (404, "chapter not found")


def test_create_in_unknown_project_is_404(api, pages):
    response = create_chapter(api, "no-such-project", pages)
    assert error_of(response) == (404, "project not found")

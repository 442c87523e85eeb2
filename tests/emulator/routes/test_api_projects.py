"""GET /projects and GET /projects/:id: shapes, ordering, counts, 401 and 404."""

from __future__ import annotations

from datetime import datetime

from emulator_helpers import PROJECT_FIELDS, PROJECT_LIST_FIELDS, create_chapter, error_of


def _parse(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def test_list_item_has_exactly_the_spec_fields(api, comic_project):
    (item,) = api.get("/projects").json()
    assert set(item) == PROJECT_LIST_FIELDS
    assert item["id"] == comic_project["id"]
    assert item["kind"] == "comic"
    assert item["sourceLanguage"] == "ja"
    assert item["readingDirection"] == "rtl"
    assert item["processSteps"] == "full"
    assert item["translationModel"] is None
    assert item["seriesProfile"] is None and item["coverKey"] is None
    assert item["deletedAt"] is None
    assert isinstance(item["translationGroupId"], str)
    assert [t["languageCode"] for t in item["targetLanguages"]] == ["en", "fr"]
    for target in item["targetLanguages"]:
        assert set(target) == {"projectId", "languageCode", "addedAt"}
        assert target["projectId"] == comic_project["id"]
        _parse(target["addedAt"])
    assert item["chapterCount"] == 0
    assert item["lastChapterAt"] is None
    assert item["createdAt"].endswith("Z")


def test_admin_create_answers_the_list_shape(comic_project):
    assert set(comic_project) == PROJECT_LIST_FIELDS


def test_single_project_has_no_list_only_fields(api, comic_project):
    response = api.get(f"/projects/{comic_project['id']}")
    assert response.status_code == 200
    body = response.json()
    assert set(body) == PROJECT_FIELDS
    assert body == {k: v for k, v in comic_project.items() if k in PROJECT_FIELDS}


def test_last_chapter_at_is_milliseconds_of_the_newest_chapter(emulator, api, comic_project, pages):
    create_chapter(api, comic_project["id"], pages[:1])
    emulator.advance(90)
    newest = create_chapter(api, comic_project["id"], staged=1).json()
    (item,) = api.get("/projects").json()
    assert isinstance(item["lastChapterAt"], int)
    assert item["lastChapterAt"] == int(_parse(newest["createdAt"]).timestamp() * 1000)
    assert item["chapterCount"] == 2


def test_list_orders_projects_by_newest_chapter(emulator, api, workspace, comic_project, pages):
    other = emulator.create_project(
        workspace["id"],
        name="Second",
        kind="comic",
        source_language="ko",
        reading_direction="ltr",
        process_steps="translate",
        target_languages=["en"],
    )
    empty = emulator.create_project(
        workspace["id"],
        name="Empty",
        kind="comic",
        source_language="ko",
        reading_direction="vertical",
        process_steps="text",
        target_languages=["en"],
    )
    create_chapter(api, comic_project["id"], staged=1)
    emulator.advance(10)
    create_chapter(api, other["id"], staged=1)
    assert [p["id"] for p in api.get("/projects").json()] == [
        other["id"],
        comic_project["id"],
        empty["id"],
    ]
    emulator.advance(10)
    create_chapter(api, comic_project["id"], staged=1)
    assert api.get("/projects").json()[0]["id"] == comic_project["id"]


def test_chapter_count_leaves_out_trashed_chapters(emulator, api, comic_project):
    first = create_chapter(api, comic_project["id"], staged=1).json()
    create_chapter(api, comic_project["id"], staged=1)
    emulator.trash_chapter(first["id"])
    (item,) = api.get("/projects").json()
    assert item["chapterCount"] == 1


def test_trashed_project_is_not_listed_and_is_404(emulator, api, comic_project):
    emulator.trash_project(comic_project["id"])
    assert api.get("/projects").json() == []
    status, message = error_of(api.get(f"/projects/{comic_project['id']}"))
    assert (status, message) == (404, "project not found")


def test_unknown_project_is_404(api, comic_project):
    status, message = error_of(api.get("/projects/00000000-0000-0000-0000-000000000000"))
    assert (status, message) == (404, "project not found")


def test_missing_or_unknown_key_is_401(raw, comic_project):
    for headers in ({}, {"Authorization": "Bearer nope"}, {"Authorization": "Basic abc"}):
        for path in ("/projects", f"/projects/{comic_project['id']}"):
            status, _ = error_of(raw.get("/api/v1" + path, headers=headers))
            assert status == 401


def test_dates_come_from_the_emulator_clock(emulator, api, comic_project):
    later = emulator.advance(7 * 24 * 3600)
    response = api.get("/projects")
    served = datetime.strptime(response.headers["date"], "%a, %d %b %Y %H:%M:%S GMT")
    assert abs(served.timestamp() - later.replace(tzinfo=None).timestamp()) < 2
    chapter = create_chapter(api, comic_project["id"], staged=1).json()
    assert abs((_parse(chapter["createdAt"]) - later).total_seconds()) < 0.01


def test_unknown_route_is_a_json_404(api):
    status, _ = error_of(api.get("/nothing-here"))
    assert status == 404

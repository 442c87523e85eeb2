"""Numbers beyond what the emulator stores are refused in the error shape, never a 500.

Chapter and page numbers go up to 2,147,483,647 and credits up to 2**53 - 1 (the
emulator's documented limits); SQLite itself stops at 2**63 - 1 and used to answer 500.
"""

from __future__ import annotations

import pytest
from emulator_helpers import add_pages, create_chapter, error_of

from toolkit.emulator.core.limits import MAX_CREDITS, MAX_POSITION

HUGE = [str(2**63 - 1), str(2**63), "99999999999999999999999999", "9" * 5000]


@pytest.mark.parametrize("position", HUGE, ids=["2**63-1", "2**63", "26 digits", "5000 digits"])
def test_a_chapter_number_beyond_the_limit_is_400(api, comic_project, position):
    answer = create_chapter(api, comic_project["id"], staged=1, position=position)
    status, message = error_of(answer)
    assert status == 400
    assert "2,147,483,647" in message
    assert api.get(f"/projects/{comic_project['id']}/chapters").json() == []


def test_the_highest_chapter_number_is_taken_and_the_next_create_says_what_to_do(
    api, comic_project
):
    top = create_chapter(api, comic_project["id"], staged=1, position=MAX_POSITION)
    assert top.status_code == 201 and top.json()["position"] == MAX_POSITION
    status, message = error_of(create_chapter(api, comic_project["id"], staged=1))
    assert status == 409
    assert "send a `position`" in message
    lower = create_chapter(api, comic_project["id"], staged=1, position=7)
    assert lower.status_code == 201 and lower.json()["position"] == 7


@pytest.mark.parametrize("position", HUGE[1:3], ids=["2**63", "26 digits"])
def test_a_page_number_beyond_the_limit_is_400(api, comic_project, pages, position):
    chapter = create_chapter(api, comic_project["id"], staged=1).json()
    status, message = error_of(add_pages(api, chapter["id"], pages[:1], position=position))
    assert status == 400 and "2,147,483,647" in message
    assert api.get(f"/chapters/{chapter['id']}").json()["pageCount"] == 0


def test_a_page_after_the_highest_page_number_is_409(api, comic_project, pages):
    chapter = create_chapter(api, comic_project["id"], staged=1).json()
    placed = add_pages(api, chapter["id"], pages[:1], position=MAX_POSITION, hold=1)
    assert placed.json()["pages"][0]["position"] == MAX_POSITION
    status, message = error_of(add_pages(api, chapter["id"], pages[1:2], hold=1))
    assert status == 409 and "highest" in message
    assert api.get(f"/chapters/{chapter['id']}").json()["pageCount"] == 1


@pytest.mark.parametrize("credits", [10**30, 2**63, MAX_CREDITS + 1], ids=str)
def test_credits_beyond_the_limit_are_400(raw, emulator, workspace, credits):
    body = {"credits": credits}
    for method, path, extra in [
        ("PUT", f"/_emulator/workspaces/{workspace['id']}/credits", {}),
        ("POST", "/_emulator/workspaces", {"name": "Big"}),
    ]:
        answer = raw.request(method, path, json={**body, **extra}, headers=_admin(emulator))
        status, message = error_of(answer)
        assert status == 400, path
        assert "9,007,199,254,740,991" in message
    assert emulator.get_workspace(workspace["id"])["credits"] == 10_000


def test_the_highest_credits_are_kept(emulator, workspace):
    assert emulator.set_credits(workspace["id"], MAX_CREDITS)["credits"] == MAX_CREDITS


def _admin(emulator) -> dict[str, str]:
    return {"Authorization": f"Bearer {emulator.admin_token}"}

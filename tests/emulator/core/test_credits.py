"""The price rule, charging at run start, and 402 refusals that change nothing."""

from __future__ import annotations

from emulator_helpers import add_pages, create_chapter, error_of, list_item, settle


def _balance(emulator, workspace):
    return emulator.get_workspace(workspace["id"])["credits"]


def test_a_comic_costs_a_credit_per_page_per_language(
    emulator, api, workspace, comic_project, pages
):
    chapter = create_chapter(api, comic_project["id"], pages).json()
    assert _balance(emulator, workspace) == 10_000 - 3 * 2
    assert list_item(api, comic_project["id"], chapter["id"])["creditsSpent"] == 6
    ledger = emulator.ledger(workspace["id"])
    assert ledger["balance"] == 10_000 - 6
    (charge,) = ledger["charges"]
    assert charge["chapterId"] == chapter["id"]
    assert charge["projectId"] == comic_project["id"]
    assert charge["credits"] == 6 and charge["pages"] == 3
    assert charge["languages"] == ["en", "fr"]
    assert charge["reason"] == "create" and charge["rework"] is False
    assert charge["at"] == chapter["createdAt"]


def test_a_novel_costs_per_started_2000_characters_per_language(
    emulator, api, workspace, novel_project
):
    create_chapter(api, novel_project["id"], text="字" * 2_000)
    create_chapter(api, novel_project["id"], text="字" * 2_001)
    charges = emulator.ledger(workspace["id"])["charges"]
    assert [c["credits"] for c in charges] == [1 * 2, 2 * 2]
    assert _balance(emulator, workspace) == 10_000 - 6


def test_a_failed_run_is_not_refunded(emulator, api, workspace, comic_project, pages):
    emulator.set_faults(failure_rate=1.0, seed=3)
    chapter = create_chapter(api, comic_project["id"], pages).json()
    assert settle(emulator, api, chapter["id"])["failed"] is True
    assert _balance(emulator, workspace) == 10_000 - 6


def test_create_without_enough_credits_is_402_and_changes_nothing(
    emulator, api, workspace, comic_project, pages
):
    emulator.set_credits(workspace["id"], 5)
    status, message = error_of(create_chapter(api, comic_project["id"], pages))
    assert status == 402 and "credits" in message
    assert api.get(f"/projects/{comic_project['id']}/chapters").json() == []
    assert emulator.ledger(workspace["id"]) == {"balance": 5, "charges": [], "lines": []}
    assert list(emulator.services.files.root.iterdir()) == []
    emulator.set_credits(workspace["id"], 6)
    assert create_chapter(api, comic_project["id"], pages).status_code == 201
    assert _balance(emulator, workspace) == 0


def test_novel_without_enough_credits_is_402(emulator, api, workspace, novel_project):
    emulator.set_credits(workspace["id"], 3)
    assert error_of(create_chapter(api, novel_project["id"], text="字" * 2_001))[0] == 402
    assert api.get(f"/projects/{novel_project['id']}/chapters").json() == []


def test_staged_create_costs_nothing_even_at_zero(emulator, api, workspace, comic_project):
    emulator.set_credits(workspace["id"], 0)
    assert create_chapter(api, comic_project["id"], staged=1).status_code == 201


def test_taken_number_wins_over_credits(emulator, api, workspace, comic_project, pages):
    create_chapter(api, comic_project["id"], staged=1, position=1)
    emulator.set_credits(workspace["id"], 0)
    assert error_of(create_chapter(api, comic_project["id"], pages, position=1))[0] == 409


def test_zero_balance_refuses_even_held_pages(emulator, api, workspace, comic_project, pages):
    chapter = create_chapter(api, comic_project["id"], staged=1).json()
    emulator.set_credits(workspace["id"], 0)
    status, message = error_of(add_pages(api, chapter["id"], pages[:1], hold=1))
    assert status == 402 and "zero" in message
    assert api.get(f"/chapters/{chapter['id']}").json()["pageCount"] == 0
    emulator.set_credits(workspace["id"], 1)
    assert add_pages(api, chapter["id"], pages[:1], hold=1).status_code == 201  # held: free
    assert _balance(emulator, workspace) == 1


def test_pages_that_would_run_need_credits_for_every_page(
    emulator, api, workspace, comic_project, pages
):
    chapter = create_chapter(api, comic_project["id"], staged=1).json()
    add_pages(api, chapter["id"], pages[:2], hold=1)
    emulator.set_credits(workspace["id"], 5)  # the run would be 3 pages x 2 languages
    assert error_of(add_pages(api, chapter["id"], pages[2:]))[0] == 402
    detail = api.get(f"/chapters/{chapter['id']}").json()
    assert detail["pageCount"] == 2 and detail["processing"] is False
    assert emulator.ledger(workspace["id"])["charges"] == []


def test_start_without_enough_credits_is_402(emulator, api, workspace, comic_project, pages):
    chapter = create_chapter(api, comic_project["id"], staged=1).json()
    add_pages(api, chapter["id"], pages, hold=1)
    emulator.set_credits(workspace["id"], 5)
    assert error_of(api.post(f"/chapters/{chapter['id']}/start"))[0] == 402
    item = list_item(api, comic_project["id"], chapter["id"])
    assert item["started"] is False and item["creditsSpent"] == 0
    assert _balance(emulator, workspace) == 5


def test_start_with_page_ids_charges_only_those(emulator, api, workspace, comic_project, pages):
    chapter = create_chapter(api, comic_project["id"], pages[:1]).json()
    settle(emulator, api, chapter["id"])
    held = add_pages(api, chapter["id"], pages[1:], hold=1).json()["pages"]
    api.post(f"/chapters/{chapter['id']}/start", json={"pageIds": [held[1]["id"]]})
    charges = emulator.ledger(workspace["id"])["charges"]
    assert [(c["reason"], c["pages"], c["credits"]) for c in charges] == [
        ("create", 1, 2),
        ("start", 1, 2),
    ]


def test_line_entries_add_up_to_covered(emulator, api, workspace, comic_project, pages):
    chapter = create_chapter(api, comic_project["id"], pages).json()
    settle(emulator, api, chapter["id"])
    item = list_item(api, comic_project["id"], chapter["id"])
    lines = emulator.ledger(workspace["id"])["lines"]
    assert len(lines) == 3 * 2  # one entry per page per language
    for lang in item["languages"]:
        mine = [e for e in lines if e["languageCode"] == lang["languageCode"]]
        assert sum(e["lines"] for e in mine) == lang["covered"]
        assert all(e["chapterId"] == chapter["id"] for e in mine)

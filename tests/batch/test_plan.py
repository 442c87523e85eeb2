"""`toolkit.batch.plan_upload`: what an upload will send, skip or refuse, and its price."""

from __future__ import annotations

import pytest
from page_images import make_folder

from toolkit.batch import find_project, plan_upload
from toolkit.errors import InvalidUpload
from toolkit.store import SnapshotStore


def test_new_chapters_are_priced_before_anything_is_sent(
    emulator, workspace, comic_project, client, tmp_path
):
    make_folder(tmp_path, {1: 3, 2: 2})
    plan = plan_upload(client, tmp_path, project="Moonlit Harbor")
    assert plan.ready and [i.action for i in plan.items] == ["send", "send"]
    assert plan.quote.credits == 10 and not plan.quote.learned
    assert plan.headline() == (
        f"Send 2 chapters, 5 pages ({plan.bytes_to_send / 1000:.1f} kB) to Moonlit Harbor: "
        "about 10 credits (estimate)."
    )
    assert [row["Credits"] for row in plan.rows()] == ["6", "4"]
    assert not plan.over_budget(None) and not plan.over_budget(10) and plan.over_budget(9)
    assert emulator.ledger(workspace["id"])["charges"] == []


def test_a_price_learned_from_the_store(emulator, comic_project, client, pages, tmp_path):
    store = SnapshotStore(str(tmp_path / "store"))
    store.take(client, at=emulator.now())
    client.create_chapter(comic_project["id"], pages=pages, position=9)
    emulator.advance(60)
    store.take(client, at=emulator.now())
    plan = plan_upload(
        client, make_folder(tmp_path / "in", {1: 4}), project="Moonlit Harbor", store=store
    )
    assert plan.quote.learned and plan.quote.label == "8 credits"


def test_chapters_already_there_are_skipped_or_refused_before_sending(
    comic_project, client, pages, tmp_path
):
    client.create_chapter(comic_project["id"], pages=pages[:2], position=1)  # same count
    client.create_chapter(comic_project["id"], pages=pages[:1], position=2)  # other count
    client.create_chapter(comic_project["id"], staged=True, position=3)
    make_folder(tmp_path, {1: 2, 2: 3, 3: 1, 4: 1})
    plan = plan_upload(client, tmp_path, project=comic_project["id"])
    assert [(i.chapter.number, i.action) for i in plan.items] == [
        (1, "skip"), (2, "conflict"), (3, "conflict"), (4, "send"),
    ]  # fmt: skip
    assert plan.items[0].note == "chapter 1 is already in Moonlit Harbor with 2 pages"
    assert [str(p) for p in plan.problems] == [
        "chapter-02/: chapter 2 is already in Moonlit Harbor (1 page) and this folder has 3 "
        "pages: rename the folder to a free number, or move that chapter to the trash",
        "chapter-03/: chapter 3 is already in Moonlit Harbor (staged, 0 pages) and this folder "
        "has 1 page: rename the folder to a free number, or move that chapter to the trash",
    ]
    assert not plan.ready


def test_the_project_is_found_by_name_or_id(
    emulator, workspace, comic_project, novel_project, client
):
    assert find_project(client, "moonlit harbor").id == comic_project["id"]
    assert find_project(client, novel_project["id"]).name == "River of Stars"
    with pytest.raises(
        InvalidUpload,
        match=r"no project named 'Nope'; the workspace has: Moonlit Harbor, River of Stars",
    ):
        find_project(client, "Nope")
    twin = emulator.create_project(
        workspace["id"], name="Moonlit Harbor", kind="comic", source_language="ja",
        reading_direction="rtl", process_steps="text", target_languages=["en"],
    )  # fmt: skip
    with pytest.raises(
        InvalidUpload, match=f"2 projects are named 'Moonlit Harbor': give one's id .*{twin['id']}"
    ):
        find_project(client, "Moonlit Harbor")

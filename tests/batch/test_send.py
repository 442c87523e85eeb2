"""`toolkit.batch.upload`: chapters sent at their numbers, stopped, resumed, summed up."""

from __future__ import annotations

import pytest
from lossy import lossy_client
from page_images import make_folder

from toolkit.batch import RECORD_NAME, plan_upload, upload
from toolkit.errors import InvalidUpload


def created(emulator, workspace) -> list[tuple[str, int]]:
    return [(c["reason"], c["pages"]) for c in emulator.ledger(workspace["id"])["charges"]]


def test_a_folder_is_sent_chapter_by_chapter_with_progress(
    emulator, workspace, comic_project, client, tmp_path
):
    make_folder(tmp_path, {1: 2, 2: 1, 5: 3})
    plan = plan_upload(client, tmp_path, project="Moonlit Harbor")
    progress = []
    summary = upload(client, plan, on_progress=progress.append)
    chapters = client.list_chapters(comic_project["id"])
    assert [(c.position, c.page_count) for c in chapters] == [(1, 2), (2, 1), (5, 3)]
    assert created(emulator, workspace) == [("create", 2), ("create", 1), ("create", 3)]
    sizes = [item.chapter.size for item in plan.items]
    assert [(p.chapters_done, p.bytes_done, p.current) for p in progress] == [
        (0, 0, "chapter-01/"),
        (1, sizes[0], "chapter-02/"),
        (2, sizes[0] + sizes[1], "chapter-05/"),
        (3, sum(sizes), ""),
    ]
    assert {p.bytes_total for p in progress} == {sum(sizes)}
    assert summary.complete
    assert summary.headline() == "3 chapters created in Moonlit Harbor."
    assert [row["Result"] for row in summary.rows()] == ["created"] * 3
    assert (tmp_path / RECORD_NAME).exists()


def test_a_rerun_skips_what_is_there_and_continues_where_it_stopped(
    emulator, workspace, comic_project, client, tmp_path
):
    make_folder(tmp_path, {1: 1, 2: 1, 3: 1, 4: 1})
    emulator.set_credits(workspace["id"], 4)  # two chapters' worth, in two languages
    summary = upload(client, plan_upload(client, tmp_path, project="Moonlit Harbor"))
    assert [o.result for o in summary.outcomes] == ["created", "created", "refused", "not sent"]
    assert summary.outcomes[2].detail == (
        "Not enough credits. Add credits to the workspace, or send fewer pages."
    )
    assert not summary.complete
    assert summary.headline() == (
        "2 chapters created in Moonlit Harbor, 1 refused, 1 not sent. Fix what stopped it, "
        "then run the same upload again to continue."
    )

    emulator.set_credits(workspace["id"], 100)
    plan = plan_upload(client, tmp_path, project="Moonlit Harbor")
    assert [i.note for i in plan.items[:2]] == ["already uploaded from this folder"] * 2
    summary = upload(client, plan)
    assert [o.result for o in summary.outcomes] == ["skipped", "skipped", "created", "created"]
    assert summary.complete
    assert summary.headline() == "2 chapters created in Moonlit Harbor, 2 already there."
    assert created(emulator, workspace) == [("create", 1)] * 4  # each chapter paid once

    again = plan_upload(client, tmp_path, project="Moonlit Harbor")
    assert again.to_send == [] and again.headline() == (
        "Nothing to send to Moonlit Harbor: every chapter is already there."
    )


def test_without_its_record_a_rerun_compares_page_counts(comic_project, client, tmp_path):
    # As after a crash between the service's answer and the record being written.
    make_folder(tmp_path, {1: 2})
    upload(client, plan_upload(client, tmp_path, project="Moonlit Harbor"))
    (tmp_path / RECORD_NAME).unlink()
    (item,) = plan_upload(client, tmp_path, project="Moonlit Harbor").items
    assert (item.action, item.note) == (
        "skip",
        "chapter 1 is already in Moonlit Harbor with 2 pages",
    )


def test_files_changed_since_their_upload_are_a_conflict(
    comic_project, client, tmp_path, make_page
):
    make_folder(tmp_path, {1: 2})
    upload(client, plan_upload(client, tmp_path, project="Moonlit Harbor"))
    (tmp_path / "chapter-01" / "page-2.png").write_bytes(make_page(999))
    plan = plan_upload(client, tmp_path, project="Moonlit Harbor")
    assert not plan.ready
    assert "its files have changed since" in str(plan.problems[0])


def test_a_plan_with_problems_sends_nothing(emulator, workspace, comic_project, client, tmp_path):
    make_folder(tmp_path, {1: 1, 2: 1})
    (tmp_path / "readme.md").write_text("hello")
    plan = plan_upload(client, tmp_path, project="Moonlit Harbor")
    with pytest.raises(
        InvalidUpload, match=r"nothing was sent: fix these first: readme\.md: not a chapter"
    ):
        upload(client, plan)
    assert created(emulator, workspace) == []


def test_novel_chapters_are_sent_as_text(emulator, workspace, novel_project, client, tmp_path):
    (tmp_path / "chapter-1.txt").write_text("First.\nSecond.\n", encoding="utf-8")
    (tmp_path / "chapter-3.txt").write_text("Third.\n", encoding="utf-8")
    plan = plan_upload(client, tmp_path, project="River of Stars")
    assert [row["Pages"] for row in plan.rows()] == ["text", "text"]
    summary = upload(client, plan)
    assert summary.complete
    chapters = client.list_chapters(novel_project["id"])
    assert [c.position for c in chapters] == [1, 3]
    again = plan_upload(client, tmp_path, project="River of Stars")
    assert [i.action for i in again.items] == ["skip", "skip"]


def test_a_lost_create_is_one_line_the_user_can_act_on(
    emulator, workspace, comic_project, client, tmp_path
):
    """The first chapter's answer is lost after the service made it: the upload does not
    report it created (it cannot be sure) and says, in one line, what to check."""
    make_folder(tmp_path, {12: 2, 13: 1})
    plan = plan_upload(client, tmp_path, project="Moonlit Harbor")
    lossy, transport = lossy_client(emulator, workspace)
    with lossy:
        summary = upload(lossy, plan)
    assert transport.lost == [201]
    assert [o.result for o in summary.outcomes] == ["refused", "not sent"]
    detail = summary.outcomes[0].detail
    assert detail == (
        "Chapter 12 exists, created in the same second as this upload: it may be yours or "
        "someone else's (the service shows nothing of its pages to tell by). Check chapter "
        "12 is yours before sending again; if it is not, pick another chapter number."
    )

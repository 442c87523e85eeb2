"""The UploadPanel's "Upload a folder" tab: `toolkit.batch` behind a form."""

from __future__ import annotations

from page_images import make_folder
from widget_helpers import charges

from toolkit.widgets import UploadPanel


def test_a_folder_is_checked_priced_then_uploaded_once(
    emulator, workspace, comic_project, client, tmp_path
):
    folder = make_folder(tmp_path / "scans", {1: 2, 2: 1})
    panel = UploadPanel(client)
    form = panel.folder
    assert form.check.disabled and form.send.disabled  # no folder given yet
    form.project.value = comic_project["id"]
    form.folder.value = str(folder)
    form.check.click()
    assert "Send 2 chapters, 3 pages" in form.plan_view.value
    assert "<td" in form.plan_view.value and "chapter-01/" in form.plan_view.value
    assert form.send.description == "Upload 2 chapters, about 6 credits (estimate)"
    assert charges(emulator, workspace) == []  # checking sends nothing

    form.send.click()
    form.send.click()  # the second click of a double click: the plan is spent
    assert [(c["reason"], c["pages"]) for c in charges(emulator, workspace)] == [
        ("create", 2), ("create", 1),
    ]  # fmt: skip
    assert panel.message.tone == "success"
    assert panel.message.text == "2 chapters created in Moonlit Harbor."
    assert form.progress.value == form.progress.max > 1
    assert "2 of 2 chapters" in form.progress_text.value
    assert form.summary.value.count("<tr>") == 3 and ">created<" in form.summary.value
    assert form.send.disabled

    form.check.click()  # again: everything is there
    assert "every chapter is already there" in form.plan_view.value
    assert form.send.disabled


def test_bad_files_are_listed_and_nothing_can_be_sent(
    emulator, workspace, comic_project, client, tmp_path
):
    folder = make_folder(tmp_path / "scans", {1: 1, 2: 2})
    (folder / "chapter-01" / "cover.svg").write_bytes(b'<svg xmlns="http://www.w3.org/2000/svg"/>')
    panel = UploadPanel(client)
    panel.folder.project.value = comic_project["id"]
    panel.folder.folder.value = str(folder)
    panel.folder.check.click()
    view = panel.folder.plan_view.value
    # The headline says what happens, and no price is shown for what will not be sent.
    assert view.startswith(
        "<p><b>Nothing will be sent to Moonlit Harbor until the 1 problem below is fixed.</b>"
    )
    assert "Send " not in view and "credits" not in view
    assert "new, once the problems are fixed" in view  # chapter 2, fine on its own
    assert "<b>Fix first:</b></p><ul><li>chapter-01/cover.svg: is an SVG" in view
    assert panel.folder.send.disabled and panel.folder.send.description == "Upload"
    panel.folder.send.click()
    assert charges(emulator, workspace) == []


def test_a_missing_folder_is_a_message(comic_project, client, tmp_path):
    panel = UploadPanel(client)
    panel.folder.project.value = comic_project["id"]
    panel.folder.folder.value = str(tmp_path / "nowhere")
    panel.folder.check.click()
    assert panel.message.tone == "error"
    assert (
        panel.message.text
        == f"{tmp_path / 'nowhere'} does not exist: give the folder that holds the chapters"
    )


def test_over_the_budget_asks_once_more_and_a_change_withdraws_the_plan(
    emulator, workspace, comic_project, client, tmp_path
):
    folder = make_folder(tmp_path / "scans", {1: 3})  # 6 credits
    panel = UploadPanel(client, budget=5)
    form = panel.folder
    assert form.budget.value == 5
    form.project.value = comic_project["id"]
    form.folder.value = str(folder)
    form.check.click()
    form.send.click()
    assert form.confirm_box.layout.display == ""
    assert "over the budget of 5 credits" in form.question.value
    assert form.confirm.description == "Yes, upload for about 6 credits (estimate)"
    assert charges(emulator, workspace) == []

    form.folder.value = str(folder) + "/"  # a change withdraws the plan and the question
    assert form.confirm_box.layout.display == "none" and form.plan is None
    assert form.send.disabled and form.confirm.disabled
    form.check.click()
    form.send.click()
    form.cancel.click()
    assert panel.message.text == "Nothing was uploaded."
    assert charges(emulator, workspace) == []

    form.check.click()
    form.send.click()
    form.confirm.click()
    assert [(c["reason"], c["credits"]) for c in charges(emulator, workspace)] == [("create", 6)]

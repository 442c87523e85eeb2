"""The RescanPanel, driven headless against the emulator over loopback."""

from __future__ import annotations

from widget_helpers import charges, failed_chapter

from toolkit.widgets import RescanPanel


def test_rescan_runs_only_after_confirmation(emulator, workspace, comic_project, client, pages):
    chapter_id = failed_chapter(emulator, client, comic_project["id"], pages[:2])
    panel = RescanPanel(client)
    assert "discards every translation, every edit and every prepared file" in panel.warning.value
    assert [value for _, value in panel.choice.options] == [chapter_id]
    # The list's labels are short enough to show whole; the reasons are below, in full.
    assert [text for text, _ in panel.choice.options] == [
        "Moonlit Harbor / Chapter 1 (2 pages) - failed"
    ]
    reason = client.get_chapter(chapter_id).failure_reason
    assert f"<li>Moonlit Harbor / Chapter 1: {reason}</li>" in panel.notes.value
    assert panel.rescan.disabled  # nothing chosen
    panel.choice.value = (chapter_id,)
    assert panel.cost.value.startswith(
        "1 chapter, 2 pages: Re-scanning it will cost about 4 credits "
        "(estimate: 2 pages x 2 languages at an assumed 1 credit each)."
    )

    panel.rescan.click()
    assert panel.confirm_box.layout.display == ""
    assert "Re-scan 1 chapter: Moonlit Harbor / Chapter 1?" in panel.question.value
    assert "about 4 credits" in panel.question.value
    assert charges(emulator, workspace, "rescan") == []  # asking sends nothing

    panel.confirm.click()
    assert panel.message.tone == "success", panel.message.text
    assert panel.message.text.startswith("Moonlit Harbor / Chapter 1: re-scan queued, ")
    assert [c["credits"] for c in charges(emulator, workspace, "rescan")] == [4]
    assert client.get_chapter(chapter_id).failed is False
    assert panel.choice.options == ()  # no longer failed


def test_double_click_on_confirm_rescans_once_and_keeps_the_result(
    emulator, workspace, comic_project, client, pages
):
    chapter_id = failed_chapter(emulator, client, comic_project["id"], pages[:2])
    panel = RescanPanel(client)
    panel.choice.value = (chapter_id,)
    panel.rescan.click()
    panel.confirm.click()
    panel.confirm.click()  # arrives after the first ended: the button is disabled by then
    assert panel.confirm.disabled
    assert [c["credits"] for c in charges(emulator, workspace, "rescan")] == [4]
    assert panel.message.tone == "success"
    assert "re-scan queued" in panel.message.text
    assert "Nothing to confirm" not in panel.message.text


def test_rescan_cancel_and_changed_choice_send_nothing(
    emulator, workspace, comic_project, client, pages
):
    first = failed_chapter(emulator, client, comic_project["id"], pages[:1])
    second = failed_chapter(emulator, client, comic_project["id"], pages[1:2])
    panel = RescanPanel(client)
    panel.choice.value = (first,)
    panel.rescan.click()
    panel.cancel.click()
    assert panel.confirm_box.layout.display == "none"
    assert panel.confirm.disabled
    panel.confirm.click()  # a stale confirm button does nothing
    assert panel.message.text == "Nothing was re-scanned."

    panel.rescan.click()
    panel.choice.value = (first, second)  # the question named only the first
    assert panel.confirm_box.layout.display == "none"
    assert "choice changed" in panel.message.text
    assert charges(emulator, workspace, "rescan") == []


def test_a_choice_over_the_budget_asks_a_second_time(
    emulator, workspace, comic_project, client, pages
):
    first = failed_chapter(emulator, client, comic_project["id"], pages[:2])
    second = failed_chapter(emulator, client, comic_project["id"], pages[2:3])
    panel = RescanPanel(client, budget=5)
    assert panel.budget.value == 5
    panel.choice.value = (first, second)  # 3 pages x 2 languages: 6 credits
    panel.rescan.click()
    assert "over the budget of 5 credits" in panel.question.value
    panel.confirm.click()
    panel.confirm.click()  # a double click does not answer the second question
    assert charges(emulator, workspace, "rescan") == []
    assert panel.message.tone == "warning"
    assert panel.confirm_again.layout.display == "" and not panel.confirm_again.disabled

    panel.confirm_again.click()
    assert sorted(c["credits"] for c in charges(emulator, workspace, "rescan")) == [2, 4]

    third = failed_chapter(emulator, client, comic_project["id"], pages[:1])
    panel.refresh()
    panel.budget.input.value = 0  # no budget: one confirmation is enough
    panel.choice.value = (third,)
    panel.rescan.click()
    assert "budget" not in panel.question.value
    panel.confirm.click()
    assert len(charges(emulator, workspace, "rescan")) == 3


def test_rescan_several_reports_each_refusal(emulator, workspace, comic_project, client, pages):
    first = failed_chapter(emulator, client, comic_project["id"], pages[:1])
    second = failed_chapter(emulator, client, comic_project["id"], pages[1:2])
    emulator.set_credits(workspace["id"], 2)  # enough for one re-scan in two languages
    panel = RescanPanel(client)
    panel.choice.value = (first, second)
    panel.rescan.click()
    panel.confirm.click()
    assert panel.message.tone == "warning"
    lines = panel.message.text.splitlines()
    assert "re-scan queued" in lines[0]
    assert lines[1] == (
        "Moonlit Harbor / Chapter 2 was not re-scanned: not enough credits. "
        "Add credits to the workspace, or send fewer pages."
    )
    assert len(charges(emulator, workspace, "rescan")) == 1


def test_rescan_lists_any_chapter_on_request_and_refuses_a_running_one(
    emulator, comic_project, novel_project, client, pages
):
    ok = client.create_chapter(comic_project["id"], pages=pages[:1])
    client.create_chapter(novel_project["id"], text="One line.\nTwo lines.\n")
    panel = RescanPanel(client)
    assert panel.choice.options == ()
    assert "No failed chapters" in panel.notes.value
    panel.show_all.value = True
    assert [value for _, value in panel.choice.options] == [ok.id]
    assert panel.choice.options[0][0].endswith(" - running")
    assert "1 novel chapter not listed" in panel.notes.value

    panel.choice.value = (ok.id,)  # still running: refused before anything is sent
    panel.rescan.click()
    assert panel.message.tone == "error"
    assert panel.message.text == (
        "Moonlit Harbor / Chapter 1 is still running: re-scan once the run has finished."
    )
    assert panel.confirm_box.layout.display == "none"

"""The UploadPanel's chapter forms, driven headless against the emulator over loopback.

Each test sets widget values, feeds `FileUpload.set_state`, clicks buttons, and checks
what the emulator received (its ledger, its chapters, the multipart bodies sent) and
what the panel shows.
"""

from __future__ import annotations

import re

from widget_helpers import SVG, charges, file_state, settle

from toolkit.store import SnapshotStore
from toolkit.widgets import UploadPanel

# -- new comic chapter -----------------------------------------------------------------


def test_comic_pages_sent_in_the_order_shown_after_editing(
    emulator, workspace, comic_project, recorded_client, recorder, make_page
):
    panel = UploadPanel(recorded_client)
    form = panel.comic
    assert form.project.value == comic_project["id"]
    form.files.upload.set_state(
        file_state(
            {"page-10.png": make_page(10), "page-2.png": make_page(2), "page-1.png": make_page(1)}
        )
    )
    assert form.files.names == ["page-1.png", "page-2.png", "page-10.png"]
    assert form.cost.value == (
        "This run will cost about 6 credits "
        "(estimate: 3 pages x 2 languages at an assumed 1 credit each)."
    )
    assert recorder.posts() == []  # showing the price sent nothing

    form.files.order.value = 2  # page-10, moved up one place
    form.files.up.click()
    assert form.files.names == ["page-1.png", "page-10.png", "page-2.png"]
    form.create.click()

    (post,) = recorder.posts()
    sent = re.findall(rb'filename="([^"]+)"', post.content)
    assert sent == [b"page-1.png", b"page-10.png", b"page-2.png"]
    assert re.search(rb'name="position"\r\n\r\n1\r\n', post.content)  # the next free number
    assert panel.message.tone == "success", panel.message.text
    assert panel.message.text == (
        "Created chapter 1 in Moonlit Harbor with 3 pages; it is running, "
        "for about 6 credits (estimate)."
    )
    (charge,) = charges(emulator, workspace)
    assert (charge["reason"], charge["pages"], charge["credits"]) == ("create", 3, 6)
    assert form.files.uploads == []  # ready for the next chapter


def test_double_click_on_create_makes_one_chapter_and_keeps_its_result(
    emulator, workspace, comic_project, recorded_client, recorder, pages
):
    panel = UploadPanel(recorded_client)
    form = panel.comic
    assert form.create.disabled  # nothing chosen yet: nothing to create
    form.files.upload.set_state(file_state({"a.png": pages[0], "b.png": pages[1]}))
    assert not form.create.disabled

    # While the chapter is sent, every button of the panel is disabled and this one says so.
    recorder.during = lambda request: (
        form.create.disabled,
        form.create.description,
        panel.pages.add.disabled,
    )
    form.create.click()
    form.create.click()  # the second click of a double click arrives after the first ended

    # Before sending, the form re-reads the chapters (a GET) with the buttons already busy.
    assert [state for method, state in recorder.seen if method == "POST"] == [
        (True, "Creating…", True)
    ]
    assert len(charges(emulator, workspace)) == 1
    assert len(recorded_client.list_chapters(comic_project["id"])) == 1
    assert panel.message.tone == "success"
    assert panel.message.text.startswith("Created chapter 1 in Moonlit Harbor with 2 pages")
    assert form.create.disabled and form.create.description == "Create chapter"


def test_taken_chapter_number_is_refused_in_the_panels_words(
    emulator, workspace, comic_project, client, recorder, recorded_client, pages
):
    for number in (1, 9):
        client.create_chapter(comic_project["id"], staged=True, position=number)
    panel = UploadPanel(recorded_client)
    panel.comic.files.upload.set_state(file_state({"a.png": pages[1]}))
    panel.comic.number.value = "1"
    panel.comic.create.click()
    assert panel.message.tone == "error"
    assert panel.message.text == "Chapter 1 is taken in Moonlit Harbor; the next free number is 10."
    assert recorder.posts() == [] and charges(emulator, workspace) == []

    panel.comic.number.value = "2"  # the refusal no longer applies
    assert panel.message.tone is None


def test_not_enough_credits_is_shown_once_in_plain_words(
    emulator, workspace, comic_project, client, pages
):
    emulator.set_credits(workspace["id"], 3)
    panel = UploadPanel(client)
    panel.comic.files.upload.set_state(file_state({f"p{i}.png": p for i, p in enumerate(pages)}))
    assert "about 6 credits" in panel.comic.cost.value
    panel.comic.create.click()
    assert panel.message.tone == "error"
    assert panel.message.text == (
        "The chapter was not created in Moonlit Harbor: not enough credits. "
        "Add credits to the workspace, or send fewer pages."
    )
    assert client.list_chapters(comic_project["id"]) == []
    assert emulator.get_workspace(workspace["id"])["credits"] == 3


def test_bad_files_refused_with_the_clients_message_before_sending(
    comic_project, recorded_client, recorder, pages
):
    panel = UploadPanel(recorded_client)
    panel.comic.files.upload.set_state(file_state({"cover.png": SVG, "p1.png": pages[0]}))
    assert panel.message.tone == "error"
    assert panel.message.text == (
        "cover.png: is an SVG, which the service does not take; export it as PNG or JPEG first"
    )
    panel.comic.create.click()
    assert "cover.png" in panel.message.text.lower()
    assert recorder.posts() == []

    panel.comic.files.upload.set_state(file_state({"p1.png": pages[0]}))
    assert panel.message.tone is None  # the refusal goes once the file is replaced


def test_a_damaged_page_is_named_by_its_file_not_by_a_python_object(
    comic_project, recorded_client, recorder
):
    panel = UploadPanel(recorded_client)
    panel.comic.files.upload.set_state(file_state({"scan.png": b"not an image at all"}))
    assert panel.message.tone == "error"
    assert panel.message.text.startswith("scan.png: cannot be opened as an image")
    assert "PNG, JPEG, WebP, GIF, BMP or TIFF" in panel.message.text  # what it takes
    assert "Pillow" not in panel.message.text
    assert "BytesIO" not in panel.message.text and "0x" not in panel.message.text


def test_bad_chapter_number_refused_before_sending(comic_project, recorded_client, recorder, pages):
    panel = UploadPanel(recorded_client)
    panel.comic.files.upload.set_state(file_state({"p1.png": pages[0]}))
    panel.comic.number.value = "two"
    panel.comic.create.click()
    assert panel.message.text == (
        "The chapter number 'two' is not a whole number of 1 or more: type one, or leave "
        "the box empty"
    )
    assert recorder.posts() == []


# -- staged chapters, held pages, start --------------------------------------------------


def test_staged_chapter_pages_held_then_started(emulator, workspace, comic_project, client, pages):
    panel = UploadPanel(client)
    panel.comic.staged.value = True
    assert "costs nothing" in panel.comic.cost.value
    panel.comic.create.click()
    assert panel.message.text.startswith("Created staged chapter 1 in Moonlit Harbor")
    assert panel.comic.staged.value is False and panel.comic.create.disabled  # spent
    (chapter,) = client.list_chapters(comic_project["id"])
    assert chapter.started is False and charges(emulator, workspace) == []

    form = panel.pages
    assert form.chapter.value == chapter.id
    assert form.start.disabled and "No pages yet" in form.held_info.value
    form.files.upload.set_state(file_state({"b.png": pages[1], "a.png": pages[0]}))
    form.hold.value = True
    assert "cost nothing until they are started" in form.cost.value
    form.add.click()
    assert panel.message.tone == "success", panel.message.text
    assert client.list_chapters(comic_project["id"])[0].page_count == 2
    assert charges(emulator, workspace) == []
    assert "2 held pages" in form.held_info.value and "about 4 credits" in form.held_info.value

    form.start.click()
    form.start.click()  # a double click starts once
    assert panel.message.text == "Started Chapter 1 of Moonlit Harbor: 2 pages running."
    (charge,) = charges(emulator, workspace)
    assert (charge["reason"], charge["pages"], charge["credits"]) == ("start", 2, 4)
    assert client.get_chapter(chapter.id).processing


def test_pages_held_on_a_chapter_that_ran_are_started_by_id(
    emulator, workspace, comic_project, client, pages
):
    chapter = client.create_chapter(comic_project["id"], pages=pages[:2])
    settle(emulator, client, comic_project["id"])
    panel = UploadPanel(client)
    form = panel.pages
    form.chapter.value = chapter.id
    assert form.start.disabled  # nothing held here yet, and it says how to hold pages
    assert "tick Hold when adding pages here" in form.held_info.value

    form.files.upload.set_state(file_state({"extra.png": pages[2]}))
    form.hold.value = True
    form.add.click()
    assert not form.start.disabled
    form.start.click()
    assert panel.message.tone == "success", panel.message.text
    start = charges(emulator, workspace, "start")
    assert [(c["pages"], c["credits"]) for c in start] == [(1, 2)]
    assert client.list_chapters(comic_project["id"])[0].page_count == 3


def test_page_number_with_several_pages_refused_in_the_panels_words(
    comic_project, recorded_client, recorder, pages
):
    chapter = recorded_client.create_chapter(comic_project["id"], staged=True)
    panel = UploadPanel(recorded_client)
    panel.pages.chapter.value = chapter.id
    panel.pages.files.upload.set_state(file_state({"a.png": pages[0], "b.png": pages[1]}))
    panel.pages.number.value = "1"
    panel.pages.hold.value = True
    panel.pages.add.click()
    assert panel.message.text == (
        "A page number places one page, and 2 pages are chosen: choose one page, or leave "
        "the page number empty."
    )
    assert "position=" not in panel.message.text
    assert len(recorder.posts()) == 1  # only the staged chapter's create


def test_adding_pages_to_a_running_chapter_is_refused_before_sending(
    comic_project, client, recorder, recorded_client, pages
):
    chapter = client.create_chapter(comic_project["id"], pages=pages[:1])
    panel = UploadPanel(recorded_client)
    panel.pages.chapter.value = chapter.id
    panel.pages.files.upload.set_state(file_state({"a.png": pages[1]}))
    panel.pages.add.click()
    assert panel.message.text == (
        "Chapter 1 of Moonlit Harbor is still running: wait until it has finished, then try again."
    )
    assert "wait_for_chapter" not in panel.message.text and recorder.posts() == []


def test_a_held_page_placed_at_a_page_number(comic_project, recorded_client, recorder, pages):
    chapter = recorded_client.create_chapter(comic_project["id"], staged=True)
    panel = UploadPanel(recorded_client)
    form = panel.pages
    form.chapter.value = chapter.id
    form.files.upload.set_state(file_state({"cover.png": pages[0]}))
    form.number.value = "3"
    form.hold.value = True
    form.add.click()
    assert panel.message.text == (
        "Added 1 page to Chapter 1 of Moonlit Harbor: held; start them with 'Start held pages'."
    )
    body = recorder.posts()[-1].content
    assert re.search(rb'name="position"\r\n\r\n3\r\n', body)
    assert re.search(rb'name="hold"\r\n\r\n1\r\n', body)
    assert "1 held page." in form.held_info.value


def test_a_new_chapter_is_chosen_in_the_pages_tab(comic_project, client, pages):
    client.create_chapter(comic_project["id"], staged=True, position=5)
    panel = UploadPanel(client)
    panel.comic.staged.value = True
    panel.comic.number.value = "2"
    panel.comic.create.click()
    (new,) = [c for c in client.list_chapters(comic_project["id"]) if c.position == 2]
    assert panel.pages.chapter.value == new.id


def test_the_message_speaks_of_the_tab_shown(comic_project, client, pages):
    panel = UploadPanel(client)
    panel.comic.staged.value = True
    panel.comic.create.click()
    assert panel.message.tone == "success"
    panel.tabs.selected_index = 3  # the folder tab: the comic tab's success is not about it
    assert panel.message.tone is None and panel.message.value == ""
    panel.tabs.selected_index = 0  # back: it is
    assert panel.message.tone == "success" and panel.message.text.startswith(
        "Created staged chapter 1"
    )
    assert "in the tab “Add & start pages”" in panel.message.text
    # A refusal on the folder tab is kept with that tab, not shown over another.
    panel.tabs.selected_index = 3
    panel.folder.project.value = comic_project["id"]
    panel.folder.folder.value = "/no/such/folder"
    panel.folder.check.click()
    assert panel.message.tone == "error"
    panel.tabs.selected_index = 1
    assert panel.message.tone is None
    panel.tabs.selected_index = 3
    assert panel.message.text.startswith("/no/such/folder does not exist")


# -- novel chapters ----------------------------------------------------------------------


def test_novel_chapter_from_a_txt_upload(emulator, workspace, novel_project, client):
    text = "The ferry left late.\n\nNobody was surprised.\n" * 100  # 4,300 characters
    panel = UploadPanel(client)
    form = panel.novel
    assert form.project.value == novel_project["id"]
    form.file.set_state(file_state({"ch1.txt": text.encode()}, mime="text/plain"))
    assert form.text.value == text
    assert "3 blocks of up to 2,000 characters x 2 languages" in form.cost.value
    form.create.click()
    form.create.click()
    assert panel.message.tone == "success", panel.message.text
    (chapter,) = client.list_chapters(novel_project["id"])
    assert chapter.position == 1
    (charge,) = charges(emulator, workspace)
    assert charge["credits"] == 6


def test_novel_text_that_is_not_utf8_is_refused(novel_project, client):
    panel = UploadPanel(client)
    panel.novel.file.set_state(file_state({"ch1.txt": b"\xff\xfe\x00bad"}, mime="text/plain"))
    assert "ch1.txt is not UTF-8 text" in panel.message.text
    assert panel.novel.text.value == ""


def test_empty_novel_text_cannot_be_sent(novel_project, client):
    panel = UploadPanel(client)
    assert panel.novel.create.disabled
    assert panel.novel.cost.value == "Paste the chapter's text, or upload a .txt file."
    panel.novel.create.click()
    assert client.list_chapters(novel_project["id"]) == []


def test_novel_text_over_the_limit_is_refused_as_typed(novel_project, client):
    panel = UploadPanel(client)
    panel.novel.text.value = "x" * 200_001
    assert panel.message.tone == "error"
    assert "200,001 characters, over the service's limit" in panel.message.text
    assert panel.novel.cost.value == ""
    panel.novel.create.click()
    assert client.list_chapters(novel_project["id"]) == []
    panel.novel.text.value = "short enough"
    assert panel.message.tone is None and "1 block of up to 2,000" in panel.novel.cost.value


# -- prices ------------------------------------------------------------------------------


def test_upload_price_learned_from_the_store(
    emulator, comic_project, client, pages, tmp_path, make_page
):
    from toolkit.store import SnapshotStore

    store = SnapshotStore(str(tmp_path / "snapshots"))
    panel = UploadPanel(client, store=store)
    panel.comic.files.upload.set_state(file_state({"a.png": pages[0]}))
    assert "(estimate:" in panel.comic.cost.value  # no history yet: an estimate, said so

    store.take(client, at=emulator.now())
    client.create_chapter(comic_project["id"], pages=pages)
    emulator.advance(60)
    store.take(client, at=emulator.now())
    panel.comic.files.upload.set_state(
        file_state({f"p{i}.png": make_page(20 + i) for i in range(5)})
    )
    assert panel.comic.cost.value == (
        "This run will cost 10 credits (price learned from this workspace's history)."
    )


def test_held_page_ids_outlive_the_panel_beside_its_store(
    emulator, workspace, comic_project, client, pages, tmp_path
):
    chapter = client.create_chapter(comic_project["id"], pages=pages[:1])
    settle(emulator, client, comic_project["id"])
    store = SnapshotStore(str(tmp_path / "snapshots"))
    first = UploadPanel(client, store=store)
    first.pages.chapter.value = chapter.id
    first.pages.files.upload.set_state(file_state({"extra.png": pages[1]}))
    first.pages.hold.value = True
    first.pages.add.click()
    journal = tmp_path / "snapshots.held-pages.json"
    assert journal.exists() and not list((tmp_path / "snapshots").rglob("*held*"))  # beside
    first.close()

    later = UploadPanel(client, store=store)  # another kernel, another day
    later.pages.chapter.value = chapter.id
    assert "1 held page." in later.pages.held_info.value
    later.pages.start.click()
    assert later.message.tone == "success", later.message.text
    assert [(c["pages"], c["credits"]) for c in charges(emulator, workspace, "start")] == [(1, 2)]
    assert "tick Hold when adding pages here" in later.pages.held_info.value  # none left

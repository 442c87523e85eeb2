"""The UploadPanel's form for pages added to a comic chapter, and for starting held pages.

The service has no route that lists a chapter's pages, so the ids of held pages are
known only from the add-pages answers. The form remembers the ids of the pages it held
itself, per chapter, and starts exactly those; with a store, it keeps them in the held
pages' journal beside it (`_held.py`), so a Dashboard or a panel opened later starts
them too. A staged chapter that never ran needs no ids: its first start runs every page
it has.

Before sending, the form re-reads the chapter and refuses in its own words what the
service would refuse: pages for a chapter still running, a page number on a chapter that
has run or with several pages, held pages it has no record of.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import ipywidgets as widgets

from toolkit.errors import InvalidUpload
from toolkit.formatting import count
from toolkit.pricing import quote_pages
from toolkit.widgets._files import PagePicker
from toolkit.widgets._held import HeldPages
from toolkit.widgets._inputs import AUTO, chapter_label, parse_number

if TYPE_CHECKING:
    from toolkit.models import ChapterListItem
    from toolkit.widgets.upload import UploadPanel


class PagesForm(widgets.VBox):
    def __init__(self, panel: UploadPanel) -> None:
        self.panel = panel
        self.chapters: dict[str, ChapterListItem] = {}
        self.held = HeldPages(panel.store)
        self.project = widgets.Dropdown(description="Project", layout={"width": "420px"})
        self.chapter = widgets.Dropdown(description="Chapter", layout={"width": "420px"})
        self.files = PagePicker()
        self.hold = widgets.Checkbox(
            value=False,
            description="Hold: keep the pages without running them",
            indent=False,
            layout=AUTO,
        )
        self.number = widgets.Text(
            description="Page no.", placeholder="after the last", layout={"width": "220px"}
        )
        self.cost = widgets.HTML()
        self.add = widgets.Button(description="Add pages", button_style="primary")
        self.held_info = widgets.HTML()
        self.start = widgets.Button(description="Start held pages", button_style="warning")
        super().__init__(
            [
                self.project,
                self.chapter,
                self.files,
                self.hold,
                self.number,
                self.cost,
                self.add,
                widgets.HTML("<hr>"),
                self.held_info,
                self.start,
            ]
        )
        self.project.observe(lambda _: panel.message.run(self.load_chapters), names="value")
        for box in (self.chapter, self.hold, self.number):
            box.observe(lambda _: self._changed(), names="value")
        self.files.on_change(self._files_changed)
        message = panel.message
        message.on_click(
            self.add,
            self.submit,
            working="Adding…",
            ready=lambda: self.selected is not None and bool(self.files.uploads),
            doing=lambda: f"The pages were not added to {self._name()}",
            owner=self,
        )
        message.on_click(
            self.start,
            self.start_held,
            working="Starting…",
            ready=lambda: self.selected is not None and self._start_pages(self.selected) > 0,
            doing=lambda: f"{self._name()} was not started",
            owner=self,
        )

    @property
    def selected(self) -> ChapterListItem | None:
        return self.chapters.get(self.chapter.value or "")

    def _name(self) -> str:
        chapter = self.selected
        project = self.panel.projects.get(self.project.value or "")
        if chapter is None:
            return "the chapter"
        return f"{chapter_label(chapter)} of {project.name}" if project else chapter_label(chapter)

    def load_chapters(self) -> None:
        """Re-read the chosen project's chapters (their started and running state)."""
        project_id = self.project.value
        chapters = self.panel.client.list_chapters(project_id) if project_id else []
        self.chapters = {c.id: c for c in chapters}
        keep = self.chapter.value if self.chapter.value in self.chapters else None
        options = [(self._label(c), c.id) for c in chapters]
        self.chapter.options = options
        self.chapter.value = keep or (options[-1][1] if options else None)
        self._changed()

    def _label(self, chapter: ChapterListItem) -> str:
        if not chapter.started:
            state = "staged"
        elif chapter.processing:
            state = "running"
        else:
            state = "failed" if chapter.failed else "ran"
        return f"{chapter_label(chapter)} ({count(chapter.page_count, 'page')}, {state})"

    def _files_changed(self) -> None:
        self._changed()
        self.panel.message.check(self.files.check, owner=self)

    def _changed(self) -> None:
        self.panel.message.forget(self)
        self.update_cost()
        self.panel.message.update_buttons()

    def update_cost(self) -> None:
        chapter = self.selected
        project = self.panel.projects.get(self.project.value or "")
        if chapter is None or project is None:
            self.cost.value = self.held_info.value = ""
            return
        pages = len(self.files.uploads)
        store = self.panel.store
        if not pages:
            self.cost.value = "Choose the page images to add."
        elif self.hold.value:
            self.cost.value = "Held pages cost nothing until they are started."
        elif not chapter.started:
            quote = quote_pages(project, (chapter.page_count or 0) + pages, store=store)
            self.cost.value = quote.sentence(run="Adding them starts the chapter; the run")
        else:
            quote = quote_pages(project, pages, store=store)
            self.cost.value = quote.sentence(run="The new pages run by themselves; the run")
        self.held_info.value = self._start_text(chapter)

    def _start_pages(self, chapter: ChapterListItem) -> int:
        if not chapter.started:
            return chapter.page_count or 0
        return len(self.held.ids(chapter.id))

    def _start_text(self, chapter: ChapterListItem) -> str:
        project = self.panel.projects[chapter.project_id or ""]
        pages = self._start_pages(chapter)
        if not pages:
            if chapter.started:
                return "No held pages: tick Hold when adding pages here, then start them."
            return "No pages yet: add pages, then start them."
        quote = quote_pages(project, pages, store=self.panel.store)
        return f"{count(pages, 'held page')}. " + quote.sentence(run="Starting them")

    def submit(self) -> None:
        chapter = self._chosen()
        pages = self.files.uploads
        position = parse_number(self.number.value, what="page number")
        if position is not None and chapter.started:
            raise InvalidUpload(
                f"{self._name()} has run, so new pages go after its last page: leave the page "
                "number empty."
            )
        if position is not None and len(pages) != 1:
            raise InvalidUpload(
                f"A page number places one page, and {count(len(pages), 'page')} are chosen: "
                "choose one page, or leave the page number empty."
            )
        added = self.panel.client.add_pages(
            chapter.id, pages=[u.as_file() for u in pages], hold=self.hold.value, position=position
        )
        if self.hold.value:
            at = self.panel.client.last_response_date
            self.held.held(chapter.id, [page.id for page in added.pages], at)
            what = "held; start them with 'Start held pages'"
        else:
            what = "they are running"
        self.files.clear()
        self.number.value = ""
        self.panel.message.show(
            f"Added {count(len(added.pages), 'page')} to {self._name()}: {what}.",
            "success",
            owner=self,
        )
        self.load_chapters()

    def start_held(self) -> None:
        chapter = self._chosen()
        if not chapter.started:
            result = self.panel.client.start_chapter(chapter.id)
        else:
            page_ids = self.held.ids(chapter.id)
            if not page_ids:
                raise InvalidUpload(
                    f"{self._name()} has run, and no held pages were added to it in this "
                    "panel: add pages here with Hold ticked, then start them."
                )
            result = self.panel.client.start_chapter(chapter.id, page_ids=page_ids)
        self.held.started(chapter.id, self.panel.client.last_response_date)
        self.panel.message.show(
            f"Started {self._name()}: {count(result.page_count, 'page')} running.",
            "success",
            owner=self,
        )
        self.load_chapters()

    def _chosen(self) -> ChapterListItem:
        self.load_chapters()  # fresh state: it may have started or finished meanwhile
        chapter = self.selected
        if chapter is None:
            raise InvalidUpload("No chapter chosen: pick a project and one of its chapters.")
        if chapter.processing:
            raise InvalidUpload(
                f"{self._name()} is still running: wait until it has finished, then try again."
            )
        return chapter

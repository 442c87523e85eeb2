"""The UploadPanel's forms for a new chapter: a comic from page images, a novel from text.

Each form shows what its run will cost before anything is sent, checks what it can in
the panel's own terms first (a chapter number already taken), and sends through the
client's `create_chapter` at an explicit number (the one typed, else the next free
one), so a retry after a lost answer never creates the chapter twice (the client names
the chapter it finds, `UnconfirmedCreate`, and the panel shows that in one line).
"Create chapter" is enabled only while the form has something to send; after a chapter
is created the form is empty again.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import ipywidgets as widgets

from toolkit.client import check_text
from toolkit.formatting import count
from toolkit.pricing import quote_pages, quote_text
from toolkit.widgets._files import PagePicker
from toolkit.widgets._inputs import (
    AUTO,
    decode_text,
    next_free,
    parse_number,
    refuse_taken,
    uploads_of,
)

if TYPE_CHECKING:
    from toolkit.models import Project
    from toolkit.widgets.upload import UploadPanel


def _number_box(description: str) -> widgets.Text:
    return widgets.Text(description=description, placeholder="next", layout={"width": "220px"})


class _ChapterForm(widgets.VBox):
    """What both forms share: the project picker, the number box, the create button."""

    panel: UploadPanel
    project: widgets.Dropdown
    number: widgets.Text

    def _number(self, project: Project) -> int:
        """The number to create the chapter at, refused in panel terms when taken."""
        chapters = self.panel.client.list_chapters(project.id)
        typed = parse_number(self.number.value)
        if typed is None:
            return next_free(chapters)
        refuse_taken(typed, chapters, project)
        return typed

    def _headline(self) -> str:
        project = self.panel.projects.get(self.project.value or "")
        where = f" in {project.name}" if project else ""
        typed = self.number.value.strip()
        return (
            f"Chapter {typed} was not created{where}"
            if typed.isdigit()
            else (f"The chapter was not created{where}")
        )

    def _changed(self) -> None:
        self.panel.message.forget(self)  # first: the cost line may find a new refusal
        self.update_cost()
        self.panel.message.update_buttons()

    def update_cost(self) -> None:
        raise NotImplementedError


class ComicForm(_ChapterForm):
    """A new comic chapter from uploaded pages (runs at once), or an empty staged one."""

    def __init__(self, panel: UploadPanel) -> None:
        self.panel = panel
        self.project = widgets.Dropdown(description="Project", layout={"width": "420px"})
        self.files = PagePicker()
        self.number = _number_box("Chapter no.")
        self.staged = widgets.Checkbox(
            value=False,
            description="Staged: create it empty, pages follow later",
            indent=False,
            layout=AUTO,
        )
        self.cost = widgets.HTML()
        self.create = widgets.Button(description="Create chapter", button_style="primary")
        super().__init__(
            [self.project, self.files, self.number, self.staged, self.cost, self.create]
        )
        self.files.on_change(self._files_changed)
        for box in (self.project, self.staged, self.number):
            box.observe(lambda _: self._changed(), names="value")
        panel.message.on_click(
            self.create,
            self.submit,
            working="Creating…",
            ready=lambda: (
                bool(self.project.value) and (self.staged.value or bool(self.files.uploads))
            ),
            doing=self._headline,
            owner=self,
        )

    def _files_changed(self) -> None:
        self._changed()
        self.panel.message.check(self.files.check, owner=self)

    def update_cost(self) -> None:
        project = self.panel.projects.get(self.project.value or "")
        if project is None:
            self.cost.value = ""
        elif self.staged.value:
            self.cost.value = "A staged chapter costs nothing until its pages run."
        elif not self.files.uploads:
            self.cost.value = "Choose the page images (or tick Staged)."
        else:
            quote = quote_pages(project, len(self.files.uploads), store=self.panel.store)
            self.cost.value = quote.sentence()

    def submit(self) -> None:
        project = self.panel.project(self.project.value)
        number = self._number(project)
        client = self.panel.client
        if self.staged.value:
            chapter = client.create_chapter(project.id, staged=True, position=number)
            done = (
                f"Created staged chapter {chapter.position} in {project.name}; add its pages "
                "in the tab “Add & start pages”, where it is chosen."
            )
        else:
            quote = quote_pages(project, len(self.files.uploads), store=self.panel.store)
            files = [upload.as_file() for upload in self.files.uploads]
            chapter = client.create_chapter(project.id, pages=files, position=number)
            done = (
                f"Created chapter {chapter.position} in {project.name} with "
                f"{count(len(chapter.pages), 'page')}; it is running, for {quote.label}."
            )
        self.files.clear()
        self.number.value = ""
        self.staged.value = False
        self.panel.message.show(done, "success", owner=self)
        self.panel.chapters_changed(project.id, chapter.id)


class NovelForm(_ChapterForm):
    """A new novel chapter from typed or pasted text, or from an uploaded .txt file."""

    def __init__(self, panel: UploadPanel) -> None:
        self.panel = panel
        self.project = widgets.Dropdown(description="Project", layout={"width": "420px"})
        self.text = widgets.Textarea(
            placeholder="Paste the chapter text here, or upload a .txt file",
            layout={"width": "640px", "height": "180px"},
        )
        self.file = widgets.FileUpload(accept=".txt,text/plain", description="Text file")
        self.number = _number_box("Chapter no.")
        self.cost = widgets.HTML()
        self.create = widgets.Button(description="Create chapter", button_style="primary")
        super().__init__([self.project, self.file, self.text, self.number, self.cost, self.create])
        self.file.observe(lambda _: panel.message.run(self._load_file, owner=self), names="value")
        for box in (self.project, self.text, self.number):
            box.observe(lambda _: self._changed(), names="value")
        panel.message.on_click(
            self.create,
            self.submit,
            working="Creating…",
            ready=lambda: bool(self.project.value) and bool(self.text.value.strip()),
            doing=self._headline,
            owner=self,
        )

    def _load_file(self) -> None:
        files = uploads_of(self.file.value)
        if files:
            self.text.value = decode_text(files[0])

    def update_cost(self) -> None:
        project = self.panel.projects.get(self.project.value or "")
        if project is None or not self.text.value.strip():
            self.cost.value = "Paste the chapter's text, or upload a .txt file." if project else ""
            return
        # The client's own check: text over the limit is refused as it is typed.
        if not self.panel.message.check(lambda: check_text(self.text.value), owner=self):
            self.cost.value = ""
            return
        quote = quote_text(project, self.text.value, store=self.panel.store)
        self.cost.value = f"{len(self.text.value):,} characters. " + quote.sentence()

    def submit(self) -> None:
        project = self.panel.project(self.project.value)
        number = self._number(project)
        quote = quote_text(project, self.text.value, store=self.panel.store)
        chapter = self.panel.client.create_chapter(
            project.id, text=self.text.value, position=number
        )
        self.text.value = ""
        self.file.value = ()
        self.number.value = ""
        self.panel.message.show(
            f"Created chapter {chapter.position} in {project.name}; "
            f"it is running, for {quote.label}.",
            "success",
            owner=self,
        )
        self.panel.chapters_changed(project.id, chapter.id)

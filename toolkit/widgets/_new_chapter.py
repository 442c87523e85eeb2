"""The UploadPanel's forms for a new chapter: a comic from page images, a novel from text.

Each form shows what its run will cost before anything is sent, and sends through the
client's `create_chapter`, whose upload checks refuse bad files with their reasons.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import ipywidgets as widgets

from toolkit.client.uploads import check_text
from toolkit.errors import InvalidUpload
from toolkit.widgets._files import PageFiles
from toolkit.widgets._inputs import AUTO, count, decode_text, estimate, parse_number, uploads_of

if TYPE_CHECKING:
    from toolkit.models import Project
    from toolkit.widgets.upload import UploadPanel


def _number_box(description: str) -> widgets.Text:
    return widgets.Text(description=description, placeholder="next", layout={"width": "220px"})


class ComicForm(widgets.VBox):
    """A new comic chapter from uploaded pages (runs at once), or an empty staged one."""

    def __init__(self, panel: UploadPanel) -> None:
        self.panel = panel
        self.project = widgets.Dropdown(description="Project", layout={"width": "420px"})
        self.files = PageFiles()
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
        self.project.observe(lambda _: self.update_cost(), names="value")
        self.staged.observe(lambda _: self.update_cost(), names="value")
        panel.message.on_click(self.create, self.submit)

    def _files_changed(self) -> None:
        self.update_cost()
        self.panel.message.check(self.files.check)

    def update_cost(self) -> None:
        project = self.panel.projects.get(self.project.value or "")
        if project is None:
            self.cost.value = ""
        elif self.staged.value:
            self.cost.value = "A staged chapter costs nothing until its pages run."
        elif not self.files.uploads:
            self.cost.value = "Choose the page images (or tick Staged)."
        else:
            estimate_ = estimate(project, pages=len(self.files.uploads), store=self.panel.store)
            self.cost.value = estimate_.sentence()

    def submit(self) -> None:
        project = self.panel.project(self.project.value)
        position = parse_number(self.number.value)
        client = self.panel.client
        if self.staged.value:
            chapter = client.create_chapter(project.id, staged=True, position=position)
            done = (
                f"Created staged chapter {chapter.position} in {project.name}; add its pages below."
            )
        else:
            if not self.files.uploads:
                raise InvalidUpload("no page images chosen: choose them, or tick Staged")
            cost = estimate(project, pages=len(self.files.uploads), store=self.panel.store)
            files = [upload.as_file() for upload in self.files.uploads]
            chapter = client.create_chapter(project.id, pages=files, position=position)
            pages = count(len(chapter.pages), "page")
            done = (
                f"Created chapter {chapter.position} in {project.name} with {pages}; "
                f"it is running (about {cost.credits:g} credits)."
            )
        self.files.clear()
        self.number.value = ""
        self.panel.message.show(done, "success")
        self.panel.chapters_changed(project.id, chapter.id)


class NovelForm(widgets.VBox):
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
        self.file.observe(lambda _: panel.message.run(self._load_file), names="value")
        self.text.observe(lambda _: self.update_cost(), names="value")
        self.project.observe(lambda _: self.update_cost(), names="value")
        panel.message.on_click(self.create, self.submit)

    def _load_file(self) -> None:
        files = uploads_of(self.file.value)
        if files:
            self.text.value = decode_text(files[0])

    def update_cost(self) -> None:
        project = self.panel.projects.get(self.project.value or "")
        if project is None or not self.text.value.strip():
            self.cost.value = ""
            return
        # The client's own check: text over the limit is refused as it is typed.
        if not self.panel.message.check(lambda: check_text(self.text.value)):
            self.cost.value = ""
            return
        cost = estimate(project, text=self.text.value, store=self.panel.store)
        self.cost.value = f"{len(self.text.value):,} characters. " + cost.sentence()

    def submit(self) -> None:
        project: Project = self.panel.project(self.project.value)
        position = parse_number(self.number.value)
        cost = estimate(project, text=self.text.value, store=self.panel.store)
        chapter = self.panel.client.create_chapter(
            project.id, text=self.text.value, position=position
        )
        self.text.value = ""
        self.file.value = ()
        self.number.value = ""
        self.panel.message.show(
            f"Created chapter {chapter.position} in {project.name}; "
            f"it is running (about {cost.credits:g} credits).",
            "success",
        )
        self.panel.chapters_changed(project.id, chapter.id)

"""`UploadPanel`: new chapters (comic pages or novel text), added pages, held pages started.

Three tabs, one message area. Every action is one call of the public client
(`create_chapter`, `add_pages`, `start_chapter`); each tab shows what the run will cost
before anything is sent. Project pickers offer only the projects of the right kind.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import ipywidgets as widgets

from toolkit.errors import InvalidUpload
from toolkit.widgets._add_pages import PagesForm
from toolkit.widgets._feedback import Feedback
from toolkit.widgets._inputs import project_label
from toolkit.widgets._new_chapter import ComicForm, NovelForm

if TYPE_CHECKING:
    from toolkit.client import Client
    from toolkit.models import Project


class UploadPanel(widgets.VBox):
    """Create chapters, add pages, start held pages, from a notebook.

    ```python
    panel = tk.widgets.UploadPanel(client)            # 1 credit per page per language
    panel = tk.widgets.UploadPanel(client, store=store)   # prices learned from history
    ```
    """

    TITLES = ("New comic chapter", "New novel chapter", "Add & start pages")

    def __init__(self, client: Client, *, store: Any = None) -> None:
        self.client, self.store = client, store
        self.projects: dict[str, Project] = {}
        self.message = Feedback()
        self.reload_button = widgets.Button(description="Reload projects", icon="refresh")
        self.comic = ComicForm(self)
        self.novel = NovelForm(self)
        self.pages = PagesForm(self)
        self.tabs = widgets.Tab(children=[self.comic, self.novel, self.pages], titles=self.TITLES)
        super().__init__([self.reload_button, self.tabs, self.message])
        self.message.on_click(self.reload_button, self.reload)
        self.message.run(self.reload)

    def reload(self) -> None:
        """Re-read the workspace's projects into the pickers."""
        self.projects = {p.id: p for p in self.client.list_projects()}
        self._offer(self.comic.project, "comic")
        self._offer(self.novel.project, "novel")
        self._offer(self.pages.project, "comic")

    def _offer(self, picker: widgets.Dropdown, kind: str) -> None:
        options = [(project_label(p), p.id) for p in self.projects.values() if p.kind == kind]
        keep = picker.value if picker.value in dict((v, k) for k, v in options) else None
        picker.options = options
        picker.value = keep or (options[0][1] if options else None)

    def project(self, project_id: str | None) -> Project:
        """The chosen project, or a readable refusal when there is none."""
        if not project_id or project_id not in self.projects:
            raise InvalidUpload("no project chosen: pick one (or reload the projects)")
        return self.projects[project_id]

    def chapters_changed(self, project_id: str, chapter_id: str) -> None:
        """Offer a new comic chapter at once in the add-pages tab, chosen."""
        if self.projects[project_id].kind != "comic":
            return
        if self.pages.project.value != project_id:
            self.pages.project.value = project_id  # its observer loads the chapters
        else:
            self.pages.load_chapters()
        if chapter_id in self.pages.chapters:
            self.pages.chapter.value = chapter_id

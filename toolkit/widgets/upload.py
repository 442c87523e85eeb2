"""`UploadPanel`: new chapters (comic pages or novel text), added pages, held pages
started, and a whole folder of chapters.

Four tabs, one message area. Every action is one call of the public client
(`create_chapter`, `add_pages`, `start_chapter`) or of `toolkit.batch` for a folder;
each tab shows what the run will cost before anything is sent. Project pickers offer
only the projects of the right kind.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import ipywidgets as widgets

from toolkit.errors import InvalidUpload
from toolkit.widgets._add_pages import PagesForm
from toolkit.widgets._feedback import Feedback
from toolkit.widgets._folder import FolderForm
from toolkit.widgets._inputs import project_label
from toolkit.widgets._new_chapter import ComicForm, NovelForm

if TYPE_CHECKING:
    from toolkit.client import Client
    from toolkit.models import Project
    from toolkit.store import SnapshotStore

__all__ = ["UploadPanel"]


class UploadPanel(widgets.VBox):
    """Create chapters, add pages, start held pages, from a notebook.

    ```python
    panel = tk.widgets.UploadPanel(client)                 # prices are estimates
    panel = tk.widgets.UploadPanel(client, store=store)    # prices learned from history
    panel = tk.widgets.UploadPanel(client, budget=500)     # a folder over 500 credits: asks twice
    ```

    Args:
        client: The client of the workspace the chapters go to.
        store: A snapshot store: the prices shown before sending are learned from its
            history instead of estimated from the price list.
        budget: Credits above which sending a folder asks for a second confirmation.
    """

    TITLES = ("New comic chapter", "New novel chapter", "Add & start pages", "Upload a folder")

    def __init__(
        self, client: Client, *, store: SnapshotStore | None = None, budget: int | None = None
    ) -> None:
        self.client, self.store = client, store
        self.projects: dict[str, Project] = {}
        self.message = Feedback()
        self.reload_button = widgets.Button(description="Reload projects", icon="refresh")
        self.comic = ComicForm(self)
        self.novel = NovelForm(self)
        self.pages = PagesForm(self)
        self.folder = FolderForm(self, budget=budget)
        self.tabs = widgets.Tab(
            children=[self.comic, self.novel, self.pages, self.folder], titles=self.TITLES
        )
        super().__init__([self.reload_button, self.tabs, self.message])
        # One message area under four tabs: it speaks of the tab shown, never another's.
        self.tabs.observe(
            lambda change: self.message.switch(
                self.tabs.children[change["new"]], self.tabs.children
            ),
            names="selected_index",
        )
        self.message.on_click(self.reload_button, self.reload, working="Reloading…")
        self.message.run(self.reload, doing="The projects could not be read")

    def reload(self) -> None:
        """Re-read the workspace's projects into the pickers."""
        self.projects = {p.id: p for p in self.client.list_projects()}
        self._offer(self.comic.project, "comic")
        self._offer(self.novel.project, "novel")
        self._offer(self.pages.project, "comic")
        self._offer(self.folder.project, None)
        self.message.update_buttons()

    def _offer(self, picker: widgets.Dropdown, kind: str | None) -> None:
        options = [
            (project_label(p), p.id)
            for p in self.projects.values()
            if kind is None or p.kind == kind
        ]
        keep = picker.value if picker.value in dict((v, k) for k, v in options) else None
        picker.options = options
        picker.value = keep or (options[0][1] if options else None)

    def project(self, project_id: str | None) -> Project:
        """The chosen project, or a readable refusal when there is none.

        Args:
            project_id: The id a tab's project picker holds (None: nothing picked).

        Raises:
            InvalidUpload: No project is chosen, or the id is not one of the panel's.
        """
        if not project_id or project_id not in self.projects:
            raise InvalidUpload("No project chosen: pick one (or reload the projects).")
        return self.projects[project_id]

    def chapters_changed(self, project_id: str, chapter_id: str) -> None:
        """Offer a new comic chapter at once in the add-pages tab, chosen.

        Args:
            project_id: The project the chapter was created in.
            chapter_id: The new chapter (a novel's is not offered: its text is sent whole).
        """
        if self.projects[project_id].kind != "comic":
            return
        if self.pages.project.value != project_id:
            self.pages.project.value = project_id  # its observer loads the chapters
        else:
            self.pages.load_chapters()
        if chapter_id in self.pages.chapters:
            self.pages.chapter.value = chapter_id

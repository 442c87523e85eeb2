"""`RescanPanel`: re-scan failed chapters, several at once, after an explicit confirmation.

Decisions where the spec and DESIGN are silent:
- Novel chapters are listed apart and cannot be chosen: the service refuses to re-scan
  them (400); the panel says to upload their text as a new chapter instead.
- The confirmation names the chapters and the credits as they were when "Re-scan" was
  pressed; changing the choice withdraws the question, so a confirmation never applies
  to chapters it did not name.
- Chapters are re-scanned one by one; a refusal of one (402, 409, ...) is reported on
  its own line and the others still go ahead.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import ipywidgets as widgets

from toolkit.widgets._feedback import Feedback, Tone, describe
from toolkit.widgets._inputs import AUTO, chapter_label, rescan_estimate

if TYPE_CHECKING:
    from toolkit.client import Client
    from toolkit.models import ChapterListItem, Project

WARNING = (
    "A re-scan runs a chapter again from its page images. It discards every translation, "
    "every edit and every prepared file of the chapter, and the run is charged again "
    "(glossary terms are kept)."
)


class RescanPanel(widgets.VBox):
    """Choose chapters (failed ones by default) and re-scan them after confirming.

    ```python
    panel = tk.widgets.RescanPanel(client)
    ```
    """

    def __init__(self, client: Client, *, store: Any = None) -> None:
        self.client, self.store = client, store
        self.projects: dict[str, Project] = {}
        self.chapters: dict[str, ChapterListItem] = {}
        self.novels: list[ChapterListItem] = []
        self.pending: list[str] = []
        self._loading = False

        self.warning = widgets.HTML(f'<p class="tk-warning"><b>&#9888; {WARNING}</b></p>')
        self.show_all = widgets.Checkbox(
            value=False,
            description="Show every chapter, not only failed ones",
            indent=False,
            layout=AUTO,
        )
        self.refresh_button = widgets.Button(description="Refresh", icon="refresh")
        self.choice = widgets.SelectMultiple(
            options=[], rows=8, description="Chapters", layout={"width": "640px"}
        )
        self.notes = widgets.HTML()
        self.cost = widgets.HTML()
        self.rescan = widgets.Button(description="Re-scan…", button_style="warning")
        self.question = widgets.HTML()
        self.confirm = widgets.Button(
            description="Yes, discard and re-scan", button_style="danger", layout={"width": "220px"}
        )
        self.cancel = widgets.Button(description="Cancel")
        self.confirm_box = widgets.VBox(
            [self.question, widgets.HBox([self.confirm, self.cancel])],
            layout={"display": "none"},
        )
        self.message = Feedback()
        super().__init__(
            [
                self.warning,
                widgets.HBox([self.show_all, self.refresh_button]),
                self.choice,
                self.notes,
                self.cost,
                self.rescan,
                self.confirm_box,
                self.message,
            ]
        )
        self.message.on_click(self.refresh_button, self.refresh)
        self.message.on_click(self.rescan, self.ask)
        self.message.on_click(self.confirm, self.run)
        self.cancel.on_click(lambda _: self.withdraw("Nothing was re-scanned."))
        self.show_all.observe(lambda _: self.message.run(self.refresh), names="value")
        self.choice.observe(self._chosen, names="value")
        self.message.run(self.refresh)

    # -- listing ------------------------------------------------------------------------

    def refresh(self) -> None:
        """Re-read every project's chapters; offer the failed ones (or all of them)."""
        projects = self.client.list_projects()
        self.projects = {p.id: p for p in projects}
        listed: list[ChapterListItem] = []
        for project in projects:
            listed += [
                c for c in self.client.list_chapters(project.id) if self.show_all.value or c.failed
            ]
        self.novels = [c for c in listed if self._kind(c) == "novel"]
        comics = [c for c in listed if self._kind(c) != "novel"]
        self.chapters = {c.id: c for c in comics}
        keep = [i for i in self.choice.value if i in self.chapters]
        self._loading = True  # new options reset the choice; judge only the final one
        try:
            self.choice.options = [(self._label(c), c.id) for c in comics]
            self.choice.value = tuple(keep)
        finally:
            self._loading = False
        self.notes.value = self._notes(comics)
        self._chosen()

    def _kind(self, chapter: ChapterListItem) -> str | None:
        project = self.projects.get(chapter.project_id or "")
        return project.kind if project else None

    def _label(self, chapter: ChapterListItem) -> str:
        project = self.projects[chapter.project_id or ""]
        state = "running" if chapter.processing else chapter.status or "not started"
        reason = f" - failed: {chapter.failure_reason}" if chapter.failed else ""
        return f"{project.name} / {chapter_label(chapter)} ({state}){reason}"

    def _notes(self, comics: list[ChapterListItem]) -> str:
        lines = []
        if not comics:
            lines.append("No failed chapters." if not self.show_all.value else "No chapters.")
        if self.novels:
            lines.append(
                f"{len(self.novels)} novel chapter(s) not listed: a novel chapter cannot be "
                "re-scanned; upload its text as a new chapter instead."
            )
        return "<br>".join(lines)

    # -- choosing and confirming -------------------------------------------------------

    def selected(self) -> list[ChapterListItem]:
        return [self.chapters[i] for i in self.choice.value if i in self.chapters]

    def _chosen(self, _change: object = None) -> None:
        if self._loading:
            return
        chosen = self.selected()
        if chosen:
            cost = rescan_estimate(self.projects, chosen, store=self.store)
            self.cost.value = f"{len(chosen)} chapter(s), {cost.units} pages: " + cost.sentence(
                run="Re-scanning them"
            )
        else:
            self.cost.value = "Choose the chapters to re-scan."
        if self.pending and list(self.choice.value) != self.pending:
            self.withdraw("The choice changed: press Re-scan again to confirm the new choice.")

    def ask(self) -> None:
        """Show the confirmation for the chosen chapters; nothing is sent yet."""
        chosen = self.selected()
        if not chosen:
            self.message.show("Choose at least one chapter to re-scan.", "warning")
            return
        self.pending = [c.id for c in chosen]
        cost = rescan_estimate(self.projects, chosen, store=self.store)
        names = "; ".join(self._label(c) for c in chosen)
        self.question.value = (
            f'<p class="tk-question">Re-scan {len(chosen)} chapter(s): {names}?<br>'
            f"<b>{WARNING}</b><br>{cost.sentence(run='This')}</p>"
        )
        self.confirm_box.layout.display = ""
        self.message.clear()

    def withdraw(self, why: str) -> None:
        self.pending = []
        self.confirm_box.layout.display = "none"
        self.message.show(why, "info")

    def run(self) -> None:
        """Re-scan the chapters named in the confirmation (only after `ask`)."""
        ids, self.pending = self.pending, []
        self.confirm_box.layout.display = "none"
        if not ids:
            self.message.show("Nothing to confirm: press Re-scan first.", "warning")
            return
        lines, failures = [], 0
        for chapter_id in ids:
            chapter = self.chapters[chapter_id]
            name = f"{self.projects[chapter.project_id or ''].name} / {chapter_label(chapter)}"
            try:
                result = self.client.rescan_chapter(chapter_id)
            except Exception as exc:
                failures += 1
                lines.append(f"{name}: not re-scanned. {describe(exc)}")
            else:
                lines.append(
                    f"{name}: re-scan queued, {result.cleared_regions} translated lines discarded."
                )
        tone: Tone = "success" if not failures else "error" if failures == len(ids) else "warning"
        self.message.run(self.refresh)
        self.message.show("\n".join(lines), tone)

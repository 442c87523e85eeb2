"""`RescanPanel`: re-scan failed chapters, several at once, after an explicit confirmation.

Decisions where the spec and DESIGN are silent:
- Novel chapters are listed apart and cannot be chosen: the service refuses to re-scan
  them (400); the panel says to upload their text as a new chapter instead.
- The confirmation names the chapters and the credits as they were when "Re-scan" was
  pressed; changing the choice withdraws the question, so a confirmation never applies
  to chapters it did not name. A choice that costs more than the budget set in the
  panel asks a second time.
- A chapter still running is refused before anything is sent (the service would refuse
  it too): it can be re-scanned once it has finished.
- Chapters are re-scanned one by one; a refusal of one (402, ...) is reported on its own
  line and the others still go ahead.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import ipywidgets as widgets

from toolkit.errors import InvalidUpload
from toolkit.formatting import count, escape
from toolkit.pricing import quote_rescans
from toolkit.widgets._feedback import Feedback, Tone, error_message
from toolkit.widgets._inputs import AUTO, BudgetBox, chapter_label

if TYPE_CHECKING:
    from toolkit.client import Client
    from toolkit.models import ChapterListItem, Project
    from toolkit.store import SnapshotStore

__all__ = ["RescanPanel"]

_WARNING = (
    "A re-scan runs a chapter again from its page images. It discards every translation, "
    "every edit and every prepared file of the chapter, and the run is charged again "
    "(glossary terms are kept)."
)


class RescanPanel(widgets.VBox):
    """Choose chapters (failed ones by default) and re-scan them after confirming.

    ```python
    panel = tk.widgets.RescanPanel(client, budget=200)   # over 200 credits: asks twice
    ```

    Args:
        client: The client of the workspace whose chapters are re-scanned.
        store: A snapshot store: the price of the re-scans is learned from its history
            instead of estimated from the price list.
        budget: Credits above which a re-scan asks for a second confirmation.
    """

    def __init__(
        self, client: Client, *, store: SnapshotStore | None = None, budget: int | None = None
    ) -> None:
        self.client, self.store = client, store
        self.projects: dict[str, Project] = {}
        self.chapters: dict[str, ChapterListItem] = {}
        self.novels: list[ChapterListItem] = []
        self.pending: list[str] = []
        self.over_budget = False
        self.asked_again = False
        self._loading = False

        self.warning = widgets.HTML(
            f'<p class="tk-warning" style="color:#92400e"><b>Warning:</b> {_WARNING}</p>'
        )
        self.show_all = widgets.Checkbox(
            value=False,
            description="Show every chapter, not only failed ones",
            indent=False,
            layout=AUTO,
        )
        self.refresh_button = widgets.Button(description="Refresh", icon="refresh")
        self.choice = widgets.SelectMultiple(
            options=[],
            rows=8,
            description="Chapters",
            layout={"width": "100%", "max_width": "900px"},
        )
        self.notes = widgets.HTML()
        self.budget = BudgetBox(budget)
        self.cost = widgets.HTML()
        self.rescan = widgets.Button(description="Re-scan…", button_style="warning")
        self.question = widgets.HTML()
        self.confirm = widgets.Button(
            description="Yes, discard and re-scan", button_style="danger", layout={"width": "auto"}
        )
        # Over the budget, a second button asks again: the second click of a double click
        # lands on the first button, now disabled, so it cannot answer the second question.
        self.confirm_again = widgets.Button(
            description="Yes, over the budget: re-scan",
            button_style="danger",
            layout={"width": "auto", "display": "none"},
        )
        self.cancel = widgets.Button(description="Cancel")
        self.confirm_box = widgets.VBox(
            [self.question, widgets.HBox([self.confirm, self.confirm_again, self.cancel])],
            layout={"display": "none"},
        )
        self.message = Feedback()
        super().__init__(
            [
                self.warning,
                widgets.HBox([self.show_all, self.refresh_button]),
                self.choice,
                self.notes,
                self.budget,
                self.cost,
                self.rescan,
                self.confirm_box,
                self.message,
            ]
        )
        message = self.message
        message.on_click(self.refresh_button, self.refresh, working="Refreshing…")
        message.on_click(
            self.rescan, self.ask, working="Checking…", ready=lambda: bool(self.selected())
        )
        message.on_click(
            self.confirm,
            self.confirmed,
            working="Re-scanning…",
            ready=lambda: bool(self.pending) and not self.asked_again,
            doing="Nothing was re-scanned",
        )
        message.on_click(
            self.confirm_again,
            self.run,
            working="Re-scanning…",
            ready=lambda: bool(self.pending) and self.asked_again,
            doing="Nothing was re-scanned",
        )
        self.cancel.on_click(lambda _: self.withdraw("Nothing was re-scanned."))
        self.show_all.observe(lambda _: message.run(self.refresh), names="value")
        self.choice.observe(self._chosen, names="value")
        self.budget.input.observe(self._chosen, names="value")
        message.run(self.refresh, doing="The chapters could not be read")

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

    def name(self, chapter: ChapterListItem) -> str:
        """How the panel names a chapter: `Project / Chapter 3`.

        Args:
            chapter: A chapter of one of the panel's projects.
        """
        return f"{self.projects[chapter.project_id or ''].name} / {chapter_label(chapter)}"

    def _label(self, chapter: ChapterListItem) -> str:
        if chapter.processing:
            state = "running"
        elif chapter.failed:
            state = "failed"  # the reason is below the list, in full: a list cuts long lines
        elif chapter.started is False:
            state = "staged"
        else:
            state = (chapter.status or "not finished").replace("_", " ")
        return f"{self.name(chapter)} ({count(chapter.page_count, 'page')}) - {state}"

    def _notes(self, comics: list[ChapterListItem]) -> str:
        lines = []
        if not comics:
            lines.append("No failed chapters." if not self.show_all.value else "No chapters.")
        reasons = "".join(
            f"<li>{escape(self.name(c))}: {escape(c.failure_reason or 'no reason given')}</li>"
            for c in comics
            if c.failed
        )
        if reasons:
            lines.append(
                f'Why they failed:<ul class="tk-reasons" style="white-space:normal">{reasons}</ul>'
            )
        if self.novels:
            lines.append(
                f"{count(len(self.novels), 'novel chapter')} not listed: a novel chapter cannot "
                "be re-scanned; upload its text as a new chapter instead."
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
            quote = quote_rescans(self.projects, chosen, store=self.store)
            pages = sum(c.page_count or 0 for c in chosen)
            what = f"{count(len(chosen), 'chapter')}, {count(pages, 'page')}"
            run = "Re-scanning it" if len(chosen) == 1 else "Re-scanning them"
            self.cost.value = f"{what}: {escape(quote.sentence(run=run))}"
        else:
            self.cost.value = "Choose the chapters to re-scan."
        if self.pending:
            self.withdraw("The choice changed: press Re-scan again to confirm the new choice.")
        self.message.update_buttons()

    def ask(self) -> None:
        """Show the confirmation for the chosen chapters; nothing is sent yet."""
        self.refresh()  # fresh states: a chapter may have started meanwhile
        chosen = self.selected()
        running = [c for c in chosen if c.processing]
        if running:
            names = ", ".join(self.name(c) for c in running)
            raise InvalidUpload(
                f"{names} {'is' if len(running) == 1 else 'are'} still running: re-scan "
                "once the run has finished."
            )
        quote = quote_rescans(self.projects, chosen, store=self.store)
        names = "; ".join(self.name(c) for c in chosen)
        over = self.budget.value and quote.credits > self.budget.value
        budget = (
            f"<br><b>That is over the budget of {self.budget.value:,} credits.</b>" if over else ""
        )
        self.question.value = (
            f'<p class="tk-question">Re-scan {count(len(chosen), "chapter")}: {names}?<br>'
            f"<b>{_WARNING}</b><br>{quote.sentence(run='This')}{budget}</p>"
        )
        self.pending = [c.id for c in chosen]
        self.over_budget, self.asked_again = bool(over), False
        self.confirm_again.layout.display = "none"
        self.confirm_box.layout.display = ""
        self.message.clear()

    def withdraw(self, why: str) -> None:
        """Drop the re-scans waiting for confirmation and say why.

        Args:
            why: The message shown in their place.
        """
        self.pending, self.asked_again = [], False
        self.confirm_box.layout.display = "none"
        self.message.show(why, "info")
        self.message.update_buttons()

    def confirmed(self) -> None:
        """The confirmation was given: over the budget, ask once more; else re-scan."""
        if self.over_budget:
            self.asked_again = True
            self.confirm_again.layout.display = ""
            self.message.show(
                "This costs more than the budget set above: confirm once more to go ahead.",
                "warning",
            )
            return
        self.run()

    def run(self) -> None:
        """Re-scan the chapters named in the confirmation (only after `ask`)."""
        ids, self.pending, self.asked_again = self.pending, [], False
        self.confirm_box.layout.display = "none"
        lines, failures = [], 0
        for chapter_id in ids:
            chapter = self.chapters[chapter_id]
            try:
                result = self.client.rescan_chapter(chapter_id)
            except Exception as exc:
                failures += 1
                lines.append(error_message(exc, doing=f"{self.name(chapter)} was not re-scanned"))
            else:
                cleared = count(result.cleared_regions, "translated line")
                lines.append(f"{self.name(chapter)}: re-scan queued, {cleared} discarded.")
        tone: Tone = "success" if not failures else "error" if failures == len(ids) else "warning"
        self.message.run(self.refresh)
        self.message.show("\n".join(lines), tone)

"""The UploadPanel's "Upload a folder" tab: `toolkit.batch` behind a form.

The folder is read on the machine that runs the notebook's kernel (a browser cannot hand
a whole folder to a widget, and large uploads through the notebook's websocket fail).
"Check folder" plans the upload and prices it; nothing is sent until "Upload" is
pressed, and when the price is over the budget set in the panel, it asks once more.
Changing the project, the folder or the budget withdraws the plan, so a confirmation
never applies to anything it did not show.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import ipywidgets as widgets

from toolkit.batch import Progress, UploadInterrupted, UploadPlan, plan_upload, upload
from toolkit.formatting import count, escape, size
from toolkit.widgets._inputs import BudgetBox
from toolkit.widgets._table import rows_table

if TYPE_CHECKING:
    from toolkit.widgets.upload import UploadPanel


class FolderForm(widgets.VBox):
    def __init__(self, panel: UploadPanel, *, budget: int | None) -> None:
        self.panel = panel
        self.plan: UploadPlan | None = None
        self.project = widgets.Dropdown(description="Project", layout={"width": "420px"})
        self.folder = widgets.Text(
            description="Folder",
            placeholder="a folder of chapter-01/ page folders or .txt files, on this machine",
            layout={"width": "640px"},
        )
        self.budget = BudgetBox(budget)
        self.check = widgets.Button(description="Check folder", icon="search")
        self.plan_view = widgets.HTML()
        self.send = widgets.Button(description="Upload", button_style="primary")
        self.question = widgets.HTML()
        self.confirm = widgets.Button(button_style="danger", layout={"width": "auto"})
        self.cancel = widgets.Button(description="Cancel")
        self.confirm_box = widgets.VBox(
            [self.question, widgets.HBox([self.confirm, self.cancel])], layout={"display": "none"}
        )
        self.progress = widgets.IntProgress(value=0, min=0, max=1, layout={"width": "420px"})
        self.progress_text = widgets.HTML()
        self.progress_box = widgets.HBox(
            [self.progress, self.progress_text], layout={"display": "none"}
        )
        self.summary = widgets.HTML()
        super().__init__(
            [
                self.project,
                self.folder,
                self.budget,
                self.check,
                self.plan_view,
                self.send,
                self.confirm_box,
                self.progress_box,
                self.summary,
            ]
        )
        for box in (self.project, self.folder, self.budget.input):
            box.observe(lambda _: self.withdraw(), names="value")
        message = panel.message
        message.on_click(
            self.check,
            self.make_plan,
            working="Checking…",
            ready=lambda: bool(self.project.value and self.folder.value.strip()),
            doing="The folder was not checked",
            owner=self,
        )
        message.on_click(
            self.send,
            self.ask,
            working="Uploading…",
            ready=lambda: self.plan is not None and self.plan.ready and bool(self.plan.to_send),
            doing="The folder was not uploaded",
            owner=self,
        )
        message.on_click(
            self.confirm,
            self.run,
            working="Uploading…",
            ready=lambda: self.plan is not None and self.confirm_box.layout.display != "none",
            doing="The folder was not uploaded",
            owner=self,
        )
        self.cancel.on_click(lambda _: self.withdraw("Nothing was uploaded."))

    def make_plan(self) -> None:
        """Read the folder and show what would be sent, skipped or refused, and the price."""
        self.withdraw()
        self.summary.value = ""
        self.progress_box.layout.display = "none"
        project = self.panel.project(self.project.value)
        plan = plan_upload(
            self.panel.client, self.folder.value.strip(), project=project, store=self.panel.store
        )
        lines = [f"<p><b>{escape(plan.headline())}</b></p>"]
        if plan.items:
            lines.append(rows_table(plan.rows()))
        if plan.problems:
            listed = "".join(f"<li>{escape(str(p))}</li>" for p in plan.problems)
            lines.append(
                '<p class="tk-problems" style="color:#b91c1c"><b>Fix first:</b></p>'
                f"<ul>{listed}</ul>"
            )
        self.plan_view.value = "".join(lines)
        self.plan = plan
        if plan.ready and plan.to_send:
            chapters = count(len(plan.to_send), "chapter")
            self.send.description = f"Upload {chapters}, {plan.quote.label}"
        self.panel.message.update_buttons()

    def ask(self) -> None:
        """Send at once, or, over the budget, ask once more first."""
        assert self.plan is not None
        budget = self.budget.value
        if not self.plan.over_budget(budget):
            self.run()
            return
        self.question.value = (
            f'<p class="tk-question">{escape(self.plan.headline())}<br><b>That is over the '
            f"budget of {budget:,} credits.</b> Send it anyway?</p>"
        )
        self.confirm.description = f"Yes, upload for {self.plan.quote.label}"
        self.confirm_box.layout.display = ""
        self.panel.message.update_buttons()

    def run(self) -> None:
        plan, self.plan = self.plan, None
        self.confirm_box.layout.display = "none"
        if plan is None:
            return
        self.plan_view.value = ""  # the progress bar and the summary take its place
        self.progress.max = max(plan.bytes_to_send, 1)
        self.progress.value = 0
        self.progress_box.layout.display = ""
        try:
            summary = upload(self.panel.client, plan, on_progress=self._progressed)
        except UploadInterrupted as stop:  # the kernel was interrupted: say what was done
            summary = stop.summary
        self.summary.value = rows_table(summary.rows())
        self.panel.message.show(
            summary.headline(), "success" if summary.complete else "error", owner=self
        )
        self.send.description = "Upload"

    def _progressed(self, progress: Progress) -> None:
        self.progress.value = progress.bytes_done
        current = f"; sending {progress.current}" if progress.current else ""
        self.progress_text.value = (
            f"{progress.chapters_done} of {count(progress.chapters_total, 'chapter')}, "
            f"{size(progress.bytes_done)} of {size(progress.bytes_total)}{escape(current)}"
        )

    def withdraw(self, why: str | None = None) -> None:
        """Drop the plan (its inputs changed, or the user cancelled)."""
        self.plan = None
        self.confirm_box.layout.display = "none"
        self.send.description = "Upload"
        self.plan_view.value = ""
        self.panel.message.forget(self)
        if why:
            self.panel.message.show(why, "info", owner=self)
        self.panel.message.update_buttons()

"""`Dashboard`: a project's chapters at a glance, refreshed by hand or in the background.

Decisions where the spec and DESIGN are silent:
- A refresh lists the project's chapters (one request) and fetches the detail only of
  chapters that are processing or whose `lastActivityAt` moved since the last refresh,
  so leaving auto-refresh on costs little once the details are known.
- Auto-refresh is a daemon thread that waits on an event between refreshes; the kernel
  stays free, and unticking the box or closing the widget stops it. Refreshes never
  overlap: a lock serialises the thread and the button.
- With a snapshot store, the dashboard can take a snapshot on request and marks
  chapters that `tk.analysis.stalled(store, threshold=stall_threshold)` reports (1 hour
  without progress by default: the service abandons a stalled run after a while, so a
  longer threshold would flag little); it never writes to the store on its own, so
  leaving it open does not fill the history.
"""

from __future__ import annotations

import threading
from datetime import datetime
from typing import TYPE_CHECKING, Any

import ipywidgets as widgets

from toolkit.widgets._feedback import Feedback
from toolkit.widgets._inputs import AUTO, project_label
from toolkit.widgets._table import chapter_table, totals

if TYPE_CHECKING:
    from toolkit.client import Client
    from toolkit.models import ChapterDetail, ChapterListItem, Project

MIN_INTERVAL = 0.05


class Dashboard(widgets.VBox):
    """Pick a project; see its chapters' status, coverage, failures and spend.

    ```python
    dash = tk.widgets.Dashboard(client)
    dash                      # display it; tick "Auto-refresh" to follow running chapters
    ```
    """

    def __init__(
        self,
        client: Client,
        store: Any = None,
        *,
        interval: float = 5.0,
        auto_refresh: bool = False,
        stall_threshold: str = "1h",
    ) -> None:
        self.client, self.store = client, store
        self.stall_threshold = stall_threshold
        self.projects: dict[str, Project] = {}
        self.chapters: list[ChapterListItem] = []
        self.details: dict[str, ChapterDetail] = {}
        self._seen_activity: dict[str, Any] = {}
        self.refreshes = 0
        self._lock = threading.Lock()
        self._stop: threading.Event | None = None
        self._loading = False
        self._refresh_failed = False

        self.picker = widgets.Dropdown(description="Project", layout={"width": "420px"})
        self.refresh_button = widgets.Button(description="Refresh", icon="refresh")
        self.auto = widgets.Checkbox(
            value=False, description="Auto-refresh", indent=False, layout=AUTO
        )
        self.interval = widgets.BoundedFloatText(
            value=interval,
            min=MIN_INTERVAL,
            max=3600,
            description="every (s)",
            layout={"width": "160px"},
        )
        self.snapshot_button = widgets.Button(
            description="Take snapshot",
            icon="camera",
            layout={"display": "" if store is not None else "none"},
        )
        self.updated = widgets.HTML()
        self.message = Feedback()
        self.table = widgets.HTML()
        self.summary = widgets.HTML()
        controls = [self.picker, self.refresh_button, self.auto, self.interval]
        super().__init__(
            [
                widgets.HBox([*controls, self.snapshot_button]),
                self.updated,
                self.message,
                self.table,
                self.summary,
            ]
        )

        self.message.on_click(self.refresh_button, self._reload_and_refresh)
        self.message.on_click(self.snapshot_button, self._take_snapshot)
        self.picker.observe(self._picked, names="value")
        self.auto.observe(self._toggle_auto, names="value")
        self.message.run(self._load_projects)
        self.refresh()
        self.auto.value = auto_refresh

    # -- refreshing ---------------------------------------------------------------------

    def refresh(self) -> None:
        """Fetch the chosen project's chapters and redraw the table."""
        with self._lock:
            try:
                self._refresh()
            except Exception as exc:
                self._refresh_failed = True
                self.message.error(exc)
            else:
                # Clear only what a refresh reported, not a failed snapshot's message.
                if self._refresh_failed:
                    self._refresh_failed = False
                    self.message.clear()

    def _picked(self, _change: object) -> None:
        if not self._loading:
            self.refresh()

    def _reload_and_refresh(self) -> None:
        self._load_projects()
        self.refresh()

    def _load_projects(self) -> None:
        projects = self.client.list_projects()
        self.projects = {p.id: p for p in projects}
        options = [(project_label(p), p.id) for p in projects]
        if options != list(self.picker.options):
            keep = self.picker.value if self.picker.value in self.projects else None
            self._loading = True  # the picker's observer would refresh on every step
            try:
                self.picker.options = options
                self.picker.value = keep or (options[0][1] if options else None)
            finally:
                self._loading = False

    def _refresh(self) -> None:
        project_id = self.picker.value
        if project_id is None:
            self.table.value = "<p><i>This workspace has no projects.</i></p>"
            self.summary.value = ""
            return
        chapters = self.client.list_chapters(project_id)
        self.details = self._fetch_details(chapters)
        self.chapters = chapters
        stalled = self._stalled()
        self.table.value = chapter_table(chapters, self.details, stalled=stalled)
        self.summary.value = totals(chapters, self.details)
        self.refreshes += 1
        self.updated.value = f"<small>Updated {datetime.now():%H:%M:%S}</small>"

    def _fetch_details(self, chapters: list[ChapterListItem]) -> dict[str, ChapterDetail]:
        details = {}
        for chapter in chapters:
            known = self.details.get(chapter.id)
            moved = self._seen_activity.get(chapter.id) != chapter.last_activity_at
            if known is None or moved or chapter.processing:
                known = self.client.get_chapter(chapter.id)
                self._seen_activity[chapter.id] = chapter.last_activity_at
            details[chapter.id] = known
        return details

    def _stalled(self) -> set[str]:
        if self.store is None:
            return set()
        from toolkit import analysis

        frame = analysis.stalled(self.store, threshold=self.stall_threshold)
        return set(frame["chapter_id"].dropna()) if "chapter_id" in frame else set()

    def _take_snapshot(self) -> None:
        info = self.store.take(self.client)
        self.message.show(f"Snapshot taken: {info}", "success")
        self.refresh()

    # -- auto-refresh -------------------------------------------------------------------

    def _toggle_auto(self, change: dict[str, Any]) -> None:
        if change["new"]:
            self.start_auto_refresh()
        else:
            self.stop_auto_refresh()

    def start_auto_refresh(self) -> None:
        """Refresh every `interval` seconds in a background thread."""
        if self._stop is not None:
            return
        stop = self._stop = threading.Event()
        thread = threading.Thread(
            target=self._loop, args=(stop,), name="toolkit-dashboard", daemon=True
        )
        thread.start()
        if not self.auto.value:
            self.auto.value = True

    def stop_auto_refresh(self) -> None:
        if self._stop is not None:
            self._stop.set()
            self._stop = None
        if self.auto.value:
            self.auto.value = False

    def _loop(self, stop: threading.Event) -> None:
        while not stop.wait(max(self.interval.value, MIN_INTERVAL)):
            self.refresh()

    def close(self) -> None:
        self.stop_auto_refresh()
        super().close()

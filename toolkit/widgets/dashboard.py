"""`Dashboard`: a project's chapters at a glance, refreshed by hand or in the background.

Past 400 lines on purpose: one widget, its controls and their callbacks; the HTML table
and the chapter rules are already apart (`_table`, `_chapters`).

Decisions where the spec and DESIGN are silent:
- A refresh lists the project's chapters (one request) and fetches, concurrently, the
  detail of chapters that are processing, new, or whose `lastActivityAt` moved since the
  last refresh, so leaving auto-refresh on costs little once the details are known.
- Switching project clears the table at once and says it is loading, so the previous
  project's chapters are never shown under the new name.
- The table shows one page of chapters (25 by default), filtered (running, failed, needs
  review, staged) and sorted (running and failed first by default); the filters count
  their chapters.
- Auto-refresh is a daemon thread that waits on an event between refreshes; the kernel
  stays free, and unticking the box or closing the widget stops it. Refreshes never
  overlap: a lock serialises the thread and the button.
- Running the cell again makes a new dashboard, which stops the background refresh of
  the one that cell made before (in Jupyter the cell is known by its id; elsewhere, the
  dashboard watching the same client counts as the same).
- With a snapshot store, the dashboard shows credits spent today and this week (the
  store's figure plus what every project's chapters show since its latest snapshot, so a
  refresh lists each project's chapters: `_spend.py`), marks chapters that
  `tk.analysis.stalled(store, threshold=stall_threshold)` reports, and takes a snapshot
  on request; it never writes to the store on its own.
- With a snapshot store, one line gives the project's review backlog at the latest
  snapshot (`tk.analysis.review_backlog`: chapters waiting, the oldest wait, reviews per
  day over the last 7 days); it is read again only when a new snapshot comes.
- With a watch config too (`watch="watch.toml"`), it lists the open alerts `toolkit
  watch` keeps for the store's workspace (`tk.watch.open_alerts`), on every refresh.
"""

from __future__ import annotations

import os
import threading
import weakref
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import ipywidgets as widgets

from toolkit.formatting import count, escape, show
from toolkit.widgets._alerts import AlertsLine
from toolkit.widgets._chapters import (
    FILTERS,
    SORTS,
    FinishEstimates,
    fetch_chapter_details,
    state,
)
from toolkit.widgets._feedback import Feedback
from toolkit.widgets._held import HeldPages
from toolkit.widgets._inputs import AUTO, chapter_label, project_label
from toolkit.widgets._spend import SpendLine, workspace_chapters
from toolkit.widgets._table import chapter_table, totals

if TYPE_CHECKING:
    import pandas as pd

    from toolkit.client import Client
    from toolkit.models import ChapterDetail, ChapterListItem, Project
    from toolkit.store import SnapshotStore
    from toolkit.watch import WatchConfig

__all__ = ["Dashboard"]

MIN_INTERVAL = 0.05
NO_REVIEW_PACE = "no review in the last 7 days"
# Held pages whose ids the toolkit never saw: only the service's own dashboard starts them.
HELD_ELSEWHERE = (
    " (held outside the toolkit, which never saw their page ids: start them in the "
    "service's own dashboard)"
)
_LIVE: weakref.WeakSet[Dashboard] = weakref.WeakSet()


class Dashboard(widgets.VBox):
    """Pick a project; see its chapters' state, phase, coverage, failures and spend.

    ```python
    dash = tk.widgets.Dashboard(client, store=store)
    dash                      # display it; tick "Auto-refresh" to follow running chapters
    ```

    Args:
        client: The client of the workspace shown.
        store: The workspace's snapshot store: spend today and this week (live, as of
            the service's time), the review line, stalled chapters and the Snapshot button
            need it; without it those parts say what they would need.
        interval: Seconds between refreshes while "Auto-refresh" is ticked.
        auto_refresh: Start with "Auto-refresh" ticked.
        stall_threshold: How long a running chapter may show no progress before it is
            marked stalled (a pandas duration: "1h", "90min"); None:
            `tk.analysis.STALL_AFTER`, the one default of the analysis and the watch.
        page_size: Chapters shown per page of the table.
        watch: A `toolkit watch` config (a path or the object): the open alerts the
            watch holds for this workspace are shown (with `store` only: the alerts live
            in it).
    """

    def __init__(
        self,
        client: Client,
        *,
        store: SnapshotStore | None = None,
        interval: float = 5.0,
        auto_refresh: bool = False,
        stall_threshold: str | pd.Timedelta | None = None,
        page_size: int = 25,
        watch: WatchConfig | str | os.PathLike[str] | None = None,
    ) -> None:
        self.client, self.store = client, store
        self.stall_threshold = stall_threshold
        self.page_size = max(1, page_size)
        self.projects: dict[str, Project] = {}
        self.chapters: list[ChapterListItem] = []
        self.chapter_details: dict[str, ChapterDetail] = {}
        self.finish: dict[str, datetime] = {}
        self.service_now: datetime | None = None
        self.stalled_ids: set[str] = set()
        # What each chapter waits a person for, in words, and since when (`_waits`).
        self.waits: dict[str, str] = {}
        self.held_ids: set[str] = set()  # chapters holding pages never started
        self.refreshes = 0
        self.page = 0
        self._shown: str | None = None
        self._seen_activity: dict[str, Any] = {}
        self._finish_estimates = FinishEstimates()
        self._spend = SpendLine(store)
        self._alerts = AlertsLine(store, watch)
        self._stall_key: object = None
        self._stuck: dict[str, tuple[str, datetime]] = {}  # the store's, by chapter id
        self._stuck_at: datetime | None = None  # the store's latest snapshot
        self._held = HeldPages(store)  # the ids of the pages the toolkit held itself
        self._review_key: object = None
        self._review: dict[str, str] = {}
        self._lock = threading.Lock()
        self._stop: threading.Event | None = None
        self._loading = False
        self._refresh_failed = False
        self._origin = _origin(client)

        self.picker = widgets.Dropdown(description="Project", layout={"width": "420px"})
        self.refresh_button = widgets.Button(description="Refresh", icon="refresh")
        self.auto = widgets.Checkbox(
            value=False, description="Auto-refresh", indent=False, layout=AUTO
        )
        self.interval = widgets.BoundedFloatText(
            value=interval, min=MIN_INTERVAL, max=3600, description="every (s)",
            layout={"width": "160px"},
        )  # fmt: skip
        self.snapshot_button = widgets.Button(
            description="Take snapshot",
            icon="camera",
            layout={"display": "" if store is not None else "none"},
        )
        self.status = widgets.HTML()
        self.spend = widgets.HTML()
        # Drill-down: the rows behind the week's count the spend line shows.
        self.spend_rows_button = widgets.Button(
            description="Rows behind it",
            icon="list",
            tooltip="the charges this week's credits add up",
        )
        self.spend_rows = widgets.HTML()
        self.review = widgets.HTML()
        self.alerts = widgets.HTML()
        self.message = Feedback()
        self.filter = widgets.ToggleButtons(
            options=[(name, key) for key, (name, _) in self._filters().items()],
            value="all",
            style={"button_width": "auto"},
        )
        self.sort = widgets.Dropdown(
            options=[(name, key) for key, (name, _) in SORTS.items()],
            value="running_first",
            description="Sort",
            layout={"width": "320px"},
        )
        self.start_picker = widgets.Dropdown(
            description="To start", options=[], layout={"width": "420px"}
        )
        self.start_button = widgets.Button(description="Start", button_style="warning")
        self.start_row = widgets.HBox(
            [self.start_picker, self.start_button], layout={"display": "none"}
        )
        self.table = widgets.HTML()
        self.previous = widgets.Button(description="Previous", icon="chevron-left")
        self.next = widgets.Button(description="Next", icon="chevron-right")
        self.page_label = widgets.HTML()
        self.summary = widgets.HTML()
        controls = [self.picker, self.refresh_button, self.auto, self.interval]
        super().__init__(
            [
                widgets.HBox([*controls, self.snapshot_button]),
                self.status,
                widgets.HBox([self.spend, self.spend_rows_button]),
                self.spend_rows,
                self.review,
                self.alerts,
                self.message,
                widgets.HBox([self.filter, self.sort]),
                self.start_row,
                self.table,
                widgets.HBox([self.previous, self.page_label, self.next]),
                self.summary,
            ]
        )

        self.message.on_click(self.refresh_button, self._reload_and_refresh, working="Refreshing…")
        self.message.on_click(
            self.snapshot_button,
            self._take_snapshot,
            working="Taking snapshot…",
            doing="No snapshot was taken",
        )
        self.message.on_click(
            self.start_button, self._start_chosen, working="Starting…",
            doing="The chapter was not started",
        )  # fmt: skip
        self.message.on_click(
            self.spend_rows_button,
            self._open_spend,
            working="Reading the rows…",
            doing="The rows could not be read",
        )
        self.previous.on_click(lambda _: self._turn(-1))
        self.next.on_click(lambda _: self._turn(+1))
        self.picker.observe(self._picked, names="value")
        self.filter.observe(self._choice_changed, names="value")
        self.sort.observe(self._choice_changed, names="value")
        self.auto.observe(self._toggle_auto, names="value")
        self._replace_older()
        self.message.run(self._load_projects, doing="The projects could not be read")
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
                self.message.error(exc, doing="The dashboard could not refresh")
                if self._shown != self.picker.value:
                    self.status.value = "<small>Not loaded.</small>"
            else:
                # Clear only what a refresh reported, not a failed snapshot's message.
                if self._refresh_failed:
                    self._refresh_failed = False
                    self.message.clear()

    def _refresh(self) -> None:
        if not self.projects:
            self._load_projects()  # not read yet (or the first read failed): say why here
        project_id = self.picker.value
        if project_id is None:
            self.table.value = "<p><i>This workspace has no projects.</i></p>"
            self.summary.value = self.page_label.value = ""
            return
        project = self.projects[project_id]
        if project_id != self._shown:
            self._start_loading(project)
        chapters = self.client.list_chapters(project_id)
        now = self.client.last_response_date
        if project_id != self._shown:
            self.status.value = (
                f"<small>Loading {escape(project.name)}: the details of "
                f"{count(len(chapters), 'chapter')}…</small>"
            )
        self.chapter_details = self._fetch_chapter_details(chapters)
        self.chapters = chapters
        self.finish = self._finish_estimates.update(chapters, self.chapter_details, now)
        self.service_now = now
        self.stalled_ids = self._stalled()
        self.waits = self._waits(chapters, project)
        self._shown = project_id
        self.refreshes += 1
        # On the service's clock, as the spend line's "as of" (an emulator's may be
        # anywhere); this machine's only when the answer carried no Date.
        shown = f"{now.astimezone(UTC):%H:%M:%S} UTC" if now else f"{datetime.now():%H:%M:%S}"
        self.status.value = f"<small>{escape(project.name)}, updated {shown}</small>"
        self.spend.value = f"<small>{self._spend_line(project_id, chapters, now)}</small>"
        lines = self._review_lines()
        line = _review_line(chapters, lines.get(project_id)) if lines is not None else ""
        self.review.value = f"<small>{escape(line)}</small>" if line else ""
        self.alerts.value = self._alerts.html()
        self._render()

    def _open_spend(self) -> None:
        """Show the rows behind the week's spend, or hide them when shown."""
        self.spend_rows.value = "" if self.spend_rows.value else self._spend.explained()

    def _spend_line(
        self, project_id: str, chapters: list[ChapterListItem], now: datetime | None
    ) -> str:
        if self.store is None:
            return self._spend.text([], now)
        # Spend is the whole workspace's: the other projects' chapters are listed too.
        everything = workspace_chapters(self.client, self.projects, {project_id: chapters})
        return self._spend.text(everything, now)

    def _start_loading(self, project: Project) -> None:
        self.chapter_details, self.chapters, self.finish = {}, [], {}
        self._seen_activity.clear()
        self._finish_estimates = FinishEstimates()
        self.page = 0
        self.status.value = f"<small>Loading {escape(project.name)}…</small>"
        self.table.value = (
            f"<p class='tk-loading'><i>Loading the chapters of {escape(project.name)}…</i></p>"
        )
        self.summary.value = self.page_label.value = ""
        self._count_filters(counted=False)  # the previous project's counts would mislead

    def _fetch_chapter_details(self, chapters: list[ChapterListItem]) -> dict[str, ChapterDetail]:
        wanted = [
            c.id
            for c in chapters
            if c.id not in self.chapter_details
            or c.processing
            or self._seen_activity.get(c.id) != c.last_activity_at
        ]
        fresh = fetch_chapter_details(self.client, wanted)
        for chapter in chapters:
            if chapter.id in fresh:
                self._seen_activity[chapter.id] = chapter.last_activity_at
        return {
            c.id: fresh.get(c.id) or self.chapter_details[c.id]
            for c in chapters
            if c.id in fresh or c.id in self.chapter_details
        }

    def _stalled(self) -> set[str]:
        """The chapters the store's latest snapshot shows stalled."""
        return {cid for cid, (reason, _) in self._stuck_rows().items() if reason == "stalled"}

    def _stuck_rows(self) -> dict[str, tuple[str, datetime]]:
        """`tk.analysis.stuck` at the store's latest snapshot (read again only when a new
        snapshot comes): each chapter's reason and since when."""
        if self.store is None:
            return {}
        snapshots = self.store.snapshots()
        key = snapshots["snapshot_id"].iloc[-1] if len(snapshots) else None
        if key != self._stall_key:
            from toolkit import analysis

            threshold = self.stall_threshold
            frame = analysis.stuck(
                self.store, threshold=analysis.STALL_AFTER if threshold is None else threshold
            )
            self._stuck = {
                str(row["chapter_id"]): (str(row["reason"]), row["since"].to_pydatetime())
                for row in frame.to_dict("records")
            }
            self._stall_key = key
            self._stuck_at = (
                snapshots["snapshot_at"].iloc[-1].to_pydatetime() if len(snapshots) else None
            )
        return self._stuck if key is not None else {}

    def _waits(self, chapters: list[ChapterListItem], project: Project) -> dict[str, str]:
        """What each chapter waits a person for, in the reasons table's words, since when,
        and what to do: failed and staged as the service shows them now; stalled runs and
        held pages as the store's latest snapshot does (the service lists no held page),
        while the chapter still is so, and pages held by the toolkit since (`_held.py`)."""
        stuck = self._stuck_rows()
        said: dict[str, tuple[str, datetime | None]] = {}
        startable: list[tuple[str, str]] = []  # staged with pages, or held pages with ids
        live = _live_reasons(chapters, project)
        journal = self._held.chapters()
        for chapter in chapters:
            seen = stuck.get(chapter.id)
            reason = live.get(chapter.id)
            name = chapter_label(chapter)
            if reason == "failed":
                said[chapter.id] = ("failed", chapter.last_activity_at)
            elif reason in ("no_pages", "not_started"):
                if reason == "not_started":
                    startable.append((name, chapter.id))
                staged = seen[1] if seen is not None else chapter.last_activity_at
                said[chapter.id] = (reason, staged)
            elif seen is not None and seen[0] == "stalled" and chapter.processing:
                said[chapter.id] = seen  # still stalled
            elif not chapter.processing and (held := self._held_since(chapter.id, seen)):
                said[chapter.id] = ("held_pages", held)
                if chapter.id in journal:
                    ids = journal[chapter.id].page_ids
                    startable.append((f"{name} ({count(len(ids), 'held page')})", chapter.id))
        self._offer_start(startable)
        self.held_ids = {cid for cid, (reason, _) in said.items() if reason == "held_pages"}
        if not said:
            return {}
        from toolkit import analysis

        return {
            chapter_id: (
                f"needs a person: {analysis.reason_words(reason, project.kind)}"
                + (f", waiting since {since.astimezone(UTC):%a %d %b %H:%M} UTC" if since else "")
                + f"; {analysis.advice(reason, project.kind)}"
                + (HELD_ELSEWHERE if reason == "held_pages" and chapter_id not in journal else "")
            )
            for chapter_id, (reason, since) in said.items()
        }

    def _held_since(self, chapter_id: str, seen: tuple[str, datetime] | None) -> datetime | None:
        """Since when a chapter that is not running holds pages never started: as the
        store's latest snapshot saw it, unless the toolkit started them since; or held by
        the toolkit after that snapshot (None: it holds none)."""
        held = self._held.get(chapter_id)
        after = self._stuck_at
        if seen is not None and seen[0] == "held_pages":
            started_since = held.started_at is not None and (
                after is None or held.started_at >= after
            )
            return None if started_since and not held.page_ids else seen[1]
        if held.page_ids and held.held_at is not None and (after is None or held.held_at >= after):
            return held.held_at
        return None

    def _offer_start(self, startable: list[tuple[str, str]]) -> None:
        """The Start action: the staged chapters with pages, never started, and the held
        pages the toolkit held itself (it knows their ids: `_held.py`). Held pages whose
        ids it never saw are said to be started in the service's own dashboard."""
        if list(self.start_picker.options) != startable:
            chosen = self.start_picker.value
            self.start_picker.options = startable
            ids = [value for _, value in startable]
            self.start_picker.value = chosen if chosen in ids else (ids[0] if ids else None)
        self.start_row.layout.display = "" if startable else "none"

    def _start_chosen(self) -> None:
        chapter_id = self.start_picker.value
        chapter = next((c for c in self.chapters if c.id == chapter_id), None)
        if chapter is None:
            return
        name = chapter_label(chapter)
        if chapter.started is False:  # its first run: every page it has, no ids needed
            result = self.client.start_chapter(chapter.id)
        else:
            result = self.client.start_chapter(chapter.id, page_ids=self._held.ids(chapter.id))
        self._held.started(chapter.id, self.client.last_response_date)
        self.message.show(
            f"Started {escape(name)}: {count(result.page_count, 'page')} running.", "success"
        )
        self.refresh()

    def _filters(self) -> dict[str, tuple[str, Callable[[ChapterListItem], bool]]]:
        """The table's filters: the chapter states, and what waits for a person."""
        return {
            **FILTERS,
            "needs_person": ("Needs a person", lambda c: c.id in self.waits),
            "held": ("Held pages", lambda c: c.id in self.held_ids),
        }

    def _review_lines(self) -> dict[str, str] | None:
        """Per project, its review backlog at the store's latest snapshot, in words
        (None: no store or no snapshot to read it from)."""
        if self.store is None:
            return None
        snapshots = self.store.snapshots()
        key = snapshots["snapshot_id"].iloc[-1] if len(snapshots) else None
        if key != self._review_key:
            from toolkit import analysis

            backlog = analysis.review_backlog(self.store) if key is not None else None
            self._review = {} if backlog is None else _review_words(backlog)
            self._review_key = key
        return self._review if key is not None else None

    # -- the table: filter, sort, page ---------------------------------------------------

    def visible(self) -> list[ChapterListItem]:
        """The chapters the filter keeps, in the chosen order (every page)."""
        keep = self._filters()[self.filter.value][1]
        order = SORTS[self.sort.value][1]
        return sorted((c for c in self.chapters if keep(c)), key=order)

    def _render(self) -> None:
        self._count_filters()
        chosen = self.visible()
        pages = max(1, -(-len(chosen) // self.page_size))
        self.page = min(self.page, pages - 1)
        start = self.page * self.page_size
        shown = chosen[start : start + self.page_size]
        project = self.projects.get(self.picker.value or "")
        if not self.chapters:
            self.table.value = "<p><i>No chapters in this project yet.</i></p>"
        elif not shown:
            name = self._filters()[self.filter.value][0].lower()
            self.table.value = f"<p><i>No chapters here are {name}.</i></p>"
        else:
            self.table.value = chapter_table(
                shown,
                self.chapter_details,
                project=project,
                stalled=self.stalled_ids,
                waits=self.waits,
                finish=self.finish,
                now=self.service_now,
            )
        self.page_label.value = (
            f"<small>Chapters {start + 1}-{start + len(shown)} of {len(chosen)}</small>"
            if shown
            else ""
        )
        self.previous.disabled = self.page == 0
        self.next.disabled = self.page >= pages - 1
        self.summary.value = totals(self.chapters)

    def _count_filters(self, *, counted: bool = True) -> None:
        options = [
            (f"{name} ({sum(keep(c) for c in self.chapters)})" if counted else name, key)
            for key, (name, keep) in self._filters().items()
        ]
        if options != list(self.filter.options):
            value, self._loading = self.filter.value, True
            try:
                self.filter.options = options
                self.filter.value = value
            finally:
                self._loading = False

    def _choice_changed(self, _change: object) -> None:
        if not self._loading:
            self.page = 0
            self._render()

    def _turn(self, step: int) -> None:
        self.page = max(0, self.page + step)
        self._render()

    # -- projects, snapshots ------------------------------------------------------------

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

    def _take_snapshot(self) -> None:
        assert self.store is not None
        info = self.store.take(self.client)
        self.message.show(f"Snapshot taken: {info}", "success")
        self.refresh()

    # -- auto-refresh -------------------------------------------------------------------

    @property
    def auto_refreshing(self) -> bool:
        return self._stop is not None

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

    def _replace_older(self) -> None:
        replaced = [d for d in _LIVE if d._origin == self._origin and d.auto_refreshing]
        for older in replaced:
            older.stop_auto_refresh()
            older.message.show(
                "A newer dashboard replaced this one: its auto-refresh has stopped.", "info"
            )
        if replaced:
            self.message.show(
                "The dashboard this cell showed before was refreshing in the background: "
                "that has stopped.",
                "info",
            )
        _LIVE.add(self)

    def close(self) -> None:
        if hasattr(self, "_stop"):  # not so when __init__ was refused its arguments
            self.stop_auto_refresh()
        _LIVE.discard(self)
        super().close()


def _origin(client: Client) -> object:
    """What makes two dashboards "the same cell run again": the notebook cell when the
    kernel says which cell is running, else the client they watch."""
    try:
        from IPython import get_ipython

        kernel = getattr(get_ipython(), "kernel", None)
        parent = kernel.get_parent() if kernel is not None else None
        cell = (parent or {}).get("metadata", {}).get("cellId")
    except Exception:  # not in a kernel, or one that does not say: fall back to the client
        cell = None
    return ("cell", cell) if cell else ("client", id(client))


def _review_words(backlog: pd.DataFrame) -> dict[str, str]:
    """`1.4 reviews a day (from the snapshots of the last 7 days)`, per project id: the pace;
    the count waiting is the live one (`_review_line`)."""
    return {
        str(row["project_id"]): f"{show('reviews_per_day', row['reviews_per_day'])} reviews a day "
        "(from the snapshots of the last 7 days)"
        for row in backlog.to_dict("records")
    }


def _review_line(chapters: list[ChapterListItem], pace: str | None) -> str:
    """One review count, live, as the "Needs review" filter counts it: `Review: 2
    chapters waiting now, the oldest since Tue 03 Mar 11:00 UTC; 1.4 reviews a day ...`."""
    waiting = [c for c in chapters if state(c) == "needs_review"]
    text = f"Review: {count(len(waiting), 'chapter')} waiting now"
    times = [c.last_activity_at for c in waiting if c.last_activity_at is not None]
    if times:
        text += f", the oldest since {min(times).astimezone(UTC):%a %d %b %H:%M} UTC"
    return f"{text}; {pace or NO_REVIEW_PACE}."


def _live_reasons(chapters: list[ChapterListItem], project: Project) -> dict[str, str]:
    """Each chapter's first reason to need a person as the service shows it now, by the
    one rule (`tk.analysis.needing_person`); stalls and held pages need the store's
    history, so they come from `tk.analysis.stuck` instead."""
    import pandas as pd

    from toolkit import analysis

    frame = pd.DataFrame(
        {
            "chapter_id": [c.id for c in chapters],
            "project_id": [project.id] * len(chapters),
            "page_count": pd.array([c.page_count for c in chapters], dtype="Int64"),
            "failed": pd.array([c.failed for c in chapters], dtype="boolean"),
            "processing": pd.array([c.processing for c in chapters], dtype="boolean"),
            # The service leaves `started` out only for chapters that started.
            "started": pd.array([c.started is not False for c in chapters], dtype="boolean"),
        }
    )
    kinds = pd.Series({project.id: project.kind})
    found = analysis.needing_person(frame, kinds=kinds, first=True)
    return dict(zip(found["chapter_id"], found["reason"], strict=True))

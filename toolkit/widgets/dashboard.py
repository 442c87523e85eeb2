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

from toolkit.formatting import count, escape
from toolkit.widgets._alerts import AlertsLine
from toolkit.widgets._chapters import (
    FILTERS,
    SORTS,
    FinishEstimates,
    fetch_chapter_details,
    state,
)
from toolkit.widgets._feedback import Feedback
from toolkit.widgets._inputs import AUTO, project_label
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
        self.refreshes = 0
        self.page = 0
        self._shown: str | None = None
        self._seen_activity: dict[str, Any] = {}
        self._finish_estimates = FinishEstimates()
        self._spend = SpendLine(store)
        self._alerts = AlertsLine(store, watch)
        self._stall_key: object = None
        self._stuck: dict[str, tuple[str, datetime]] = {}  # the store's, by chapter id
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
            description="Staged", options=[], layout={"width": "360px"}
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
                self.spend,
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
        return self._stuck if key is not None else {}

    def _waits(self, chapters: list[ChapterListItem], project: Project) -> dict[str, str]:
        """What each chapter waits a person for, in the reasons table's words, since when,
        and what to do: failed and staged as the service shows them now; stalled runs and
        held pages as the store's latest snapshot does (the service lists no held page),
        while the chapter still is so."""
        stuck = self._stuck_rows()
        said: dict[str, tuple[str, datetime | None]] = {}
        startable: list[tuple[str, str]] = []  # staged with pages, never started
        live = _live_reasons(chapters, project)
        for chapter in chapters:
            seen = stuck.get(chapter.id)
            reason = live.get(chapter.id)
            if reason == "failed":
                said[chapter.id] = ("failed", chapter.last_activity_at)
            elif reason in ("no_pages", "not_started"):
                if reason == "not_started":
                    startable.append(
                        (f"{chapter.position}: {chapter.title or 'untitled'}", chapter.id)
                    )
                staged = seen[1] if seen is not None else chapter.last_activity_at
                said[chapter.id] = (reason, staged)
            elif (
                seen is not None
                and seen[0] in ("stalled", "held_pages")
                and ((seen[0] == "stalled") == bool(chapter.processing))
            ):
                said[chapter.id] = seen  # still stalled, or its held pages still not run
        self._offer_start(startable)
        if not said:
            return {}
        from toolkit import analysis

        return {
            chapter_id: (
                f"needs a person: {analysis.reason_words(reason, project.kind)}"
                + (f", waiting since {since.astimezone(UTC):%a %d %b %H:%M} UTC" if since else "")
                + f"; {analysis.advice(reason, project.kind)}"
            )
            for chapter_id, (reason, since) in said.items()
        }

    def _offer_start(self, startable: list[tuple[str, str]]) -> None:
        """The Start action: the staged chapters with pages, never started. (Held pages on
        a chapter that ran need their page ids, which only the upload that held them
        knows: the UploadPanel's "Start held pages" starts those.)"""
        if list(self.start_picker.options) != startable:
            chosen = self.start_picker.value
            self.start_picker.options = startable
            ids = [value for _, value in startable]
            self.start_picker.value = chosen if chosen in ids else (ids[0] if ids else None)
        self.start_row.layout.display = "" if startable else "none"

    def _start_chosen(self) -> None:
        chapter_id = self.start_picker.value
        if chapter_id is None:
            return
        result = self.client.start_chapter(chapter_id)
        self.message.show(f"Started: {count(result.page_count, 'page')} running.", "success")
        self.refresh()

    def _filters(self) -> dict[str, tuple[str, Callable[[ChapterListItem], bool]]]:
        """The table's filters: the chapter states, and what waits for a person."""
        held = {cid for cid, (reason, _) in self._stuck.items() if reason == "held_pages"}
        return {
            **FILTERS,
            "needs_person": ("Needs a person", lambda c: c.id in self.waits),
            "held": ("Held pages", lambda c: c.id in held and c.id in self.waits),
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
        str(row["project_id"]): f"{row['reviews_per_day']:.1f} reviews a day "
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

"""`toolkit demo`: a simulated working day on a local emulator, ending in a report.

Past 400 lines on purpose: it is one script, a day read from top to bottom (plan,
upload, operate, snapshot, report).

The emulator (manual clock, the demo workspace) and the webhook `Receiver` run on
loopback. The sample chapters shipped in the package are uploaded through the public
`Client` over the day, faults make some runs fail or stall, an operator's routine
re-scans failed chapters every hour, a snapshot is taken every simulated hour, and
`write_report` turns the store into plots, `summary.csv` and `figures.json`; the demo
ends by pointing at the weekly page (`weekly-report.html`) of the same figures.

Decisions where DESIGN is silent:
- The demo uses the seeded workspace's projects (a full-process comic, a second comic,
  a novel) and tops its credits up, so the day is never cut short by a 402. It adds one
  project like the second comic (comic, translated only, English) but on the service's
  default model, and uploads to both every hour: comparable work on two models, so the
  model comparison has something to compare.
- The second comic is the steady project: a chapter goes up every hour, shortly before
  the hour's snapshot, so each snapshot finds one being read and the forecast has open
  work and a pace to give its finish time and band from.
- Fault settings: 20% of runs fail, 10% stall (abandoned after 2 simulated hours),
  seeded, so every demo tells the same story. In the day's last hour the service has a
  bad spell: one chapter uploaded then fails whatever the draw.
- The operator re-scans a failed comic chapter at the next hour, at most three times; a
  failed novel chapter cannot be re-scanned, so its text is uploaded again as a new
  chapter, as the spec advises. The last round of the day re-scans nothing: what
  failed in the last hour waits for a person, and the report shows it (with the seed's
  held pages, never started).
- `hours` need not be whole: the last step advances the remainder.
- `out` gets `snapshots/` (the store), the receiver's SQLite and the report. A folder
  left by an earlier demo (it holds a `.toolkit-demo` marker) is emptied first; any
  other non-empty folder is refused rather than overwritten.
"""

from __future__ import annotations

import math
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolkit import samples
from toolkit.errors import ToolkitError

if TYPE_CHECKING:
    from datetime import datetime

    from toolkit.client import Client
    from toolkit.emulator import Emulator
    from toolkit.models import Project

__all__ = ["Projects", "plan", "run_demo", "simulate_day", "upload_sample"]

MARKER = ".toolkit-demo"
_FAULTS: dict[str, Any] = {"failure_rate": 0.2, "stall_rate": 0.1, "seed": 2024}
_MAX_RESCANS = 3
_EVENTS = ["chapter.finished", "chapter.failed", "export.ready"]
# The steady project's chapter goes up this long before the hour's snapshot: the
# snapshot then finds it reading its pages (a sample chapter's reading takes 9-15 s).
_STEADY_LEAD = 8.0
_OTHER_MODEL_PROJECT = "Seoul Nights: Side Stories"


@dataclass
class Day:
    """What happened, for the progress bar and the closing lines."""

    uploads: int = 0
    rescans: int = 0
    reuploads: int = 0
    snapshots: int = 0
    rescanned: dict[str, int] = field(default_factory=dict)
    reuploaded: set[str] = field(default_factory=set)
    held: list[tuple[str, float]] = field(default_factory=list)  # (chapter id, start at hour)
    ledger: dict[str, Any] = field(default_factory=dict)  # the emulator's, at the day's end
    deliveries: list[dict[str, Any]] = field(default_factory=list)  # its webhook log, too
    baseline_at: Any = None  # when the first snapshot was taken
    watched: list[str] = field(default_factory=list)  # what the closing watch cycle sent
    notified: list[dict[str, Any]] = field(default_factory=list)  # what its sink received


@dataclass(frozen=True)
class Projects:
    """The demo's four projects: a comic, the steady comic, a novel, one on another model."""

    comic: Project
    second_comic: Project  # the steady project
    novel: Project
    other_model: Project  # like `second_comic`, on another translation model


def prepare_out(out: Path) -> None:
    """Make `out` ready: empty a previous demo's folder, refuse anyone else's."""
    if out.exists() and any(out.iterdir()):
        if not (out / MARKER).exists():
            raise ToolkitError(
                f"{out} is not empty and was not written by an earlier demo; "
                "choose another folder with --out"
            )
        shutil.rmtree(out)
    out.mkdir(parents=True, exist_ok=True)
    (out / MARKER).write_text("written by `toolkit demo`; emptied by the next demo\n")


def pick_projects(client: Client, emulator: Emulator, workspace_id: str) -> Projects:
    """The seeded projects the day uses (a full-process comic first), created if missing."""
    for _ in range(5):  # at most the four projects to create, then the answer
        projects = client.list_projects()
        # A full-process comic first; the other model's project last, whatever the order
        # the service lists them in (newest first).
        comics = sorted(
            (p for p in projects if p.kind == "comic"),
            key=lambda p: (p.process_steps != "full", p.name == _OTHER_MODEL_PROJECT),
        )
        novels = [p for p in projects if p.kind == "novel"]
        if len(comics) >= 2 and novels:
            second = comics[1]
            other = next((p for p in comics[2:] if _comparable(p, second)), None)
            if other is not None:
                return Projects(comics[0], second, novels[0], other)
            emulator.create_project(
                workspace_id,
                name=_OTHER_MODEL_PROJECT,
                kind="comic",
                source_language=second.source_language or "ko",
                reading_direction=second.reading_direction or "ltr",
                process_steps=second.process_steps or "translate",
                target_languages=second.language_codes,
                translation_model=_another_model(second.translation_model),
            )
            continue
        kind = "comic" if len(comics) < 2 else "novel"
        emulator.create_project(
            workspace_id,
            name=f"Demo {kind} {len(projects) + 1}",
            kind=kind,
            source_language="ja" if kind == "comic" else "zh",
            reading_direction="rtl" if kind == "comic" else "ltr",
            process_steps="full" if kind == "comic" else "translate",
            target_languages=["en", "fr"],
        )
    raise ToolkitError("the demo could not set up its projects on the emulator")


def _another_model(model: str | None) -> str:
    """A model other than `model` (the emulator's default when a project names none)."""
    from toolkit.emulator.core.runs import DEFAULT_MODEL

    return DEFAULT_MODEL if model == "cts-webtoon-mt-2" else "cts-webtoon-mt-2"


def _comparable(project: Project, other: Project) -> bool:
    """Same kind of work (what the model comparison's strata hold equal), another model."""
    return (
        project.process_steps == other.process_steps
        and len(project.language_codes) == len(other.language_codes)
        and project.translation_model != other.translation_model
    )


def plan(hours: float) -> dict[int, list[str]]:
    """Which uploads happen at the start of which whole hour of the day (the steady
    project's come later in each hour, `_STEADY_LEAD` before its snapshot)."""
    routine = ["comic", "novel", "staged", "comic", "novel", "comic"]
    schedule: dict[int, list[str]] = {0: ["comic", "novel", "other_model"]}
    for hour in range(1, math.ceil(hours)):
        schedule[hour] = [routine[(hour - 1) % len(routine)], "other_model"]
    return schedule


def upload_sample(kind: str, hour: int, client: Client, projects: Projects, day: Day) -> None:
    """One scheduled upload of sample material, through the public client."""
    if kind == "novel":
        numbers = samples.novel_chapters()
        text = samples.novel_chapter(numbers[day.uploads % len(numbers)])
        client.create_chapter(projects.novel.id, text=text)
    elif kind == "staged":
        chapter = client.create_chapter(projects.comic.id, staged=True)
        client.add_pages(chapter.id, pages=_sample_pages(day.uploads), hold=True)
        day.held.append((chapter.id, hour + 1))
    else:
        project = {
            "comic": projects.comic,
            "second_comic": projects.second_comic,
            "other_model": projects.other_model,
        }[kind]
        client.create_chapter(project.id, pages=_sample_pages(day.uploads))
    day.uploads += 1


def _sample_pages(index: int) -> list[Any]:
    numbers = sorted(samples.COMIC_CHAPTERS)
    return list(samples.comic_chapter(numbers[index % len(numbers)]))


def _operate(
    hour: int, client: Client, projects: Projects, day: Day, *, rescan: bool = True
) -> None:
    """The operator's hourly routine: start held pages, deal with failed chapters
    (`rescan=False`: the day's last round, which leaves them for a person)."""
    for chapter_id, start_at in list(day.held):
        if hour >= start_at:
            client.start_chapter(chapter_id)
            day.held.remove((chapter_id, start_at))
    if not rescan:
        return
    for project in (projects.comic, projects.second_comic, projects.novel, projects.other_model):
        for chapter in client.list_chapters(project.id):
            if not chapter.failed or chapter.processing:
                continue
            if project.kind == "novel":
                if chapter.id not in day.reuploaded:
                    # A novel chapter cannot be re-scanned: its text goes up again, once.
                    numbers = samples.novel_chapters()
                    text = samples.novel_chapter(numbers[(chapter.position or 1) % len(numbers)])
                    client.create_chapter(project.id, text=text)
                    day.reuploaded.add(chapter.id)
                    day.reuploads += 1
            elif day.rescanned.get(chapter.id, 0) < _MAX_RESCANS:
                client.rescan_chapter(chapter.id)
                day.rescanned[chapter.id] = day.rescanned.get(chapter.id, 0) + 1
                day.rescans += 1


def run_demo(
    *, out: str | Path = "data/demo", hours: float = 24, start: datetime | None = None
) -> Path:
    """Run a simulated day on a local emulator and write its report to `out`.

    The day starts at `start` (default: now). Returns the report's folder. Needs no
    account and no network beyond loopback.
    """
    from toolkit.store import SnapshotStore

    out = Path(out)
    _check_hours(hours)
    prepare_out(out)
    store = SnapshotStore(str(out / "snapshots"))
    day = simulate_day(
        store, hours=hours, seen_path=out / "receiver.sqlite", start=start, watch=out / "watch"
    )
    return _finish(store, out, day, hours=hours)


def simulate_day(
    store: Any,
    *,
    hours: float = 24,
    seen_path: str | Path | None = None,
    progress: bool = True,
    start: datetime | None = None,
    watch: str | Path | None = None,
) -> Day:
    """Run the simulated day into `store` (snapshots and webhook events); no report.

    `watch`: a folder for one closing `toolkit watch` cycle (its alerts table), which
    checks a budget of this month set just above the day's spend and notifies a
    loopback sink (`_watch_once`).

    Starts and stops its own emulator and receiver, its clock at `start` (default: now).
    The notebooks use it to build a history when no service is configured.
    """
    from toolkit.client import Client
    from toolkit.emulator import Emulator
    from toolkit.emulator.serving import BackgroundServer
    from toolkit.webhooks import Receiver

    _check_hours(hours)
    with Emulator(clock="manual", start=start) as emulator:
        seeded = emulator.seed_demo()
        workspace_id = seeded["workspaceId"]
        emulator.set_credits(workspace_id, 100_000)
        server = BackgroundServer()  # bound now: the endpoint needs its address first
        receiver: Receiver | None = None
        try:
            endpoint = emulator.add_webhook(
                workspace_id, f"{server.url}/webhooks", _EVENTS, allow_private=True
            )
            receiver = Receiver(endpoint["secret"], store=store, seen_path=seen_path)
            try:
                server.start(receiver, name="demo-receiver", timeout=10)
            except RuntimeError as exc:
                raise ToolkitError("the webhook receiver did not start on loopback") from exc
            with Client(base_url=emulator.url, api_key=seeded["apiKey"]) as client:
                day = _simulate(
                    emulator, client, store, workspace_id, hours=hours, progress=progress
                )
            day.ledger = emulator.ledger(workspace_id)
            day.deliveries = emulator.deliveries(workspace_id)
            if watch is not None:
                _watch_once(emulator.url, seeded["apiKey"], store, Path(watch), day)
        finally:
            server.stop()
            if receiver is not None:
                receiver.flush()
                receiver.close()
    return day


def _check_hours(hours: float) -> None:
    if not hours > 0:
        raise ToolkitError(f"hours must be more than 0, not {hours}")


def _simulate(
    emulator: Emulator,
    client: Client,
    store: Any,
    workspace_id: str,
    *,
    hours: float,
    progress: bool = True,
) -> Day:
    """The day itself: uploads, faults, hourly operations and snapshots."""
    from tqdm.auto import tqdm

    projects = pick_projects(client, emulator, workspace_id)
    emulator.set_faults(**_FAULTS)
    schedule = plan(hours)
    day = Day()
    # A minute passes first, so that what the seed charged falls before the baseline.
    emulator.advance(60)
    # Snapshots are stamped with the emulator's clock, explicitly: an hour of the
    # simulated day must be an hour apart in the store, whatever the wall clock says.
    day.baseline_at = store.take(client, at=emulator.now()).snapshot_at
    day.snapshots += 1
    steps = _steps(hours)
    with tqdm(total=len(steps), desc="Simulated day", unit="h", disable=not progress) as bar:
        for hour, seconds in enumerate(steps):
            last = hour == len(steps) - 1
            for kind in schedule.get(hour, []):
                upload_sample(kind, hour, client, projects, day)
            if last:
                _bad_spell(emulator, client, projects, day)
            lead = min(_STEADY_LEAD, seconds / 2)
            emulator.advance(seconds - lead)
            upload_sample("second_comic", hour, client, projects, day)
            emulator.advance(lead)
            _operate(hour + 1, client, projects, day, rescan=not last)
            store.take(client, at=emulator.now())
            day.snapshots += 1
            bar.set_postfix(uploads=day.uploads, rescans=day.rescans, refresh=False)
            bar.update(1)
    return day


def _bad_spell(emulator: Emulator, client: Client, projects: Projects, day: Day) -> None:
    """One chapter uploaded while every run fails: it waits for a re-scan at the end."""
    emulator.set_faults(**{**_FAULTS, "failure_rate": 1.0, "stall_rate": 0.0})
    try:
        client.create_chapter(projects.comic.id, pages=_sample_pages(day.uploads))
        day.uploads += 1
    finally:
        emulator.set_faults(**_FAULTS)


def _steps(hours: float) -> list[float]:
    whole = int(hours)
    rest = hours - whole
    return [3600.0] * whole + ([rest * 3600.0] if rest > 1e-9 else [])


def _finish(store: Any, out: Path, day: Day, *, hours: float) -> Path:
    """Write the report and the weekly page; say what they show and where the page is.

    Every figure said comes from `toolkit.reporting.figures`, as in `summary.csv`,
    `figures.json` and the page."""
    from toolkit.formatting import count
    from toolkit.reporting import report, write_report
    from toolkit.reporting.figures import figures

    folder = Path(write_report(store, out=out))  # prints the figures and the file list
    page = report(store, folder / "weekly-report.html")
    figs = figures(store)
    total = figs.totals
    chapters = store.latest("chapters")
    say: Callable[[str], None] = print
    say("")
    say(
        f"It shows {hours:g} simulated hours ({figs.period.label()}) of "
        f"{count(len(chapters), 'chapter')} in "
        f"{count(chapters['project_id'].nunique(), 'project')}: "
        f"{_figure(total['chapters_finished'], 'chapter')} finished, "
        f"{_figure(total['lines'], 'line')} translated, "
        f"{_figure(total['credits'], 'credit')} spent "
        f"({_figure(total['rework_credits'])} of them on re-runs), "
        f"{_figure(total['runs_failed'], 'run')} failed and "
        f"{_figure(total['runs_stalled'], 'run')} stalled; "
        f"{count(day.rescans, 're-scan')}, "
        f"{count(day.reuploads, 'failed novel chapter')} uploaded again, "
        f"{count(len(store.history('events')), 'webhook event')}, "
        f"{count(day.snapshots, 'hourly snapshot')}; needing a person now: "
        f"{_figure(total['needs_action'], 'chapter')}."
    )
    if day.watched:
        say(
            f"One watch cycle (`toolkit watch --once`, docs/watch.md) opened "
            f"{count(len(day.watched), 'alert')}, sent to a Slack-style sink on loopback "
            f"in {count(len(day.notified), 'message')}:"
        )
        for line in day.watched:
            say(f"  {line}")
    say(f"The weekly page to read and forward: {page.resolve()}")
    return folder


def _watch_once(base_url: str, api_key: str, store: Any, folder: Path, day: Day) -> None:
    """One `toolkit watch` cycle at the day's end, as cron would run it: a budget for
    this month just above what the day spent (so it warns), every failed chapter the
    last operator round left (a threshold of a minute: the day's last failure may be
    minutes old), and a Slack-style sink on loopback that keeps what it receives."""
    import os
    from datetime import timedelta

    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import Route

    from toolkit.emulator.serving import BackgroundServer
    from toolkit.watch import run_cycle
    from toolkit.watch.config import Budget, CheckSettings, Slack, WatchConfig, WatchedWorkspace

    async def keep(request: Request) -> Response:
        day.notified.append(await request.json())
        return Response("ok")

    from toolkit.analysis import monthly_spend

    # What the budget check will count: this month's spend in the store.
    spent = monthly_spend(store)["this_month"].iloc[0]
    spent = 0 if spent is None or spent != spent else int(spent)
    credits = math.ceil(max(spent, 1) / 0.9)
    # A few credits (an hour after midnight on the 1st) cannot sit between 80% and 100%
    # of a whole budget: warn from half of it then, so the cycle still shows a warning.
    warn_at = 0.8 if spent >= 0.8 * credits else 0.5
    sink = BackgroundServer()
    sink.start(Starlette(routes=[Route("/slack", keep, methods=["POST"])]), name="demo-sink")
    key_env = "CTS_DEMO_WATCH_KEY"  # the watch reads keys only from the environment
    os.environ[key_env] = api_key
    try:
        config = WatchConfig(
            path="(the demo)",
            store=str(folder),
            interval=timedelta(hours=1),
            workspaces={"demo": WatchedWorkspace("demo", base_url, key_env, str(store.root))},
            budgets=(Budget("workspace", "demo", "month", credits, warn_at=(warn_at,)),),
            checks=CheckSettings(failed_waiting_after=timedelta(minutes=1)),
            slack=Slack(url=f"{sink.url}/slack", allow_private=True),
        )
        cycle = run_cycle(config, retry_wait=0)
        day.watched = cycle.lines()
    finally:
        os.environ.pop(key_env, None)
        sink.stop()


def _figure(value: int | None, noun: str | None = None) -> str:
    """A figure in a sentence: `3 chapters` (`3` without a noun), or `no data`."""
    from toolkit.formatting import count

    if value is None:
        return "no data"
    return count(value, noun) if noun else f"{value:,}"

"""A plan played on an in-process emulator on a manual clock, into a snapshot store.

The store is taken at the plan's instants; between them the seed's own random stream
uploads, re-scans, adds pages (run or held), starts held pages, reviews, and right after
a snapshot trashes settled chapters and idle projects (so the store saw everything a
trashed chapter was charged), and the plan's tangles run their scripts.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from page_images import make_page
from webhook_sink import taking_deliveries

from histories.plan import Plan
from toolkit.client import Client
from toolkit.emulator import Emulator
from toolkit.errors import Conflict
from toolkit.store import SnapshotStore

RUN = 600  # seconds a small run takes, to wait for one inside an interval


@dataclass
class History:
    """A played plan: the emulator (still running), its workspace, the client, the
    store, and at each snapshot how many ledger charges and line entries existed."""

    plan: Plan
    emulator: Any
    workspace_id: str
    client: Client
    store: SnapshotStore
    marks: list[tuple[int, int]] = field(default_factory=list)
    trashed: set[str] = field(default_factory=set)
    # After each snapshot (`checks.extended_stages_equal_a_build`): whether its run
    # stages were extended from the state before (False: built whole).
    extended: list[bool] = field(default_factory=list)
    # After each snapshot: whether the update kept a part (or the stages whole).
    updated: list[bool] = field(default_factory=list)

    @property
    def charges(self) -> tuple[int, int]:
        """The ledger's charges made after the baseline and by the last snapshot."""
        return self.marks[0][0], self.marks[-1][0]

    @property
    def lines(self) -> tuple[int, int]:
        return self.marks[0][1], self.marks[-1][1]


class _Player:
    def __init__(self, plan: Plan, emulator: Any, client: Client, projects: list[dict]) -> None:
        self.plan, self.emulator, self.client = plan, emulator, client
        self.rng = random.Random(plan.seed * 7919 + 1)
        self.projects = projects
        self.page = plan.seed * 1000
        self.position = 0
        self.held: dict[str, list[str]] = {}
        self.left = 0.0  # seconds of the interval not yet advanced
        self.scripted: set[str] = set()  # the tangles' chapters, never trashed
        self.quiet: set[str] = set()  # chapters the random work leaves alone meanwhile

    def create(self, project_id: str, **form: Any) -> str:
        """A new chapter at a position no chapter of the project had, trashed ones
        included: a novel at a failed one's position reads as its text uploaded again
        (rework, docs/analysis.md), which these uploads are not."""
        self.position += 1
        return str(self.client.create_chapter(project_id, position=self.position, **form).id)

    def pages(self, count: int) -> list[bytes]:
        self.page += count
        return [make_page(self.page - i) for i in range(count)]

    def advance(self, seconds: float) -> bool:
        """Advance within the interval; False (and no time passes) when it has not that
        much left, so a tangle waits for the next interval."""
        if seconds >= self.left:
            return False
        self.emulator.advance(seconds)
        self.left -= seconds
        return True

    def busy(self) -> list[dict]:
        return [p for p in self.projects if not p["idle"] and not p.get("trashed")]

    def comics(self) -> list[dict]:
        return [p for p in self.busy() if p["kind"] == "comic"]

    def upload(self, project: dict) -> str:
        if project["kind"] == "comic":
            return self.create(project["id"], pages=self.pages(self.rng.randint(1, 4)))
        lines = self.rng.randint(3, 40)
        text = "".join(f"Line {n} of chapter {self.page}.\n" for n in range(lines))
        self.page += 1
        return self.create(project["id"], text=text)

    def chapters(self, project: dict) -> list[Any]:
        return self.client.list_chapters(project["id"])

    def act(self) -> None:
        """One round of the seed's random work."""
        plan, rng = self.plan, self.rng
        for project in self.busy():
            uploads = int(plan.uploads) + (rng.random() < plan.uploads % 1)
            for _ in range(uploads):
                self.upload(project)
            for chapter in self.chapters(project):
                if chapter.processing:
                    continue
                if chapter.status == "needs_review" and rng.random() < plan.review_rate:
                    self.emulator.review_chapter(chapter.id)
                if project["kind"] != "comic" or not chapter.started or chapter.id in self.quiet:
                    continue
                self.comic_work(chapter)

    def comic_work(self, chapter: Any) -> None:
        plan, rng = self.plan, self.rng
        try:
            if chapter.failed and rng.random() < plan.rescan_rate:
                self.client.rescan_chapter(chapter.id)
            elif rng.random() < plan.add_rate:  # failed chapters too: they stay failed
                self.client.add_pages(chapter.id, self.pages(rng.randint(1, 2)))
            elif rng.random() < plan.hold_rate:
                added = self.client.add_pages(chapter.id, self.pages(rng.randint(1, 2)), hold=True)
                self.held.setdefault(chapter.id, []).extend(p.id for p in added.pages)
            elif self.held.get(chapter.id) and not chapter.failed and rng.random() < 0.5:
                # A failed chapter is re-scanned first: held pages started on it, settled
                # and still failed, read as the re-scan a failure gets (docs/testing.md).
                self.client.start_chapter(chapter.id, page_ids=self.held.pop(chapter.id))
        except Conflict:  # a run started by a tangle meanwhile
            pass

    def tidy(self, history: History) -> None:
        """Right after a snapshot: trash settled chapters and idle projects."""
        plan, rng = self.plan, self.rng
        for project in self.busy():
            for chapter in self.chapters(project):
                if chapter.id in self.scripted:
                    continue
                if not chapter.processing and rng.random() < plan.trash_rate:
                    self.emulator.trash_chapter(chapter.id)
                    history.trashed.add(chapter.id)
                    self.held.pop(chapter.id, None)
        for project in self.projects:
            if project["idle"] and not project.get("trashed") and rng.random() < plan.trash_rate:
                self.emulator.trash_project(project["id"])
                project["trashed"] = True


def _settled(player: _Player, chapter_id: str) -> Iterator[None]:
    """Wait (within the interval, else into the next ones) until the chapter settles."""
    while player.client.get_chapter(chapter_id).processing:
        if not player.advance(RUN):
            yield


def held_after_rescan(player: _Player) -> Iterator[None]:
    """Run a chapter, see it; re-scan it and hold new pages in one interval; start them
    intervals later. The random work leaves the chapter alone until the pages are held:
    pages it added and ran before the re-scan make (c) of docs/analysis.md, which a
    failed re-scan leaves the store no way to tell from (d) (seed 1076)."""
    if not player.comics():
        return
    chapter = player.create(player.comics()[0]["id"], pages=player.pages(3))
    player.scripted.add(chapter)
    player.quiet.add(chapter)
    yield
    yield from _settled(player, chapter)
    player.client.rescan_chapter(chapter)
    yield from _settled(player, chapter)
    held = player.client.add_pages(chapter, player.pages(2), hold=True)
    yield
    player.quiet.discard(chapter)
    yield
    # Started on a failed chapter, they read as the held pages alone when a re-scan came
    # first in the same interval (seed 22; docs/testing.md): wait until it is not failed.
    while True:
        yield from _settled(player, chapter)
        if not player.client.get_chapter(chapter).failed:
            break
        yield
    player.client.start_chapter(chapter, page_ids=[p.id for p in held.pages])


def added_to_failed(player: _Player) -> Iterator[None]:
    """A chapter fails (every run fails meanwhile); pages are added to it, and run."""
    if not player.comics():
        return
    plan = player.plan
    player.emulator.set_faults(failure_rate=1.0, seed=plan.seed)
    chapter = player.create(player.comics()[-1]["id"], pages=player.pages(2))
    player.scripted.add(chapter)
    yield from _settled(player, chapter)
    player.emulator.set_faults(failure_rate=plan.failure_rate, stall_rate=plan.stall_rate,
                               seed=plan.seed)  # fmt: skip
    yield
    yield from _settled(player, chapter)
    player.client.add_pages(chapter, player.pages(1))


def rescan_in_interval(player: _Player) -> Iterator[None]:
    """A chapter created, finished and re-scanned between two snapshots."""
    if not player.comics():
        return
    yield
    chapter = player.create(player.comics()[0]["id"], pages=player.pages(2))
    player.scripted.add(chapter)
    if player.advance(RUN) and not player.client.get_chapter(chapter).processing:
        player.client.rescan_chapter(chapter)


def staged(player: _Player) -> Iterator[None]:
    """A chapter staged, given pages held, started at a later interval."""
    if not player.comics():
        return
    chapter = player.create(player.comics()[-1]["id"], staged=True)
    player.scripted.add(chapter)
    player.client.add_pages(chapter, player.pages(2), hold=True)
    yield
    player.client.start_chapter(chapter)


def run_rescanned_held(player: _Player) -> Iterator[None]:
    """Run a chapter, see it; then pages added and run, a re-scan of all, and pages
    added held, in one interval when it is long enough: a rise that reads as well as a
    re-scan of the pages seen and then the new pages all run ((c) and (d) of
    docs/analysis.md, seeds 0 and 63). The files the re-scan packaged tell them apart:
    they count the pages not held. So nothing fails meanwhile, and the random work
    leaves the chapter alone: a failed re-scan packages no file, and only a later
    re-scan's price could tell (seed 0), which a history may end before; a re-scan of
    the failed chapter before the pages are added makes three runs of the rise, which
    the reading does not try."""
    if not player.comics():
        return
    plan = player.plan
    chapter = player.create(player.comics()[0]["id"], pages=player.pages(3))
    player.scripted.add(chapter)
    player.quiet.add(chapter)
    yield
    yield from _settled(player, chapter)
    player.emulator.set_faults()
    player.client.add_pages(chapter, player.pages(2))
    yield from _settled(player, chapter)
    player.client.rescan_chapter(chapter)
    yield from _settled(player, chapter)
    player.client.add_pages(chapter, player.pages(2), hold=True)
    player.emulator.set_faults(failure_rate=plan.failure_rate, stall_rate=plan.stall_rate,
                               seed=plan.seed)  # fmt: skip
    yield
    player.quiet.discard(chapter)


def ran_before_the_store(player: _Player) -> Iterator[None]:
    """A chapter run before the store's first snapshot (settled by then when the
    interval allows, else still running), then given a page that runs and, a snapshot
    later, one held: what it paid before the store counts at every snapshot after, not
    only the last (its held page alone waits for a person). Its first step is taken
    before the first snapshot (`BEFORE_THE_STORE`)."""
    if not player.comics():
        return
    plan = player.plan
    player.emulator.set_faults()  # a failure would make its pages a re-scan's to read
    chapter = player.create(player.comics()[0]["id"], pages=player.pages(3))
    player.scripted.add(chapter)
    player.quiet.add(chapter)
    player.advance(RUN)
    player.emulator.set_faults(failure_rate=plan.failure_rate, stall_rate=plan.stall_rate,
                               seed=plan.seed)  # fmt: skip
    yield
    yield from _settled(player, chapter)
    player.client.add_pages(chapter, player.pages(1))
    yield
    yield from _settled(player, chapter)
    player.client.add_pages(chapter, player.pages(1), hold=True)
    yield
    yield
    player.quiet.discard(chapter)


TANGLES: dict[str, Callable[[_Player], Iterator[None]]] = {
    "held_after_rescan": held_after_rescan,
    "added_to_failed": added_to_failed,
    "rescan_in_interval": rescan_in_interval,
    "staged": staged,
    "run_rescanned_held": run_rescanned_held,
    "ran_before_the_store": ran_before_the_store,
}
# The tangles whose first step comes before the store's first snapshot.
BEFORE_THE_STORE = ("ran_before_the_store",)


@contextmanager
def played(
    plan: Plan, root: Path, after_take: Callable[[History], None] | None = None
) -> Iterator[History]:
    """Play `plan` into a store under `root`; the emulator and client stay open inside.
    `after_take` is called after each snapshot (a check of the store as it grows)."""
    with (
        Emulator(clock="manual", start=plan.start) as emulator,
        taking_deliveries() as webhook,  # the events are read back from the delivery log
    ):
        workspace = emulator.create_workspace(name=f"Seed {plan.seed}", credits=10_000_000)
        ws = workspace["id"]
        projects = []
        for project in plan.projects:
            made = emulator.create_project(
                ws, name=project.name, kind=project.kind, source_language="ja",
                reading_direction="rtl", process_steps=project.process_steps,
                target_languages=list(project.languages),
            )  # fmt: skip
            projects.append({"id": made["id"], "kind": project.kind, "idle": project.idle})
        if plan.events:
            emulator.add_webhook(ws, webhook, ["chapter.finished", "chapter.failed"],
                                 allow_private=True)  # fmt: skip
        emulator.set_faults(failure_rate=plan.failure_rate, stall_rate=plan.stall_rate,
                            seed=plan.seed)  # fmt: skip
        with Client(base_url=emulator.url, api_key=workspace["apiKey"]) as client:
            store = SnapshotStore(root / "store")
            history = History(plan, emulator, ws, client, store)
            player = _Player(plan, emulator, client, projects)
            # Work before the baseline, some of it still running when it is taken.
            player.left = plan.interval
            player.act()
            early = [TANGLES[name](player) for name in plan.tangles if name in BEFORE_THE_STORE]
            early = [tangle for tangle in early if next(tangle, StopIteration) is not StopIteration]
            player.advance(player.rng.choice([1, 60, plan.interval // 2]))
            store.take(client)
            history.marks.append(_marks(emulator, ws))
            if after_take is not None:
                after_take(history)
            tangles = [TANGLES[name](player) for name in plan.tangles
                       if name not in BEFORE_THE_STORE] + early  # fmt: skip
            for _ in range(1, plan.snapshots):
                player.left = plan.interval
                player.act()
                player.advance(player.rng.randint(1, plan.interval // 2))
                for tangle in list(tangles):
                    if next(tangle, StopIteration) is StopIteration:
                        tangles.remove(tangle)
                player.emulator.advance(player.left)
                store.take(client)
                history.marks.append(_marks(emulator, ws))
                if after_take is not None:
                    after_take(history)
                player.tidy(history)
            yield history


def _marks(emulator: Any, workspace_id: str) -> tuple[int, int]:
    ledger = emulator.ledger(workspace_id)
    return len(ledger["charges"]), len(ledger["lines"])

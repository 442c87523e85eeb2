"""Snapshot stores the report tests share (importable from any test directory)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from datafakes import T0, FakeService
from page_images import make_page

import toolkit as tk
from toolkit.store import SnapshotStore

STALLED = "The run stalled with no progress for 2 hours and was abandoned; retry it."
FAILED = "The run failed while translating page 2 into fr; re-scan the chapter."


def two_days(root: Path) -> SnapshotStore:
    """Two days from Mon 09:00 to Tue 11:00: a chapter that finishes, one that stalls and
    one that fails, both re-scanned and finished the next day; a project with no work."""
    service = FakeService()
    service.add_project("p1", name="Moonlit Harbor", languages=("en", "fr"))
    service.add_project("p2", name="Star Courier", languages=("en",))
    service.add_project("p3", name="Quiet Isles", languages=("en",))
    store = SnapshotStore(root)
    store.write(tk.pull(service), at=T0)
    service.add_chapter("c1", "p1", pages=3, credits=6, covered=4, created=T0)
    service.add_chapter("c2", "p2", pages=2, credits=2, covered=5, languages=("en",), created=T0)
    service.add_chapter("c3", "p1", position=2, pages=2, credits=4, covered=2, created=T0)
    store.write(tk.pull(service), at=T0 + timedelta(hours=1))
    service.update("c1", covered=9, processing=False, status="needs_review")
    service.update("c2", failed=True, processing=False, reason=STALLED)
    service.update("c3", failed=True, processing=False, reason=FAILED)
    store.write(tk.pull(service), at=T0 + timedelta(hours=2))
    service.update("c2", failed=False, processing=True, reason=None, credits=4, covered=1)
    service.update("c3", failed=False, processing=True, reason=None, credits=8, covered=1)
    store.write(tk.pull(service), at=T0 + timedelta(hours=3))
    service.update("c2", processing=False, status="needs_review", covered=6)
    service.update("c3", processing=False, status="needs_review", covered=7)
    store.write(tk.pull(service), at=T0 + timedelta(days=1, hours=2))
    return store


def three_days(root: Path) -> SnapshotStore:
    """Every 4 hours for three days from Mon 09:00: "Steady" translates a chapter of 4,800 lines
    at 100 an hour, done at hour 48 (so the daily replays have finishes to check);
    "Reviewed" has two chapters at needs_review from the start, one reviewed at hour 32."""
    service = FakeService()
    service.add_project("p1", name="Steady", languages=("en",))
    service.add_project("p2", name="Reviewed", languages=("en",))
    service.add_chapter("c1", "p1", languages=("en",), covered=0, untranslated=4800)
    store = SnapshotStore(root)
    for number, chapter in enumerate(("r1", "r2"), start=1):
        service.add_chapter(chapter, "p2", position=number, languages=("en",), covered=10,
                            processing=False, status="needs_review", activity=T0)  # fmt: skip
    for hour in range(0, 72, 4):
        covered = min(100 * hour, 4800)
        done = covered == 4800
        service.update("c1", covered=covered, untranslated=4800 - covered, processing=not done,
                       status="needs_review" if done else "translating",
                       activity=T0 + timedelta(hours=min(hour, 48)))  # fmt: skip
        if hour == 32:
            service.update("r1", status="reviewed", processing=False,
                           activity=T0 + timedelta(hours=32))  # fmt: skip
        store.write(tk.pull(service, details="all"), at=T0 + timedelta(hours=hour))
    return store


def trouble(root: Path) -> SnapshotStore:
    """Hourly from Mon 09:00: one chapter finishes then is given pages it never runs
    (held), one stalls, is re-scanned and stalls again (quiet for hours), one fails and
    is left failed, one goes on translating by itself."""
    service = FakeService()
    service.add_project("p1", name="Moonlit Harbor", languages=("en", "fr"))
    service.add_project("p2", name="Star Courier", languages=("en",))
    store = SnapshotStore(root)

    def take(hour: float) -> None:
        store.write(tk.pull(service, details="all"), at=T0 + timedelta(hours=hour))

    take(0)
    service.add_chapter("c1", "p1", pages=3, credits=6, covered=4, created=T0)
    service.add_chapter("c2", "p2", pages=2, credits=2, covered=5, languages=("en",), created=T0)
    service.add_chapter("c3", "p1", position=2, pages=2, credits=4, covered=2, created=T0)
    take(1)
    service.update("c1", covered=9, untranslated=0, processing=False, status="needs_review")
    service.update("c2", failed=True, processing=False, reason=STALLED)
    service.update("c3", failed=True, processing=False, reason=FAILED)
    take(2)
    service.update("c1", pages=5)  # held pages: added, never started
    service.update("c2", failed=False, processing=True, reason=None, credits=4, covered=1,
                   activity=T0 + timedelta(hours=3))  # fmt: skip
    later = T0 + timedelta(hours=3)
    service.add_chapter("c4", "p1", position=3, pages=2, credits=4, covered=3, untranslated=7,
                        created=later, activity=later)  # fmt: skip
    take(3)
    service.update("c4", covered=6, untranslated=4, activity=T0 + timedelta(hours=6))
    take(6)  # c2 quiet for three hours: stalled
    return store


def needing_people(
    emulator, client, comic: str, novel: str, root: Path
) -> tuple[SnapshotStore, dict[str, str]]:
    """On the emulator, snapshots every 3 minutes for half an hour: a comic with a chapter
    of held pages, one staged with no pages, one failed, one stalled and one running well;
    a novel with a failed chapter. Returns the store and the chapters that wait, by reason
    code (the stall counts as one past a 10-minute threshold)."""
    store = SnapshotStore(root)
    store.take(client)
    held = client.create_chapter(comic, pages=[make_page(1), make_page(2)])
    emulator.advance(600)  # finished
    store.take(client)
    client.add_pages(held.id, pages=[make_page(3)], hold=True)
    empty = client.create_chapter(comic, staged=True)
    emulator.set_faults(failure_rate=1.0, seed=1)
    failed = client.create_chapter(comic, pages=[make_page(4)])
    failed_novel = client.create_chapter(novel, text="第一章。" * 200)
    emulator.set_faults(stall_rate=1.0, seed=2)
    stalled = client.create_chapter(comic, pages=[make_page(5)])
    emulator.set_faults()
    client.create_chapter(comic, pages=[make_page(10 + i) for i in range(40)])  # runs on
    for _ in range(10):
        emulator.advance(180)
        store.take(client)
    return store, {held.id: "held_pages", empty.id: "no_pages", failed.id: "failed",
                   failed_novel.id: "failed", stalled.id: "stalled"}  # fmt: skip

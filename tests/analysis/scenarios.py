"""Steps of the run scenarios that more than one test drives the emulator through."""

from __future__ import annotations

from typing import Any

from page_images import make_page

from toolkit.store import SnapshotStore

RUN = 600  # seconds: long enough for a 5-page run in two languages to finish


def pages(first: int, count: int) -> list[bytes]:
    return [make_page(first + i) for i in range(count)]


def rescans_and_added_pages_in_one_interval(
    emulator: Any, client: Any, store: SnapshotStore, project_id: str, *, first_page: int = 0
) -> tuple[Any, Any]:
    """Two chapters run and are snapshotted; then, before the next snapshot, one is
    re-scanned and given pages, the other given pages and re-scanned (which pays for
    them again). Returns the two chapters."""
    one = client.create_chapter(project_id, pages=pages(first_page, 3))
    two = client.create_chapter(project_id, pages=pages(first_page + 10, 2))
    emulator.advance(RUN)
    store.take(client)
    client.rescan_chapter(one.id)
    emulator.advance(RUN)
    client.add_pages(one.id, pages(first_page + 20, 2))
    client.add_pages(two.id, pages(first_page + 30, 1))
    emulator.advance(RUN)
    client.rescan_chapter(two.id)
    emulator.advance(RUN)
    store.take(client)
    return one, two


def held_pages_started_hours_after_a_rescan(
    emulator: Any,
    client: Any,
    store: SnapshotStore,
    project_id: str,
    *,
    first_page: int = 0,
    held_pages: int = 2,
    held_first: bool = False,
) -> Any:
    """A chapter of 3 pages runs and is snapshotted; before the next snapshot it is
    re-scanned and given pages to hold (`held_first`: given them, then re-scanned: the
    same rows); hours later (another snapshot between) the held pages start. The
    re-scan pays for the pages that ran, the start for the held ones (issue 36: the
    start was read as a second re-scan, counting the chapter's lines again). With 3
    held pages the re-scan's rise reads as well as those 3 pages run; its files count
    3 pages of 6 (seed 111, which re-scanned first: then the held pages' addition is
    the chapter's last activity, read as the re-scan's end, docs/analysis.md). Returns
    the chapter."""
    chapter = client.create_chapter(project_id, pages=pages(first_page, 3))
    emulator.advance(RUN)
    store.take(client)
    new = pages(first_page + 10, held_pages)
    held = client.add_pages(chapter.id, new, hold=True) if held_first else None
    client.rescan_chapter(chapter.id)
    emulator.advance(RUN)
    held = held or client.add_pages(chapter.id, new, hold=True)
    emulator.advance(RUN)
    store.take(client)
    emulator.advance(3 * 3600)
    store.take(client)
    client.start_chapter(chapter.id, page_ids=[p.id for p in held.pages])
    emulator.advance(RUN)
    store.take(client)
    return chapter


def as_many_held_pages_as_ran(
    emulator: Any, client: Any, store: SnapshotStore, project_id: str, *, first_page: int = 0
) -> Any:
    """A chapter of 2 pages runs; 2 pages are held, seen, then started: a rise that is
    also a re-scan's price. The chapter never failed, so nothing was retried: the held
    pages started (issue 36's seed 18 read a re-scan). Returns it."""
    chapter = client.create_chapter(project_id, pages=pages(first_page, 2))
    emulator.advance(RUN)
    held = client.add_pages(chapter.id, pages(first_page + 10, 2), hold=True)
    store.take(client)
    client.start_chapter(chapter.id, page_ids=[p.id for p in held.pages])
    emulator.advance(RUN)
    store.take(client)
    return chapter


def rescan_with_more_pages_held_than_ran(
    emulator: Any, client: Any, store: SnapshotStore, project_id: str, *, first_page: int = 0
) -> Any:
    """A chapter of 2 pages runs and is seen; before the next snapshot it is re-scanned
    and given 3 pages to hold: the rise, 2 pages, also reads as 2 of the 3 new pages run
    (issue 36's seed 33). Returns it."""
    chapter = client.create_chapter(project_id, pages=pages(first_page, 2))
    emulator.advance(RUN)
    store.take(client)
    client.rescan_chapter(chapter.id)
    emulator.advance(RUN)
    client.add_pages(chapter.id, pages(first_page + 10, 3), hold=True)
    store.take(client)
    return chapter


def pages_run_rescanned_and_held_in_one_interval(
    emulator: Any,
    client: Any,
    store: SnapshotStore,
    project_id: str,
    *,
    first_page: int = 0,
    failing: bool = False,
) -> Any:
    """A chapter of 3 pages runs and is seen; before the next snapshot 2 pages are added
    and run, the chapter is re-scanned (5 pages) and 2 pages are added held: a rise of 7
    pages, 3 to 7 pages, which a re-scan of the 3 pages and 4 pages run explain as well
    (docs/analysis.md, (c) and (d); issue 36's seeds 0 and 63). The store tells: the
    files the re-scan packaged count 5 pages; `failing`, every run fails (no files), and
    a later re-scan pays for 5 pages, not 7. Returns the chapter."""
    if failing:
        emulator.set_faults(failure_rate=1.0, seed=5)
    chapter = client.create_chapter(project_id, pages=pages(first_page, 3))
    emulator.advance(RUN)
    store.take(client)
    client.add_pages(chapter.id, pages(first_page + 10, 2))
    emulator.advance(RUN)
    client.rescan_chapter(chapter.id)
    emulator.advance(RUN)
    client.add_pages(chapter.id, pages(first_page + 20, 2), hold=True)
    store.take(client)
    if failing:
        emulator.set_faults()
        client.rescan_chapter(chapter.id)
        emulator.advance(RUN)
        store.take(client)
    return chapter


def pages_run_beside_pages_held_before(
    emulator: Any, client: Any, store: SnapshotStore, project_id: str, *, first_page: int = 0
) -> Any:
    """A chapter of 2 pages runs and is seen; 3 pages are added held, seen; then 2 pages
    are added and run, seen; then the held pages start. The files count 4 pages of 7
    (the 3 held before), and the rise, 2 pages, is also a re-scan of the 2 paid with the
    new pages held: they ran, as the files say (issue 36's seeds 4 and 82, read as
    re-scans when any file short of the chapter's pages had the walk try that reading
    and a rise with no rest was taken for one no reading fits). Returns the chapter."""
    chapter = client.create_chapter(project_id, pages=pages(first_page, 2))
    emulator.advance(RUN)
    store.take(client)
    held = client.add_pages(chapter.id, pages(first_page + 10, 3), hold=True)
    store.take(client)
    client.add_pages(chapter.id, pages(first_page + 20, 2))
    emulator.advance(RUN)
    store.take(client)
    client.start_chapter(chapter.id, page_ids=[p.id for p in held.pages])
    emulator.advance(RUN)
    store.take(client)
    return chapter

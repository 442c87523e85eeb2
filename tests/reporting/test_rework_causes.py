"""The weekly page's re-run credits by cause, per project (`rework_causes`): each
chapter's project as its last change shows it, whether the chapter is still there or
was trashed since (then its project comes from the chapters' log)."""

from __future__ import annotations

import pytest
from page_images import make_page

from toolkit.analysis.observed import Observed
from toolkit.reporting.figures import period
from toolkit.reporting.rework_causes import rework_causes
from toolkit.store import SnapshotStore

RUN = 600  # seconds: a run of a few pages in two languages ends within it


def pages(first: int, count: int) -> list[bytes]:
    return [make_page(first + i) for i in range(count)]


@pytest.fixture
def store(tmp_path):
    return SnapshotStore(tmp_path / "store")


def test_a_chapter_trashed_since_its_rerun_keeps_its_rework_in_its_project(
    emulator, workspace, client, store
):
    comic = {"kind": "comic", "source_language": "ja", "reading_direction": "rtl",
             "process_steps": "translate", "target_languages": ["en", "fr"]}  # fmt: skip
    shelf, harbor = (
        emulator.create_project(workspace["id"], name=name, **comic)
        for name in ("Paper Shelf", "Moonlit Harbor")
    )
    store.take(client)
    emulator.set_faults(failure_rate=1.0, seed=1)
    gone = client.create_chapter(shelf["id"], pages=pages(0, 3))
    kept = client.create_chapter(harbor["id"], pages=pages(10, 2))
    emulator.advance(RUN)
    store.take(client)  # both failed
    emulator.set_faults()
    for chapter in (gone, kept):
        client.rescan_chapter(chapter.id)
    emulator.advance(RUN)
    store.take(client)  # both re-run: rework
    emulator.trash_chapter(gone.id)
    emulator.advance(RUN)
    store.take(client)  # the latest snapshot no longer holds `gone`

    rework: dict[str, float] = {}
    for charge in emulator.ledger(workspace["id"])["charges"]:
        if charge["rework"]:
            rework[charge["projectId"]] = rework.get(charge["projectId"], 0) + charge["credits"]
    assert set(rework) == {shelf["id"], harbor["id"]}  # the scenario's premise

    causes = rework_causes(Observed(store), period(store))
    assert causes["rework_failed"].to_dict() == pytest.approx(rework)
    assert causes[["rework_stalled", "rework_rescan"]].sum().sum() == 0

"""`latest` and `as_of` answer in one order: by the table's key, whatever the files hold."""

from __future__ import annotations

import pytest
from datafakes import T0, FakeService, hours, iso
from pandas.testing import assert_frame_equal

import toolkit as tk
from toolkit.frames import schema
from toolkit.store import SnapshotStore


def _export(cid: str, code: str, form: str) -> dict[str, object]:
    return {
        "languageCode": code,
        "format": form,
        "filename": f"{cid}-{code}.{form}",
        "byteSize": 100,
        "pageCount": 2,
        "preparedAt": iso(T0),
    }


@pytest.fixture
def store(tmp_path) -> SnapshotStore:
    """Three snapshots: chapters added out of key order, then some of them changed."""
    service = FakeService()
    for pid in ("p3", "p1", "p2"):
        service.add_project(pid, languages=("fr", "en"))
    store = SnapshotStore(tmp_path / "store")
    for hour, cids in enumerate([("c9", "c2", "c5"), ("c7", "c1"), ("c4", "c8")]):
        for i, cid in enumerate(cids):
            exports = [_export(cid, code, form) for code in ("fr", "en") for form in ("txt", "cbz")]
            service.add_chapter(
                cid, f"p{1 + i % 3}", position=hour * 3 + i + 1, covered=1, exports=exports
            )
        for changed in list(service.chapters)[::2]:
            service.update(changed, covered=hour + 2)
        store.write(tk.pull(service, details="all"), at=hours(hour))
    return store


@pytest.mark.parametrize("table", list(schema.SNAPSHOT_TABLES))
def test_rows_come_ordered_by_key_and_the_same_every_call(store, table):
    keys = list(schema.KEYS[table])
    fresh = SnapshotStore(store.root)  # reads the files, not what the writer kept
    answers = [store.latest(table), fresh.latest(table), fresh.latest(table)]
    answers += [fresh.as_of(table, hours(1)), store.as_of(table, hours(1))]
    for answer in answers:
        assert len(answer) > 1
        assert_frame_equal(answer, answer.sort_values(keys, ignore_index=True))
    assert_frame_equal(answers[0], answers[1])
    assert_frame_equal(answers[3], answers[4])

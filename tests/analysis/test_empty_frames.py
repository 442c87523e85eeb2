"""Every public analysis function, and the watch's checks that read them, on stores with
nothing or one row in them: no snapshot, no project, no chapter, one snapshot of one
chapter, one chapter that finished or failed (the reports: tests/reporting/
test_report_sections.py). None raises (issue 36: a lookup through an empty frame of times
crashed the 24-hour demo's weekly page); `looked_up` is the lookup they share."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest
from datafakes import FakeService, hours

import toolkit as tk
from toolkit import analysis
from toolkit.analysis._arrays import looked_up
from toolkit.store import SnapshotStore

TIMES = "datetime64[us, UTC]"


def test_a_lookup_through_an_empty_table_of_times_is_all_null_times():
    keys = pd.Series(["c1", "c2"], index=[5, 6])
    empty = pd.Series([], dtype=TIMES, index=pd.Index([], dtype=object))
    if int(pd.__version__.split(".")[0]) >= 3:  # why the helper exists (2.2 maps these)
        with pytest.raises(TypeError, match="Cannot cast"):
            keys.map(empty)
    found = looked_up(keys, empty)
    assert found.dtype == TIMES and found.isna().all()
    assert found.index.tolist() == [5, 6]


@pytest.mark.parametrize(
    "table",
    [
        pd.Series([pd.Timestamp("2026-03-02 10:00", tz="UTC")], index=["c2"], dtype=TIMES),
        pd.Series([pd.Timedelta(hours=2)], index=["c2"]),
        pd.Series(["comic"], index=["c2"], dtype="string"),
        pd.Series([], dtype="string", index=pd.Index([], dtype=object)),
        pd.Series([], dtype="timedelta64[us]", index=pd.Index([], dtype=object)),
    ],
    ids=["times", "durations", "texts", "no texts", "no durations"],
)
def test_a_lookup_keeps_the_tables_dtype_and_the_keys_index(table):
    keys = pd.Series(["c1", "c2"], index=[5, 6], name="chapter_id")
    found = looked_up(keys, table)
    assert (found.dtype, found.index.tolist(), found.name) == (table.dtype, [5, 6], "chapter_id")
    assert pd.isna(found.iloc[0])
    assert found.iloc[1] == table.iloc[0] if len(table) else pd.isna(found.iloc[1])


def test_a_lookup_of_no_keys_is_empty():
    found = looked_up(pd.Series([], dtype=object), pd.Series([1.5], index=["c1"]))
    assert found.empty


def _no_snapshot(root: Path) -> SnapshotStore:
    return SnapshotStore(root)


def _no_project(root: Path) -> SnapshotStore:
    store = SnapshotStore(root)
    for hour in (0, 1):
        store.write(tk.pull(FakeService()), at=hours(hour))
    return store


def _no_chapter(root: Path) -> SnapshotStore:
    service = FakeService()
    service.add_project("p1", name="Quiet Isles", languages=("en",))
    store = SnapshotStore(root)
    for hour in (0, 1):
        store.write(tk.pull(service), at=hours(hour))
    return store


def _one_chapter(then: dict[str, object] | None) -> Callable[[Path], SnapshotStore]:
    """One chapter running at hour 0; `then` its state at hour 1 (None: no second snapshot)."""

    def build(root: Path) -> SnapshotStore:
        service = FakeService()
        service.add_project("p1", name="Quiet Isles", languages=("en",))
        service.add_chapter("c1", "p1", pages=2, credits=2, covered=3, languages=("en",),
                            created=hours(0))  # fmt: skip
        store = SnapshotStore(root)
        store.write(tk.pull(service), at=hours(0))
        if then is not None:
            service.update("c1", **then)
            store.write(tk.pull(service), at=hours(1))
        return store

    return build


STORES = {
    "no snapshot": _no_snapshot,
    "no project": _no_project,
    "no chapter": _no_chapter,
    "one snapshot of one chapter": _one_chapter(None),
    "one chapter finished": _one_chapter(
        {"processing": False, "status": "needs_review", "covered": 9}
    ),
    "one chapter failed": _one_chapter({"processing": False, "failed": True, "reason": "x"}),
}
# Each public function of a store with what it needs besides the store (`advice` and
# `reason_words` read the reasons table, not a store).
CALLS: dict[str, dict[str, object]] = {
    name: {}
    for name in analysis.__all__
    if name[0].islower()
    and name != "price_estimate"
    and next(iter(inspect.signature(getattr(analysis, name)).parameters)) == "store"
}
CALLS["price_estimate"] = {"project_id": "p1", "pages": 4}


@pytest.fixture(scope="module", params=list(STORES), ids=list(STORES))
def small(request, tmp_path_factory) -> SnapshotStore:
    return STORES[request.param](tmp_path_factory.mktemp("store"))


@pytest.mark.parametrize("name", list(CALLS))
@pytest.mark.slow
def test_every_public_analysis_function_answers_on_a_store_with_nothing_or_one_row(small, name):
    if name == "price_estimate" and small.latest("chapters").empty:
        # Its documented refusal: no price to learn from, said with what to do.
        with pytest.raises(ValueError, match=r"no page price learned .* take snapshots"):
            analysis.price_estimate(small, **CALLS[name])
        return
    answered = getattr(analysis, name)(small, **CALLS[name])
    answers = pd.DataFrame | pd.Series | dict | float | int | analysis.Calibration | None
    assert isinstance(answered, answers)


def test_the_review_moves_and_lags_answer_typed_on_a_store_with_nothing_or_one_row(small):
    # The lags subtract times from times: on a store with no snapshot the moves were
    # untyped columns, and `review_lags` raised a TypeError.
    from toolkit.analysis.observed import Observed
    from toolkit.analysis.review import review_lag_hours, review_lags, review_moves
    from toolkit.frames.schema import TEXT_DTYPE, TIME_DTYPE

    obs = Observed(small)
    as_of = obs.times[-1] if obs.times else pd.Timestamp("2026-03-02", tz="UTC")
    lags = review_lags(obs, as_of)
    assert lags.dtypes.to_dict() == {
        "chapter_id": TEXT_DTYPE, "project_id": TEXT_DTYPE, "reviewed_at": TIME_DTYPE,
        "ready_at": TIME_DTYPE, "source": TEXT_DTYPE, "hours": "float64",
    }  # fmt: skip
    assert review_moves(obs, as_of)["at"].dtype == TIME_DTYPE
    assert review_lag_hours(obs, as_of).dtype == "float64"


def test_the_watch_checks_answer_on_a_store_with_nothing_or_one_row(small, tmp_path):
    from datetime import timedelta

    from toolkit.watch.checks import evaluate
    from toolkit.watch.config import Budget, CheckSettings, WatchConfig, WatchedWorkspace

    config = WatchConfig(
        path="(test)",
        store=str(tmp_path / "watch"),
        interval=timedelta(hours=1),
        workspaces={"w": WatchedWorkspace("w", "http://127.0.0.1:9", "CTS_KEY_W", str(small.root))},
        budgets=(Budget("workspace", "w", "month", 100),),
        checks=CheckSettings(failed_waiting_after=timedelta(minutes=1)),
    )
    found = evaluate({"w": small}, config)
    assert all(finding.workspace == "w" for finding in found)

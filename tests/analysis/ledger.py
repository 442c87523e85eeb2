"""The emulator's truth about runs, and the check that `analysis.runs` agrees with it.

The ledger has one charge per run (its time, credits, pages and reason); the delivery
log has the run's `chapter.finished` or `chapter.failed` event. A chapter's runs follow
one another, so its n-th charge and its n-th ending event belong to the same run (a
run stopped by the trash sends none, and is the chapter's last).
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from typing import Any

import pandas as pd

from toolkit import analysis
from toolkit.store import SnapshotStore


@dataclass
class TrueRun:
    chapter_id: str
    kind: str | None
    credits: int
    pages: int
    rework: bool
    started_at: pd.Timestamp
    outcome: str | None = None
    finished_at: pd.Timestamp | None = None


def events(emulator: Any) -> list[dict[str, Any]]:
    """The events the emulator sent, as `store.record_events` takes them."""
    return [json.loads(d["body"]) | {"webhook_id": d["webhookId"]} for d in emulator.deliveries()]


def true_runs(emulator: Any, workspace_id: str) -> dict[str, list[TrueRun]]:
    ledger = emulator.ledger(workspace_id)
    runs: dict[str, list[TrueRun]] = {}
    for charge in ledger["charges"]:
        mine = runs.setdefault(charge["chapterId"], [])
        kind = {"create": "first", "rescan": "rescan", "add_pages": "added_pages",
                "start": "held_start"}[charge["reason"]]  # fmt: skip
        if not mine and kind != "rescan":
            kind = "first"  # a staged chapter's first run starts with its pages
        mine.append(TrueRun(charge["chapterId"], kind, charge["credits"], charge["pages"],
                            charge["rework"], pd.Timestamp(charge["at"])))  # fmt: skip
    ends: dict[str, list[dict[str, Any]]] = {}
    for event in events(emulator):
        if event["type"] in ("chapter.finished", "chapter.failed"):
            ends.setdefault(event["data"]["chapterId"], []).append(event)
    for chapter, found in ends.items():
        found.sort(key=lambda e: e["timestamp"])
        for run, event in zip(runs.get(chapter, []), found, strict=False):
            run.finished_at = pd.Timestamp(event["timestamp"])
            reason = event["data"].get("failureReason") or ""
            run.outcome = (
                "finished"
                if event["type"] == "chapter.finished"
                else "stalled"
                if "stalled" in reason
                else "failed"
            )
    return runs


def check_runs(
    store: SnapshotStore,
    emulator: Any,
    workspace_id: str,
    *,
    unseen: frozenset[str] = frozenset(),
    reuploads: frozenset[str] = frozenset(),
) -> pd.DataFrame:
    """Assert that `analysis.runs(store)` is the ledger's runs after the baseline, with
    times equal where their source says they are exact and bounded where not; chapters
    in `unseen` (created and trashed between two snapshots) are the store's blind spot;
    those in `reuploads` are novels uploaded again after failing, whose first charge the
    analysis counts as rework where the ledger does not. Returns the runs."""
    found = analysis.runs(store)
    manifest = store.snapshots()
    first = store.history("chapters", until=manifest["snapshot_at"].iloc[0])
    first = first[first["snapshot_id"] == manifest["snapshot_id"].iloc[0]]
    spent_at_baseline = dict(zip(first["chapter_id"], first["credits_spent"], strict=True))
    times = list(manifest["snapshot_at"])
    truth = true_runs(emulator, workspace_id)
    for chapter, runs in truth.items():
        # The charges the baseline already showed were made before the store's history;
        # the last of them may still have been running then: a row with no credits.
        paid, expected = 0, []
        for run in runs:
            paid += run.credits
            if paid > spent_at_baseline.get(chapter, 0):
                expected.append(run)
        before = runs[: len(runs) - len(expected)]
        if before and (before[-1].finished_at is None or before[-1].finished_at > times[0]):
            going = dataclasses.replace(
                before[-1],
                credits=0,
                rework=False,
                kind="first" if before[-1].kind == "first" else None,
            )
            expected.insert(0, going)
        mine = found[found["chapter_id"] == chapter].sort_values("run_id", key=_number)
        if chapter in unseen:
            assert mine.empty
            continue
        assert len(mine) == len(expected), (chapter, mine, expected)
        rows = mine.astype(object).where(mine.notna(), None)
        for row, run in zip(rows.itertuples(index=False), expected, strict=True):
            assert (row.kind, row.credits, row.pages) == (run.kind, run.credits, run.pages), (
                row,
                run,
            )
            assert row.rework == (run.credits if run.rework or chapter in reuploads else 0)
            if row.started_source == "created":
                assert row.started_at == run.started_at, (row, run)
            elif row.started_at is not None:  # the earliest moment the store allows
                assert row.started_at <= run.started_at
                # A snapshot's time is the service's Date header, whole seconds; the
                # emulator's clock keeps milliseconds, which are .000 about once in a
                # thousand starts: a snapshot taken at the run's own instant then reads
                # equal to its start, not earlier (`<` made this test fail then).
                assert max(t for t in times if t <= run.started_at) <= row.started_at
            if row.finished_source in ("event", "last_activity"):
                assert row.finished_at == run.finished_at, (row, run)
            if row.outcome is not None and row.outcome != "running":
                assert row.outcome == run.outcome, (row, run)
            if row.outcome == "running":
                assert run.finished_at is None or run.finished_at > times[-1]
    return found


def _number(run_ids: pd.Series) -> pd.Series:
    return run_ids.str.rsplit("/", n=1).str[1].astype(int)


def finish_times(
    deliveries: list[dict[str, Any]],
) -> tuple[dict[str, pd.Timestamp], dict[tuple[str, str], pd.Timestamp]]:
    """The true finishes in the emulator's deliveries (`Emulator.deliveries`): each
    chapter's last `chapter.finished` time, and each chapter and language's last
    prepared time (`export.ready`'s `preparedAt`): the run going at a forecast ended last."""
    events = sorted(
        (json.loads(d["body"]) for d in deliveries), key=lambda e: pd.Timestamp(e["timestamp"])
    )
    finished: dict[str, pd.Timestamp] = {}
    packaged: dict[tuple[str, str], pd.Timestamp] = {}
    for event in events:
        data = event["data"]
        if event["type"] == "chapter.finished":
            finished[data["chapterId"]] = pd.Timestamp(event["timestamp"])
        else:
            packaged[(data["chapterId"], data["languageCode"])] = pd.Timestamp(data["preparedAt"])
    return finished, packaged

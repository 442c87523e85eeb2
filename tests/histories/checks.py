"""What every seed must satisfy: every surface completes on its store, `figures.json`
equals the emulator's ledger, and sums are the same whatever the calendar.

The truth is the ledger between the baseline and the last snapshot (the store counts
nothing before its baseline and sees nothing after its last snapshot), the same truth
tests/analysis/test_figures.py holds the hourly figures to.
"""

from __future__ import annotations

import inspect
import json
import math
import tempfile
from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import Final

import pandas as pd
import pytest
from aged_states import aged
from ledger import events
from windows import assert_seen_reads_the_workspace, assert_windows_equal_the_whole

import toolkit as tk
from histories.plan import Plan
from histories.play import History, played
from toolkit import analysis
from toolkit.analysis import run_part
from toolkit.analysis.needs_person import pages_at_last_run
from toolkit.analysis.observed import Observed
from toolkit.analysis.run_check import STAGES, check_runs_kept, stages_equal
from toolkit.analysis.run_store import FOLDER, Keeper
from toolkit.analysis.transitions import Transitions
from toolkit.reporting.figures import period
from toolkit.reporting.rework_causes import rework_causes
from toolkit.store import SnapshotStore
from toolkit.widgets import Dashboard

# A price estimate refuses a project whose price nothing taught yet: a documented
# refusal, not a crash.
NO_PRICE = ("no chapter price learned", "no page price learned")
# The weekly page of the baseline alone renders, its period's sections saying why they
# are empty.
ONE_SNAPSHOT = "One snapshot so far: figures over a period need a second one"
CALENDARS = ("1h", "D", "W-MON", "MS")
# The figures read from the run stages the store keeps, checked equal to the pipeline's.
RUN_FIGURES = {
    "runs": {},
    "credit_spend": {"freq": "1D"},
    "throughput": {"freq": "1D"},
    "cycle_times": {},
    "lead_times": {},
    "failures": {},
    "charges": {},
    "finished": {"freq": "D"},
}
WATCH = """\
store = "{root}"
[workspaces.store]
base_url = "http://127.0.0.1:9"
key_env = "HISTORIES_WATCH_KEY"
[[budgets]]
scope = "workspace"
name = "store"
period = "week"
credits = 50
[[budgets]]
scope = "project"
name = "Series 1"
period = "month"
credits = 100
[due]
"Series 1" = {due}
"""


def surfaces(history: History, folder: Path) -> None:
    """Every public analysis function, `tk.report` in both formats (the weekly page in
    UTC and in the plan's zone), the watch's checks and the Dashboard's data complete."""
    store, tz = history.store, history.plan.tz
    for name in analysis.__all__:
        function = getattr(analysis, name)
        if not callable(function) or name[0].isupper():
            continue
        first = next(iter(inspect.signature(function).parameters), None)
        if name in ("advice", "reason_words"):  # words for `stuck`'s reason codes
            for reason in analysis.REASONS:
                assert function(reason) and function(reason, "novel"), (name, reason)
            continue
        if name == "price_estimate":
            for project in store.latest("projects")["project_id"]:
                try:
                    function(store, project, pages=5)
                except ValueError as refused:
                    assert str(refused).startswith(NO_PRICE), refused
            continue
        if first != "store":  # a rule on frames (`needing_person`), not a figure of a store
            continue
        function(store)
        if "tz" in inspect.signature(function).parameters:
            function(store, tz=tz)
    tk.report(store, folder, format="json")  # the baseline alone: its figures null
    for page in (folder / "weekly.html", folder / "weekly-zoned.html"):
        tk.report(store, page, tz=tz if "zoned" in page.name else None)
        if len(store.snapshots()) == 1:  # the baseline alone: a page saying what it needs
            assert ONE_SNAPSHOT in page.read_text(encoding="utf-8")
    tk.report(store, folder / "weekly.xlsx", format="xlsx", tz=tz)
    config = folder / "watch.toml"
    due = (pd.Timestamp(history.plan.end) + pd.Timedelta(days=1)).date().isoformat()
    config.write_text(WATCH.format(root=Path(store.root).parent, due=due))
    tk.watch.checks(store, config)
    tk.watch.open_alerts(store, config)
    dashboard = Dashboard(history.client, store=store, watch=config)
    for value in [v for _, v in dashboard.picker.options]:
        dashboard.picker.value = value
        dashboard.refresh()
        assert not dashboard._refresh_failed, dashboard.message


def ledger_truth(history: History) -> dict[str, Counter[str]]:
    """Per project: credits, rework credits and lines the ledger holds between the
    baseline and the last snapshot."""
    ledger = history.emulator.ledger(history.workspace_id)
    first, last = history.charges
    truth: dict[str, Counter[str]] = {}
    for charge in ledger["charges"][first:last]:
        mine = truth.setdefault(charge["projectId"], Counter())
        mine["credits"] += charge["credits"]
        mine["rework_credits"] += charge["credits"] if charge["rework"] else 0
    first, last = history.lines
    for number, entry in enumerate(ledger["lines"][first:last], start=first):
        if not discarded_unseen(history, ledger, number):
            truth.setdefault(entry["projectId"], Counter())["lines"] += entry["lines"]
    return truth


def discarded_unseen(history: History, ledger: dict, number: int) -> bool:
    """Whether the ledger's line entry `number` was discarded by a re-scan of its
    chapter before any snapshot showed it: the store's blind spot (docs/testing.md,
    "Seeded histories"). The snapshot that could show it is the first taken after it;
    a re-scan charged after it and before that snapshot discarded it."""
    entry = ledger["lines"][number]
    seen_by = next(charges for charges, lines in history.marks if lines > number)
    return any(
        charge["chapterId"] == entry["chapterId"]
        and charge["reason"] == "rescan"
        and _at(charge["at"]) > _at(entry["at"])
        for charge in ledger["charges"][:seen_by]
    )


def _at(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def figures_equal_the_ledger(history: History, folder: Path) -> dict:
    """`figures.json` over the whole history: each project's credits, rework credits
    and lines are the ledger's; and so are the weekly page's re-run credits by cause,
    summed over the causes (each chapter's project, trashed chapters' too). Returns
    figures.json's content."""
    store = history.store
    times = store.snapshots()["snapshot_at"]
    if len(times) < 2:  # the baseline alone counts nothing: its figures are null
        return {}
    until = times.iloc[-1] + pd.Timedelta(seconds=1)
    path = tk.report(store, folder / "all.json", format="json", since=times.iloc[0],
                     until=until)  # fmt: skip
    figures = json.loads(path.read_text())
    truth = ledger_truth(history)
    shown = {p["project_id"]: p for p in figures["projects"]}
    causes = rework_causes(Observed(store), period(store, since=times.iloc[0], until=until))
    by_cause = causes.sum(axis=1).to_dict()
    for project in set(truth) | set(shown) | set(by_cause):
        expected = truth.get(project, Counter())
        got = shown.get(project, {}) | {"rework_by_cause": by_cause.get(project)}
        for figure in ("credits", "rework_credits", "lines", "rework_by_cause"):
            wanted = expected["rework_credits" if figure == "rework_by_cause" else figure]
            assert (got.get(figure) or 0) == wanted, (
                f"seed {history.plan.seed}: {figure} of project {project}: the store "
                f"says {got.get(figure)}, the ledger {wanted}"
            )
    return figures


def sums_are_conserved(history: History) -> None:
    """Credits, rework, lines and finished runs total the same by the hour, day, week
    and month, in UTC and in the plan's zone."""
    store, zones = history.store, ("UTC", history.plan.tz)
    measures = {
        "credits": lambda f, z: (
            analysis.credit_spend(store, freq=f, tz=z)[["credits", "rework_credits"]].sum().tolist()
        ),
        "lines": lambda f, z: [analysis.throughput(store, freq=f, tz=z)["lines"].sum()],
        "finished": lambda f, z: [analysis.finished(store, freq=f, tz=z)["runs"].sum()],
    }
    for name, total in measures.items():
        found = {(f, z): total(f, z) for f in CALENDARS for z in zones}
        assert len({str(v) for v in found.values()}) == 1, (history.plan.seed, name, found)


def pages_paid_equal_the_ledger(history: History) -> None:
    """At every snapshot, not only the last, the pages each resting comic chapter had
    paid to run (what tells held pages, `needs_person`) are the ledger's charges by then
    but re-scans: the work before the baseline included."""
    obs = Observed(SnapshotStore(history.store.root))
    charges = history.emulator.ledger(history.workspace_id)["charges"]
    for as_of, (count, _) in zip(obs.times, history.marks, strict=True):
        paid: Counter[str] = Counter()
        for charge in charges[:count]:
            if charge["reason"] != "rescan":
                paid[charge["chapterId"]] += charge["pages"]
        chapters = obs.at("chapters", as_of)
        resting = (
            chapters["started"].fillna(False).astype(bool)
            & ~chapters["processing"].fillna(False).astype(bool)
            & (chapters["page_count"].fillna(0) > 0)
        )
        asked = pd.Index(chapters["chapter_id"][resting].astype(object), dtype=object)
        found = pages_at_last_run(obs, as_of, asked)
        expected = {chapter: paid[chapter] for chapter in asked}
        assert {chapter: int(found[chapter]) for chapter in asked} == expected, (
            history.plan.seed,
            as_of,
        )


def kept_runs_equal_the_pipeline(history: History) -> None:
    """The run stages kept in the store (`run_store`) equal a build from
    the change log, and the run figures read from them the figures worked out without
    them (the reference path), frame for frame."""
    root, seed = history.store.root, history.plan.seed
    reference = Observed(SnapshotStore(root), keep=False)
    # A history's stages build in well under `KEEP_AFTER_SECONDS`: kept here on purpose.
    for name, asked in RUN_FIGURES.items():
        getattr(analysis, name)(Observed(SnapshotStore(root), keep_after=0), **asked)
    kept = Observed(SnapshotStore(root))
    if not reference.stage(Transitions).empty:  # a store with no chapter keeps nothing
        assert list((Path(root) / FOLDER).glob("*/run_table.arrow")), seed
    assert check_runs_kept(str(root)) == [], seed
    for name, asked in RUN_FIGURES.items():
        built = getattr(analysis, name)(reference, **asked)
        read = getattr(analysis, name)(kept, **asked)
        pd.testing.assert_frame_equal(read, built, check_exact=True, obj=f"seed {seed}: {name}")


# Every third snapshot's stages are read; the update keeps a part after each
# (`run_part`), so a part over a base, a part over a part, and a part read are each
# checked every three snapshots.
_READ_EVERY: Final = 3


def extended_stages_equal_a_build(history: History) -> None:
    """After a snapshot: the update (`Observed.update`) keeps a part over the last base
    state; at every third snapshot the run stages, the part joined with its base (or
    extended from the state before where `run_extend` may), equal the stages built from
    the whole change log, value for value. With the plan's events, those delivered so
    far are recorded first (as a watch records them each cycle): events that close runs
    between snapshots."""
    root, seed = history.store.root, history.plan.seed
    if history.plan.events:
        history.store.record_events(events(history.emulator))
    aged(Path(root) / FOLDER, history.plan.interval)
    # Parts of any size, over any share of the chapters (a history's few chapters are
    # more than a tenth, or half, at once; those created since count too), so that every
    # seed checks parts.
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(run_part, "MOST_TOUCHED", math.inf)
        history.updated.append(Observed(SnapshotStore(root)).update(join_past=math.inf))
    store = SnapshotStore(root)
    keeper = Keeper(store, store.version())
    part = run_part.read_part(keeper, keeper.state(store.snapshots()))
    assert part is None or keeper.holds(part.base, "transitions"), (
        f"seed {seed}, snapshot {len(store.snapshots())}: the base of the part kept is gone"
    )
    if len(history.updated) % _READ_EVERY:
        return
    extended = Observed(SnapshotStore(root), keep_after=0)  # kept, however quick
    reference = Observed(SnapshotStore(root), keep=False)
    for kind in STAGES:
        assert stages_equal(extended.stage(kind), reference.stage(kind)), (
            f"seed {seed}, snapshot {len(reference.manifest)}: {kind.__name__} "
            f"{'extended' if extended.extended else 'built'} differs from a build"
        )
    # A part kept for the state is joined with its base, not built whole beside it.
    assert extended.extended or part is None, (
        f"seed {seed}, snapshot {len(reference.manifest)}: the part kept was not joined"
    )
    history.extended.append(extended.extended)


def check(history: History, folder: Path) -> None:
    """Everything a seed must satisfy, from the snapshots alone and, when the plan
    says so, with the webhook events recorded."""
    if history.plan.events:
        history.store.record_events(events(history.emulator))
    surfaces(history, folder)
    kept_runs_equal_the_pipeline(history)
    assert_windows_equal_the_whole(history.store, f"seed {history.plan.seed}")
    assert_seen_reads_the_workspace(history.store, f"seed {history.plan.seed}")
    figures_equal_the_ledger(history, folder)
    pages_paid_equal_the_ledger(history)
    sums_are_conserved(history)


def play_and_check(plan: Plan) -> tuple[list[bool], list[bool]]:
    """Play `plan` in a temporary folder and check it (`check`); after each snapshot
    read, whether its run stages were extended, and after each snapshot, whether the
    update kept a part (`extended_stages_equal_a_build`)."""
    with (
        tempfile.TemporaryDirectory(prefix=f"histories-{plan.seed}-") as folder,
        played(plan, Path(folder), after_take=extended_stages_equal_a_build) as history,
    ):
        check(history, Path(folder))
        return history.extended, history.updated

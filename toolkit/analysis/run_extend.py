"""The run stages of a new state of the store extended from those kept for an earlier
one, recomputing only the chapters that changed since (issue 43, item 1).

A run figure's stages (`run_store`) are per chapter but for three rules that reach
across chapters: the learned price (the most common first charge of the whole history),
the names a chapter's runs carry (its project's latest name, kind and model, the
service's default model) and a novel uploaded again (rework when another chapter at its
position's last run failed). So when a state is asked whose snapshots extend a kept
state's (the same snapshots first, each new one based on the one before it, and every
table commit since a snapshot's write, events or a merge of files: nothing undone,
repaired, upgraded or restored), the stages are the kept ones with the *touched*
chapters worked out again and spliced in by chapter: their rows since the kept snapshots
added to their kept rows (only the snapshots since are read; those a rule reaches back
for, over their whole history: `run_touched`):

- every chapter with a change row or a language row since (a change of status alone
  too: working a chapter out again is never wrong, only slower);
- every chapter of a project whose name, kind, model or languages changed;
- every chapter whose end events changed (events recorded since, for any time);
- every chapter of a novel project with a touched chapter (a re-upload's rework);
- every chapter whose kept rows cannot be told back to the query's answer (created more
  than once).

Open runs need nothing of their own: a run still going at the kept state's last
snapshot is closed by a row of its chapter since, which touches the chapter. The
transitions are the kept rows of the chapters untouched and the new answer, in the
query's order; the charges and the run table are the kept ones of the chapters
untouched and the touched chapters' built alone, with the learned prices of the whole
history (`run_splice` joins them); the runs frame is made from them when asked.
Anything else falls back to the full build: no kept state to start from, a prefix or a
commit that does not hold, another default model, more than half the chapters touched
(the full build is then as quick); and a learned price that moved builds the charges
and the run table whole from the spliced transitions. What is spliced equals the full
build value for value (`run_check.stages_equal`: tests/analysis/test_run_store.py and
each snapshot of every seeded history check it).
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, cast

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from toolkit.analysis import run_touched as touching
from toolkit.analysis._arrays import to_micros
from toolkit.analysis.charges import Charges
from toolkit.analysis.prices import Prices
from toolkit.analysis.run_splice import spliced_charges, spliced_runs, spliced_transitions
from toolkit.analysis.run_store import BASIS, LANGUAGES, Keeper, code_version
from toolkit.analysis.run_table import RunTable, terminal_events
from toolkit.analysis.transitions import Transitions
from toolkit.frames.schema import VERSIONED_TABLES
from toolkit.store.ledger import OPERATION_KEY, keeps_rows
from toolkit.store.tables import SNAPSHOT_ID_KEY

if TYPE_CHECKING:
    from toolkit.analysis.observed import Observed

__all__ = ["Start", "extend", "kept_start", "remember"]

# The manifest's columns a kept state's snapshots must have unchanged.
_MANIFEST: Final = ("snapshot_id", "snapshot_at", "commits", "base_id")
# More touched than this share of the chapters: the full build costs as much.
_MOST_TOUCHED: Final = 0.5


def remember(obs: Observed, keeper: Keeper) -> None:
    """Keep beside this state's stages what an extension starts from: the snapshots and
    table versions they were worked out from, the projects' names and the end events."""
    try:
        events = terminal_events(obs)
        projects = touching.projects(obs)
        found = obs.stage(Transitions)
        languages = touching.languages(obs)  # a full build's read once, then extended
    except Exception:  # nothing remembered: the next state is built whole
        return
    # Before the basis: a state with a basis has its languages (`earlier` lists those).
    if not keeper.save_table(LANGUAGES, languages, obs.manifest):
        return
    meta = {
        "code": code_version(),
        "version": list(keeper.version),
        "snapshots": len(obs.manifest),
        "manifest": _digests(obs.manifest, len(obs.manifest)),
        "projects": projects,
        "default_model": found.default_model,
        "learned": [["" if k is None else k, v] for k, v in obs.stage(Prices).learned.items()],
    }
    table = pa.table({c: pa.array(touching.texts(events[c]) if c != "at" else events[c].tolist(),
                                  _EVENT_TYPES[c]) for c in touching.EVENT_COLUMNS})  # fmt: skip
    keeper.save_table(BASIS, table.replace_schema_metadata({"toolkit": json.dumps(meta)}),
                      obs.manifest)  # fmt: skip


_EVENT_TYPES: Final = {"chapter_id": pa.string(), "type": pa.string(), "at": pa.int64(),
                       "reason": pa.string()}  # fmt: skip


def extend(obs: Observed, keeper: Keeper) -> dict[type, object] | None:
    """The stages of `obs`'s state up to the run table (the runs frame is made from it),
    extended from the newest kept state whose snapshots start this one's; None when
    there is none, or a rule says build whole."""
    start = kept_start(obs, keeper)
    if start is None:
        return None
    rows = touching.kept_rows(keeper.load_table("transitions", start.state))
    languages = keeper.load_table(LANGUAGES, start.state)
    kept: dict[type, Any] = {kind: keeper.load(kind, obs.manifest, state=start.state)
                             for kind in (Charges, RunTable)}  # fmt: skip
    if rows is None or languages is None or any(value is None for value in kept.values()):
        return None
    state = touching.KeptState(start.snapshots, languages)
    return _extended(obs, rows, kept, start.meta, start.basis, state)


@dataclass(frozen=True)
class Start:
    """A kept state a new one extends: its name, how many snapshots it saw (this state's
    first ones), and the basis `remember` kept beside it (`meta`: its metadata)."""

    state: str
    snapshots: int
    meta: dict[str, Any]
    basis: pa.Table


def kept_start(obs: Observed, keeper: Keeper) -> Start | None:
    """The newest kept state whose snapshots start `obs`'s, with only rows added by every
    table commit since (`_only_appends`); None when there is none."""
    states = keeper.earlier(obs.manifest)
    basis = keeper.load_table(BASIS, states[0]) if states else None
    if basis is None:
        return None
    try:
        meta = json.loads(basis.schema.metadata[b"toolkit"])
    except (KeyError, TypeError, ValueError):  # not as `remember` wrote it: no basis
        return None
    snapshots = _prefix(meta, obs.manifest)
    if snapshots is None or not _only_appends(obs, meta["version"], keeper.version):
        return None
    return Start(states[0], snapshots, meta, basis)


def _prefix(meta: dict[str, Any], manifest: pd.DataFrame) -> int | None:
    """How many snapshots the kept state saw, when they are this state's first ones
    unchanged and each snapshot since is based on the one before it; else None."""
    if meta.get("code") != code_version():
        return None
    n = int(meta.get("snapshots", 0))
    if not n or n > len(manifest) or meta.get("manifest") != _digests(manifest, n):
        return None
    if "base_id" in manifest:
        ids, bases = manifest["snapshot_id"].iloc[n - 1 : -1], manifest["base_id"].iloc[n:]
        if touching.texts(bases) != touching.texts(ids):
            return None  # taken beside another, or backfilled: a snapshot between moved
    return n


def _digests(manifest: pd.DataFrame, n: int) -> dict[str, str]:
    """A digest of each of the manifest's columns that name a state (`_MANIFEST`) over
    its first `n` snapshots: what a kept state compares, not every value (a year's
    8,760 snapshots each made a Python text twice an extension, 0.1 s)."""
    digests = {}
    for column in _MANIFEST:
        if column in manifest:
            values = pa.array(manifest[column].iloc[:n], from_pandas=True).cast(pa.string())
            joined = "\x1f".join(pc.fill_null(values, "\x00").to_pylist())
            digests[column] = hashlib.sha256(joined.encode()).hexdigest()
    return digests


def _only_appends(obs: Observed, before: list[int | None], now: tuple[int | None, ...]) -> bool:
    """Whether every table commit since the kept state only added rows (a snapshot's
    write, events, a merge of files): an undo, a repair, an upgrade, a restore or a
    commit the toolkit did not make may have changed what the kept stages read."""
    root = str(obs.store.root).removeprefix("file://")
    for name, old, new in zip(VERSIONED_TABLES, before, now, strict=True):
        if old == new:
            continue
        if new is None or (old is not None and new < old):
            return False
        for version in range(-1 if old is None else old, new):
            info = _commit_info(os.path.join(root, name), version + 1)
            if info is None:
                return False
            written = SNAPSHOT_ID_KEY in info and OPERATION_KEY not in info
            if not (written or info.get(OPERATION_KEY) == "events" or keeps_rows(info)):
                return False
    return True


def _commit_info(table: str, version: int) -> dict[str, Any] | None:
    try:
        with open(os.path.join(table, "_delta_log", f"{version:020}.json"), encoding="utf-8") as f:
            for line in f:
                if line.startswith('{"commitInfo"'):
                    info: dict[str, Any] = json.loads(line)["commitInfo"]
                    return info
    except (OSError, ValueError):
        return None
    return None


class _Staged:
    """What the pipeline's `build`s read of an `Observed`: stages given, the others
    built from them, and the store's events."""

    def __init__(self, stages: dict[type, object], events: pd.DataFrame) -> None:
        self._stages = dict(stages)
        self.events = events

    def stage(self, kind: type) -> Any:
        if kind not in self._stages:
            self._stages[kind] = cast(Any, kind).build(cast("Observed", self))
        return self._stages[kind]


def _extended(
    obs: Observed,
    old: touching.KeptRows,
    kept: dict[type, Any],
    meta: dict[str, Any],
    basis: pa.Table,
    state: touching.KeptState,
) -> dict[type, object] | None:
    times = to_micros(obs.manifest["snapshot_at"])
    # The touched chapters first, then their rows: a CTE the transitions query names
    # three times is worked out three times, each a scan of the logs (0.4 s against 0.1
    # s at 30,000 chapters x a month); a small table joined is quicker than a list of ids.
    changes = touching.since(obs, state)
    touched, whole = touching.touched(obs, old, meta, basis, changes)
    if len(touched) > _MOST_TOUCHED * max(len(old.chapters), 1):
        return None
    pairs = touching.languages(obs, changes, state)
    answer = touching.touched_rows(obs, old, touched - whole, whole, pairs, state)
    if answer is None:
        return None
    chapters = pd.Index(old.chapters)
    # The kept rows of the chapters untouched; and of the touched ones whose rows since
    # are added to them (the rest of their history as the query answers it).
    kept_rows = np.flatnonzero(~chapters.isin(list(touched))[old.code])
    added_to = np.flatnonzero(chapters.isin(list(touched - whole))[old.code])
    sub_table, _ = spliced_transitions(old.table, added_to, answer)
    sub = Transitions.of(sub_table, times) if sub_table.num_rows else None
    if sub is not None and sub.default_model != old.default_model:
        return None  # the service's default model as another project names it: all rows
    table, order_np = spliced_transitions(old.table, kept_rows, sub_table)
    transitions = Transitions.of(table, times)
    staged = _Staged({Transitions: transitions}, obs.events)
    prices: Prices = staged.stage(Prices)
    learned = {None if k == "" else k: float(v) for k, v in meta["learned"]}
    if sub is None or not _same_prices(learned, prices.learned):
        # The learned price moved: every run's split may too, so the later stages are
        # built whole, from the spliced transitions.
        return {kind: staged.stage(kind) for kind in (Transitions, Prices, Charges, RunTable)}
    part = _Staged({Transitions: sub, Prices: Prices.priced(sub, prices.learned)}, obs.events)
    new_of = np.empty(len(order_np), "int64")
    new_of[order_np] = np.arange(len(order_np))  # kept rows, then the touched -> new rows
    charges = spliced_charges(kept[Charges], part.stage(Charges), kept_rows, new_of)
    old_to_new = np.full(len(old.code), -1, "int64")
    old_to_new[kept_rows] = new_of[: len(kept_rows)]
    runs = spliced_runs(kept[RunTable], part.stage(RunTable), old_to_new=old_to_new,
                 sub_to_new=new_of[len(kept_rows) :], found=transitions)  # fmt: skip
    # The runs frame is made from them when asked: its texts are taken by code, quicker
    # than reading them (0.39 s against 0.52 s at 30,000 chapters x a month).
    return {Transitions: transitions, Prices: prices, Charges: charges, RunTable: runs}


def _same_prices(a: dict[str | None, float], b: dict[str | None, float]) -> bool:
    return a.keys() == b.keys() and all(
        a[k] == b[k] or (np.isnan(a[k]) and np.isnan(b[k])) for k in a
    )

"""The run stages of a new state of the store extended from those kept for an earlier
one, recomputing only the chapters that changed since (issue 43, item 1).

A run figure's stages (`run_store`) are per chapter but for three rules that reach
across chapters: the learned price (the most common first charge of the whole history),
the names a chapter's runs carry (its project's latest name, kind and model, the
service's default model) and a novel uploaded again (rework when another chapter at its
position's last run failed). So when a state is asked whose snapshots extend a kept
state's (the same snapshots first, each new one based on the one before it, and every
table commit since a snapshot's write, events or a merge: nothing undone, repaired,
upgraded or restored), the stages are the kept ones with the *touched* chapters worked
out again, over their whole history, and spliced in by chapter:

- chapters with a row since that can start or end a run, or a language row since;
- every chapter of a project whose name, kind, model or languages changed;
- chapters whose end events changed (events recorded since, for any time);
- every chapter of a novel project that has a touched chapter (a re-upload's rework);
- chapters whose kept rows the query's answer cannot be told back from (a chapter
  created twice).

Anything else falls back to the full build: no kept state to start from, a prefix that
does not hold, another default model, more than half the chapters touched (the full
build is then as quick), and a learned price that moved (then the transitions are
spliced and the later stages built whole from them). What is spliced equals the full
build value for value (`run_check.stages_equal`; the tests and the seeded histories
check it).
"""

from __future__ import annotations

import dataclasses
import json
import os
from typing import TYPE_CHECKING, Any, Final, cast

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from toolkit.analysis import run_rules as rules
from toolkit.analysis._arrays import is_true, to_micros
from toolkit.analysis.charges import Charges
from toolkit.analysis.prices import Prices
from toolkit.analysis.run_store import BASIS, Keeper, code_version
from toolkit.analysis.run_table import RunTable, terminal_events
from toolkit.analysis.runs import RunFrame
from toolkit.analysis.transitions import (
    MOVING,
    PER_CHAPTER,
    Transitions,
    transitions_ctes,
    transitions_sql,
)

if TYPE_CHECKING:
    from toolkit.analysis.observed import Observed

__all__ = ["extend", "remember"]

# The manifest's columns a kept state's snapshots must have unchanged.
_MANIFEST: Final = ("snapshot_id", "snapshot_at", "commits", "base_id")
# The store's tables, in `SnapshotStore.version()`'s order.
_TABLES: Final = ("projects", "chapters", "languages", "exports", "events", "manifest")
# Commits that add rows and change none: a snapshot's write, events, a merge of files.
_APPENDS: Final = {"events", "merge"}
_MAINTENANCE: Final = {"VACUUM START", "VACUUM END"}
_EVENT_COLUMNS: Final = ("chapter_id", "type", "at", "reason")
# More touched than this share of the chapters: the full build costs as much.
_MOST_TOUCHED: Final = 0.5
_NONE: Final = np.array(None)
_PROJECTS_SQL: Final = f"""WITH {transitions_ctes()}
SELECT project_id, project, project_kind, model, n_languages FROM by_project
ORDER BY project_id"""


def remember(obs: Observed, keeper: Keeper) -> None:
    """Keep beside this state's stages what an extension starts from: the snapshots and
    table versions they were worked out from, the projects' names and the end events."""
    try:
        events = terminal_events(obs)
        projects = obs.store.query_arrow(_PROJECTS_SQL)
        found = obs.stage(Transitions)
    except Exception:  # nothing remembered: the next state is built whole
        return
    meta = {
        "code": code_version(),
        "version": list(keeper.version),
        "manifest": {c: _texts(obs.manifest[c]) for c in _MANIFEST if c in obs.manifest},
        "projects": projects.to_pylist(),
        "default_model": found.default_model,
    }
    table = pa.table({c: pa.array(_texts(events[c]) if c != "at" else events[c].tolist(),
                                  _EVENT_TYPES[c]) for c in _EVENT_COLUMNS})  # fmt: skip
    keeper.save_table(BASIS, table.replace_schema_metadata({"toolkit": json.dumps(meta)}),
                      obs.manifest)  # fmt: skip


_EVENT_TYPES: Final = {"chapter_id": pa.string(), "type": pa.string(), "at": pa.int64(),
                       "reason": pa.string()}  # fmt: skip


def extend(obs: Observed, keeper: Keeper) -> dict[type, object] | None:
    """The five stages of `obs`'s state, extended from the newest kept state whose
    snapshots start this one's; None when there is none or a rule says build whole."""
    manifest = obs.manifest
    for state in keeper.earlier(manifest)[:1]:
        basis = keeper.load_table(BASIS, state)
        if basis is None:
            return None
        meta = json.loads(basis.schema.metadata[b"toolkit"])
        kept_snapshots = _prefix(meta, manifest)
        if kept_snapshots is None or not _only_appends(obs, meta["version"], keeper.version):
            return None
        kept: dict[type, Any] = {kind: keeper.load(kind, manifest, state=state)
                for kind in (Transitions, Charges, RunTable, RunFrame)}  # fmt: skip
        if any(value is None for value in kept.values()):
            return None
        return _extended(obs, kept, meta, basis, kept_snapshots)
    return None


def _texts(column: pd.Series) -> list[str | None]:
    return [None if pd.isna(v) else str(v) for v in column.tolist()]


def _prefix(meta: dict[str, Any], manifest: pd.DataFrame) -> int | None:
    """How many snapshots the kept state saw, when they are this state's first ones
    unchanged and each snapshot since is based on the one before it; else None."""
    if meta.get("code") != code_version():
        return None
    kept = meta["manifest"]
    n = len(kept.get("snapshot_id", []))
    if not n or n > len(manifest) or set(kept) != {c for c in _MANIFEST if c in manifest}:
        return None
    for column, values in kept.items():
        if _texts(manifest[column].iloc[:n]) != values:
            return None
    if "base_id" in manifest:
        ids, bases = _texts(manifest["snapshot_id"]), _texts(manifest["base_id"])
        if any(bases[i] != ids[i - 1] for i in range(n, len(manifest))):
            return None  # taken beside another, or backfilled: a snapshot between moved
    return n


def _only_appends(obs: Observed, before: list[int | None], now: tuple[int | None, ...]) -> bool:
    """Whether every table commit since the kept state only added rows (a snapshot's
    write, events, a merge of files): an undo, a repair, an upgrade, a restore or a
    commit the toolkit did not make may have changed what the kept stages read."""
    root = str(obs.store.root).removeprefix("file://")
    for name, old, new in zip(_TABLES, before, now, strict=True):
        if old == new:
            continue
        if new is None or (old is not None and new < old):
            return False
        for version in range(-1 if old is None else old, new):
            info = _commit_info(os.path.join(root, name), version + 1)
            if info is None:
                return False
            written = "toolkit.snapshot_id" in info and "toolkit.operation" not in info
            if not (written or info.get("toolkit.operation") in _APPENDS
                    or info.get("operation") in _MAINTENANCE):  # fmt: skip
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
    kept: dict[type, Any],
    meta: dict[str, Any],
    basis: pa.Table,
    kept_snapshots: int,
) -> dict[type, object] | None:
    old: Transitions = kept[Transitions]
    times = to_micros(obs.manifest["snapshot_at"])
    rows = old.rows
    chapter_ids = rows["chapter_id"].cat.categories.astype(object).to_numpy()
    touched = _touched(obs, old, meta, basis, kept_snapshots)
    if touched is None or len(touched) > _MOST_TOUCHED * max(len(chapter_ids), 1):
        return None
    if not touched:
        # Nothing since can start or end a run: the stages are the kept ones.
        found = dataclasses.replace(old, times=times)
        staged = _Staged({Transitions: found}, obs.events)
        return {Transitions: found, Prices: staged.stage(Prices), Charges: kept[Charges],
                RunTable: kept[RunTable], RunFrame: kept[RunFrame]}  # fmt: skip
    answer = obs.store.query_arrow(
        transitions_sql(touched=True),
        frames={"touched": pa.table({"chapter_id": pa.array(sorted(touched), pa.string())})},
    )
    sub = Transitions.of(answer, times) if answer.num_rows else None
    if sub is not None and sub.default_model != old.default_model:
        return None  # the service's default model as another project names it: all rows
    untouched_chapter = ~pd.Index(chapter_ids).isin(list(touched))
    code = rows["chapter_code"].to_numpy("int64")
    kept_rows = np.flatnonzero(untouched_chapter[code])
    table = pa.concat_tables([_as_answer(rows.iloc[kept_rows], answer.schema), answer])
    order = pc.sort_indices(table, sort_keys=[("chapter_id", "ascending"), ("idx", "ascending")])
    order_np = order.to_numpy()
    found = Transitions.of(table.take(order), times)
    staged = _Staged({Transitions: found}, obs.events)
    prices: Prices = staged.stage(Prices)
    before: Prices = _Staged({Transitions: old}, obs.events).stage(Prices)
    if sub is None or not _same_prices(before.learned, prices.learned):
        # The learned price moved: every run's split may too, so the later stages are
        # built whole, from the spliced transitions.
        return {
            kind: staged.stage(kind) for kind in (Transitions, Prices, Charges, RunTable, RunFrame)
        }
    part = _Staged({Transitions: sub, Prices: Prices.priced(sub, prices.learned)}, obs.events)
    new_of = np.empty(len(order_np), "int64")
    new_of[order_np] = np.arange(len(order_np))  # a row of `table` -> its row in `found`
    kept_new = new_of[: len(kept_rows)]
    sub_new = new_of[len(kept_rows) :]
    charges = _charges(kept[Charges], part.stage(Charges), kept_rows, order_np)
    old_to_new = np.full(len(rows), -1, "int64")
    old_to_new[kept_rows] = kept_new
    runs, frame = _runs(kept[RunTable], kept[RunFrame].frame, part.stage(RunTable),
                        part.stage(RunFrame).frame, old_to_new=old_to_new, sub_to_new=sub_new,
                        found=found)  # fmt: skip
    return {Transitions: found, Prices: prices, Charges: charges, RunTable: runs,
            RunFrame: RunFrame(frame)}  # fmt: skip


def _touched(
    obs: Observed, old: Transitions, meta: dict[str, Any], basis: pa.Table, kept_snapshots: int
) -> set[str] | None:
    """The chapters to work out again (the module's docstring says which); None when
    the kept rows cannot be read back."""
    rows = old.rows
    since = obs.store.query_arrow(
        f"""WITH {transitions_ctes()}
        SELECT DISTINCT chapter_id, project_id FROM log
        WHERE idx >= {kept_snapshots} AND {MOVING}
        UNION SELECT DISTINCT chapter_id, project_id FROM languages_changes
        WHERE _changed IS NOT false AND idx >= {kept_snapshots}"""
    ).to_pylist()
    touched = {str(r["chapter_id"]) for r in since if r["chapter_id"] is not None}
    # Projects whose name, kind, model or languages changed: all their chapters.
    now = obs.store.query_arrow(_PROJECTS_SQL).to_pylist()
    then = {p["project_id"]: p for p in meta["projects"]}
    changed = {p["project_id"] for p in now if then.get(p["project_id"]) != p}
    changed |= set(then) - {p["project_id"] for p in now}
    chapter = rows["chapter_id"].astype(object).to_numpy()
    project = rows["project_id"].astype(object).to_numpy()
    touched |= {str(c) for c in chapter[pd.Index(project).isin(list(changed))]}
    # End events recorded since (for any time), or gone.
    events = terminal_events(obs)
    now_events = set(zip(*(_texts(events[c]) for c in _EVENT_COLUMNS), strict=True))
    kept_events = set(zip(*(basis.column(c).to_pylist() for c in _EVENT_COLUMNS), strict=True))
    touched |= {str(e[0]) for e in now_events ^ {tuple(_texts(pd.Series(e))) for e in kept_events}}
    # A chapter created more than once, or whose first row is not its creation: its kept
    # rows cannot be told back to the query's answer.
    step = rows["step"].to_numpy()
    new = is_true(rows["is_new"])
    odd = (new & (step > 0)) | (~new & (step == 0))
    touched |= {str(c) for c in chapter[odd]}
    # A novel project with a touched chapter: all its chapters (a re-upload's rework).
    novel = {p["project_id"] for p in now if p["project_kind"] == "novel"}
    projects_of = {str(r["chapter_id"]): r["project_id"] for r in since}
    projects_of.update(zip(map(str, chapter), project, strict=True))
    novels = {projects_of.get(c) for c in touched} & novel
    touched |= {str(c) for c in chapter[pd.Index(project).isin(list(novels))]}
    return touched


def _as_answer(rows: pd.DataFrame, schema: pa.Schema) -> pa.Table:
    """Kept transition rows as the query answered them (`Transitions.of` reads it): the
    per-chapter names only on a chapter's creation, nulls as nulls."""
    new = is_true(rows["is_new"])
    columns = []
    for field in schema:
        column = rows[field.name]
        if isinstance(column.dtype, pd.CategoricalDtype):
            values = np.asarray(column.astype(object).to_numpy(), object)
            values = np.where(pd.isna(values), _NONE, values)
            if field.name in PER_CHAPTER:
                values = np.where(new, values, _NONE)
            columns.append(pa.array(values, field.type))
        else:
            columns.append(pa.array(column.to_numpy() if column.dtype != object else column,
                                    field.type, from_pandas=True))  # fmt: skip
    return pa.Table.from_arrays(columns, schema=schema)


def _same_prices(a: dict[str | None, float], b: dict[str | None, float]) -> bool:
    return a.keys() == b.keys() and all(
        a[k] == b[k] or (np.isnan(a[k]) and np.isnan(b[k])) for k in a
    )


def _charges(kept: Charges, sub: Charges, kept_rows: np.ndarray, order: np.ndarray) -> Charges:
    """The charges of the kept rows and of the touched chapters', in the rows' order."""
    return Charges(
        *(
            np.concatenate([getattr(kept, f.name)[kept_rows], getattr(sub, f.name)])[order]
            for f in dataclasses.fields(Charges)
        )
    )


def _runs(
    kept: RunTable,
    kept_frame: pd.DataFrame,
    sub: RunTable,
    sub_frame: pd.DataFrame,
    *,
    old_to_new: np.ndarray,
    sub_to_new: np.ndarray,
    found: Transitions,
) -> tuple[RunTable, pd.DataFrame]:
    """The runs of the untouched chapters (kept) and of the touched ones, in the runs'
    order, their rows numbered as `found`'s."""
    mine = old_to_new[kept.row] >= 0
    ours = kept.take(mine)
    both = ((ours, old_to_new[ours.row], kept_frame[mine]), (sub, sub_to_new[sub.row], sub_frame))
    parts = [(p, r, f) for p, r, f in both if len(p.row)]
    if not parts:
        return sub, sub_frame
    joined = RunTable(*(np.concatenate([getattr(p, f.name) for p, _, _ in parts])
                        for f in dataclasses.fields(RunTable)))  # fmt: skip
    joined = dataclasses.replace(joined, row=np.concatenate([r for _, r, _ in parts]))
    chapter = found.rows["chapter_code"].to_numpy("int64")[joined.row]
    order = rules.run_order(joined.started, chapter, joined.number)
    frame = pd.concat([f for _, _, f in parts], ignore_index=True)
    frame = frame.take(order).reset_index(drop=True)
    for column in frame.columns:  # one chunk a column, as the pipeline's texts have
        values = frame[column].array
        if isinstance(values, pd.arrays.ArrowStringArray):
            whole = pa.chunked_array(values.__arrow_array__()).combine_chunks()
            frame[column] = pd.arrays.ArrowStringArray(whole)
    return joined.take(order), frame

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

import json
import os
from typing import TYPE_CHECKING, Any, Final, cast

import pandas as pd
import pyarrow as pa

from toolkit.analysis import run_part
from toolkit.analysis import run_touched as touching
from toolkit.analysis.prices import Prices, first_charges
from toolkit.analysis.run_part import Start
from toolkit.analysis.run_store import (
    BASIS,
    LANGUAGES,
    PART,
    SAMPLES,
    Keeper,
    code_version,
    manifest_digests,
)
from toolkit.analysis.run_table import RunTable, terminal_events
from toolkit.analysis.transitions import Transitions
from toolkit.frames.schema import VERSIONED_TABLES
from toolkit.store.ledger import OPERATION_KEY, keeps_rows
from toolkit.store.tables import SNAPSHOT_ID_KEY

if TYPE_CHECKING:
    from toolkit.analysis.observed import Observed

__all__ = ["Start", "extend", "kept_start", "remember", "update"]

# A part of more than this share of the chapters is joined by the update and kept whole:
# each update works out its part's chapters again, and a reader joins them.
_MOST_IN_PART: Final = 0.1


def remember(obs: Observed, keeper: Keeper) -> None:
    """Keep beside this state's stages what an extension starts from: the snapshots and
    table versions they were worked out from, the projects' names, the end events, and
    the first charges a part's prices are learned from (`run_part`)."""
    try:
        found = obs.stage(Transitions)
        learned = obs.stage(Prices).learned
        samples = first_charges(found.rows, n_languages=found.languages())
    except Exception:  # nothing remembered: the next state is built whole
        return
    samples = pa.Table.from_pandas(samples, schema=_SAMPLES, preserve_index=False)
    if keeper.save_table(SAMPLES, samples, obs.manifest):
        _remember(obs, keeper, found.default_model, learned, base=None)


def _remember(
    obs: Observed,
    keeper: Keeper,
    default_model: str | None,
    learned: dict[str | None, float],
    *,
    base: str | None,
    languages_kept: bool = False,
) -> bool:
    """Keep this state's basis (a part's names its `base`); whether it was.
    `languages_kept`: its languages were saved already (`run_part.part_of`)."""
    try:
        events = terminal_events(obs)
        projects = touching.projects(obs)
        languages = touching.languages(obs)  # a full build's read once, then extended
    except Exception:  # nothing remembered: the next state is built whole
        return False
    # Before the basis: a state with a basis has its languages (`earlier` lists those).
    if not languages_kept and not keeper.save_table(LANGUAGES, languages, obs.manifest):
        return False
    meta = {
        "code": code_version(),
        "version": list(keeper.version),
        "snapshots": len(obs.manifest),
        "manifest": keeper.digests(obs.manifest),
        "projects": projects,
        "default_model": default_model,
        "learned": run_part.learned_pairs(learned),
        "base": base,
    }
    table = pa.table({c: pa.array(touching.texts(events[c]) if c != "at" else events[c].tolist(),
                                  _EVENT_TYPES[c]) for c in touching.EVENT_COLUMNS})  # fmt: skip
    return keeper.save_table(BASIS, table.replace_schema_metadata({"toolkit": json.dumps(meta)}),
                             obs.manifest)  # fmt: skip


_SAMPLES: Final = pa.schema([("chapter_id", pa.string()), ("project_id", pa.string()),
                             ("price", pa.float64()), ("baseline", pa.bool_())])  # fmt: skip
_EVENT_TYPES: Final = {"chapter_id": pa.string(), "type": pa.string(), "at": pa.int64(),
                       "reason": pa.string()}  # fmt: skip


def extend(obs: Observed, keeper: Keeper) -> dict[type, object] | None:
    """The stages of `obs`'s state up to the run table (the runs frame is made from it):
    its part joined with its base, when the update kept one; else extended from the
    newest kept state whose snapshots start this one's. None when there is none, or a
    rule says build whole."""
    mine = keeper.state(obs.manifest)
    own = run_part.read_part(keeper, mine)
    if own is not None:
        stages = run_part.joined(obs, keeper, own)
        if stages is None:  # its base is gone: built whole, and a base from then on
            keeper.discard(BASIS, obs.manifest)
        return stages
    part = cast("run_part.Part | None", obs.memo.pop(_WORKED_OUT, None))
    if part is None:
        start = kept_start(obs, keeper)
        part = run_part.part_of(obs, keeper, start) if start is not None else None
    return run_part.joined(obs, keeper, part) if part is not None else None


def update(obs: Observed, keeper: Keeper, *, join_past: float | None = None) -> bool:
    """After a snapshot: keep the part of `obs`'s state over the base of the newest kept
    state before it (`run_part`), so that its first reader joins it instead of working
    out the stages again. Past `join_past` of the chapters (None: `_MOST_IN_PART`) the
    stages are joined and kept whole (the state becomes a base). Whether anything was
    kept for the state."""
    if keeper.keeps(obs.manifest) or keeper.keeps(obs.manifest, PART):
        return True
    start = kept_start(obs, keeper)
    if start is None:
        return False  # the first reader builds whole
    # Written on a thread from here (whether the store moved on is asked once, not per
    # file): the state's languages while its part is worked out, then the part.
    keeper.write_behind()
    try:
        part = run_part.part_of(obs, keeper, start, keeping=True)
        if part is None:
            return False
        most = _MOST_IN_PART if join_past is None else join_past
        if len(part.chapters) > most * max(part.known, 1):
            keeper.flush()  # the stages' saves ask which are kept: in place, one by one
            obs.memo[_WORKED_OUT] = part  # `extend` joins it, and the stages are kept whole
            obs.stage(RunTable)
            return keeper.keeps(obs.manifest)
        if run_part.keep_part(keeper, part, obs.manifest):
            _remember(obs, keeper, part.default_model, part.learned, base=part.base,
                      languages_kept=True)  # fmt: skip
    finally:
        keeper.flush()
    return keeper.keeps(obs.manifest, BASIS)


# The part the update worked out, for the join when it keeps the stages whole.
_WORKED_OUT: Final = "run_extend.part"


def kept_start(obs: Observed, keeper: Keeper, *, having: str | None = None) -> Start | None:
    """The newest kept state whose snapshots start `obs`'s (`having`: of those that
    keep that table), with only rows added by every table commit since
    (`_only_appends`); None when there is none."""
    states = keeper.earlier(obs.manifest)
    if having is not None:
        states = [state for state in states if keeper.holds(state, having)]
    # The newest that starts this state: one kept for snapshots since undone is not.
    for state in states:
        basis = keeper.load_table(BASIS, state)
        if basis is None:
            continue
        try:
            meta = json.loads(basis.schema.metadata[b"toolkit"])
        except (KeyError, TypeError, ValueError):  # not as `remember` wrote it: no basis
            continue
        snapshots = _prefix(meta, obs.manifest)
        if snapshots is not None and _only_appends(obs, meta["version"], keeper.version):
            return Start(state, snapshots, meta, basis)
    return None


def _prefix(meta: dict[str, Any], manifest: pd.DataFrame) -> int | None:
    """How many snapshots the kept state saw, when they are this state's first ones
    unchanged and each snapshot since is based on the one before it; else None."""
    if meta.get("code") != code_version():
        return None
    n = int(meta.get("snapshots", 0))
    if not n or n > len(manifest) or meta.get("manifest") != manifest_digests(manifest, n):
        return None
    if "base_id" in manifest:
        ids, bases = manifest["snapshot_id"].iloc[n - 1 : -1], manifest["base_id"].iloc[n:]
        if touching.texts(bases) != touching.texts(ids):
            return None  # taken beside another, or backfilled: a snapshot between moved
    return n


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

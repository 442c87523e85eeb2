"""A state's part: the run stages of the chapters touched since a *base* state (one
whose stages are kept whole), which the update keeps after a snapshot and the state's
first reader joins with the base's stages (issue 43, item 1).

An extension (`run_extend`) that read the kept stages whole, spliced the touched
chapters in and wrote the stages whole again cost 2-3 s at 100,000 chapters x a year,
however few chapters a snapshot changed: the stages are whole-history arrays. A part
holds less: for the chapters touched since the base, their transition rows as the query
answers them, their charges and their runs (`Part`), and the learned prices of the whole
history. Each update works out the part of the new state from the state before it: a
base (the part is the chapters touched since), or a part (its chapters and those touched
since; a chapter's rows are taken from the part before, or the base, and the rows since
added; the charges and runs of the part before's chapters untouched since are its own,
and only the touched ones' are worked out, then spliced in as the join splices), so what
an update reads and writes is the touched chapters', never the base's stages whole.
A reader joins the part with the base (`joined`: the splice `run_extend` made) and
keeps the stages whole: its state is a base from then on.

The learned prices (the most common first charge over the whole history: `prices`) are
the first charges kept beside a base (`SAMPLES`) but those of the part's chapters, with
the part's own. A part is kept only while they equal the base's: the base's charges of
the chapters untouched were priced by them. What is joined equals the full build, value
for value (`run_check.stages_equal`: tests/analysis/test_run_store.py and each seeded
history, which keeps a part after each snapshot and reads every other one).
"""

from __future__ import annotations

import json
from contextlib import nullcontext
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any, Final, NamedTuple, cast

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from toolkit.analysis import run_touched as touching
from toolkit.analysis._arrays import among, to_micros
from toolkit.analysis.charges import Charges
from toolkit.analysis.prices import Prices, first_charges, learned_from
from toolkit.analysis.read_ahead import read_ahead, used_once
from toolkit.analysis.run_splice import spliced_charges, spliced_runs, spliced_transitions
from toolkit.analysis.run_store import LANGUAGES, PART, SAMPLES, Keeper, decode, encode
from toolkit.analysis.run_table import RunTable
from toolkit.analysis.transitions import Transitions

if TYPE_CHECKING:
    from toolkit.analysis.observed import Observed

__all__ = [
    "MOST_TOUCHED",
    "Part",
    "Start",
    "base_of",
    "joined",
    "keep_part",
    "part_of",
    "read_part",
]

# A part's files in its state's folder beside its rows (`PART`, whose metadata names the
# base, the chapters and the learned prices): its charges and runs, as stages are kept.
_CHARGES: Final = "part_charges"
_RUNS: Final = "part_run_table"
# More touched than this share of the chapters: the full build costs as much.
MOST_TOUCHED: Final = 0.5


@dataclass(frozen=True)
class Start:
    """A kept state a new one starts from: its name, how many snapshots it saw (this
    state's first ones), and the basis kept beside it (`meta`: its metadata)."""

    state: str
    snapshots: int
    meta: dict[str, Any]
    basis: pa.Table


@dataclass(frozen=True)
class Part:
    """The run stages of `chapters` (ids, sorted: every chapter touched since the base
    state `base`, those whose rows are gone too) as a full build gives them: `rows` as
    the transitions query answers them, in its order (texts by code: `run_splice`), and
    their charges and runs (None with no rows, or when `learned`, the whole history's
    learned prices, moved from the base's: then the stages are built whole from the
    joined rows)."""

    base: str
    chapters: np.ndarray
    rows: pa.Table
    learned: dict[str | None, float]
    charges: Charges | None
    runs: RunTable | None
    default_model: str | None
    known: int  # the chapters of the state (its base's and the part's)


def base_of(meta: dict[str, Any], state: str) -> str:
    """The base state of a kept state (its basis's metadata): a part's, or its own."""
    return str(meta.get("base") or state)


def part_of(obs: Observed, keeper: Keeper, start: Start, *, keeping: bool = False) -> Part | None:
    """The part of `obs`'s state over the base of `start` (`start` itself, or its
    base when it is a part); None when a rule says build whole: more than half the
    chapters touched since `start`, the base or the part before not kept or not as
    written, a model the kept rows may not name. `keeping`: the part is to be kept (the
    update): the state's languages are saved as soon as they are known, and written
    behind (`Keeper.write_behind`) while the rest is worked out."""
    base = base_of(start.meta, start.state)
    times = to_micros(obs.manifest["snapshot_at"])
    # The kept rows read and told per chapter on the reading thread while the logs since
    # are opened and asked here: each about 0.1 s at 100,000 chapters x a year, and both
    # mostly outside the interpreter (Arrow's reads, DuckDB).
    read_ahead(obs, _KEPT, partial(_kept, keeper, start, base, times))
    # The logs of the snapshots since alone (`SnapshotStore.asking`), but where rows are
    # worked out whole.
    since = obs.store.asking(touching.SINCE_TABLES, since=start.snapshots,
                             whole=touching.READ_WHOLE)  # fmt: skip
    with since as asked:
        changes = touching.since(obs, start.snapshots, asked.arrow)
        ahead = cast(_Kept | None, used_once(obs, _KEPT))
        if ahead is None:
            return None
        kept, samples, before, rows, chapters, state = ahead
        touched, whole = touching.touched(obs, chapters, start.meta, start.basis, changes)
        if len(touched) > MOST_TOUCHED * max(len(chapters.chapters), 1):
            return None
        pairs = touching.languages(obs, changes, state)
        if keeping:
            keeper.joins(base)  # before any save: none drops the base (`Keeper.joins`)
            keeper.save_table(LANGUAGES, pairs, obs.manifest)
        every = obs.store.asking(touching.SINCE_TABLES) if whole else nullcontext(asked)
        with every as ask:
            answer = touching.touched_rows(
                obs, kept.default_model, touched - whole, whole, pairs, state, ask.arrow
            )
    earlier = set(before.chapters.tolist()) if before is not None else set()
    if answer is None:
        return None
    # Each touched chapter's kept rows (the part's before, else the base's), those since
    # added; then the part before's other chapters as they were.
    sources = [(kept.table, _rows_of(kept.chapters, kept.code, (touched - whole) - earlier))]
    untouched = np.zeros(0, "int64")
    if before is not None and rows is not None:
        sources.append(
            (before.rows, _rows_of(rows.chapters, rows.code, (earlier & touched) - whole))
        )
        untouched = _rows_of(rows.chapters, rows.code, earlier - touched)
    fresh, _ = spliced_transitions(sources, answer)
    table, order = fresh, None
    if before is not None and len(untouched):
        table, order = spliced_transitions([(before.rows, untouched)], fresh)
    found = Transitions.of(table, times) if table.num_rows else None
    if found is not None and found.default_model != kept.default_model:
        return None  # the service's default model as another project names it: all rows
    ids = touched | earlier
    others = pc.invert(pc.is_in(samples.column("chapter_id"), pa.array(sorted(ids), pa.string())))
    seen = samples.filter(others).to_pandas()
    if found is not None:
        seen = pd.concat([seen, first_charges(found.rows, n_languages=found.languages())])
    learned = learned_from(seen)
    charges = runs = None
    # The base's charges were priced by the base's learned prices, which a part with
    # charges of its own has too (a part without: the prices moved, or it had no rows;
    # so is every part over it, its learned prices no longer the base's).
    priced = before is None or before.charges is not None
    if found is not None and priced and _same_prices(learned, _learned(start.meta)):
        if before is not None and before.charges is not None and before.runs is not None \
                and order is not None and fresh.num_rows:  # fmt: skip
            # The part before's stages of its chapters untouched since, and the touched
            # ones' worked out alone: a chain of parts costs each update its own rows.
            built = _built(Transitions.of(fresh, times), learned, obs.events)
            charges, runs = _spliced((before.charges, before.runs), untouched,
                                     before.rows.num_rows, order, built, found)  # fmt: skip
        else:
            charges, runs = _built(found, learned, obs.events)
    return Part(base, np.array(sorted(ids), object), table, learned, charges, runs,
                kept.default_model, len(chapters.chapters))  # fmt: skip


_KEPT: Final = "run_part.kept"  # `_kept`'s answer, read ahead (`Observed.memo`)


class _Kept(NamedTuple):
    """What a part starts from besides the logs since (`_kept`)."""

    kept: touching.KeptRows  # the base's transitions
    samples: pa.Table  # the base's first charges (`SAMPLES`)
    before: Part | None  # the part before, when `start` is one
    rows: touching.KeptRows | None  # the part before's rows
    chapters: touching.KeptChapters  # the state's: the base's, the part before's instead
    state: touching.KeptState


def _kept(keeper: Keeper, start: Start, base: str, times: np.ndarray) -> _Kept | None:
    """The kept rows a part over `base` starts from (`times`: the state's snapshots');
    None when the base or the part before is not kept, or not as written."""
    kept = touching.kept_rows(keeper.load_table("transitions", base))
    languages = keeper.load_table(LANGUAGES, start.state)
    samples = keeper.load_table(SAMPLES, base)
    before = read_part(keeper, start.state) if base != start.state else None
    if kept is None or languages is None or samples is None:
        return None
    if base != start.state and before is None:
        return None
    chapters, rows = kept.per_chapter(), None
    if before is not None:
        # The part before's chapters in place of the base's, and their rows but those
        # worked out whole again (`whole`, in `part_of`).
        rows = touching.kept_rows_of(Transitions.of(before.rows, times), before.rows)
        chapters = chapters.replaced(rows.per_chapter(), dropping=before.chapters)
    return _Kept(kept, samples, before, rows, chapters,
                 touching.KeptState(start.snapshots, languages))  # fmt: skip


def joined(obs: Observed, keeper: Keeper, part: Part) -> dict[type, object] | None:
    """The stages of `obs`'s state up to the run table: the base's of the chapters
    untouched and the part's, in the order and with the values a full build gives
    them; None when the base's stages are not kept."""
    kept = touching.kept_rows(keeper.load_table("transitions", part.base))
    stages: dict[type, Any] = {kind: keeper.load(kind, obs.manifest, state=part.base)
                               for kind in (Charges, RunTable)}  # fmt: skip
    if kept is None or any(value is None for value in stages.values()):
        return None
    times = to_micros(obs.manifest["snapshot_at"])
    kept_rows = _rows_of(kept.chapters, kept.code, set(part.chapters.tolist()), keep=False)
    table, order = spliced_transitions([(kept.table, kept_rows)], part.rows)
    transitions = Transitions.of(table, times)
    prices = Prices.priced(transitions, part.learned)
    staged = _Staged({Transitions: transitions, Prices: prices}, obs.events)
    if part.charges is None or part.runs is None:
        # No rows of the part's own, or the learned price moved (every run's split may
        # too): the later stages are built whole, from the joined rows.
        return {kind: staged.stage(kind) for kind in (Transitions, Prices, Charges, RunTable)}
    charges, runs = _spliced((stages[Charges], stages[RunTable]), kept_rows, len(kept.code),
                             order, (part.charges, part.runs), transitions)  # fmt: skip
    return {Transitions: transitions, Prices: prices, Charges: charges, RunTable: runs}


def _built(
    found: Transitions, learned: dict[str | None, float], events: pd.DataFrame
) -> tuple[Charges, RunTable]:
    """The charges and runs of `found`'s rows, priced by `learned`."""
    staged = _Staged({Transitions: found, Prices: Prices.priced(found, learned)}, events)
    return staged.stage(Charges), staged.stage(RunTable)


def _spliced(
    kept: tuple[Charges, RunTable],
    kept_rows: np.ndarray,
    size: int,
    order: np.ndarray,
    sub: tuple[Charges, RunTable],
    found: Transitions,
) -> tuple[Charges, RunTable]:
    """The charges and runs of `found`, whose rows `spliced_transitions` put in `order`:
    `kept_rows` of a table of `size` rows whose stages are `kept`, then the rows of other
    chapters, whose stages are `sub`."""
    new_of = np.empty(len(order), "int64")
    new_of[order] = np.arange(len(order))  # kept rows, then the others -> new rows
    charges = spliced_charges(kept[0], sub[0], kept_rows, new_of)
    old_to_new = np.full(size, -1, "int64")
    old_to_new[kept_rows] = new_of[: len(kept_rows)]
    runs = spliced_runs(kept[1], sub[1], old_to_new=old_to_new,
                        sub_to_new=new_of[len(kept_rows) :], found=found)  # fmt: skip
    return charges, runs


def keep_part(keeper: Keeper, part: Part, manifest: pd.DataFrame) -> bool:
    """Keep `part` for the keeper's state (its rows last: what `read_part` finds first);
    whether it was."""
    stages = {_CHARGES: part.charges, _RUNS: part.runs}
    whole = any(stage is None for stage in stages.values())
    meta = {"base": part.base, "chapters": part.chapters.tolist(),
            "learned": learned_pairs(part.learned),
            "default_model": part.default_model, "known": part.known, "whole": whole}  # fmt: skip
    rows = part.rows.replace_schema_metadata({"toolkit": json.dumps(meta)})
    keeper.joins(part.base)
    if not whole and not all(keeper.save_table(name, encode(stage), manifest)
                             for name, stage in stages.items()):  # fmt: skip
        return False
    return keeper.save_table(PART, rows, manifest)


def read_part(keeper: Keeper, state: str) -> Part | None:
    """The part kept for `state`; None when none reads."""
    rows = keeper.load_table(PART, state)
    if rows is None:
        return None
    try:
        meta = json.loads(rows.schema.metadata[b"toolkit"])
        stages: tuple[Charges | None, RunTable | None] = (None, None)
        if not meta["whole"]:
            charges, runs = keeper.load_table(_CHARGES, state), keeper.load_table(_RUNS, state)
            if charges is None or runs is None:
                return None
            stages = cast(Charges, decode(Charges, charges)), cast(RunTable, decode(RunTable, runs))
        return Part(
            str(meta["base"]), np.array(meta["chapters"], object), rows.replace_schema_metadata(),
            _learned(meta), *stages, meta["default_model"], int(meta["known"]),
        )  # fmt: skip
    except (KeyError, TypeError, ValueError, pa.ArrowException):  # not as written: none
        return None


def _rows_of(
    chapters: np.ndarray, code: np.ndarray, ids: set[str], *, keep: bool = True
) -> np.ndarray:
    """The rows (by chapter `code`) of the chapters `ids` (with `keep=False`: of the
    others)."""
    chosen = among(chapters, ids)
    return np.flatnonzero(chosen[code] if keep else ~chosen[code])


def learned_pairs(learned: dict[str | None, float]) -> list[list[Any]]:
    """Learned prices as kept in a part's or a basis's metadata (JSON: the workspace's,
    `None`, as "")."""
    return [["" if k is None else k, v] for k, v in learned.items()]


def _learned(meta: dict[str, Any]) -> dict[str | None, float]:
    """The learned prices `learned_pairs` kept in `meta`."""
    return {None if k == "" else k: float(v) for k, v in meta["learned"]}


def _same_prices(a: dict[str | None, float], b: dict[str | None, float]) -> bool:
    return a.keys() == b.keys() and all(
        a[k] == b[k] or (np.isnan(a[k]) and np.isnan(b[k])) for k in a
    )


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

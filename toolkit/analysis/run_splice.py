"""How an extension (`run_extend`) joins the stages kept for the chapters untouched
with those worked out again for the touched ones, each in the order and with the
values a full build gives them: transition rows joined as codes and put in the query's
order, charges put in their rows' places, runs merged into the kept runs' order.

Each step still reads and writes the whole history's arrays (put in the query's order
by a stable sort of the rows' chapter ranks; the runs, whose kept order holds, merged
rather than sorted again); `run_check.stages_equal` holds the result equal to a full
build on every seeded history.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Final

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from toolkit.analysis import run_rules as rules
from toolkit.analysis.charges import Charges
from toolkit.analysis.run_table import RunTable
from toolkit.analysis.transitions import Transitions

__all__ = ["spliced_charges", "spliced_runs", "spliced_transitions"]


def spliced_transitions(
    kept: Sequence[tuple[pa.Table, np.ndarray]], answer: pa.Table
) -> tuple[pa.Table, np.ndarray]:
    """Kept transition rows (each of `kept` a table as a state keeps it, or a part's
    rows, and the rows of it to take) and the query's `answer` for the touched chapters,
    as one answer in the query's order (for `Transitions.of`); and that order, over the
    kept rows (in the order given) then the answer's. No chapter is in two of them."""
    # Taken once, into the query's order: each whole-table pass is a copy of every
    # column, fresh memory the system has to hand over (taking the kept rows, joining
    # the chunks, then ordering made three). A take from two chunks joins them first,
    # so kept rows that are few are taken alone before.
    tables, places, start = [], [], 0
    for table, at in kept:
        few = len(at) <= table.num_rows // 2
        rows = _as_answer(table.take(pa.array(at, pa.int64())) if few else table, answer.schema)
        tables.append(rows)
        places.append(start + (np.arange(len(at)) if few else at))
        start += rows.num_rows
    table = pa.concat_tables([*tables, _coded(answer)]).unify_dictionaries()
    places.append(start + np.arange(answer.num_rows, dtype="int64"))
    at = np.concatenate(places).astype("int64")
    if not len(at):  # no chunk to read (the touched chapters' rows since: none)
        return table.slice(0, 0).combine_chunks(), np.zeros(0, "int64")
    order = _chapter_order(table.column("chapter_id"), at)
    return table.take(pa.array(at[order])), order


def _as_answer(kept: pa.Table, schema: pa.Schema) -> pa.Table:
    """Kept transition rows as the query answered them (`Transitions.of` reads it),
    each column of the query's type but texts by code (`_coded`). The per-chapter names
    the query gives on a chapter's creation alone stay on all its rows: a kept chapter's
    first row is its creation (`run_extend` touches a chapter whose is not), so the
    categories, made in the order first seen, are the same, and `Transitions.of` takes
    them from that row."""
    columns = []
    for field in schema:
        column = kept.column(field.name)
        wanted = _TEXT if pa.types.is_string(field.type) else field.type
        columns.append(column if column.type == wanted else pc.cast(column, wanted))
    return pa.Table.from_arrays(columns, names=schema.names)


# Texts by code: the kept rows and the new ones are joined, ordered and taken as codes,
# never as texts (casting and taking the texts of every row cost 0.25 s of 0.8 at 30,000
# chapters x a month).
_TEXT: Final = pa.dictionary(pa.int32(), pa.string())


def _coded(answer: pa.Table) -> pa.Table:
    """The query's answer with its texts by code, as `_as_answer`'s."""
    return pa.Table.from_arrays(
        [pc.dictionary_encode(c) if pa.types.is_string(c.type) else c for c in answer.columns],
        names=answer.column_names,
    )


def _chapter_order(chapter: pa.ChunkedArray, places: np.ndarray) -> np.ndarray:
    """The rows at `places` in the query's order (by chapter, then snapshot). The kept
    rows and the new ones are each in it, and no chapter is in both: a stable sort by
    chapter keeps each chapter's rows in their order."""
    dictionary = chapter.chunk(0).dictionary  # one for every chunk, unified
    rank = np.empty(len(dictionary), "int64")
    rank[pc.sort_indices(dictionary).to_numpy()] = np.arange(len(rank))
    codes = [pc.fill_null(c.indices, -1).to_numpy(zero_copy_only=False) for c in chapter.chunks]
    return np.argsort(rank[np.concatenate(codes)[places]], kind="stable")


def spliced_charges(
    kept: Charges, sub: Charges, kept_rows: np.ndarray, new_of: np.ndarray
) -> Charges:
    """The charges of the kept rows and of the touched chapters', in the rows' order
    (`new_of`: each row's place, the kept rows first)."""
    source = _sources(len(new_of), new_of[: len(kept_rows)], kept_rows)
    values = []
    for f in dataclasses.fields(Charges):
        joined = _gathered(getattr(kept, f.name), source)
        joined[new_of[len(kept_rows) :]] = getattr(sub, f.name)
        values.append(joined)
    return Charges(*values)


def _sources(size: int, places: np.ndarray, kept: np.ndarray) -> np.ndarray:
    """For each of `size` places, the kept element it takes (`kept[i]` goes to
    `places[i]`; 0 where a new one goes): each field is then one gather from the kept
    array, the new ones put in after, not a gather into a copy put in place (a second
    whole array per field)."""
    source = np.zeros(size, "int64")
    source[places] = kept
    return source


def _gathered(values: np.ndarray, source: np.ndarray) -> np.ndarray:
    """`values` at `source` (`_sources`): a new array, the kept one left as it is."""
    if not len(values):  # nothing kept: every place takes a new one
        return np.empty((len(source), *values.shape[1:]), values.dtype)
    return np.asarray(values[source])


def spliced_runs(
    kept: RunTable,
    sub: RunTable,
    *,
    old_to_new: np.ndarray,
    sub_to_new: np.ndarray,
    found: Transitions,
) -> RunTable:
    """The runs of the untouched chapters (kept) and of the touched ones, in the runs'
    order, their rows numbered as `found`'s. The kept runs are in that order already
    (renumbered, the untouched chapters keep their order): the touched chapters' runs
    are put in order and merged in, not every run sorted again."""
    keep = np.flatnonzero(old_to_new[kept.row] >= 0)
    # What the merge compares, of the kept runs; each field is then gathered once.
    ours = _Keys(kept.started[keep], old_to_new[kept.row[keep]], kept.number[keep])
    theirs = dataclasses.replace(sub, row=sub_to_new[sub.row])
    chapter = found.rows["chapter_code"].to_numpy("int64")
    theirs = theirs.take(rules.run_order(theirs.started, chapter[theirs.row], theirs.number))
    at = _places(ours, theirs, chapter)
    if at is None:  # keys too wide to merge by: sorted whole
        mine = dataclasses.replace(kept.take(keep), row=ours.row)
        joined = RunTable(*(np.concatenate([getattr(mine, f.name), getattr(theirs, f.name)])
                            for f in dataclasses.fields(RunTable)))  # fmt: skip
        return joined.take(rules.run_order(joined.started, chapter[joined.row], joined.number))
    theirs_at = at + np.arange(len(at))  # each lands after the kept runs before it
    ours_at = np.ones(len(keep) + len(at), bool)
    ours_at[theirs_at] = False
    ours_at = np.flatnonzero(ours_at)
    source = _sources(len(ours_at) + len(theirs_at), ours_at, keep)

    def merged(name: str) -> np.ndarray:
        if name == "row":
            out = np.empty(len(source), ours.row.dtype)
            out[ours_at] = ours.row
        else:
            out = _gathered(getattr(kept, name), source)
        out[theirs_at] = getattr(theirs, name)
        return out

    return RunTable(*(merged(f.name) for f in dataclasses.fields(RunTable)))


@dataclasses.dataclass(frozen=True)
class _Keys:
    """The kept runs' fields the merge orders by."""

    started: np.ndarray
    row: np.ndarray
    number: np.ndarray


def _places(ours: _Keys, theirs: RunTable, chapter: np.ndarray) -> np.ndarray | None:
    """Where each of `theirs` goes among `ours` (both in the runs' order): how many of
    `ours` come before it. Runs that start together (most: a start is often a snapshot's
    time) are told apart by chapter and number, as one key: the start's rank among
    `ours`', then chapter, then number. None when that key would not fit in 63 bits."""
    start, their_start = rules.start_key(ours.started), rules.start_key(theirs.started)
    at = np.searchsorted(start, their_start, "left")
    tied = np.flatnonzero(np.searchsorted(start, their_start, "right") > at)
    if not len(tied):
        return at
    numbers = max(int(ours.number.max(initial=0)), int(theirs.number.max(initial=0))) + 1
    width = (int(chapter.max(initial=0)) + 1) * numbers
    rank = np.cumsum(np.append(False, start[1:] != start[:-1]))
    if (int(rank[-1]) + 1) * width >= 2**62:
        return None
    key = rank * width + chapter[ours.row] * numbers + ours.number
    row, number = theirs.row[tied], theirs.number[tied]
    at[tied] = np.searchsorted(key, rank[at[tied]] * width + chapter[row] * numbers + number)
    return at

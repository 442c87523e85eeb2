"""Runs: one row per run of a chapter, from everything the store holds; the last stage
of the run pipeline (transitions -> prices -> charges -> run table -> this frame).

A run is what one charge starts (DESIGN.md, "What the analysis counts"). `charges`
tells which runs a rise of `credits_spent` paid for; `run_table` gives each its times
and outcome by the rules in `run_rules.py`; this module makes the frame users see:

- **start**: a first run of a chapter that appeared since the snapshot before starts at
  its `created_at` (source `created`); any other run started after the snapshot before
  (and after the run before it ended, when an event says when): the earliest moment
  the store allows (source `snapshot`).
- **end**: its `chapter.finished` or `chapter.failed` event when the store has one
  (source `event`); else `last_activity_at` of the first snapshot that shows the chapter
  settled (source `last_activity`: the service's last step of the run), unless
  something else touched the chapter there (a review, held pages added), when it is
  that snapshot's time (source `snapshot`).
- **outcome**: `finished`, `failed`, `stalled` (abandoned by the service: its reason
  says it stalled), `running` (processing at the last snapshot); null when the store
  cannot tell: a run followed by another between the same two snapshots without an
  event, or a chapter trashed while it ran.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, cast

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from toolkit.analysis._arrays import (
    NO_TIME,
    category_codes,
    moment_micros,
    texts_at,
    texts_by_code,
    to_micros,
    words_by_code,
)
from toolkit.analysis.calendar import within
from toolkit.analysis.charges import Charges
from toolkit.analysis.observed import Observed, observe
from toolkit.analysis.run_codes import NULL, EndSource, Kind, Outcome, Slot, StartSource
from toolkit.analysis.run_store import frame_columns
from toolkit.analysis.run_table import RunTable
from toolkit.analysis.transitions import Transitions, last_of_chapter
from toolkit.analysis.workspaces import across
from toolkit.frames.schema import TEXT_DTYPE, TIME_DTYPE
from toolkit.timestamps import When

if TYPE_CHECKING:
    from toolkit.store import SnapshotStore

__all__ = [
    "RunFrame",
    "all_runs",
    "chapter_labels",
    "paid_pages",
    "rescans_seen",
    "run_chapters",
    "runs",
    "runs_ended",
    "runs_kept",
    "seen_times",
]

_COLUMNS = [
    "run_id", "chapter_id", "chapter", "project_id", "project", "kind", "pages", "languages",
    "models", "credits", "rework", "started_at", "started_source", "finished_at",
    "finished_source", "outcome", "failure_reason",
]  # fmt: skip


@across
def runs(
    store: SnapshotStore | Observed,
    *,
    since: When | None = None,
    until: When | None = None,
    tz: str | None = None,
) -> pd.DataFrame:
    """One row per run of a chapter that started after the store's first snapshot, and
    per run already going at it (charged before the store's history: `credits` 0).

    Columns: `run_id` (`<chapter_id>/<n>`, the chapter's n-th run seen: stable across
    calls), `chapter_id`, `chapter` (title), `project_id`, `project` (name), `kind`
    (`first`, `rescan`, `added_pages`, `held_start`), `pages` and `languages` it ran,
    `models` (the service's model name), `credits` charged at its start, `rework`
    (credits paid again for pages already paid: a re-scan's whole charge, and a novel
    chapter uploaded again at the position of one that failed), `started_at`,
    `started_source` (`created` or `snapshot`), `finished_at` (when it finished or
    failed), `finished_source` (`event`, `last_activity` or `snapshot`), `outcome`
    (`finished`, `failed`, `stalled`, `running`; null where the store cannot tell) and
    `failure_reason`. `since`/`until` keep runs that started in [since, until).
    Sorted by start (unknown starts last), then chapter, then run number.
    docs/analysis.md says how each field is derived and what the store cannot know.

    Args:
        store: A `SnapshotStore` or its `Observed` view; or several workspaces' stores at
            once (a mapping of label to store, or a list), and then the answer has a
            `workspace` column first, or is one dict per label where the call answers with a
            dict (`toolkit.analysis.workspaces`).
        since: The window's start, included, on the runs' start (a naive time is read in
            `tz`); by default the beginning.
        until: The window's end, excluded; by default no end.
        tz: The time zone a naive `since` or `until` is read in; UTC by default.

    Returns:
        One row per run.
    """
    frame = all_runs(observe(store))
    return within(frame[_COLUMNS], "started_at", since=since, until=until, tz=tz)


@dataclass(frozen=True)
class RunFrame:
    """The last stage: one row per run (as `runs`), with the snapshot that first showed
    it (`seen_idx`, `seen_at`) and its chapter's `created_at`."""

    frame: pd.DataFrame

    @classmethod
    def build(cls, obs: Observed) -> RunFrame:
        table = obs.stage(RunTable)
        if not len(table.row):
            return cls(_empty())
        return cls(_frame_of(table, obs.stage(Transitions)))


def all_runs(obs: Observed) -> pd.DataFrame:
    """The runs with the snapshot that first showed each (`seen_idx`, `seen_at`)."""
    return obs.stage(RunFrame).frame


def runs_kept(obs: Observed, keep: np.ndarray) -> pd.DataFrame:
    """The rows of `all_runs` that `keep` (a mask over `RunTable`) selects, with texts
    made only for them when the whole frame is not at hand: a figure on a few of a
    year's 200,000 runs (its failures, the chapters whose first run was seen) then costs
    the runs, not their texts."""
    if obs.has(RunFrame):
        return all_runs(obs)[keep].reset_index(drop=True)
    if not keep.any():
        return _empty()
    return _frame_of(obs.stage(RunTable).take(keep), _rows_of_frames(obs))


def runs_ended(
    obs: Observed, *, since: pd.Timestamp, until: pd.Timestamp | None = None
) -> pd.DataFrame:
    """The rows of `all_runs` of the runs that ended (finished, failed or stalled) in
    [since, until) (no end: None), in its order, with texts made only for them
    (`runs_kept`): the watch's failure rates read a few days' runs, not a quarter's."""
    table = obs.stage(RunTable)
    ended = np.isin(table.outcome, [Outcome.FINISHED, Outcome.FAILED, Outcome.STALLED])
    ended &= table.finished >= moment_micros(since)
    if until is not None:
        ended &= table.finished < moment_micros(until)
    return runs_kept(obs, ended)


def seen_times(obs: Observed) -> np.ndarray:
    """When the snapshot that first showed each run (of `RunTable`) was taken, as UTC
    `datetime64[us]`: the runs frame's `seen_at`, without its texts."""
    table = obs.stage(RunTable)
    if not len(table.row):
        return np.zeros(0, "datetime64[us]")
    times = to_micros(obs.manifest["snapshot_at"])  # the transitions' times
    seen: np.ndarray = times[table.seen_idx].view("datetime64[us]")
    return seen


def run_chapters(obs: Observed) -> np.ndarray:
    """Each run's chapter (of `RunTable`), as a code: equal chapters, equal codes."""
    table = obs.stage(RunTable)
    if not len(table.row):
        return table.row
    rows = obs.stage(Transitions).rows
    return np.asarray(rows["chapter_code"].to_numpy()[table.row], "int64")


def paid_pages(obs: Observed) -> pd.Series:
    """Pages each chapter (by id) has paid for at the last snapshot: run at least once;
    held pages not yet."""
    rows = transition_rows(obs, ["chapter_id", "step"])
    if rows is None:
        return pd.Series(dtype="float64")
    last = np.flatnonzero(last_of_chapter(rows["step"].to_numpy()))
    return pd.Series(charge_column(obs, "paid")[last], index=texts_at(rows["chapter_id"], last))


def chapter_labels(obs: Observed) -> pd.Series:
    """Each chapter's name by id, as the runs frame names it: its last row's title, or
    `Chapter <position>` (`titled`). From those columns alone: a page's drill-down
    named its chapters from the whole stage, read for them."""
    rows = transition_rows(obs, ["chapter_id", "step", "title", "position"])
    if rows is None:
        return pd.Series(dtype=object)
    last = np.flatnonzero(last_of_chapter(rows["step"].to_numpy()))
    labels = titled(rows["title"].iloc[last], rows["position"].iloc[last])
    ids = pd.Index(texts_at(rows["chapter_id"], last), name="chapter_id")
    return pd.Series(labels.to_numpy(), index=ids)


def titled(titles: pd.Series, positions: pd.Series) -> pd.Series:
    """Chapters' titles, `Chapter <position>` where one has none."""
    return titles.astype(object).where(titles.notna(), "Chapter " + positions.astype(str))


def rescans_seen(obs: Observed, window: tuple[int, int] | None = None) -> pd.DataFrame:
    """`chapter_id, idx`: where a re-scan of a chapter was seen (the snapshot position
    whose rise paid for it), each once, without building the runs; `window`: at those
    positions alone (both included), texts made for them alone (a year's re-scans are
    875,000 at 100,000 chapters, a watch cycle's lines read a fortnight's)."""
    rows = transition_rows(obs, ["chapter_id", "idx"])
    if rows is None:
        return pd.DataFrame({"chapter_id": pd.Series(dtype=object), "idx": np.zeros(0, "int64")})
    rescans = charge_column(obs, "count", Slot.RESCAN_BEFORE) + charge_column(
        obs, "count", Slot.RESCAN_AFTER
    )
    positions = rows["idx"].to_numpy("int64")
    seen = rescans > 0
    if window is not None:
        seen &= (positions >= window[0]) & (positions <= window[1])
    seen = np.flatnonzero(seen)
    idx = positions[seen]
    # Each chapter and snapshot once, told by code: a chapter's log has a row a snapshot,
    # and duplicates among texts cost 0.15 s on a year.
    key = category_codes(rows["chapter_id"])[seen] * (len(obs.manifest) + 1) + idx
    once = ~pd.Series(key).duplicated().to_numpy()
    return pd.DataFrame(
        {
            # Taken by code at the rows that saw one: every row's id as a Python text
            # is seconds on a long history, masking the categorical column 0.15 s.
            "chapter_id": texts_at(rows["chapter_id"], seen[once]),
            "idx": idx[once],
        }
    )


def transition_rows(obs: Observed, columns: list[str]) -> pd.DataFrame | None:
    """The transition rows' `columns`, as the transitions stage holds them (None: the
    store has none). From the stage once it is read; before, those columns of the stage
    kept for the view's state alone, each read once a view: the pages paid, the re-scans
    seen and a run's project need two of its 31 columns, and a watch cycle at 100,000
    chapters x a year spent 2 s reading the stages whole for them."""
    missing = [column for column in columns if f"rows:{column}" not in obs.memo]
    kept = None
    if missing and not obs.has(Transitions):
        kept = obs.kept_columns(Transitions, [f"frame:rows:{column}" for column in missing])
    if kept is None and (missing or obs.has(Transitions)):
        _let_go(obs, "rows:")  # read whole since: not held twice
        found = obs.stage(Transitions)
        return None if found.empty else found.rows[columns]
    if kept is not None:
        frame = frame_columns(kept, "rows")
        for column in missing:
            obs.memo[f"rows:{column}"] = frame[column]
        values = json.loads(kept.schema.metadata[b"toolkit"])["values"]
        obs.memo["rows:default_model"] = values["default_model"]["value"]
    # Not copied (2.2 million rows of a year: 0.2 s a call): callers only read them.
    return pd.DataFrame({column: obs.memo[f"rows:{column}"] for column in columns}, copy=False)


# The columns of the transition rows a runs frame takes its texts from (`_frame_of`).
_FRAMED: Final = ["chapter_code", "step", "title", "position", "model", "chapter_id",
                  "project_id", "project"]  # fmt: skip


def _rows_of_frames(obs: Observed) -> Transitions:
    """The transitions a runs frame reads (`_frame_of`): the stage once read, else its
    `_FRAMED` columns alone (`transition_rows`): a watch cycle's failure rates frame a
    few days' runs, and the whole stage was a second of its read."""
    rows = transition_rows(obs, _FRAMED)
    if rows is None or obs.has(Transitions):
        return obs.stage(Transitions)
    default = cast(str | None, obs.memo["rows:default_model"])
    return Transitions(rows, to_micros(obs.manifest["snapshot_at"]), default)


def charge_column(obs: Observed, field: str, slot: int | None = None) -> np.ndarray:
    """A field of the charges stage (`slot`: that column of a 2-D one) by transition
    row: from the stage once it is read; before, that column of the stage kept for the
    view's state alone (as `transition_rows`)."""
    name = field if slot is None else f"{field}[{int(slot)}]"
    kept = None
    if f"charges:{name}" not in obs.memo and not obs.has(Charges):
        kept = obs.kept_columns(Charges, [name])
        if kept is not None:
            obs.memo[f"charges:{name}"] = np.asarray(kept.column(name).to_numpy())
    if f"charges:{name}" not in obs.memo or obs.has(Charges):
        _let_go(obs, "charges:")  # read whole since: not held twice
        values = getattr(obs.stage(Charges), field)
        return np.asarray(values if slot is None else values[:, slot])
    return cast(np.ndarray, obs.memo[f"charges:{name}"])


def _let_go(obs: Observed, prefix: str) -> None:
    """Forget the columns read alone under `prefix`, once their stage is read whole."""
    for key in [key for key in obs.memo if key.startswith(prefix)]:
        del obs.memo[key]


def _frame_of(table: RunTable, found: Transitions) -> pd.DataFrame:
    """The runs frame: texts taken from the rows' categories by code, in Arrow (maps of
    Python strings would cost a second on a year's runs)."""
    rows, row, number = found.rows, table.row, table.number
    chapter = rows["chapter_code"].to_numpy("int64")
    last = found.last_of_chapter()
    titles, positions = rows["title"][last], rows["position"][last]
    labels = pa.array(titled(titles, positions), pa.large_string())  # by chapter code
    models = _text_of(rows["model"], row, null=found.default_model)
    chapter_ids = _text_of(rows["chapter_id"], row)
    # `<chapter_id>/<n>`: the "/<n>" taken by number (few), not made per run.
    endings = words_by_code(number, [f"/{n}" for n in range(1, int(number.max(initial=0)) + 2)])
    run_ids = pc.binary_join_element_wise(chapter_ids, endings, pa.scalar("", pa.large_string()))
    started = table.started
    return pd.DataFrame(
        {
            "run_id": _text(run_ids),
            "chapter_id": _text(chapter_ids),
            "chapter": _text(labels.take(pa.array(chapter[row]))),
            "project_id": _text(_text_of(rows["project_id"], row)),
            "project": _text(_text_of(rows["project"], row)),
            "kind": texts_by_code(table.kind, Kind.words()),
            "pages": pd.array(np.round(table.pages).astype("int64"), dtype="Int64"),
            "languages": pd.array(table.languages.astype("int64"), dtype="Int64"),
            "models": _text(models),
            "credits": pd.array(table.credits, dtype="Float64"),
            "rework": pd.array(table.rework, dtype="Float64"),
            "started_at": _times(started),
            "started_source": texts_by_code(
                np.where(
                    table.from_creation,
                    StartSource.CREATED,
                    np.where(started == NO_TIME, NULL, StartSource.SNAPSHOT),
                ),
                StartSource.words(),
            ),
            "finished_at": _times(table.finished),
            "finished_source": texts_by_code(table.finished_source, EndSource.words()),
            "outcome": texts_by_code(table.outcome, Outcome.words()),
            "failure_reason": _text(table.failure_reason),
            "seen_idx": pd.array(table.seen_idx, dtype="Int64"),
            "seen_at": _times(found.times[table.seen_idx]),
            "created_at": _times(table.created),
        }
    )


def _text_of(column: pd.Series, at: np.ndarray, *, null: str | None = None) -> pa.Array:
    """A categorical column's texts at rows `at`, as Arrow strings; nulls as `null`."""
    coded, words = category_codes(column)[at], list(column.cat.categories)
    if null is not None:
        coded = np.where(coded < 0, len(words), coded)
        words.append(null)
    return words_by_code(coded, words)


def _text(values: pa.Array | np.ndarray) -> pd.arrays.ArrowStringArray:
    """Texts as the toolkit's string dtype, straight from Arrow (as large strings, which
    pandas keeps them as: no second copy)."""
    if isinstance(values, np.ndarray):
        values = pa.array(values, pa.large_string(), from_pandas=True)
    return pd.arrays.ArrowStringArray(values)


def _times(values: np.ndarray) -> pd.Series:
    # NO_TIME is numpy's NaT: the microseconds are the times, with no float detour.
    stamped = pd.Series(np.asarray(values, "int64").view("datetime64[us]"))
    return stamped.dt.tz_localize("UTC")


def _empty() -> pd.DataFrame:
    frame = pd.DataFrame(
        {c: pd.Series(dtype=TEXT_DTYPE) for c in [*_COLUMNS, "seen_idx", "seen_at", "created_at"]}
    )
    for column in ("pages", "languages", "seen_idx"):
        frame[column] = frame[column].astype("Int64")
    for column in ("credits", "rework"):
        frame[column] = frame[column].astype("Float64")
    for column in ("started_at", "finished_at", "seen_at", "created_at"):
        frame[column] = frame[column].astype(TIME_DTYPE)
    return frame

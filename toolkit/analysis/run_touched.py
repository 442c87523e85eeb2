"""Which chapters an extension of the kept run stages works out again (`run_extend`),
and their rows as the transitions query answers them.

The touched chapters (`touched` says which) have their rows since the kept
snapshots added to the rows kept for them, answered by the transitions query over the
snapshots since alone (`transitions.Since`: only their files are read). What a row reads
from the whole history comes from the kept state instead: the chapter's languages (every
chapter's language pairs are kept beside the stages, `run_store.LANGUAGES`, and counted
with the pairs since) and the service's default model (the kept one; a model named since
where none was falls back). So what an extension reads of the logs is the snapshots
since, however long the history. Those a rule reaches back for are worked out over their
whole history, by the same query restricted to them, as before: the chapters of a
project whose name, kind, model or languages changed (every row carries them), and those
whose kept rows cannot be told back to the query's answer (created more than once).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final, cast

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from toolkit.analysis._arrays import among, is_true, text_objects
from toolkit.analysis.run_store import frame_table
from toolkit.analysis.run_table import terminal_events
from toolkit.analysis.transitions import Since, Transitions, transitions_ctes, transitions_sql

if TYPE_CHECKING:
    from toolkit.analysis.observed import Observed

__all__ = [
    "EVENT_COLUMNS",
    "READ_WHOLE",
    "SINCE_TABLES",
    "Ask",
    "KeptChapters",
    "KeptRows",
    "KeptState",
    "kept_rows",
    "kept_rows_of",
    "languages",
    "pairs",
    "projects",
    "since",
    "texts",
    "touched",
    "touched_rows",
]

EVENT_COLUMNS: Final = ("chapter_id", "type", "at", "reason")

# The projects as the transitions join them (what an extension compares, then
# remembers), in the order of their ids.
_PROJECT_COLUMNS: Final = "project_id, project, project_kind, model, n_languages"
_PROJECTS_SQL: Final = f"""WITH {transitions_ctes()}
SELECT {_PROJECT_COLUMNS} FROM by_project
ORDER BY project_id"""
# The same, and in the same query (each query opens the logs: 0.03-0.08 s at 30,000
# chapters x a month), the chapters with a change row or a language row since the kept
# snapshots (`since` of them; a change of status alone too: working a chapter out again
# is never wrong) with their projects, and the chapters' languages since (`LANGUAGES`).
# Only the files since are read (`at`, the first new snapshot's time, reaches the
# Parquet scan): the rest of each chapter's history is in the kept stages.
_SINCE_SQL: Final = f"""WITH {transitions_ctes()},
since AS (
    SELECT chapter_id, project_id, NULL::VARCHAR AS language_code, false AS language
    FROM chapters_changes
    WHERE idx >= {{since}} AND snapshot_at >= '{{at}}'::TIMESTAMPTZ AND _changed IS NOT false
    UNION SELECT chapter_id, project_id, language_code, true FROM languages_changes
    WHERE idx >= {{since}} AND snapshot_at >= '{{at}}'::TIMESTAMPTZ AND _changed IS NOT false
)
SELECT * FROM (
    SELECT {_PROJECT_COLUMNS}, NULL::VARCHAR AS chapter_id, NULL::VARCHAR AS language_code,
           NULL::BOOLEAN AS language
    FROM by_project
    UNION ALL SELECT NULL, project_id, NULL, NULL, NULL, chapter_id, language_code, language
    FROM since
) ORDER BY chapter_id IS NOT NULL, project_id, chapter_id, language_code"""
# Every chapter's languages as its language rows name them, each pair once (a code
# null too: a chapter whose rows name none counts 0, not the project's languages): what
# the transitions count per chapter (`n_chapter_languages`) over the whole history, kept
# beside the stages so that an extension counts them with the pairs since alone.
_LANGUAGES_SQL: Final = """SELECT DISTINCT chapter_id, language_code FROM languages_changes
WHERE _changed IS NOT false AND chapter_id IS NOT NULL"""
# The pairs an extension worked out, for `remember` (a key of `Observed.memo`).
_PAIRS_MEMO: Final = "run_extend.languages"
_COUNTS: Final = "kept_languages"
# Whether a language row since names the service's default model where the kept state
# found none (`transitions_ctes`'s `default_model`, over the rows since alone).
_NEW_DEFAULT: Final = f"""WITH {transitions_ctes()}
SELECT 1 FROM languages_changes
WHERE idx >= {{since}} AND snapshot_at >= '{{at}}'::TIMESTAMPTZ AND len(models) > 0
  AND project_id IN (SELECT project_id FROM by_project WHERE model IS NULL)
LIMIT 1"""
_DEFAULT: Final = "kept_default_model"
# What `since` and `touched_rows` read, asked over one connection (`SnapshotStore.asking`:
# the store verified and the logs opened once, not once a query).
SINCE_TABLES: Final = ("projects", "chapters", "languages", "exports")
# Of those, what the queries of the log since read whole: the projects, as the
# transitions join them (`by_project`); of the others, the rows since alone.
READ_WHOLE: Final = ("projects",)
Ask = Callable[..., pa.Table]  # `SnapshotStore.asking(...).arrow`
_TOUCHED_IDS: Final = "touched_ids"


def projects(obs: Observed) -> list[dict[str, Any]]:
    """Each project's name, kind, model and languages, as the transitions join them:
    read once per `Observed` (an extension compares them, then remembers them)."""
    found = obs.memo.get(_PROJECTS_SQL)
    if found is None:
        found = obs.memo[_PROJECTS_SQL] = obs.store.query_arrow(_PROJECTS_SQL).to_pylist()
    return cast(list[dict[str, Any]], found)


def texts(column: pd.Series) -> list[str | None]:
    """A column's values as texts, null as None (as the basis keeps them)."""
    return [None if pd.isna(v) else str(v) for v in column.tolist()]


@dataclasses.dataclass(frozen=True)
class KeptRows:
    """The kept transitions as their file holds them (Arrow, not made into a frame: an
    extension needs the rows of the chapters untouched as the query answers them), and
    per chapter (by `chapter_code`) its id, project and whether its rows are odd (a
    chapter created more than once, or whose first row is not its creation)."""

    table: pa.Table
    code: np.ndarray
    chapters: np.ndarray
    projects: np.ndarray
    odd: np.ndarray
    default_model: str | None

    def per_chapter(self) -> KeptChapters:
        return KeptChapters(self.chapters, self.projects, self.odd)


@dataclasses.dataclass(frozen=True)
class KeptChapters:
    """Per chapter of a kept state, its id, project and whether its rows are odd
    (`KeptRows`): what `touched` reads of it."""

    chapters: np.ndarray
    projects: np.ndarray
    odd: np.ndarray

    def replaced(self, other: KeptChapters, *, dropping: np.ndarray) -> KeptChapters:
        """These chapters but those `dropping` names, and `other`'s (a part over a base
        state, `run_part`: it names its chapters whose rows are gone too)."""
        mine = ~among(self.chapters, dropping)
        return KeptChapters(*(np.concatenate([getattr(self, f)[mine], getattr(other, f)])
                              for f in ("chapters", "projects", "odd")))  # fmt: skip


def kept_rows(file: pa.Table | None) -> KeptRows | None:
    """`KeptRows` of a state's kept transitions file; None when there is none, or it is
    not as written."""
    if file is None:
        return None
    try:
        meta = json.loads(file.schema.metadata[b"toolkit"])
        table = frame_table(file, "rows")
        code = table.column("chapter_code").to_numpy().astype("int64")
        step = table.column("step").to_numpy()
        new = table.column("is_new").to_numpy(zero_copy_only=False).astype(bool)
        first = np.flatnonzero(step == 0)
        chapters = pc.cast(table.column("chapter_id").take(first), pa.string())
        projects = pc.cast(table.column("project_id").take(first), pa.string())
        return KeptRows(
            table, code, text_objects(chapters), text_objects(projects),
            _odd(code, step, new, len(first)), meta["values"]["default_model"]["value"],
        )  # fmt: skip
    except (KeyError, ValueError, pa.ArrowException):  # not as written: no basis
        return None


def kept_rows_of(found: Transitions, table: pa.Table) -> KeptRows:
    """`KeptRows` of transition rows in the query's answer (`table`, a part's:
    `run_part`), from their stage `found`."""
    rows = found.rows
    code = rows["chapter_code"].to_numpy("int64")
    step = rows["step"].to_numpy()
    first = np.flatnonzero(step == 0)
    return KeptRows(
        table, code, _ids(rows["chapter_id"], first), _ids(rows["project_id"], first),
        _odd(code, step, is_true(rows["is_new"]), len(first)), found.default_model,
    )  # fmt: skip


def _ids(column: pd.Series, at: np.ndarray) -> np.ndarray:
    """A text column's values `at` rows, null as None (as `kept_rows` reads them)."""
    return np.asarray(texts(column.iloc[at]), object)


def _odd(code: np.ndarray, step: np.ndarray, new: np.ndarray, chapters: int) -> np.ndarray:
    """Per chapter, whether its rows cannot be told back to the query's answer (created
    more than once, or its first row not its creation)."""
    odd = np.zeros(chapters, bool)
    np.logical_or.at(odd, code, (new & (step > 0)) | (~new & (step == 0)))
    return odd


@dataclasses.dataclass(frozen=True)
class KeptState:
    """Where the kept state ends: how many snapshots it saw, and every chapter's
    languages then (`LANGUAGES`)."""

    snapshots: int
    languages: pa.Table


def touched_rows(
    obs: Observed,
    model: str | None,
    added: set[str],
    whole: set[str],
    pairs: pa.Table,
    state: KeptState,
    ask: Ask,
) -> pa.Table | None:
    """The query's answer for the touched chapters: of those `added`, their rows since
    the kept snapshots alone (the rows before are kept); of those worked out `whole`,
    every row. None when the service's default model cannot be told from the kept one
    (`model`). `ask`: a query over the logs of `SINCE_TABLES` (`SnapshotStore.asking`)."""
    first, at = state.snapshots, _at(obs, state.snapshots)
    chosen = f"SELECT chapter_id FROM {_TOUCHED_IDS}"
    parts = []
    if added:
        if model is None and ask(_NEW_DEFAULT.format(since=first, at=at)).num_rows:
            return None  # a model named since where none was: the kept rows may name it
        ids = pa.array(sorted(added), pa.string())
        counts = (
            pairs.filter(pc.is_in(pairs.column("chapter_id"), ids))
            .group_by("chapter_id")
            .aggregate([("language_code", "count")])
        )
        frames = {
            _TOUCHED_IDS: pa.table({"chapter_id": ids}),
            _COUNTS: pa.table(
                {
                    "chapter_id": counts.column("chapter_id"),
                    "n_chapter_languages": counts.column("language_code_count"),
                }
            ),
            _DEFAULT: pa.table({"name": pa.array([] if model is None else [model], pa.string())}),
        }
        where = Since(first, at, _COUNTS, _DEFAULT)
        parts.append(ask(transitions_sql(touched=chosen, since=where), frames=frames))
    if whole or not parts:
        ids = pa.array(sorted(whole), pa.string())
        frames = {_TOUCHED_IDS: pa.table({"chapter_id": ids})}
        parts.append(ask(transitions_sql(touched=chosen), frames=frames))
    return pa.concat_tables([p.cast(parts[0].schema) for p in parts])


def pairs(languages: pa.Table) -> pa.Table:
    """Each chapter's languages (`LANGUAGES`), each pair once, as kept."""
    table = languages.select(["chapter_id", "language_code"]).cast(_PAIRS)
    return table.group_by(["chapter_id", "language_code"]).aggregate([]).cast(_PAIRS)


_PAIRS: Final = pa.schema([("chapter_id", pa.string()), ("language_code", pa.string())])


def _added(kept: pa.Table, since: pa.Table) -> pa.Table:
    """The kept pairs (`pairs`) with the pairs `since` added, each once. Only the
    chapters with pairs since are grouped again (grouping every chapter's took 0.06-0.1 s
    at 100,000 chapters)."""
    kept = kept.cast(_PAIRS)
    theirs = pc.is_in(kept.column("chapter_id"), since.column("chapter_id").combine_chunks())
    grouped = pairs(pa.concat_tables([kept.filter(theirs), since]))
    # One chunk: the next state reads it back as written, a batch for each.
    return pa.concat_tables([kept.filter(pc.invert(theirs)), grouped]).combine_chunks()


def touched(
    obs: Observed, old: KeptChapters, meta: dict[str, Any], basis: pa.Table, changes: pa.Table
) -> tuple[set[str], set[str]]:
    """The chapters to work out again, by id, and of those the ones worked out over
    their whole history (the rest have their rows since added to those kept): the
    module's docstring says which."""
    found = set(changes.column("chapter_id").to_pylist())
    # Projects whose name, kind, model or languages changed: all their chapters, whole.
    now = projects(obs)
    then = {p["project_id"]: p for p in meta["projects"]}
    changed = {p["project_id"] for p in now if then.get(p["project_id"]) != p}
    changed |= set(then) - {p["project_id"] for p in now}
    chapter, project = old.chapters, old.projects
    whole = set(chapter[among(project, changed)])
    # Chapters whose kept rows cannot be told back to the query's answer (`KeptRows`).
    whole |= set(chapter[old.odd])
    found |= whole
    # End events recorded since (for any time), or gone.
    events = terminal_events(obs)
    now_events = set(zip(*(texts(events[c]) for c in EVENT_COLUMNS), strict=True))
    kept_events = set(zip(*(texts(basis.column(c).to_pandas()) for c in EVENT_COLUMNS),
                          strict=True))  # fmt: skip
    found |= {e[0] for e in now_events ^ kept_events}
    # A novel project with a touched chapter (or a row since): all its chapters (a
    # re-upload's rework reads the other chapters at its position).
    novel = {p["project_id"] for p in now if p["project_kind"] == "novel"}
    novels = set(project[among(chapter, found)]) & novel
    novels |= set(changes.column("project_id").to_pylist()) & novel
    found |= set(chapter[among(project, novels)])
    return {str(c) for c in found if c is not None}, {str(c) for c in whole if c is not None}


def since(obs: Observed, snapshots: int, ask: Ask) -> pa.Table:
    """The chapters' rows since the kept state's first `snapshots` (their `chapter_id`,
    `project_id`, `language_code`, `language`: whether a language row's); and, in the
    same query, the projects as the transitions join them (for `projects`). `ask`: as
    `touched_rows` takes it."""
    found = ask(_SINCE_SQL.format(since=snapshots, at=_at(obs, snapshots)))
    is_project = pc.is_null(found.column("chapter_id"))
    obs.memo[_PROJECTS_SQL] = (
        found.filter(is_project)
        .drop_columns(["chapter_id", "language_code", "language"])
        .to_pylist()
    )
    return found.filter(pc.invert(is_project))


def _at(obs: Observed, snapshots: int) -> str:
    """The first snapshot after the kept state's first `snapshots` (the last one's when
    there is none), its time as the SQL takes it: a filter on it reaches the Parquet
    scan."""
    times = obs.manifest["snapshot_at"]
    return str(times.iloc[min(snapshots, len(times) - 1)].isoformat())


def languages(
    obs: Observed, changes: pa.Table | None = None, state: KeptState | None = None
) -> pa.Table:
    """Every chapter's languages (`run_store.LANGUAGES`): the kept state's with the
    language rows since among `changes`, or, with none kept, read from the whole log
    (a full build's). Kept in `obs.memo` for `run_extend.remember`."""
    if changes is not None and state is not None:
        since_rows = changes.filter(pc.fill_null(changes.column("language"), False))
        obs.memo[_PAIRS_MEMO] = _added(state.languages, pairs(since_rows))
    found = obs.memo.get(_PAIRS_MEMO)
    if not isinstance(found, pa.Table):
        found = obs.memo[_PAIRS_MEMO] = pairs(obs.store.query_arrow(_LANGUAGES_SQL))
    return found

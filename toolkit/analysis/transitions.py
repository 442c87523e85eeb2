"""The pipeline's first stage: the chapter changes that can start or end a run, read
in one DuckDB query.

A chapter's change log has a row whenever anything about it changed, mostly progress
(`last_activity_at`). The query reads only the rows the store flags `_changed` (new,
gone, or changed in a column followed here), a third of them, each with the values it
changed from, which the store keeps beside it (`_previous`; stores written before it
kept them are upgraded before they are read, see `toolkit.store.upgrade`). A run
starts where `credits_spent` rises (or, in stores without charges, where `processing`
turns on or `failed` is cleared) and ends where `processing` turns off; only those
rows, the baseline, deletions and changes of the failure are read back (a change of
status alone, two thirds of the flagged rows, is not), each with its previous values
beside it. The projects' names, models and languages ride along in the same query:
every `store.query` opens the store's logs once, and opening is much of the cost.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from toolkit.analysis._arrays import (
    is_true,
    rank_within,
    taken,
    text_objects,
    to_float,
    to_micros,
    unconsolidated,
)

if TYPE_CHECKING:
    from toolkit.analysis.observed import Observed

__all__ = ["MOVING", "PER_CHAPTER", "Since", "Transitions", "transitions_ctes", "transitions_sql"]

_FLAGGED = """
    SELECT idx, chapter_id, project_id, title, position, page_count, started, processing,
           failed, failure_reason, status::VARCHAR AS status, credits_spent,
           last_activity_at, created_at, _deleted, _changed, _previous
    FROM chapters_changes WHERE _changed IS NOT false
"""
_COLUMNS = """idx, chapter_id, project_id, title, position, page_count, started, processing,
           failed, failure_reason, status, credits_spent, last_activity_at, created_at,
           _deleted AS deleted"""
# Each flagged row with the followed values it changed from, as the store kept them.
_FROM_PREVIOUS = f"""
    SELECT {_COLUMNS},
           NOT _previous.existed AS is_new,
           _previous.credits_spent AS prev_credits,
           _previous.page_count AS prev_pages,
           _previous.started AS prev_started,
           _previous.processing AS prev_processing,
           _previous.failed AS prev_failed,
           _previous.failure_reason AS prev_reason,
           _previous.status AS prev_status
    FROM flagged"""


@dataclass(frozen=True)
class Since:
    """A restriction of the query to the rows of snapshot `first` on (`at`, its time,
    reaches the Parquet scan, which then skips the files before it), with what the rows
    read from the whole history taken from tables given instead (`run_extend` keeps
    them): `languages`, a table of `chapter_id, n_chapter_languages`, and
    `default_model`, a table of one `name`. Each row's answer is then the whole query's
    for that row, and a question reads the snapshots since, not the history."""

    first: int
    at: str
    languages: str
    default_model: str


def transitions_sql(*, touched: str = "", since: Since | None = None) -> str:
    """The query; `touched`: only the chapters this query (a CTE's body, `chapter_id`)
    names, their whole history, as the query gives them (`run_extend`); `since`: only
    their rows from a snapshot on (`Since`)."""
    ctes = transitions_ctes(touched=bool(touched), since=since)
    return (
        f"WITH touched AS ({touched}),\n{ctes}\n{_SELECT}" if touched else f"WITH {ctes}\n{_SELECT}"
    )


def transitions_ctes(*, touched: bool = False, since: Since | None = None) -> str:
    """The CTEs the query stands on, for queries that go on from the transitions:
    `by_project`, `chapter_languages`, `default_model`, `exported`, `flagged` and `log` (every
    flagged row with its previous values; `MOVING` keeps those that start or end runs);
    `touched`: only the chapters of the table or CTE `touched` (`flagged`,
    `chapter_languages`, `exported`); `since`: only the rows from a snapshot on (`Since`)."""
    return _CTES.format(
        by_project=_BY_PROJECT,
        chapter_languages=_CHAPTER_LANGUAGES.format(only=_only("", touched=touched))
        if since is None
        else f"SELECT chapter_id, n_chapter_languages FROM {since.languages}",
        default_model=_DEFAULT_MODEL
        if since is None
        else f"SELECT name FROM {since.default_model}",
        flagged=f"flagged AS ({_FLAGGED}{_only('', touched=touched, since=since)})",
        log=f"log AS ({_FROM_PREVIOUS}\n)",
        exported_only=_only("e.", touched=touched, since=since),
    )


def _only(table: str, *, touched: bool, since: Since | None = None) -> str:
    """The conditions on a log's rows (`table`: the prefix of its columns) that keep the
    touched chapters and the snapshots since."""
    only = f" AND {table}chapter_id IN (SELECT chapter_id FROM touched)" if touched else ""
    if since is not None:
        only += (
            f" AND {table}idx >= {since.first} AND {table}snapshot_at >= '{since.at}'::TIMESTAMPTZ"
        )
    return only


_BY_PROJECT = """
    SELECT project_id,
           arg_max(name, idx) AS project,
           arg_max(kind, idx) AS project_kind,
           arg_max(translation_model, idx) AS model,
           arg_max(len(target_languages), idx) AS n_languages
    FROM projects_changes WHERE NOT _deleted GROUP BY project_id
"""
# A chapter runs in the languages it was created with, which its own rows show; the
# project's list may have changed since.
_CHAPTER_LANGUAGES = """
    SELECT chapter_id, count(DISTINCT language_code) AS n_chapter_languages
    FROM languages_changes WHERE _changed IS NOT false{only} GROUP BY chapter_id
"""
# The service's default model, as the languages of a project without one name it.
_DEFAULT_MODEL = """
    SELECT models[1] AS name FROM languages_changes
    WHERE len(models) > 0
      AND project_id IN (SELECT project_id FROM by_project WHERE model IS NULL)
    LIMIT 1
"""
_CTES = """by_project AS ({by_project}),
chapter_languages AS ({chapter_languages}),
default_model AS ({default_model}),
exported AS (
    -- Per chapter and snapshot, the most pages a file prepared since the snapshot before
    -- counts: a run packages the pages that are not held (`pageCount`), which tells held
    -- pages from run ones where a rise alone cannot (`charges._held_seen_later`).
    SELECT e.chapter_id, e.idx, max(e.page_count)::DOUBLE AS exported_pages
    FROM exports_changes e
    JOIN (SELECT snapshot_id, lag(snapshot_at) OVER (ORDER BY snapshot_id) AS before
          FROM snapshots) s USING (snapshot_id)
    WHERE NOT e._deleted AND e.prepared_at > s.before{exported_only}
    GROUP BY ALL
),
{flagged},
{log}"""
# A row whose status alone changed (a review, most of all) starts and ends no run, and
# is left out: the status a run ended with is read from the row where it ended.
MOVING = """(idx = 0 OR deleted OR is_new
   OR coalesce(credits_spent, 0) <> coalesce(prev_credits, 0)
   OR coalesce(page_count, 0) <> coalesce(prev_pages, 0)
   OR coalesce(processing, false) <> coalesce(prev_processing, false)
   OR coalesce(failed, false) <> coalesce(prev_failed, false)
   OR failure_reason IS DISTINCT FROM prev_reason)"""
# What is the same on every row of a chapter (its project, names, the service's default
# model) comes only on rows where it appeared, its first among them: texts are most of
# what a query hands over, and a year has hundreds of thousands of rows.
_SELECT = f"""
SELECT idx, page_count, started, processing, failed, failure_reason, credits_spent,
       last_activity_at, created_at, deleted, is_new, prev_credits, prev_pages,
       prev_started, prev_processing, prev_failed, prev_reason,
       status = 'reviewed' AS reviewed, prev_status = 'reviewed' AS prev_reviewed,
       p.project_kind = 'novel' AS novel,
       coalesce(l.n_chapter_languages, p.n_languages) AS n_languages,
       log.chapter_id,
       CASE WHEN is_new THEN project_id END AS project_id,
       CASE WHEN is_new THEN p.project END AS project,
       CASE WHEN is_new THEN p.model END AS model,
       title, position,
       CASE WHEN is_new THEN (SELECT name FROM default_model) END AS default_model,
       x.exported_pages
FROM log LEFT JOIN by_project p USING (project_id)
         LEFT JOIN chapter_languages l USING (chapter_id)
         LEFT JOIN exported x USING (chapter_id, idx)
WHERE {MOVING}
ORDER BY log.chapter_id, idx
"""


@dataclass(frozen=True)
class Transitions:
    """The first stage: one row of `rows` per change of a chapter that can start or end
    a run (and the baseline's rows), sorted by chapter, then snapshot, each with the
    values it changed from (`prev_*`); texts as categoricals, flags as plain bools.
    `chapter_code` numbers the chapters in that order, `step` a chapter's rows."""

    rows: pd.DataFrame
    times: np.ndarray  # snapshot_at by position, as int64 microseconds since the epoch
    default_model: str | None

    @property
    def empty(self) -> bool:
        return bool(self.rows.empty)

    @classmethod
    def build(cls, obs: Observed) -> Transitions:
        times = to_micros(obs.manifest["snapshot_at"])  # the manifest already read
        if not len(times):
            return cls(pd.DataFrame(), times, None)
        return cls.of(obs.store.query_arrow(transitions_sql()), times)

    @classmethod
    def of(cls, table: pa.Table, times: np.ndarray) -> Transitions:
        """The stage from the query's answer (`transitions_sql`): the whole log's, or a
        table spliced from kept rows and new ones in the same order (`run_extend`)."""
        rows = _frame(table)
        # The query sorts by chapter, then snapshot: each chapter's rows are together, and
        # its first row holds what is the same on all of them.
        ids = rows["chapter_id"].cat.codes.to_numpy()
        first = np.ones(len(ids), bool)
        first[1:] = ids[1:] != ids[:-1]
        chapter = np.cumsum(first) - 1
        rows["chapter_code"] = chapter
        rows["step"] = rank_within(chapter)
        chapter_first_row = np.flatnonzero(first)[chapter]
        for column in PER_CHAPTER:  # given on each chapter's first row: on all its rows
            rows[column] = taken(rows[column], chapter_first_row)
        # One set of categories for both reasons: equal reasons have equal codes.
        reasons = rows["failure_reason"].cat.categories.union(rows["prev_reason"].cat.categories)
        for column in ("failure_reason", "prev_reason"):
            rows[column] = rows[column].cat.set_categories(reasons)
        default = rows["default_model"].dropna()
        return cls(rows, times, str(default.iloc[0]) if len(default) else None)

    def novel(self) -> np.ndarray:
        """Whether each row's project is a novel (priced by its text, never re-scanned)."""
        return is_true(self.rows["novel"])

    def last_of_chapter(self) -> np.ndarray:
        """Whether each row is its chapter's last."""
        return last_of_chapter(self.rows["step"].to_numpy())

    def languages(self) -> np.ndarray:
        """Each row's chapter's target languages (at least one)."""
        return np.asarray(np.maximum(to_float(self.rows["n_languages"]), 1.0), "float64")


def last_of_chapter(step: np.ndarray) -> np.ndarray:
    """Whether each transition row is its chapter's last, from the rows' `step` (a
    chapter's rows counted from 0, in chapter order)."""
    return np.append(step[1:] == 0, True)


PER_CHAPTER = ("project_id", "project", "model")


def _frame(table: pa.Table) -> pd.DataFrame:
    """The query's rows as plain numpy columns, texts as categoricals. A year's 700,000
    rows convert so in about 0.15 s; pandas' own conversion (a Python object per text
    and per nullable flag) took a second. Flags come back with null as false, as `is_true`
    reads them."""
    columns: dict[str, object] = {}
    for name in table.column_names:
        column = table.column(name)  # chunks: numpy joins them once, on the way out
        if pa.types.is_string(column.type) or pa.types.is_large_string(column.type):
            encoded = column.combine_chunks().dictionary_encode()
            codes = pc.fill_null(encoded.indices, -1).to_numpy(zero_copy_only=False)
            columns[name] = pd.Categorical.from_codes(
                codes, categories=pd.Index(text_objects(encoded.dictionary), dtype=object)
            )
        elif pa.types.is_dictionary(column.type):  # a splice's texts by code (`run_splice`)
            columns[name] = _first_seen(column.combine_chunks())
        elif pa.types.is_boolean(column.type):
            columns[name] = pc.fill_null(column, False).to_numpy(zero_copy_only=False)
        else:
            columns[name] = column.to_pandas()
    return unconsolidated(columns, table.num_rows)


def _first_seen(column: pa.DictionaryArray) -> pd.Categorical:
    """Texts by code as `dictionary_encode` makes them of the texts: the categories in
    the order first seen, those no row has left out."""
    codes = pc.fill_null(column.indices, -1).to_numpy(zero_copy_only=False)
    size, none = len(column.dictionary), len(codes)
    # Each code's first row, in one pass (sorting the codes to find them took 0.1 s a
    # column at 100,000 chapters x a quarter); the last place: no text.
    first = np.full(size + 1, none, "int64")
    np.minimum.at(first, codes, np.arange(none))
    seen = np.flatnonzero(first[:size] < none)
    in_order = seen[np.argsort(first[seen])]
    new_code = np.full(size + 1, -1, "int64")
    new_code[in_order] = np.arange(len(in_order))
    return pd.Categorical.from_codes(
        new_code[codes],
        categories=pd.Index(text_objects(column.dictionary.take(pa.array(in_order))), dtype=object),
    )

"""The review moves: each chapter's moves into `needs_review` (ready) and `reviewed`,
read from the chapters' change log, and kept in the store beside the run stages.

The review backlog, the review lags and the rows behind the weekly page's review
numbers read the whole history's moves: 5.7 million at 100,000 chapters x a year. The
query and putting them in order by chapter took 1.8 s of the weekly page's 10. So the
moves up to a store's last snapshot are a stage like the run pipeline's (`ReviewMoves`,
`obs.stage`): worked out once per state of the store and kept under `_runs/<state>/`
(`run_store`), read by every later question in any process until the store changes, and
compared with a build by `toolkit store check`. Moves up to an earlier moment (a replay,
a page of a past week) are read from the log, as before. A new state works its moves
out again (they are not extended from the last state's as the run stages are).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Self, cast

import numpy as np
import pandas as pd
import pyarrow as pa

from toolkit.analysis.observed import Observed, answer
from toolkit.frames.schema import TEXT_DTYPE, TIME_DTYPE

__all__ = ["ReviewMoves", "forget_moves", "moves_at"]

# A move is a change of status, a followed column: only rows flagged `_changed` can
# hold one, and each carries the status it changed from (`_previous`), so the query
# reads a few rows of the chapters' log instead of the whole of it. `since` is the time
# of the snapshot before the move's (the chapter was not there yet then).
_MOVES = """
SELECT c.chapter_id, c.project_id, c.last_activity_at AS at,
       CASE WHEN c.status::VARCHAR = 'needs_review' THEN 'ready' ELSE 'reviewed' END AS move,
       c.idx, s.snapshot_at AS since
FROM chapters_changes c
LEFT JOIN (SELECT snapshot_at, row_number() OVER (ORDER BY snapshot_at) AS idx
           FROM snapshots) s ON s.idx = c.idx
WHERE c._changed IS NOT false AND c.snapshot_at <= '{as_of}'::TIMESTAMPTZ
  AND NOT coalesce(c._deleted, false) AND NOT coalesce(c.processing, false)
  AND c.status::VARCHAR IN ('needs_review', 'reviewed')
  AND c.status::VARCHAR IS DISTINCT FROM
      CASE WHEN c._previous.existed THEN c._previous.status::VARCHAR END
"""


@dataclass(frozen=True)
class ReviewMoves:
    """The review moves as the query gives them, in no order, kept as numbers: `rows`
    (`at, idx, since`), each row's chapter, project and move as a code (`chapter`: a
    position in `chapters`, the ids sorted; `project`: in `projects`; -1 for none;
    `move`: 1 for `reviewed`, 0 for `ready`) and the rows' order by chapter (a null one
    last), then snapshot (`order`). `frame` is the query's answer, texts and all.

    Kept as codes, not texts: the whole history's ids as texts were 480 MiB to write
    and read back at 100,000 chapters x a year. Only `review_moves` takes the moves into
    order: sorting them with their texts (DuckDB's ORDER BY, or taking each column into
    order) held 300-570 MiB more at the weekly page's peak."""

    rows: pd.DataFrame
    chapter: np.ndarray
    project: np.ndarray
    move: np.ndarray
    order: np.ndarray
    chapters: np.ndarray  # the ids, sorted, as Python texts (`chapter_ids` types them)
    projects: np.ndarray

    @classmethod
    def build(cls, obs: Observed) -> Self:
        """The moves up to the store's last snapshot (the stage kept)."""
        return cls.up_to(obs, obs.times[-1] if obs.times else None)

    @classmethod
    def up_to(cls, obs: Observed, as_of: pd.Timestamp | None) -> Self:
        """The moves up to `as_of`, read from the log (None: a store with no snapshot)."""
        if as_of is None or obs.manifest.empty:
            frame = _no_moves()
        else:
            frame = answer(obs, _MOVES.format(as_of=as_of.isoformat()))
        codes, chapters = pd.factorize(frame["chapter_id"], sort=True)
        last = np.where(codes < 0, len(chapters), codes)  # null: last
        idx = frame["idx"].to_numpy("int64") if len(frame) else np.zeros(0, "int64")
        # One row per chapter and snapshot: the keys are unique but for null chapters.
        order = np.argsort(last * (int(idx.max(initial=0)) + 1) + idx, kind="stable")
        project, projects = pd.factorize(frame["project_id"])
        moves = cls(
            frame[["at", "idx", "since"]],
            np.asarray(codes, "int64"),
            np.asarray(project, "int64"),
            (frame["move"] == "reviewed").to_numpy(dtype="int8", na_value=0),
            np.asarray(order, "int64"),
            np.asarray(chapters, dtype=object),
            np.asarray(projects, dtype=object),
        )
        moves.__dict__["frame"] = frame  # as read: `frame` need not make it again
        return moves

    @cached_property
    def frame(self) -> pd.DataFrame:
        """The moves as the query answers them: `chapter_id, project_id, at, move, idx,
        since`, in the rows' order."""
        return pd.DataFrame(
            {
                "chapter_id": _texts(self.chapter, self.chapters),
                "project_id": _texts(self.project, self.projects),
                "at": self.rows["at"],
                "move": _texts(self.move, np.array(["ready", "reviewed"], object)),
                "idx": self.rows["idx"],
                "since": self.rows["since"],
            }
        )

    def chapter_ids(self) -> pd.Index:
        """`chapters` typed as the frame's ids (as factorizing them gives them)."""
        ids: pd.Index = pd.Index(self.chapters, dtype=TEXT_DTYPE)
        return ids


def _texts(codes: np.ndarray, words: np.ndarray) -> pd.Series:
    """Texts by code (-1: null), typed as the query's, made in Arrow (a Python text per
    row would be seconds on a year's moves)."""
    taken = pa.array(words, pa.string()).take(pa.array(codes, mask=codes < 0))
    texts: pd.Series = taken.to_pandas(types_mapper={pa.string(): TEXT_DTYPE}.get)
    return texts


def _no_moves() -> pd.DataFrame:
    """The moves of a store with no snapshot, typed as the query answers them (the lags
    of none subtract times from times: untyped columns made them refuse)."""
    text, time = pd.Series(dtype=TEXT_DTYPE), pd.Series(dtype=TIME_DTYPE)
    return pd.DataFrame({"chapter_id": text, "project_id": text, "at": time, "move": text,
                         "idx": pd.Series(dtype="int64"), "since": time})  # fmt: skip


def moves_at(obs: Observed, as_of: pd.Timestamp) -> ReviewMoves:
    """The moves up to `as_of`, read once per view and moment: a page's review backlog,
    the forecast's review lags and the rows behind the backlog's three numbers each ask
    them at the period's end. At or after the last snapshot, the stage the store keeps."""
    key = f"review_moves_read:{as_of.isoformat()}"
    if key not in obs.memo:
        if obs.times and as_of >= obs.times[-1]:
            obs.memo[key] = obs.stage(ReviewMoves)
        else:
            obs.memo[key] = ReviewMoves.up_to(obs, as_of)
    return cast(ReviewMoves, obs.memo[key])


def forget_moves(obs: Observed) -> None:
    """Let go of the moves `obs` read (the whole history's: 5.7 million at 100,000
    chapters x a year, a third of a GiB): a page that has its backlog, and the reviews
    and waits behind it (kept apart), reads no more of them. Asked again, they are read
    again."""
    for key in [k for k in obs.memo if k.startswith(("review_moves:", "review_moves_read:"))]:
        del obs.memo[key]
    obs.forget(ReviewMoves)

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

from toolkit.analysis._arrays import texts_by_code
from toolkit.analysis.observed import Observed, answer
from toolkit.analysis.run_extend import kept_start
from toolkit.analysis.run_store import Keeper, kept_as
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
  AND c.idx >= {first} AND c.status::VARCHAR IN ('needs_review', 'reviewed')
  AND c.status::VARCHAR IS DISTINCT FROM
      CASE WHEN c._previous.existed THEN c._previous.status::VARCHAR END
"""


@dataclass(frozen=True)
class ReviewMoves:
    """The review moves, in order by chapter, then snapshot, kept as numbers: `rows`
    (`at, idx, since`), and each move's chapter, project and move as a code (`chapter`:
    a position in `chapters`, the ids sorted; `project`: in `projects`, sorted; -1 for
    none; `move`: 1 for `reviewed`, 0 for `ready`). `frame` is the moves as the query
    answers them, texts and all, in that order.

    In order, with codes of sorted ids: the stage is the same however DuckDB hands the
    rows over (a parallel scan may change their order), so a kept one compares equal
    with a build (`store check`), and one extended with the next snapshots' moves
    (`joined`) equals one built whole. Kept as codes, not texts: the whole history's ids
    as texts were 480 MiB to write and read back at 100,000 chapters x a year; and only
    codes are ordered (the moves' texts sorted, in DuckDB or in pandas, held 300-570 MiB
    more at the weekly page's peak)."""

    rows: pd.DataFrame
    chapter: np.ndarray
    project: np.ndarray
    move: np.ndarray
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
            return cls.of(_no_moves())
        return cls.of(answer(obs, _MOVES.format(as_of=as_of.isoformat(), first=0)))

    @classmethod
    def extended_from(cls, obs: Observed, keeper: Keeper) -> ReviewMoves | None:
        """The moves up to the last snapshot: those kept for an earlier state whose
        snapshots start this one's, and the moves of the snapshots since, read from
        their files alone; None when no state is kept to start from, or a commit since
        may have changed what was read (`run_extend.kept_start`: then `build`). A move
        is a change row with the status it changed from: the rows since are all a
        later move depends on."""
        start = kept_start(obs, keeper, having=kept_as(cls))
        kept: ReviewMoves | None = (
            keeper.load(cls, obs.manifest, state=start.state) if start else None
        )
        if start is None or kept is None:
            return None
        first, last = start.snapshots, len(obs.manifest) - 1
        if first > last:
            return kept
        sql = _MOVES.format(as_of=obs.times[-1].isoformat(), first=first)
        return kept.joined(cls.of(answer(obs, sql, window=(first, last))))

    @classmethod
    def of(cls, frame: pd.DataFrame) -> Self:
        """The moves the query answered (`frame`, in any order), in order and coded."""
        codes, chapters = pd.factorize(frame["chapter_id"], sort=True)
        project, projects = pd.factorize(frame["project_id"], sort=True)
        idx = frame["idx"].to_numpy("int64") if len(frame) else np.zeros(0, "int64")
        order = np.argsort(_keys(np.asarray(codes), len(chapters), idx), kind="stable")
        return cls(
            frame[["at", "idx", "since"]].take(order).reset_index(drop=True),
            np.asarray(codes, "int64")[order],
            np.asarray(project, "int64")[order],
            (frame["move"] == "reviewed").to_numpy(dtype="int8", na_value=0)[order],
            np.asarray(chapters, dtype=object),
            np.asarray(projects, dtype=object),
        )

    def joined(self, later: ReviewMoves) -> ReviewMoves:
        """These moves and `later` ones, all of snapshots after these', in order: each
        later move is put after its chapter's moves here (inserted, not sorted: the
        moves here are millions, a snapshot's a few hundred)."""
        chapters = _union(self.chapters, later.chapters)
        projects = _union(self.projects, later.projects)
        mine = _recoded(self.chapter, self.chapters, chapters)
        theirs = _recoded(later.chapter, later.chapters, chapters)
        at = np.searchsorted(_null_last(mine, len(chapters)), _null_last(theirs, len(chapters)),
                             "right")  # fmt: skip
        # Where each row comes from, for the rows' columns (times as pandas has them).
        source = np.insert(np.arange(len(mine)), at, len(mine) + np.arange(len(at)))
        rows = pd.concat([self.rows, later.rows], ignore_index=True)
        return ReviewMoves(
            rows.take(source).reset_index(drop=True),
            np.insert(mine, at, theirs),
            np.insert(_recoded(self.project, self.projects, projects), at,
                      _recoded(later.project, later.projects, projects)),
            np.insert(self.move, at, later.move),
            chapters,
            projects,
        )  # fmt: skip

    @cached_property
    def frame(self) -> pd.DataFrame:
        """The moves as the query answers them: `chapter_id, project_id, at, move, idx,
        since`, in order."""
        return self.frame_at(None)

    def frame_at(self, rows: np.ndarray | None) -> pd.DataFrame:
        """`frame`'s rows at positions `rows`, indexed by them (None: all, as `frame`):
        texts made for those alone. A page asks a week's reviews of a year's moves, whose
        texts were 0.8 s at 100,000 chapters."""
        at: np.ndarray | slice = slice(None) if rows is None else rows
        numbers = self.rows if rows is None else self.rows.take(rows).set_axis(rows)
        return pd.DataFrame(
            {
                "chapter_id": texts_by_code(self.chapter[at], self.chapters),
                "project_id": texts_by_code(self.project[at], self.projects),
                "at": numbers["at"],
                "move": texts_by_code(self.move[at], ("ready", "reviewed")),
                "idx": numbers["idx"],
                "since": numbers["since"],
            },
            index=numbers.index,
        )

    def chapter_ids(self) -> pd.Index:
        """`chapters` typed as the frame's ids (as factorizing them gives them)."""
        ids: pd.Index = pd.Index(self.chapters, dtype=TEXT_DTYPE)
        return ids


def _keys(chapter: np.ndarray, chapters: int, idx: np.ndarray) -> np.ndarray:
    """The moves' order as one number: chapter (a null one last), then snapshot. One
    move per chapter and snapshot: unique but for null chapters, which the log's key
    never is."""
    keys: np.ndarray = _null_last(chapter, chapters) * (int(idx.max(initial=0)) + 1) + idx
    return keys


def _union(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Two sorted arrays of ids as one, sorted, each id once (as `factorize` sorts)."""
    return np.asarray(np.union1d(a, b) if len(b) else a, dtype=object)


def _null_last(chapter: np.ndarray, chapters: int) -> np.ndarray:
    """Chapter codes as the moves' order has them: a null one after every chapter."""
    return np.where(chapter < 0, chapters, chapter)


def _recoded(codes: np.ndarray, ids: np.ndarray, into: np.ndarray) -> np.ndarray:
    """Codes into `ids` as codes into `into` (which holds every id of `ids`); -1 stays."""
    if len(ids) == len(into):  # the same ids: the same codes
        return codes
    position = np.searchsorted(into, ids) if len(ids) else np.zeros(0, "int64")
    return np.where(codes < 0, -1, position[np.maximum(codes, 0)] if len(ids) else -1)


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
    for key in [k for k in obs.memo if k.startswith("review_moves_read:")]:
        del obs.memo[key]
    obs.forget(ReviewMoves)

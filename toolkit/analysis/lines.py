"""A chapter-language's lines: the rule (`LINES_SQL`, the rise of `covered` between
snapshots) and its rows at each snapshot of a window (`lines_by_snapshot`), which the
throughput sums per period and `explain` lists, so that a page asking both (the weekly
page: its week's lines by day, and the rows behind them) runs the rule over the log once.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, cast

import numpy as np
import pandas as pd
import pyarrow as pa

from toolkit.analysis.calendar import snapshots_within
from toolkit.analysis.read_ahead import read_ahead, remembered
from toolkit.analysis.runs import rescans_seen

if TYPE_CHECKING:
    from toolkit.analysis.observed import Observed

__all__ = [
    "LINES_KEYS",
    "LINES_SQL",
    "UNKNOWN_MODEL",
    "lines_ahead",
    "lines_by_snapshot",
    "lines_read",
    "window_of",
]

UNKNOWN_MODEL = "(unknown)"


# The lines of each change of a chapter-language, summed per period in DuckDB: only the
# columns it needs are read, and only the sums come back (a year is 3.6 million rows).
# A row counts the rise of `covered`; after a restart (coverage fell, `failed` was
# cleared, or a re-scan of the chapter was seen at that snapshot: `resets`) it counts
# in full. A re-scan that ended with the coverage a language had before leaves no row
# of that language at all: its row in force before the reset counts in full there
# (`standing`). Only rows flagged `_changed` are read (coverage or failure changed, new
# or gone): a row that changed elsewhere adds no lines, and at a reset it counts the
# coverage in force, which `standing` counts from the flagged row before it.
LINES_SQL = """
WITH log AS (
    SELECT idx, chapter_id, language_code, {key} AS key,
           coalesce(covered, 0) AS covered, coalesce(failed, false) AS failed,
           _deleted AS deleted,
           lag(idx) OVER w IS NULL OR coalesce(lag(_deleted) OVER w, false) AS is_new,
           coalesce(lag(covered) OVER w, 0) AS prev_covered,
           coalesce(lag(failed) OVER w, false) AS prev_failed,
           lead(idx) OVER w AS next_idx
    FROM languages_changes WHERE _changed IS NOT false
    WINDOW w AS (PARTITION BY chapter_id, language_code ORDER BY idx)
),
rises AS (
    SELECT l.idx, l.key,
           CASE WHEN l.is_new OR l.covered < l.prev_covered
                     OR (l.prev_failed AND NOT l.failed) OR r.idx IS NOT NULL
                THEN l.covered ELSE l.covered - l.prev_covered END AS lines
    FROM log l LEFT JOIN resets r ON r.chapter_id = l.chapter_id AND r.idx = l.idx
    WHERE l.idx > 0 AND NOT l.deleted
),
standing AS (
    -- The row in force at a re-scan's snapshot that has none there: the one before it
    -- whose next row (if any) comes after it.
    SELECT r.idx, l.key, l.covered AS lines
    FROM resets r JOIN log l
      ON l.chapter_id = r.chapter_id AND l.idx < r.idx
     AND coalesce(l.next_idx, 9223372036854775807) > r.idx
    WHERE NOT l.deleted
)
SELECT p.period, c.key, sum(c.lines)::BIGINT AS lines
FROM (SELECT * FROM rises UNION ALL SELECT * FROM standing) c JOIN periods p USING (idx)
GROUP BY ALL
"""
LINES_KEYS = {
    "language_code": "language_code",
    "project_id": "project_id",
    "model": f"CASE WHEN len(models) > 0 THEN models[-1] ELSE '{UNKNOWN_MODEL}' END",
}

# A chapter-language and its project as one key (a struct: a null project stays null
# and apart from the others, as `LINES_SQL` groups it), taken apart again by DuckDB.
_ROW_KEY = (
    "struct_pack(project_id := project_id, chapter_id := chapter_id, "
    "language_code := language_code)"
)
_BY_SNAPSHOT = """
SELECT period AS idx, key.project_id AS project_id, key.chapter_id AS chapter_id,
       key.language_code AS language_code, lines
FROM ({lines})
"""


def lines_by_snapshot(obs: Observed, window: tuple[int, int]) -> pa.Table:
    """Each chapter-language's lines at each snapshot of `window` (the first and last
    positions, both in): `idx, project_id, chapter_id, language_code, lines`, zeros kept
    (a sum of them is `LINES_SQL`'s, group for group). Once per view and window; callers
    read it, never change it. The window's re-scans alone are read (`LINES_SQL` reads no
    others), and its changes after each chapter-language's row in force before it."""
    if _key(window) not in obs.memo:
        obs.memo[_key(window)] = _read(obs, window, rescans_seen(obs, window))
    return cast(pa.Table, remembered(obs, _key(window)))


def lines_ahead(obs: Observed, window: tuple[int, int]) -> None:
    """Start reading `lines_by_snapshot(obs, window)` while the caller goes on
    (`read_ahead`); the window's re-scans are found first, here (a stage)."""
    if _key(window) not in obs.memo:
        read_ahead(obs, _key(window), partial(_read, obs, window, rescans_seen(obs, window)))


def _read(obs: Observed, window: tuple[int, int], resets: pd.DataFrame) -> pa.Table:
    first, last = window
    positions = np.arange(first, last + 1, dtype="int64")
    return obs.store.query_arrow(
        _BY_SNAPSHOT.format(lines=LINES_SQL.format(key=_ROW_KEY)),
        frames={"resets": resets, "periods": pd.DataFrame({"idx": positions, "period": positions})},
        window=window,
    )


def lines_read(obs: Observed, window: tuple[int, int]) -> pa.Table | None:
    """`lines_by_snapshot(obs, window)` when the view has read it (or is reading it
    ahead); else None."""
    return cast("pa.Table | None", remembered(obs, _key(window)))


def window_of(obs: Observed, since: pd.Timestamp, until: pd.Timestamp) -> tuple[int, int] | None:
    """The first and last positions of the snapshots taken in [since, until) (aware
    times), as `throughput` finds its window (`calendar.snapshots_within`); None when
    none was."""
    idx = snapshots_within(obs.manifest["snapshot_at"], since=since, until=until, tz=None)["idx"]
    return (int(idx.min()), int(idx.max())) if len(idx) else None


def _key(window: tuple[int, int]) -> str:
    return repr(("lines by snapshot", window))

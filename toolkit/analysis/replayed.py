"""The store as the forecast's replays see it: each replayed snapshot's chapters,
languages and projects, read together (the table at the snapshot before the first,
then brought forward by the change log), and why each chapter waits for a person.

`replays` is what `toolkit.analysis.accuracy` scores. A replay's languages and projects
are rolled only when it makes a forecast (`forecast.Seen` reads them when first asked).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import partial
from typing import TYPE_CHECKING, Final, cast

import numpy as np
import pandas as pd
import pyarrow as pa

from toolkit.analysis.forecast import Seen, needs_action
from toolkit.analysis.read_ahead import read_ahead, used_once
from toolkit.frames import schema

if TYPE_CHECKING:
    from toolkit.analysis.observed import Observed

__all__ = ["REPLAYED", "replays", "replays_ahead"]


def replays(
    obs: Observed, ticks: list[pd.Timestamp], *, stall_after: pd.Timedelta
) -> Iterator[Seen]:
    """The store as the forecast replayed at each tick sees it (at the latest snapshot at
    or before the tick), read together: each table once at the first of those snapshots
    and its changes up to the last, instead of every table at every tick."""
    at, snapshots, start = _moments(obs, ticks)
    if start is None:
        return
    chapters = _rolled(obs, "chapters", start, snapshots)
    # Rolled only once a replay asks them: one with nothing open makes no forecast.
    languages, projects = (_Rolling(_rolled(obs, name, start, snapshots))
                           for name in ("languages", "projects"))  # fmt: skip
    seen: Seen | None = None
    step = -1
    # `at` is in time order: each snapshot is made when its first tick comes, and only
    # the one replayed is held (a week's eight states of every table were 0.5 GiB at
    # 100,000 chapters). A tick in a gap replays the snapshot before it again.
    for when in at:
        if seen is None or seen.as_of != when:
            step += 1
            current = next(chapters)()
            reasons = needs_action(obs, as_of=when, stall_after=stall_after, current=current)
            seen = Seen(when, current, partial(languages.at, step), partial(projects.at, step),
                        reasons)  # fmt: skip
        yield seen


def replays_ahead(obs: Observed, ticks: list[pd.Timestamp]) -> None:
    """Start reading the chapters' changes `replays(obs, ticks)` rolls forward, on the
    reading thread (`read_ahead`): a page knows its replays' ticks before it replays."""
    _, snapshots, start = _moments(obs, ticks)
    if start is not None:  # the chapters' alone: the others only once a replay forecasts
        sql = _log_sql("chapters", start, snapshots[-1])
        read_ahead(obs, sql, partial(obs.store.query_arrow, sql))


def _moments(
    obs: Observed, ticks: list[pd.Timestamp]
) -> tuple[list[pd.Timestamp], list[pd.Timestamp], pd.Timestamp | None]:
    """The snapshot each tick replays (the latest at or before it), those snapshots in
    time order, and the snapshot the tables are read at before them (None: no tick)."""
    times = obs.manifest["snapshot_at"]
    at = [times.iloc[int(times.searchsorted(tick, side="right")) - 1] for tick in ticks]
    snapshots = sorted(set(at))
    if not snapshots:
        return at, snapshots, None
    # Read at the snapshot before the first replayed: the end of the period before a
    # page's, which the page's figures of that period read already (`obs.at`).
    earlier = times[times < snapshots[0]]
    return at, snapshots, earlier.iloc[-1] if len(earlier) else snapshots[0]


class _Rolling:
    """A table's replayed states (`_rolled`), rolled forward when one is first asked:
    none is read, nor the log, until then."""

    def __init__(self, states: Iterator[Callable[[], pd.DataFrame]]) -> None:
        self._states = states
        self._made: list[Callable[[], pd.DataFrame]] = []

    def at(self, step: int) -> pd.DataFrame:
        """The table at the `step`-th snapshot replayed."""
        while len(self._made) <= step:
            self._made.append(next(self._states))
        return self._made[step]()


# The columns of each table a replay reads (`is_open`, `needs_action`, `forecast_seen`,
# its waits dated or not, `_true_finishes`), with the keys and snapshot columns: the
# texts no replay reads (a chapter's summary and failure, a language's models) were
# half of what each replayed state took and converted.
REPLAYED: Final = {
    "chapters": {"snapshot_id", "snapshot_at", "chapter_id", "project_id", "position", "title",
                 "page_count", "started", "processing", "failed", "status",
                 "last_activity_at", "created_at"},
    "languages": {"snapshot_id", "snapshot_at", "chapter_id", "project_id", "language_code",
                  "status", "covered", "untranslated"},
    "projects": set(schema.PROJECTS.names) | {"snapshot_id", "snapshot_at"},
}  # fmt: skip


def _rolled(
    obs: Observed, table: str, start: pd.Timestamp, snapshots: list[pd.Timestamp]
) -> Iterator[Callable[[], pd.DataFrame]]:
    """`table` at each of the snapshots `snapshots` (in time order, none before the
    snapshot `start`), as `store.as_of` reads it: read at `start`, then brought forward
    by the change log's rows up to each (a key's newest row holds; a deleted key's row
    goes). Only the columns a replay reads (`REPLAYED`). Each state is made when asked
    (what is rolled forward at each snapshot is which rows hold, not the rows)."""
    keys = list(schema.KEYS[table])
    values = _values(table)
    columns = ["snapshot_id", "snapshot_at", *values]
    state = obs.at(table, start)[columns]  # the view's, never changed
    sql = _log_sql(table, start, snapshots[-1])
    # Read ahead, or now; used once, so not kept by the view.
    found = cast("pa.Table | None", used_once(obs, sql))
    if found is None:
        found = obs.store.query_arrow(sql)
    found = found.combine_chunks()  # DuckDB's many batches would make each take of a state slow
    # As `as_of` converts its rows (a chapter's `state` is derived, not stored).
    whole = schema.SNAPSHOT_TABLES[table]
    log = schema.to_pandas(found.select(values), pa.schema([whole.field(c) for c in values]))
    log["snapshot_at"] = found.column("snapshot_at").to_pandas().astype(state["snapshot_at"].dtype)
    log["_deleted"] = found.column("_deleted").to_numpy(zero_copy_only=False)
    ids = dict(zip(obs.manifest["snapshot_at"], obs.manifest["snapshot_id"], strict=True))
    # The state and the log as one frame, each key as a number in the keys' order:
    # each snapshot's rows are chosen by position and taken once (concatenated,
    # de-duplicated and sorted by their texts at each step, 2 s of a week's replays at
    # 100,000 chapters).
    stamps = state[["snapshot_id", "snapshot_at"]].dtypes
    rows = pd.concat([state.assign(_deleted=False), log], ignore_index=True)[[*values, "_deleted"]]
    key = _key_order(rows[keys])
    deleted = rows["_deleted"].to_numpy(bool)
    ends_at = (len(state) + log["snapshot_at"].searchsorted(snapshots, side="right")).tolist()
    del found, log  # in `rows` now: not held beside it while the replays go on
    rows = rows[values]  # the columns each state takes, chosen once
    held, done = np.arange(len(state)), len(state)  # the rows in force, in key order
    for when, upto in zip(snapshots, ends_at, strict=True):
        # A key's last row up to `when` replaces its row: the log is in the order seen,
        # so its first in the step read backwards (a de-duplication in DuckDB by key
        # and replayed snapshot made the read 2.5x as long).
        backwards = np.arange(upto - 1, done - 1, -1)
        step = backwards[np.unique(key[backwards], return_index=True)[1]]
        held = np.concatenate([held[~np.isin(key[held], key[step])], step[~deleted[step]]])
        held, done = held[np.argsort(key[held], kind="stable")], upto
        yield partial(_state, rows, held, (ids[when], when), stamps, columns)


def _state(
    rows: pd.DataFrame,
    held: np.ndarray,
    snapshot: tuple[str, pd.Timestamp],
    stamps: pd.Series,
    columns: list[str],
) -> pd.DataFrame:
    """A replayed table: the `held` rows, stamped with the `snapshot` (id, time)."""
    state = rows.take(held).reset_index(drop=True)
    # Taken from one element: a text made per row is 0.05 s at 300,000 languages.
    one = pd.array([snapshot[0]], dtype=stamps["snapshot_id"])
    state["snapshot_id"] = one.take(np.zeros(len(state), "int64"))
    state["snapshot_at"] = pd.Series(snapshot[1], index=state.index).astype(stamps["snapshot_at"])
    return state[columns]


def _key_order(keys: pd.DataFrame) -> np.ndarray:
    """Each row's key as a number, in the order `sort_values` puts the keys (the
    first column first); equal keys, equal numbers."""
    code = np.zeros(len(keys), "int64")
    for column in keys.columns:
        codes, uniques = pd.factorize(keys[column], sort=True)
        code = code * len(uniques) + codes
    return code


def _values(table: str) -> list[str]:
    """The columns of `table` a replay reads (`REPLAYED`) but its snapshot's, in the
    table's order (as `store.as_of` gives them)."""
    return [name for name in schema.SNAPSHOT_TABLES[table].names if name in REPLAYED[table]]


def _log_sql(table: str, start: pd.Timestamp, end: pd.Timestamp) -> str:
    """The query of `table`'s changes after the snapshot `start` up to `end` (`_LOG`)."""
    return _LOG.format(columns=", ".join(f'"{c}"' for c in _values(table)), table=table,
                       low=start.isoformat(), high=end.isoformat())  # fmt: skip


# A table's changes after one snapshot up to another, in the order they were seen.
_LOG = """
SELECT snapshot_at, coalesce(_deleted, false) AS _deleted, {columns}
FROM {table}_changes
WHERE snapshot_at > '{low}'::TIMESTAMPTZ AND snapshot_at <= '{high}'::TIMESTAMPTZ
ORDER BY idx
"""

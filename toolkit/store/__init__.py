"""SnapshotStore: a workspace's history as a change log in Delta Lake tables.

The parts: `snapshot_store` (the public facade), `engine` (the manifest and change logs
every operation reads), `writing` (a snapshot's rows, its commit and finishing a stopped
write), `info` (what a write wrote), `query` (the reads and SQL), `verify` (what a read
checks first and says when it cannot read), `log` (the change log and the reads that rebuild whole
snapshots, in DuckDB), `columns` (the bookkeeping columns stored beside a table's own),
`connection` (the process's one DuckDB database), `diff` (the change between two
states), `manifest` (the manifest in snapshot order), `tables` (the Delta tables:
appends, reads, errors), `ledger` (each snapshot's commits), `maintenance` (merges,
checkpoints, log cleanup, vacuum), `events` (webhook events), `ids` (snapshot ids),
`check` (`toolkit store check`), `latest` (the rows a write keeps for the next one's
base) and `latest_check` (store check's look at them), `migrate` (a first-layout store
into Delta tables) and `upgrade` (an earlier toolkit's Delta store to the current
layout; both run by `toolkit store migrate` or the next take). The on-disk format and
how other engines read it are in docs/store.md.
"""

from __future__ import annotations

from toolkit.store.check import check as check_store
from toolkit.store.check import check_report
from toolkit.store.latest_check import check_latest_kept
from toolkit.store.migrate import migrate as migrate_store
from toolkit.store.snapshot_store import SnapshotInfo, SnapshotStore
from toolkit.timestamps import utc

__all__ = [
    "SnapshotInfo",
    "SnapshotStore",
    "check_latest_kept",
    "check_report",
    "check_store",
    "migrate_store",
    "utc",
]

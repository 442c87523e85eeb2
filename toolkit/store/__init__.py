"""SnapshotStore: a workspace's history as a change log, read with DuckDB.

The parts: `snapshot_store` (the public facade), `log` (the change-log tables and the
reads that rebuild whole snapshots), `files` (atomic file writes and listing),
`compaction` (merging files) and `events` (webhook events). The on-disk format is in
docs/store.md.
"""

from __future__ import annotations

from toolkit.store.log import utc
from toolkit.store.snapshot_store import SnapshotInfo, SnapshotStore

__all__ = ["SnapshotInfo", "SnapshotStore", "utc"]

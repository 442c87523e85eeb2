"""The columns a snapshot table's files hold beside the table's own.

Every stored row carries `_deleted` (the row went away at this snapshot); the tables in
`TRACKED` also carry `_changed` and `_previous`, so that a query following runs and
lines reads only the rows where something it follows moved. `MANIFEST_STORED` is the
manifest's stored schema. The log (`toolkit.store.log`) explains how the rows are read.
"""

from __future__ import annotations

import pyarrow as pa

from toolkit.frames import schema
from toolkit.store.ledger import COMMITS_TYPE

__all__ = [
    "CHANGED",
    "DELETED",
    "EXISTED",
    "MANIFEST_STORED",
    "PREVIOUS",
    "TRACKED",
    "previous_type",
    "stored_schema",
]

DELETED = "_deleted"
CHANGED = "_changed"
PREVIOUS = "_previous"
EXISTED = "existed"
# The columns `_changed` follows, by table: what runs and lines are read from. Most
# changes of a chapter or a language are progress alone (`last_activity_at`, a count
# of lines being translated); `_changed` is false on those (and on a full snapshot's
# unchanged rows), so a query that follows these columns reads a few rows in eight.
TRACKED: dict[str, tuple[str, ...]] = {
    "chapters": (
        "credits_spent", "page_count", "started", "processing", "failed", "failure_reason",
        "status",
    ),
    "languages": ("covered", "failed"),
}  # fmt: skip


def previous_type(table: str) -> pa.StructType:
    """`_previous`: whether the row's key existed at the snapshot before (`existed`),
    and its followed columns there."""
    columns = schema.SNAPSHOT_TABLES[table]
    return pa.struct(
        [
            pa.field(EXISTED, pa.bool_()),
            *(pa.field(c, columns.field(c).type) for c in TRACKED[table]),
        ]
    )


# `keeps_previous`: the snapshot's rows carry `_changed` and `_previous`; true on every
# row of a current store (an earlier toolkit's store is upgraded before it is read).
MANIFEST_STORED = pa.schema(
    [
        *schema.MANIFEST,
        pa.field("base_id", schema.TEXT),
        pa.field("full", schema.FLAG),
        pa.field("keeps_previous", schema.FLAG),
        # Per table, the version of the snapshot's commit and what it added (`ledger`).
        pa.field("commits", COMMITS_TYPE),
    ]
)


def stored_schema(table: str) -> pa.Schema:
    """A snapshot table's file schema: snapshot columns, the table's, `_deleted`, and for
    the tables in `TRACKED` `_changed` (the row is new or gone, or differs from the
    snapshot before in a tracked column) and `_previous` (on a `_changed` row, whether
    the key existed at the snapshot before and its tracked columns there; null on other
    rows). Stores written before these existed are upgraded before they are read
    (`upgrade`)."""
    base = schema.with_snapshot(schema.SNAPSHOT_TABLES[table])
    base = base.append(pa.field(DELETED, schema.FLAG))
    if table not in TRACKED:
        return base
    return base.append(pa.field(CHANGED, schema.FLAG)).append(
        pa.field(PREVIOUS, previous_type(table))
    )

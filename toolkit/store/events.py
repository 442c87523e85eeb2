"""The store's "events" table: webhook events, appended in batches, read without repeats.

A batch is one append (one Delta commit) to the table `events`, marked as the toolkit's;
a batch is complete once committed. No snapshot writes it, so each snapshot's manifest
row records the events table's newest commit as the take found it (`ledger`).
The service may deliver an event more than once, so reading keeps the first copy of
each `webhook_id` (the earliest received).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from toolkit.frames import schema
from toolkit.frames.pull import project_id_list
from toolkit.native_stderr import panics_kept_off_stderr
from toolkit.store.connection import arrow, connect
from toolkit.store.ledger import OPERATION_KEY
from toolkit.store.tables import Tables
from toolkit.store.views import expose
from toolkit.timestamps import parse_time, utc

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["CHECKPOINT_EVERY", "history", "record"]


def _event_time(value: Any, what: str) -> datetime:
    parsed = value if isinstance(value, datetime) else parse_time(value)
    if parsed is None:
        raise ValueError(f"an event has no {what}; give an ISO 8601 string or a datetime")
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _event_row(event: Mapping[str, Any], received: datetime) -> dict[str, Any]:
    """One event dict as a row of `schema.EVENTS`."""
    if not event.get("webhook_id"):
        raise ValueError(
            "an event lacks its webhook_id (the webhook-id header): it is what tells "
            "a repeated delivery from a new event"
        )
    data = event.get("data")
    if isinstance(data, str):
        text, parsed = data, json.loads(data)
    else:
        parsed = dict(data or {})
        text = json.dumps(parsed, ensure_ascii=False, separators=(",", ":"))
    parsed = parsed if isinstance(parsed, dict) else {}
    received_at = event.get("received_at")
    return {
        "webhook_id": str(event["webhook_id"]),
        "type": event.get("type"),
        "timestamp": _event_time(event.get("timestamp"), "timestamp"),
        "received_at": _event_time(received_at, "received_at") if received_at else received,
        "chapter_id": parsed.get("chapterId"),
        "project_id": parsed.get("projectId"),
        "data": text,
    }


# Commits of the events table between checkpoints a long-lived writer makes by itself.
# 20, not 100: the receiver + store under 8 senders for 10,000 deliveries peaked at 1.17x
# and 1.18x its RSS after the first 500 at 20, 1.26x at 100 (tests/bench/README.md).
CHECKPOINT_EVERY = 20


def record(tables: Tables, events: Iterable[Mapping[str, Any]]) -> int:
    """Append events as one commit; returns how many were written.

    A webhook receiver appends all day without a take's daily maintenance, and an open
    Delta table keeps state for every commit applied to it since it was opened (some
    80 KiB each, measured: its RSS grew without end). So every `CHECKPOINT_EVERY`
    commits the table is checkpointed and opened afresh from that checkpoint.
    """
    now = datetime.now(UTC)
    rows = [_event_row(event, now) for event in events]
    if rows:
        # Marked as the toolkit's: a commit to this table without the mark is another
        # engine's, found and undone by `check` like any table's (see `ledger`).
        tables.append(
            "events", schema.from_rows(rows, schema.EVENTS), metadata={OPERATION_KEY: "events"}
        )
        table = tables.get("events")
        if table is not None and table.version() and table.version() % CHECKPOINT_EVERY == 0:
            with panics_kept_off_stderr():  # delta-rs' threads panic on a full disk
                table.create_checkpoint()
            tables.forget("events")
    return len(rows)


def history(
    tables: Tables,
    *,
    since: Any = None,
    until: Any = None,
    project_ids: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Every event once (the first copy received), oldest first."""
    con = connect()
    try:
        expose(tables, con, "stored", "events", schema.EVENTS)
        conditions, params = ["true"], []
        if since is not None:
            conditions.append("timestamp >= ?")
            params.append(utc(since))
        if until is not None:
            conditions.append("timestamp <= ?")
            params.append(utc(until))
        if project_ids is not None:
            ids = pa.array(project_id_list(project_ids), pa.string())
            con.register("_ids", pa.table({"id": ids}))
            conditions.append("project_id IN (SELECT id FROM _ids)")
        table = arrow(
            con,
            f"""
            SELECT * FROM (
                SELECT * FROM stored
                QUALIFY row_number() OVER (
                    PARTITION BY webhook_id ORDER BY received_at, timestamp) = 1
            ) WHERE {" AND ".join(conditions)}
            ORDER BY timestamp, received_at, webhook_id
            """,
            params,
        )
    finally:
        con.close()
    return schema.to_pandas(table, schema.EVENTS)

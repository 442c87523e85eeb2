"""The receiver's own SQLite: every event it kept, by `webhook-id`, and whether the store
has taken it yet. Why it is both a memory of ids and an outbox: docs/webhooks.md.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from toolkit.timestamps import parse_time

__all__ = ["Inbox"]


class Inbox:
    """The receiver's SQLite: every event kept, by `webhook-id`, and whether the store has it."""

    def __init__(self, path: str | os.PathLike[str] | None) -> None:
        target = ":memory:" if path is None else os.fspath(path)
        if path is not None:
            Path(target).parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(target, check_same_thread=False, isolation_level=None)
        if path is not None:
            self._conn.execute("PRAGMA journal_mode=WAL")
        # FULL: a committed event survives a power cut, which is what the 2xx promises.
        self._conn.execute("PRAGMA synchronous=FULL")
        self._conn.executescript(
            """
            CREATE TABLE IF NOT EXISTS received (
                webhook_id TEXT PRIMARY KEY,
                type TEXT NOT NULL,
                timestamp TEXT NOT NULL,
                data TEXT NOT NULL,
                received_at TEXT NOT NULL,
                forwarded_at TEXT
            );
            CREATE INDEX IF NOT EXISTS received_pending ON received (forwarded_at);
            """
        )

    def add(self, event: Mapping[str, Any]) -> bool:
        """Keep an event; False when its id was kept before."""
        row = (
            event["webhook_id"],
            event["type"],
            event["timestamp"].isoformat(),
            json.dumps(event["data"]),
            event["received_at"].isoformat(),
        )
        with self._lock:
            cursor = self._conn.execute(
                "INSERT OR IGNORE INTO received"
                " (webhook_id, type, timestamp, data, received_at) VALUES (?, ?, ?, ?, ?)",
                row,
            )
            return cursor.rowcount == 1

    def events(self) -> list[dict[str, Any]]:
        return self._select("ORDER BY rowid")

    def pending(self) -> list[dict[str, Any]]:
        return self._select("WHERE forwarded_at IS NULL ORDER BY rowid")

    def mark_forwarded(self, webhook_ids: Sequence[str]) -> None:
        now = datetime.now(UTC).isoformat()
        with self._lock:
            self._conn.executemany(
                "UPDATE received SET forwarded_at = ? WHERE webhook_id = ?",
                [(now, webhook_id) for webhook_id in webhook_ids],
            )

    def prune(self, before: datetime) -> None:
        with self._lock:
            self._conn.execute(
                "DELETE FROM received WHERE forwarded_at IS NOT NULL AND forwarded_at < ?",
                (before.isoformat(),),
            )

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def _select(self, clause: str) -> list[dict[str, Any]]:
        with self._lock:
            rows = self._conn.execute(
                f"SELECT webhook_id, type, timestamp, data, received_at FROM received {clause}"
            ).fetchall()
        return [
            {
                "webhook_id": webhook_id,
                "type": kind,
                "timestamp": parse_time(stamp),
                "data": json.loads(data),
                "received_at": parse_time(received),
            }
            for webhook_id, kind, stamp, data, received in rows
        ]

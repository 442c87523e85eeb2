"""The emulator's SQLite database: one connection shared by every thread, behind a lock.

Rows come back as dicts. Writes that must hold together go in `transaction()`; other
statements commit on their own (autocommit mode).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

__all__ = ["Database", "Params"]

Params = Sequence[Any] | Mapping[str, Any]


def _dict_row(cursor: sqlite3.Cursor, row: tuple[Any, ...]) -> dict[str, Any]:
    return {column[0]: value for column, value in zip(cursor.description, row, strict=True)}


class Database:
    """The emulator's SQLite database, one connection shared under a lock."""

    def __init__(self, path: str = ":memory:") -> None:
        self.path = path
        self._conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._conn.row_factory = _dict_row
        self._lock = threading.RLock()
        self._depth = 0
        if path != ":memory:":
            self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA foreign_keys=ON")

    def execute(self, sql: str, params: Params = ()) -> int:
        """Run one statement; returns the number of rows it changed."""
        with self._lock:
            return self._conn.execute(sql, params).rowcount

    def executemany(self, sql: str, rows: Sequence[Params]) -> None:
        with self._lock:
            self._conn.executemany(sql, rows)

    def executescript(self, script: str) -> None:
        with self._lock:
            self._conn.executescript(script)

    def query(self, sql: str, params: Params = ()) -> list[dict[str, Any]]:
        with self._lock:
            return self._conn.execute(sql, params).fetchall()

    def one(self, sql: str, params: Params = ()) -> dict[str, Any] | None:
        with self._lock:
            row: dict[str, Any] | None = self._conn.execute(sql, params).fetchone()
            return row

    @contextmanager
    def transaction(self) -> Iterator[Database]:
        """Hold the lock and commit everything inside at once (nesting joins the outer one)."""
        with self._lock:
            outermost = self._depth == 0
            if outermost:
                self._conn.execute("BEGIN IMMEDIATE")
            self._depth += 1
            try:
                yield self
            except BaseException:
                self._depth -= 1
                if outermost:
                    self._conn.execute("ROLLBACK")
                raise
            self._depth -= 1
            if outermost:
                self._conn.execute("COMMIT")

    def close(self) -> None:
        with self._lock:
            self._conn.close()

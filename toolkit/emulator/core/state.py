"""The emulator's tables and the lookups the routes and the run engine share.

Times are kept twice where they are shown: as milliseconds since 1970 (`*_ms`, for
ordering and arithmetic) and rendered to ISO 8601 only when an answer is built. Every
query that builds a list fetches whole sets at once (a few queries per list, never one
per row), because the performance work seeds 10,000 chapters.
"""

from __future__ import annotations

import json
import uuid
from collections import defaultdict
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from toolkit.emulator.core.db import Database

__all__ = ["Row", "State", "from_ms", "new_uuid", "to_ms"]

Row = dict[str, Any]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS workspaces (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    credits INTEGER NOT NULL,
    api_key TEXT NOT NULL UNIQUE,
    created_ms INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS projects (
    id TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces(id),
    name TEXT NOT NULL,
    kind TEXT NOT NULL,
    source_language TEXT NOT NULL,
    reading_direction TEXT NOT NULL,
    process_steps TEXT NOT NULL,
    translation_model TEXT,
    translation_group_id TEXT NOT NULL,
    created_ms INTEGER NOT NULL,
    deleted_ms INTEGER
);
CREATE INDEX IF NOT EXISTS projects_by_workspace ON projects(workspace_id, deleted_ms);
CREATE TABLE IF NOT EXISTS project_languages (
    project_id TEXT NOT NULL REFERENCES projects(id),
    language_code TEXT NOT NULL,
    ord INTEGER NOT NULL,
    added_ms INTEGER NOT NULL,
    PRIMARY KEY (project_id, language_code)
);
CREATE TABLE IF NOT EXISTS chapters (
    id TEXT PRIMARY KEY,
    project_id TEXT NOT NULL REFERENCES projects(id),
    workspace_id TEXT NOT NULL,
    position INTEGER NOT NULL,
    title TEXT,
    summary TEXT,
    created_ms INTEGER NOT NULL,
    deleted_ms INTEGER,
    started INTEGER NOT NULL DEFAULT 0,
    processing INTEGER NOT NULL DEFAULT 0,
    detecting INTEGER NOT NULL DEFAULT 0,
    failed INTEGER NOT NULL DEFAULT 0,
    failure_reason TEXT,
    credits_spent INTEGER NOT NULL DEFAULT 0,
    activity_ms INTEGER NOT NULL,
    char_count INTEGER
);
CREATE INDEX IF NOT EXISTS chapters_by_project ON chapters(project_id, deleted_ms, position);
CREATE TABLE IF NOT EXISTS chapter_texts (
    chapter_id TEXT PRIMARY KEY REFERENCES chapters(id),
    text TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS pages (
    id TEXT PRIMARY KEY,
    chapter_id TEXT NOT NULL REFERENCES chapters(id),
    position INTEGER NOT NULL,
    created_ms INTEGER NOT NULL,
    storage_key TEXT NOT NULL,
    file_name TEXT NOT NULL,
    lines INTEGER NOT NULL,
    byte_size INTEGER NOT NULL,
    held INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS pages_by_chapter ON pages(chapter_id, position);
CREATE TABLE IF NOT EXISTS chapter_languages (
    chapter_id TEXT NOT NULL REFERENCES chapters(id),
    language_code TEXT NOT NULL,
    ord INTEGER NOT NULL,
    status TEXT NOT NULL DEFAULT 'translating',
    covered INTEGER NOT NULL DEFAULT 0,
    untranslated INTEGER NOT NULL DEFAULT 0,
    failed INTEGER NOT NULL DEFAULT 0,
    exporting INTEGER NOT NULL DEFAULT 0,
    models TEXT NOT NULL DEFAULT '[]',
    PRIMARY KEY (chapter_id, language_code)
);
CREATE TABLE IF NOT EXISTS page_translations (
    page_id TEXT NOT NULL,
    language_code TEXT NOT NULL,
    PRIMARY KEY (page_id, language_code)
);
CREATE TABLE IF NOT EXISTS exports (
    chapter_id TEXT NOT NULL REFERENCES chapters(id),
    language_code TEXT NOT NULL,
    format TEXT NOT NULL,
    filename TEXT NOT NULL,
    byte_size INTEGER NOT NULL,
    page_count INTEGER NOT NULL,
    prepared_ms INTEGER NOT NULL,
    PRIMARY KEY (chapter_id, language_code, format)
);
CREATE TABLE IF NOT EXISTS runs (
    id TEXT PRIMARY KEY,
    seq INTEGER NOT NULL,
    chapter_id TEXT NOT NULL REFERENCES chapters(id),
    workspace_id TEXT NOT NULL,
    project_id TEXT NOT NULL,
    reason TEXT NOT NULL,
    kind TEXT NOT NULL,
    steps TEXT NOT NULL,
    model TEXT NOT NULL,
    languages TEXT NOT NULL,
    units TEXT NOT NULL,
    phase TEXT NOT NULL,
    lang_idx INTEGER NOT NULL DEFAULT 0,
    item_idx INTEGER NOT NULL DEFAULT 0,
    translated INTEGER NOT NULL DEFAULT 0,
    fate TEXT NOT NULL,
    fate_step INTEGER NOT NULL,
    state TEXT NOT NULL,
    next_due_ms INTEGER,
    started_ms INTEGER NOT NULL,
    ended_ms INTEGER
);
CREATE INDEX IF NOT EXISTS runs_due ON runs(state, next_due_ms);
CREATE INDEX IF NOT EXISTS runs_by_seq ON runs(seq);
CREATE INDEX IF NOT EXISTS runs_by_chapter ON runs(chapter_id, state);
CREATE TABLE IF NOT EXISTS charges (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    workspace_id TEXT NOT NULL,
    chapter_id TEXT NOT NULL,
    project_id TEXT NOT NULL,
    at_ms INTEGER NOT NULL,
    credits INTEGER NOT NULL,
    pages INTEGER NOT NULL,
    languages TEXT NOT NULL,
    reason TEXT NOT NULL,
    rework INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS charges_by_workspace ON charges(workspace_id, seq);
CREATE TABLE IF NOT EXISTS line_log (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    workspace_id TEXT NOT NULL,
    chapter_id TEXT NOT NULL,
    project_id TEXT NOT NULL,
    language_code TEXT NOT NULL,
    lines INTEGER NOT NULL,
    at_ms INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS line_log_by_workspace ON line_log(workspace_id, seq);
CREATE TABLE IF NOT EXISTS settings (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
"""


def new_uuid() -> str:
    """A new resource id: a random UUID."""
    return str(uuid.uuid4())


def to_ms(when: datetime) -> int:
    """A time as the milliseconds since the epoch the database stores."""
    return int(when.timestamp() * 1000)


def from_ms(ms: int) -> datetime:
    """The aware UTC time of the database's milliseconds."""
    return datetime.fromtimestamp(ms / 1000, tz=UTC)


def _placeholders(items: Iterable[Any]) -> str:
    return ",".join("?" for _ in items)


class State:
    """Lookups over the emulator's tables; writes live with the code that makes them."""

    def __init__(self, db: Database) -> None:
        self.db = db
        db.executescript(_SCHEMA)

    # -- settings ------------------------------------------------------------------

    def setting(self, key: str) -> Any:
        row = self.db.one("SELECT value FROM settings WHERE key = ?", (key,))
        return None if row is None else json.loads(row["value"])

    def put_setting(self, key: str, value: Any) -> None:
        self.db.execute(
            "INSERT INTO settings(key, value) VALUES (?, ?) "
            "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (key, json.dumps(value)),
        )

    # -- workspaces and projects ----------------------------------------------------

    def workspace(self, workspace_id: str) -> Row | None:
        return self.db.one("SELECT * FROM workspaces WHERE id = ?", (workspace_id,))

    def workspace_by_key(self, api_key: str) -> Row | None:
        return self.db.one("SELECT * FROM workspaces WHERE api_key = ?", (api_key,))

    def project(self, project_id: str) -> Row | None:
        """A project that is not in the trash, whatever its workspace."""
        return self.db.one(
            "SELECT * FROM projects WHERE id = ? AND deleted_ms IS NULL", (project_id,)
        )

    def project_in(self, workspace_id: str, project_id: str) -> Row | None:
        project = self.project(project_id)
        return project if project and project["workspace_id"] == workspace_id else None

    def project_rows(self, workspace_id: str) -> list[Row]:
        """Projects not in the trash with chapter counts; the newest chapter's first."""
        return self.db.query(
            """
            SELECT p.*, COUNT(c.id) AS chapter_count, MAX(c.created_ms) AS last_chapter_ms
            FROM projects p
            LEFT JOIN chapters c ON c.project_id = p.id AND c.deleted_ms IS NULL
            WHERE p.workspace_id = ? AND p.deleted_ms IS NULL
            GROUP BY p.id
            ORDER BY last_chapter_ms IS NULL, last_chapter_ms DESC, p.created_ms DESC, p.rowid DESC
            """,
            (workspace_id,),
        )

    def project_summary(self, project_id: str) -> Row:
        """One project with the list-only counts."""
        row = self.db.one(
            """
            SELECT p.*, COUNT(c.id) AS chapter_count, MAX(c.created_ms) AS last_chapter_ms
            FROM projects p
            LEFT JOIN chapters c ON c.project_id = p.id AND c.deleted_ms IS NULL
            WHERE p.id = ? GROUP BY p.id
            """,
            (project_id,),
        )
        assert row is not None
        return row

    def target_languages(self, project_ids: list[str]) -> dict[str, list[Row]]:
        by_project: dict[str, list[Row]] = defaultdict(list)
        if not project_ids:
            return by_project
        rows = self.db.query(
            f"SELECT * FROM project_languages WHERE project_id IN ({_placeholders(project_ids)}) "
            "ORDER BY project_id, ord",
            project_ids,
        )
        for row in rows:
            by_project[row["project_id"]].append(row)
        return by_project

    def language_codes(self, project_id: str) -> list[str]:
        return [r["language_code"] for r in self.target_languages([project_id])[project_id]]

    # -- chapters -------------------------------------------------------------------

    def chapter_in(self, workspace_id: str, chapter_id: str) -> Row | None:
        """A chapter of the workspace; None when it or its project is in the trash."""
        return self.db.one(
            """
            SELECT c.*, p.kind AS kind, p.name AS project_name
            FROM chapters c JOIN projects p ON p.id = c.project_id
            WHERE c.id = ? AND c.deleted_ms IS NULL AND p.deleted_ms IS NULL
              AND p.workspace_id = ?
            """,
            (chapter_id, workspace_id),
        )

    def chapter_any(self, chapter_id: str) -> Row | None:
        """A chapter not in the trash (nor its project), whatever its workspace."""
        return self.db.one(
            """
            SELECT c.*, p.kind AS kind, p.name AS project_name
            FROM chapters c JOIN projects p ON p.id = c.project_id
            WHERE c.id = ? AND c.deleted_ms IS NULL AND p.deleted_ms IS NULL
            """,
            (chapter_id,),
        )

    def position_taken(self, project_id: str, position: int) -> bool:
        row = self.db.one(
            "SELECT 1 FROM chapters WHERE project_id = ? AND position = ? AND deleted_ms IS NULL",
            (project_id, position),
        )
        return row is not None

    def next_position(self, project_id: str) -> int:
        row = self.db.one(
            "SELECT MAX(position) AS top FROM chapters WHERE project_id = ? AND deleted_ms IS NULL",
            (project_id,),
        )
        return (row["top"] or 0) + 1 if row else 1

    def chapter_rows(self, project_id: str) -> list[Row]:
        return self.db.query(
            """
            SELECT c.*, (SELECT COUNT(*) FROM pages g WHERE g.chapter_id = c.id) AS page_count
            FROM chapters c
            WHERE c.project_id = ? AND c.deleted_ms IS NULL
            ORDER BY c.position
            """,
            (project_id,),
        )

    def languages_of(self, chapter_ids: list[str]) -> dict[str, list[Row]]:
        return self._grouped("chapter_languages", chapter_ids, "ord")

    def exports_of(self, chapter_ids: list[str]) -> dict[str, list[Row]]:
        return self._grouped("exports", chapter_ids, "language_code, format")

    def _grouped(self, table: str, chapter_ids: list[str], order: str) -> dict[str, list[Row]]:
        grouped: dict[str, list[Row]] = defaultdict(list)
        # SQLite caps bound parameters; chunk so a 10,000-chapter workspace still works.
        for start in range(0, len(chapter_ids), 500):
            chunk = chapter_ids[start : start + 500]
            rows = self.db.query(
                f"SELECT * FROM {table} WHERE chapter_id IN ({_placeholders(chunk)}) "
                f"ORDER BY chapter_id, {order}",
                chunk,
            )
            for row in rows:
                grouped[row["chapter_id"]].append(row)
        return grouped

    def pages(self, chapter_id: str) -> list[Row]:
        return self.db.query(
            "SELECT * FROM pages WHERE chapter_id = ? ORDER BY position", (chapter_id,)
        )

    def page_count(self, chapter_id: str) -> int:
        row = self.db.one("SELECT COUNT(*) AS n FROM pages WHERE chapter_id = ?", (chapter_id,))
        return int(row["n"]) if row else 0

    def active_run(self, chapter_id: str) -> Row | None:
        return self.db.one(
            "SELECT * FROM runs WHERE chapter_id = ? AND state = 'active'", (chapter_id,)
        )

    # -- ledger ---------------------------------------------------------------------

    def charges(self, workspace_id: str) -> list[Row]:
        return self.db.query(
            "SELECT * FROM charges WHERE workspace_id = ? ORDER BY seq", (workspace_id,)
        )

    def line_entries(self, workspace_id: str) -> list[Row]:
        return self.db.query(
            "SELECT * FROM line_log WHERE workspace_id = ? ORDER BY seq", (workspace_id,)
        )

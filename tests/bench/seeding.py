"""A large workspace in a running emulator, seeded straight into its SQLite.

Creating 10,000 chapters through the API would upload 10,000 chapters' pages and step
their runs; the read benchmarks only need what finished chapters look like. So the
workspace and its projects are made through the emulator's admin routes, as anyone
would, and the chapters are inserted in bulk through the emulator's own `Database`, in
the shape its run engine leaves a finished run:

- every chapter started, not processing, its pages' lines all translated in every target
  language (`covered` = the lines, `untranslated` = 0), half of them reviewed;
- its prepared files those `toolkit.emulator.core.packaging.prepared_files` names for the
  project's `processSteps`, and one `create` charge of 1 credit per page and language;
- page rows with lines and byte sizes, but no page files on disk and no
  `page_translations` rows: a re-scan of a seeded chapter would clear 0 regions. Adding
  pages to one, or reviewing it, works as on any chapter.

Projects cycle through `translate`, `clean` and `full`, so a chapter lists 3, 6 or 9
prepared files across three languages.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from typing import TYPE_CHECKING

from toolkit.emulator.core.engine import DEFAULT_MODEL
from toolkit.emulator.core.packaging import prepared_files
from toolkit.emulator.core.state import new_uuid

if TYPE_CHECKING:
    from toolkit.emulator import Emulator

STEPS = ("translate", "clean", "full")
DAY_MS = 24 * 3600 * 1000


@dataclass(frozen=True)
class Seeded:
    """What was seeded: ids a benchmark needs, and the key to read them with."""

    workspace_id: str
    api_key: str
    project_ids: list[str]
    chapter_ids: list[str]

    @property
    def requests_for_all_details(self) -> int:
        """A full pull's requests: the project list, each chapter list, each detail."""
        return 1 + len(self.project_ids) + len(self.chapter_ids)


def seed_workspace(
    emulator: Emulator,
    *,
    projects: int = 100,
    chapters: int = 100,
    languages: tuple[str, ...] = ("en", "fr", "es"),
    seed: int = 11,
) -> Seeded:
    """`projects` projects of `chapters` finished chapters each, in a new workspace."""
    rng = random.Random(seed)
    workspace = emulator.create_workspace("Benchmark workspace", credits=10_000_000)
    made = [
        emulator.create_project(
            workspace["id"],
            name=f"Series {number:03d}",
            kind="comic",
            source_language="ja",
            reading_direction="rtl",
            process_steps=STEPS[number % len(STEPS)],
            target_languages=list(languages),
        )
        for number in range(projects)
    ]
    rows = _Rows()
    now = int(emulator.now().timestamp() * 1000)
    for project in made:
        for position in range(1, chapters + 1):
            rows.chapter(rng, workspace["id"], project, position, languages, now)
    db = emulator.services.db
    with db.transaction():
        db.executemany(
            "INSERT INTO chapters (id, project_id, workspace_id, position, title, summary, "
            "created_ms, started, processing, detecting, failed, credits_spent, activity_ms) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, 1, 0, 0, 0, ?, ?)",
            rows.chapters,
        )
        db.executemany(
            "INSERT INTO chapter_languages (chapter_id, language_code, ord, status, covered, "
            "untranslated, failed, exporting, models) VALUES (?, ?, ?, ?, ?, 0, 0, 0, ?)",
            rows.languages,
        )
        db.executemany(
            "INSERT INTO pages (id, chapter_id, position, created_ms, storage_key, file_name, "
            "lines, byte_size, held) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0)",
            rows.pages,
        )
        db.executemany(
            "INSERT INTO exports (chapter_id, language_code, format, filename, byte_size, "
            "page_count, prepared_ms) VALUES (?, ?, ?, ?, ?, ?, ?)",
            rows.exports,
        )
        db.executemany(
            "INSERT INTO charges (workspace_id, chapter_id, project_id, at_ms, credits, pages, "
            "languages, reason, rework) VALUES (?, ?, ?, ?, ?, ?, ?, 'create', 0)",
            rows.charges,
        )
    return Seeded(
        workspace_id=workspace["id"],
        api_key=workspace["apiKey"],
        project_ids=[p["id"] for p in made],
        chapter_ids=[row[0] for row in rows.chapters],
    )


class _Rows:
    """The rows of every table, gathered for one `executemany` each."""

    def __init__(self) -> None:
        self.chapters: list[tuple[object, ...]] = []
        self.languages: list[tuple[object, ...]] = []
        self.pages: list[tuple[object, ...]] = []
        self.exports: list[tuple[object, ...]] = []
        self.charges: list[tuple[object, ...]] = []

    def chapter(
        self,
        rng: random.Random,
        workspace_id: str,
        project: dict[str, object],
        position: int,
        languages: tuple[str, ...],
        now: int,
    ) -> None:
        chapter_id = new_uuid()
        created = now - rng.randrange(2 * DAY_MS, 365 * DAY_MS)
        finished = created + rng.randrange(600_000, 4 * 3600_000)
        page_lines = [rng.randrange(3, 15) for _ in range(rng.randrange(8, 25))]
        page_bytes = [rng.randrange(150_000, 900_000) for _ in page_lines]
        lines, credits = sum(page_lines), len(page_lines) * len(languages)
        reviewed = rng.random() < 0.5
        self.chapters.append(
            (
                chapter_id,
                project["id"],
                workspace_id,
                position,
                f"Chapter {position}",
                f"What happens in chapter {position}.",
                created,
                credits,
                finished,
            )
        )
        models = json.dumps([DEFAULT_MODEL])
        for order, code in enumerate(languages):
            status = "reviewed" if reviewed else "needs_review"
            self.languages.append((chapter_id, code, order, status, lines, models))
            for item in prepared_files(
                kind="comic",
                steps=str(project["processSteps"]),
                project_name=str(project["name"]),
                position=position,
                language=code,
                pages=len(page_lines),
                page_bytes=sum(page_bytes),
                lines=lines,
            ):
                self.exports.append(
                    (
                        chapter_id,
                        code,
                        item.format,
                        item.filename,
                        item.byte_size,
                        item.page_count,
                        finished,
                    )
                )
        for number, (count, size) in enumerate(zip(page_lines, page_bytes, strict=True), 1):
            page_id = new_uuid()
            key = (
                f"workspaces/{workspace_id}/projects/{project['id']}/chapters/{chapter_id}"
                f"/pages/{page_id}.png"
            )
            self.pages.append(
                (page_id, chapter_id, number, created, key, f"{page_id}.png", count, size)
            )
        self.charges.append(
            (
                workspace_id,
                chapter_id,
                project["id"],
                created,
                credits,
                len(page_lines),
                json.dumps(list(languages)),
            )
        )

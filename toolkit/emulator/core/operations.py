"""What the chapter routes and the admin moves do to the state.

Each operation runs in one transaction and checks its refusals before it writes, so a
refused call charges nothing and creates nothing. The order of refusals is in
docs/emulator.md; prices come from `pricing`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from toolkit.emulator.core.engine import Engine
from toolkit.emulator.core.faults import Fate
from toolkit.emulator.core.limits import MAX_POSITION
from toolkit.emulator.core.pricing import novel_price, pages_price
from toolkit.emulator.core.runs import Unit, novel_passages
from toolkit.emulator.core.state import Row, State, new_uuid
from toolkit.emulator.intake.uploads import PageFolder, StagedPage
from toolkit.emulator.routes.errors import EmulatorError

__all__ = ["PROCESSING", "Operations"]

PROCESSING = "chapter already processing"


@dataclass(frozen=True)
class _Created:
    chapter_id: str
    pages: list[Row]


class Operations:
    """The service's operations on chapters, over the state, the engine and the page files."""

    def __init__(self, state: State, engine: Engine, files: PageFolder) -> None:
        self.state = state
        self.db = state.db
        self.engine = engine
        self.files = files

    # -- chapters -----------------------------------------------------------------

    def create_chapter(
        self,
        project: Row,
        *,
        position: int | None,
        staged: bool,
        pages: list[StagedPage],
        text: str | None,
        at: int,
        fate: tuple[Fate, int] | None = None,
    ) -> _Created:
        with self.db.transaction():
            if position is not None and self.state.position_taken(project["id"], position):
                raise EmulatorError(409, "a chapter with that number already exists")
            number = position or self.state.next_position(project["id"])
            if number > MAX_POSITION:
                raise EmulatorError(
                    409,
                    f"the project's highest chapter number is {MAX_POSITION:,}, the largest "
                    "there can be; send a `position` for the new chapter",
                )
            languages = self.state.language_codes(project["id"])
            if text is not None:
                units = novel_passages(text)
                cost = novel_price(len(text), len(languages))
            else:
                units = []
                cost = 0 if staged else pages_price(len(pages), len(languages))
            self._require_credits(project["workspace_id"], cost, what="this chapter's run")
            chapter = self._insert_chapter(project, number, languages, at, text)
            page_rows = self._insert_pages(chapter, [] if staged else pages, at, held=False)
            if cost:
                if not units:
                    units = _page_units(page_rows)
                self._charge(chapter, cost, pages=len(page_rows), reason="create", at=at)
                self.engine.start_run(chapter, units=units, reason="create", at_ms=at, fate=fate)
        return _Created(chapter["id"], page_rows)

    def add_pages(
        self, chapter_id: str, *, pages: list[StagedPage], hold: bool, position: int | None, at: int
    ) -> list[Row]:
        with self.db.transaction():
            chapter = self._chapter_not_processing(chapter_id)
            if position is not None and chapter["started"]:
                raise EmulatorError(
                    409,
                    "this chapter has run, so new pages go after the last one; "
                    "send them without a page number",
                )
            workspace = self._workspace(chapter["workspace_id"])
            if workspace["credits"] <= 0:
                raise EmulatorError(
                    402, "the workspace's credit balance is zero; add credits before adding pages"
                )
            languages = len(self.state.language_codes(chapter["project_id"]))
            existing = self.state.pages(chapter_id)
            replaced = [p for p in existing if position is not None and p["position"] == position]
            if hold:
                running = 0
            elif chapter["started"]:
                running = len(pages)
            else:
                running = len(existing) - len(replaced) + len(pages)
            self._require_credits(
                workspace["id"], pages_price(running, languages), what="these pages' run"
            )
            for old in replaced:
                self.db.execute("DELETE FROM pages WHERE id = ?", (old["id"],))
            new_rows = self._insert_pages(chapter, pages, at, held=hold, first=position)
            if running:
                run_rows = new_rows if chapter["started"] else self.state.pages(chapter_id)
                self._run_pages(chapter, run_rows, reason="add_pages", at=at)
            else:
                self._touch(chapter_id, at)
        for old in replaced:
            self.files.remove(old["file_name"])
        return new_rows

    def start(self, chapter_id: str, *, page_ids: list[str] | None, at: int) -> int:
        with self.db.transaction():
            chapter = self._chapter_not_processing(chapter_id)
            pages = self.state.pages(chapter_id)
            if not chapter["started"]:
                if not pages:
                    raise EmulatorError(400, "upload at least one page before starting")
                chosen = pages
            else:
                chosen = self._held_pages(chapter, pages, page_ids)
            self._run_pages(chapter, chosen, reason="start", at=at)
        return len(chosen)

    def rescan(self, chapter_id: str, *, at: int) -> int:
        """Discard every translation, edit and file, and run the chapter's pages again."""
        with self.db.transaction():
            chapter = self._chapter_not_processing(chapter_id)
            if chapter["kind"] == "novel":
                raise EmulatorError(
                    400,
                    "a novel's chapter cannot be re-scanned; upload its text as a new chapter",
                )
            pages = [p for p in self.state.pages(chapter_id) if not p["held"]]
            if not pages:
                raise EmulatorError(400, "the chapter has no pages to re-scan; add pages first")
            languages = len(self.state.language_codes(chapter["project_id"]))
            cost = pages_price(len(pages), languages)
            self._require_credits(chapter["workspace_id"], cost, what="a re-scan")
            cleared = self._discard_translations(chapter_id)
            self._run_pages(chapter, pages, reason="rescan", at=at, rework=True)
        return cleared

    def _held_pages(self, chapter: Row, pages: list[Row], page_ids: list[str] | None) -> list[Row]:
        if chapter["kind"] == "novel":
            raise EmulatorError(400, "a novel's chapter runs when it is created; nothing to start")
        if not page_ids:
            raise EmulatorError(
                400, "this chapter has run before; name the held pages to run in `pageIds`"
            )
        held = {p["id"]: p for p in pages if p["held"]}
        strangers = [page_id for page_id in page_ids if page_id not in held]
        if strangers:
            raise EmulatorError(
                400,
                f"{strangers[0]!r} is not a held page of this chapter; `pageIds` must name "
                "pages sent with hold=1 that have not run",
            )
        wanted = set(page_ids)
        return [p for p in pages if p["id"] in wanted]

    def _discard_translations(self, chapter_id: str) -> int:
        row = self.db.one(
            "SELECT COALESCE(SUM(lines), 0) AS n FROM pages WHERE chapter_id = ? AND id IN "
            "(SELECT page_id FROM page_translations)",
            (chapter_id,),
        )
        self.db.execute(
            "DELETE FROM page_translations WHERE page_id IN "
            "(SELECT id FROM pages WHERE chapter_id = ?)",
            (chapter_id,),
        )
        self.db.execute("DELETE FROM exports WHERE chapter_id = ?", (chapter_id,))
        self.db.execute(
            "UPDATE chapter_languages SET covered = 0, untranslated = 0, status = 'translating', "
            "failed = 0, exporting = 0, models = '[]' WHERE chapter_id = ?",
            (chapter_id,),
        )
        self.db.execute(
            "UPDATE chapters SET failed = 0, failure_reason = NULL, summary = NULL WHERE id = ?",
            (chapter_id,),
        )
        return int(row["n"]) if row else 0

    # -- admin moves --------------------------------------------------------------------

    def trash_chapter(self, chapter_id: str, *, at: int) -> None:
        with self.db.transaction():
            if self.state.chapter_any(chapter_id) is None:
                raise EmulatorError(404, "chapter not found")
            self.engine.cancel_runs([chapter_id], at_ms=at)
            self.db.execute("UPDATE chapters SET deleted_ms = ? WHERE id = ?", (at, chapter_id))

    def trash_project(self, project_id: str, *, at: int) -> None:
        with self.db.transaction():
            if self.state.project(project_id) is None:
                raise EmulatorError(404, "project not found")
            running = self.db.query(
                "SELECT id FROM chapters WHERE project_id = ? AND processing = 1", (project_id,)
            )
            self.engine.cancel_runs([r["id"] for r in running], at_ms=at)
            self.db.execute("UPDATE projects SET deleted_ms = ? WHERE id = ?", (at, project_id))

    def review(self, chapter_id: str, *, at: int) -> None:
        with self.db.transaction():
            chapter = self.state.chapter_any(chapter_id)
            if chapter is None:
                raise EmulatorError(404, "chapter not found")
            if chapter["processing"]:
                raise EmulatorError(409, "the chapter is processing; review it once its run ends")
            row = self.db.one(
                "SELECT COALESCE(SUM(covered), 0) AS n FROM chapter_languages WHERE chapter_id = ?",
                (chapter_id,),
            )
            if not row or not row["n"]:
                raise EmulatorError(409, "the chapter has nothing translated to review yet")
            self.db.execute(
                "UPDATE chapter_languages SET status = 'reviewed' WHERE chapter_id = ?",
                (chapter_id,),
            )
            self._touch(chapter_id, at)

    # -- helpers --------------------------------------------------------------------------

    def _chapter_not_processing(self, chapter_id: str) -> Row:
        chapter = self.state.chapter_any(chapter_id)
        if chapter is None:
            raise EmulatorError(404, "chapter not found")
        if chapter["processing"]:
            raise EmulatorError(409, PROCESSING)
        return chapter

    def _workspace(self, workspace_id: str) -> Row:
        workspace = self.state.workspace(workspace_id)
        assert workspace is not None
        return workspace

    def _require_credits(self, workspace_id: str, cost: int, *, what: str) -> None:
        balance = self._workspace(workspace_id)["credits"]
        if cost > balance:
            raise EmulatorError(
                402,
                f"not enough credits: {what} costs {cost} and the workspace has {balance}; "
                "add credits and try again",
            )

    def _run_pages(
        self, chapter: Row, pages: list[Row], *, reason: str, at: int, rework: bool = False
    ) -> None:
        languages = len(self.state.language_codes(chapter["project_id"]))
        cost = pages_price(len(pages), languages)
        self._require_credits(chapter["workspace_id"], cost, what="this run")
        ids = [p["id"] for p in pages]
        self.db.executemany("UPDATE pages SET held = 0 WHERE id = ?", [(i,) for i in ids])
        self._charge(chapter, cost, pages=len(pages), reason=reason, at=at, rework=rework)
        self.engine.start_run(chapter, units=_page_units(pages), reason=reason, at_ms=at)

    def _charge(
        self, chapter: Row, cost: int, *, pages: int, reason: str, at: int, rework: bool = False
    ) -> None:
        languages = self.state.language_codes(chapter["project_id"])
        self.db.execute(
            "UPDATE workspaces SET credits = credits - ? WHERE id = ?",
            (cost, chapter["workspace_id"]),
        )
        self.db.execute(
            "UPDATE chapters SET credits_spent = credits_spent + ? WHERE id = ?",
            (cost, chapter["id"]),
        )
        self.db.execute(
            "INSERT INTO charges (workspace_id, chapter_id, project_id, at_ms, credits, pages, "
            "languages, reason, rework) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                chapter["workspace_id"],
                chapter["id"],
                chapter["project_id"],
                at,
                cost,
                pages,
                json.dumps(languages),
                reason,
                int(rework),
            ),
        )

    def _insert_chapter(
        self, project: Row, position: int, languages: list[str], at: int, text: str | None
    ) -> Row:
        chapter_id = new_uuid()
        self.db.execute(
            "INSERT INTO chapters (id, project_id, workspace_id, position, created_ms, "
            "activity_ms, char_count) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                chapter_id,
                project["id"],
                project["workspace_id"],
                position,
                at,
                at,
                None if text is None else len(text),
            ),
        )
        self.db.executemany(
            "INSERT INTO chapter_languages (chapter_id, language_code, ord) VALUES (?, ?, ?)",
            [(chapter_id, code, index) for index, code in enumerate(languages)],
        )
        if text is not None:
            self.db.execute(
                "INSERT INTO chapter_texts (chapter_id, text) VALUES (?, ?)", (chapter_id, text)
            )
        chapter = self.state.chapter_any(chapter_id)
        assert chapter is not None
        return chapter

    def _insert_pages(
        self,
        chapter: Row,
        pages: list[StagedPage],
        at: int,
        *,
        held: bool,
        first: int | None = None,
    ) -> list[Row]:
        """Move staged files into place and add their rows, after the last page or at `first`."""
        if not pages:
            return []
        if first is None:
            row = self.db.one(
                "SELECT COALESCE(MAX(position), 0) AS top FROM pages WHERE chapter_id = ?",
                (chapter["id"],),
            )
            first = (row["top"] if row else 0) + 1
            if first + len(pages) - 1 > MAX_POSITION:
                raise EmulatorError(
                    409,
                    f"the chapter's highest page number is {first - 1:,}; pages after it would "
                    f"go past {MAX_POSITION:,}, the largest there can be",
                )
        rows = []
        for offset, staged in enumerate(pages):
            page_id = new_uuid()
            file_name = self.files.commit(staged, page_id)
            rows.append(
                {
                    "id": page_id,
                    "chapter_id": chapter["id"],
                    "position": first + offset,
                    "created_ms": at,
                    "storage_key": (
                        f"workspaces/{chapter['workspace_id']}/projects/{chapter['project_id']}"
                        f"/chapters/{chapter['id']}/pages/{file_name}"
                    ),
                    "file_name": file_name,
                    "lines": staged.lines,
                    "byte_size": staged.byte_size,
                    "held": int(held),
                }
            )
        self.db.executemany(
            "INSERT INTO pages (id, chapter_id, position, created_ms, storage_key, file_name, "
            "lines, byte_size, held) VALUES (:id, :chapter_id, :position, :created_ms, "
            ":storage_key, :file_name, :lines, :byte_size, :held)",
            rows,
        )
        return rows

    def _touch(self, chapter_id: str, at: int) -> None:
        self.db.execute("UPDATE chapters SET activity_ms = ? WHERE id = ?", (at, chapter_id))


def _page_units(pages: list[Row]) -> list[Unit]:
    ordered = sorted(pages, key=lambda p: p["position"])
    return [Unit(p["id"], p["position"], p["lines"]) for p in ordered]

"""The run engine: a run is a row in `runs` moved forward one step at a time.

The cursor lives in the database, so runs in flight carry on after a restart; what each
step does to a chapter is in docs/emulator.md ("Runs").

Past 400 lines on purpose: every step kind (read, translate, clean, letter, package,
fail, stall) writes the same few tables inside one transaction, and reading them side by
side is how one checks that a chapter's counts stay consistent. What a run is made of
(units, phases, durations) is already apart, in `runs`; prepared files in `packaging`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime
from typing import Any

from toolkit.emulator.core.clock import iso
from toolkit.emulator.core.db import Database
from toolkit.emulator.core.faults import Fate, Faults
from toolkit.emulator.core.packaging import prepared_files
from toolkit.emulator.core.runs import (
    CLEAN_MS,
    DEFAULT_MODEL,
    FAILURE_REASON,
    LETTER_MS_PER_LANGUAGE,
    PACKAGE_MS,
    READ_MS,
    STALL_ABANDON_MS,
    STALL_REASON,
    Run,
    Unit,
    encode_units,
    translate_ms,
)
from toolkit.emulator.core.state import Row, from_ms, new_uuid, to_ms

EventSink = Callable[[str, str, dict[str, Any]], None]

__all__ = ["DEFAULT_MODEL", "Engine", "EventSink"]


class Engine:
    """The runs of chapters: their steps, fates and events, as the clock moves."""

    def __init__(self, db: Database, faults: Faults) -> None:
        self.db = db
        self.faults = faults
        self.sinks: list[EventSink] = []
        self.on_work: Callable[[], None] = lambda: None
        # State control (`control`) plugs in here: a held step parks its run, and a fate
        # set for a chapter's next run replaces the draw.
        self.holds: Callable[[Run], bool] = lambda run: False
        self.next_fate: Callable[[str], tuple[str, int] | None] = lambda chapter_id: None

    # -- the seam to webhook deliveries ---------------------------------------------

    def emit(self, workspace_id: str, event_type: str, data: dict[str, Any]) -> None:
        for sink in self.sinks:
            sink(workspace_id, event_type, data)
        self.on_work()  # a delivery may now be due: wake the realtime clock

    # -- starting and stopping runs (the caller holds a transaction) -----------------

    def start_run(
        self,
        chapter: Row,
        *,
        units: list[Unit],
        reason: str,
        at_ms: int,
        fate: tuple[Fate, int] | None = None,
    ) -> str:
        """Start a run now; `fate` overrides the draw (the demo seed sets its own)."""
        project = self.db.one("SELECT * FROM projects WHERE id = ?", (chapter["project_id"],))
        assert project is not None
        languages = [
            r["language_code"]
            for r in self.db.query(
                "SELECT language_code FROM chapter_languages WHERE chapter_id = ? ORDER BY ord",
                (chapter["id"],),
            )
        ]
        fate_name, fate_step = (
            fate
            or self.next_fate(chapter["id"])
            or self.faults.draw_fate(len(units) * len(languages))
        )
        seq_row = self.db.one("SELECT COALESCE(MAX(seq), 0) + 1 AS seq FROM runs")
        run_id = new_uuid()
        self.db.execute(
            """
            INSERT INTO runs (id, seq, chapter_id, workspace_id, project_id, reason, kind, steps,
                model, languages, units, phase, fate, fate_step, state, next_due_ms, started_ms)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'read', ?, ?, 'active', ?, ?)
            """,
            (
                run_id,
                seq_row["seq"] if seq_row else 1,
                chapter["id"],
                project["workspace_id"],
                project["id"],
                reason,
                project["kind"],
                project["process_steps"],
                project["translation_model"] or DEFAULT_MODEL,
                json.dumps(languages),
                encode_units(units),
                fate_name,
                fate_step,
                at_ms + READ_MS[project["kind"]],
                at_ms,
            ),
        )
        self.db.execute(
            "UPDATE chapters SET started = 1, processing = 1, detecting = 1, activity_ms = ? "
            "WHERE id = ?",
            (at_ms, chapter["id"]),
        )
        self.db.execute(
            "UPDATE chapter_languages SET status = 'translating', exporting = 0 "
            "WHERE chapter_id = ?",
            (chapter["id"],),
        )
        self.on_work()
        return run_id

    def cancel_runs(self, chapter_ids: list[str], *, at_ms: int) -> None:
        """Stop the chapters' runs without events or refunds (the chapters went to the trash)."""
        for chapter_id in chapter_ids:
            self.db.execute(
                "UPDATE runs SET state = 'cancelled', next_due_ms = NULL, ended_ms = ? "
                "WHERE chapter_id = ? AND state = 'active'",
                (at_ms, chapter_id),
            )
            self.db.execute(
                "UPDATE chapters SET processing = 0, detecting = 0 WHERE id = ?", (chapter_id,)
            )
            self.db.execute(
                "UPDATE chapter_languages SET exporting = 0 WHERE chapter_id = ?", (chapter_id,)
            )

    # -- the clock's side -------------------------------------------------------------

    def next_due(self) -> datetime | None:
        row = self.db.one("SELECT MIN(next_due_ms) AS t FROM runs WHERE state = 'active'")
        return None if row is None or row["t"] is None else from_ms(row["t"])

    def run_due(self, when: datetime) -> None:
        """Perform every step due at or before `when`, in time order, each at its own time."""
        limit = to_ms(when)
        while True:
            due = self.db.query(
                "SELECT id FROM runs WHERE state = 'active' AND next_due_ms <= ? "
                "ORDER BY next_due_ms, seq",
                (limit,),
            )
            if not due:
                return
            for item in due:
                with self.db.transaction():
                    row = self.db.one(
                        "SELECT * FROM runs WHERE id = ? AND state = 'active'", (item["id"],)
                    )
                    if row is not None and row["next_due_ms"] <= limit:
                        self._step(Run.from_row(row), int(row["next_due_ms"]))

    # -- steps --------------------------------------------------------------------------

    def _step(self, run: Run, at: int) -> None:
        if self.holds(run):
            self._move(run, due=None)  # parked until released (`control.release`)
            return
        self.db.execute("UPDATE chapters SET activity_ms = ? WHERE id = ?", (at, run.chapter_id))
        handlers = {
            "read": self._read,
            "translate": self._translate,
            "clean": self._per_page,
            "letter": self._per_page,
            "package": self._package,
            "stalled": self._abandon,
        }
        handlers[run.row["phase"]](run, at)

    def _read(self, run: Run, at: int) -> None:
        index = run.row["item_idx"]
        self.db.execute(
            "UPDATE chapter_languages SET untranslated = untranslated + ? WHERE chapter_id = ?",
            (run.units[index].lines, run.chapter_id),
        )
        if index + 1 < len(run.units):
            self._move(run, item_idx=index + 1, due=at + READ_MS[run.row["kind"]])
            return
        self.db.execute("UPDATE chapters SET detecting = 0 WHERE id = ?", (run.chapter_id,))
        self._enter_next_phase(run, at)

    def _translate(self, run: Run, at: int) -> None:
        done = run.row["translated"]
        if done == run.row["fate_step"] and run.row["fate"] == "fail":
            self._fail(run, at, self._failure_reason(run))
            return
        if done == run.row["fate_step"] and run.row["fate"] == "stall":
            self._move(run, phase="stalled", due=at + STALL_ABANDON_MS)
            return
        unit = run.units[run.row["item_idx"]]
        language = run.languages[run.row["lang_idx"]]
        model = run.row["model"]
        self.db.execute(
            """
            UPDATE chapter_languages
            SET untranslated = MAX(untranslated - ?, 0), covered = covered + ?,
                models = CASE WHEN EXISTS (SELECT 1 FROM json_each(models) WHERE value = ?)
                              THEN models ELSE json_insert(models, '$[#]', ?) END
            WHERE chapter_id = ? AND language_code = ?
            """,
            (unit.lines, unit.lines, model, model, run.chapter_id, language),
        )
        self.db.execute(
            "INSERT INTO line_log (workspace_id, chapter_id, project_id, language_code, lines, "
            "at_ms) VALUES (?, ?, ?, ?, ?, ?)",
            (
                run.row["workspace_id"],
                run.chapter_id,
                run.row["project_id"],
                language,
                unit.lines,
                at,
            ),
        )
        if unit.page_id is not None:
            self.db.execute(
                "INSERT OR IGNORE INTO page_translations (page_id, language_code) VALUES (?, ?)",
                (unit.page_id, language),
            )
        item, lang = run.row["item_idx"] + 1, run.row["lang_idx"]
        if item == len(run.units):
            item, lang = 0, lang + 1
        if lang == len(run.languages):
            self._move(run, translated=done + 1, due=None)
            self._enter_next_phase(run, at)
            return
        self._move(
            run,
            item_idx=item,
            lang_idx=lang,
            translated=done + 1,
            due=at + translate_ms(run.row["kind"], run.units[item].lines),
        )

    def _per_page(self, run: Run, at: int) -> None:
        index = run.row["item_idx"] + 1
        if index < len(run.units):
            self._move(run, item_idx=index, due=at + self._page_ms(run, run.row["phase"]))
        else:
            self._enter_next_phase(run, at)

    def _page_ms(self, run: Run, phase: str) -> int:
        return CLEAN_MS if phase == "clean" else LETTER_MS_PER_LANGUAGE * len(run.languages)

    def _enter_next_phase(self, run: Run, at: int) -> None:
        phase = run.phases[run.phases.index(run.row["phase"]) + 1]
        if phase == "translate":
            due = at + translate_ms(run.row["kind"], run.units[0].lines)
        elif phase == "package":
            self._set_exporting(run, run.languages[0])
            due = at + PACKAGE_MS
        else:
            due = at + self._page_ms(run, phase)
        self._move(run, phase=phase, item_idx=0, lang_idx=0, due=due)

    def _package(self, run: Run, at: int) -> None:
        index = run.row["lang_idx"]
        language = run.languages[index]
        self._prepare_files(run, language, at)
        if index + 1 < len(run.languages):
            self._set_exporting(run, run.languages[index + 1])
            self._move(run, lang_idx=index + 1, due=at + PACKAGE_MS)
            return
        self._finish(run, at)

    def _set_exporting(self, run: Run, language: str) -> None:
        self.db.execute(
            "UPDATE chapter_languages SET exporting = 1 WHERE chapter_id = ? AND language_code = ?",
            (run.chapter_id, language),
        )

    def _prepare_files(self, run: Run, language: str, at: int) -> None:
        chapter = self._chapter(run)
        pages = self.db.one(
            "SELECT COUNT(*) AS n, COALESCE(SUM(byte_size), 0) AS bytes FROM pages "
            "WHERE chapter_id = ? AND held = 0",
            (run.chapter_id,),
        )
        lang = self.db.one(
            "SELECT * FROM chapter_languages WHERE chapter_id = ? AND language_code = ?",
            (run.chapter_id, language),
        )
        assert pages is not None and lang is not None
        files = prepared_files(
            kind=run.row["kind"],
            steps=run.row["steps"],
            project_name=chapter["project_name"],
            position=chapter["position"],
            language=language,
            pages=pages["n"],
            page_bytes=pages["bytes"],
            lines=lang["covered"],
        )
        for prepared in files:
            self.db.execute(
                "INSERT OR REPLACE INTO exports (chapter_id, language_code, format, filename, "
                "byte_size, page_count, prepared_ms) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    run.chapter_id,
                    language,
                    prepared.format,
                    prepared.filename,
                    prepared.byte_size,
                    prepared.page_count,
                    at,
                ),
            )
        self.db.execute(
            "UPDATE chapter_languages SET exporting = 0, status = CASE WHEN untranslated = 0 "
            "THEN 'needs_review' ELSE 'translating' END WHERE chapter_id = ? AND language_code = ?",
            (run.chapter_id, language),
        )
        for prepared in files:
            self.emit(
                run.row["workspace_id"],
                "export.ready",
                {
                    "chapterId": run.chapter_id,
                    "projectId": run.row["project_id"],
                    "languageCode": language,
                    "format": prepared.format,
                    "filename": prepared.filename,
                    "byteSize": prepared.byte_size,
                    "pageCount": prepared.page_count,
                    "preparedAt": iso(from_ms(at)),
                },
            )

    def _finish(self, run: Run, at: int) -> None:
        chapter = self._chapter(run)
        languages = self.db.query(
            "SELECT * FROM chapter_languages WHERE chapter_id = ? ORDER BY ord", (run.chapter_id,)
        )
        lines = sum(unit.lines for unit in run.units)
        noun = "passages" if run.row["kind"] == "novel" else "pages"
        summary = (
            f"Chapter {chapter['position']} of {chapter['project_name']}: {len(run.units)} "
            f"{noun} read and {lines} lines translated into {', '.join(run.languages)}."
        )
        self.db.execute(
            "UPDATE chapters SET processing = 0, detecting = 0, summary = ? WHERE id = ?",
            (summary, run.chapter_id),
        )
        self._move(run, state="done", due=None, ended_ms=at)
        self.emit(
            run.row["workspace_id"],
            "chapter.finished",
            {
                "chapterId": run.chapter_id,
                "projectId": run.row["project_id"],
                "position": chapter["position"],
                "title": chapter["title"],
                "pageCount": chapter["page_count"],
                "languages": [
                    {
                        "languageCode": lang["language_code"],
                        "status": lang["status"],
                        "failed": bool(lang["failed"]),
                    }
                    for lang in languages
                ],
            },
        )

    def _abandon(self, run: Run, at: int) -> None:
        self._fail(run, at, STALL_REASON)

    def _fail(self, run: Run, at: int, reason: str) -> None:
        self.db.execute(
            "UPDATE chapters SET processing = 0, detecting = 0, failed = 1, failure_reason = ? "
            "WHERE id = ?",
            (reason, run.chapter_id),
        )
        self.db.execute(
            "UPDATE chapter_languages SET failed = 1, exporting = 0 WHERE chapter_id = ?",
            (run.chapter_id,),
        )
        self._move(run, state="failed", due=None, ended_ms=at)
        chapter = self._chapter(run)
        self.emit(
            run.row["workspace_id"],
            "chapter.failed",
            {
                "chapterId": run.chapter_id,
                "projectId": run.row["project_id"],
                "position": chapter["position"],
                "title": chapter["title"],
                "failureReason": reason,
            },
        )

    def _failure_reason(self, run: Run) -> str:
        unit = run.units[run.row["item_idx"]]
        return FAILURE_REASON.format(
            item="passage" if run.row["kind"] == "novel" else "page",
            number=self._page_number(unit),
            language=run.languages[run.row["lang_idx"]],
        )

    def _page_number(self, unit: Unit) -> int:
        if unit.page_id is None:
            return unit.number
        row = self.db.one("SELECT position FROM pages WHERE id = ?", (unit.page_id,))
        return int(row["position"]) if row else unit.number

    def _chapter(self, run: Run) -> Row:
        row = self.db.one(
            """
            SELECT c.*, p.name AS project_name,
                   (SELECT COUNT(*) FROM pages g WHERE g.chapter_id = c.id) AS page_count
            FROM chapters c JOIN projects p ON p.id = c.project_id WHERE c.id = ?
            """,
            (run.chapter_id,),
        )
        assert row is not None
        return row

    def _move(self, run: Run, *, due: int | None, **changes: Any) -> None:
        """Save the cursor; `run.row` is updated too so later calls in a step see it."""
        changes["next_due_ms"] = due
        assignments = ", ".join(f"{name} = ?" for name in changes)
        self.db.execute(f"UPDATE runs SET {assignments} WHERE id = ?", (*changes.values(), run.id))
        run.row.update(changes)

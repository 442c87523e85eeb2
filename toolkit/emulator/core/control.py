"""State control: the moves a test makes on one chapter without touching fault rates.

Hold a chapter (or one language) at a phase until released, decide how its run ends
(fail or stall at a translation step), and have a reviewer review it at a given time.
Kept in the database beside the runs, so a restart keeps them (docs/emulator.md,
"State control").
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from toolkit.emulator.core.clock import iso
from toolkit.emulator.core.db import Database
from toolkit.emulator.core.operations import Operations
from toolkit.emulator.core.runs import Run
from toolkit.emulator.core.state import Row, State, from_ms, to_ms
from toolkit.emulator.routes.errors import EmulatorError

__all__ = ["Control"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS holds (
    chapter_id TEXT NOT NULL,
    phase TEXT NOT NULL,
    language_code TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (chapter_id, phase, language_code)
);
CREATE TABLE IF NOT EXISTS next_fates (
    chapter_id TEXT PRIMARY KEY,
    fate TEXT NOT NULL,
    fate_step INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS scheduled_reviews (
    chapter_id TEXT PRIMARY KEY,
    due_ms INTEGER NOT NULL,
    until_ms INTEGER NOT NULL
);
"""

_PHASES = ("read", "translate", "clean", "letter", "package")
_PER_LANGUAGE = ("translate", "package")
_FATES = ("ok", "fail", "stall")
# A review asked for while the chapter runs waits for it, checked each minute, for a day.
_REVIEW_RETRY_MS = 60_000
_REVIEW_PATIENCE_MS = 24 * 3600 * 1000


class Control:
    """State control: holds on a chapter's steps, and fates set for its next run."""

    def __init__(self, db: Database, state: State, operations: Operations) -> None:
        self.db = db
        self.state = state
        self.operations = operations
        db.executescript(_SCHEMA)

    # -- holds -------------------------------------------------------------------------

    def hold(self, chapter_id: str, body: Any) -> dict[str, Any]:
        chapter = self._chapter(chapter_id)
        phase, language = _hold_fields(body)
        if language is not None and language not in self._languages(chapter):
            raise EmulatorError(
                400, f"the chapter is not translated into {language!r}; name one of its languages"
            )
        self.db.execute(
            "INSERT OR IGNORE INTO holds (chapter_id, phase, language_code) VALUES (?, ?, ?)",
            (chapter_id, phase, language or ""),
        )
        return self.described(chapter_id)

    def release(self, chapter_id: str, *, at_ms: int) -> dict[str, Any]:
        """Lift every hold of the chapter; a run waiting at one takes its step now."""
        self._chapter(chapter_id)
        with self.db.transaction():
            self.db.execute("DELETE FROM holds WHERE chapter_id = ?", (chapter_id,))
            self.db.execute(
                "UPDATE runs SET next_due_ms = ? "
                "WHERE chapter_id = ? AND state = 'active' AND next_due_ms IS NULL",
                (at_ms, chapter_id),
            )
        return self.described(chapter_id)

    def holds_run(self, run: Run) -> bool:
        """Whether the run's next step is held (the engine then parks the run)."""
        phase = run.row["phase"]
        if phase not in _PHASES:
            return False
        language = run.languages[run.row["lang_idx"]] if phase in _PER_LANGUAGE else ""
        row = self.db.one(
            "SELECT 1 AS held FROM holds WHERE chapter_id = ? AND phase = ? "
            "AND language_code IN ('', ?)",
            (run.chapter_id, phase, language),
        )
        return row is not None

    # -- fates ---------------------------------------------------------------------------

    def set_fate(self, chapter_id: str, body: Any) -> dict[str, Any]:
        """How the chapter's run ends: the run in progress if it has not yet passed the
        step, else the next run to start."""
        self._chapter(chapter_id)
        fate, step = _fate_fields(body)
        with self.db.transaction():
            changed = self.db.execute(
                "UPDATE runs SET fate = ?, fate_step = ? WHERE chapter_id = ? AND state = 'active' "
                "AND phase IN ('read', 'translate') AND translated <= ?",
                (fate, step, chapter_id, step),
            )
            if not changed:
                self.db.execute(
                    "INSERT OR REPLACE INTO next_fates (chapter_id, fate, fate_step) "
                    "VALUES (?, ?, ?)",
                    (chapter_id, fate, step),
                )
        return self.described(chapter_id)

    def take_fate(self, chapter_id: str) -> tuple[str, int] | None:
        """The fate set for the chapter's next run, used up (the caller holds a transaction)."""
        row = self.db.one("SELECT * FROM next_fates WHERE chapter_id = ?", (chapter_id,))
        if row is None:
            return None
        self.db.execute("DELETE FROM next_fates WHERE chapter_id = ?", (chapter_id,))
        return str(row["fate"]), int(row["fate_step"])

    # -- reviews -------------------------------------------------------------------------

    def schedule_review(self, chapter_id: str, at: datetime) -> dict[str, Any]:
        self._chapter(chapter_id)
        due = to_ms(at)
        self.db.execute(
            "INSERT OR REPLACE INTO scheduled_reviews (chapter_id, due_ms, until_ms) "
            "VALUES (?, ?, ?)",
            (chapter_id, due, due + _REVIEW_PATIENCE_MS),
        )
        return self.described(chapter_id)

    def next_due(self) -> datetime | None:
        row = self.db.one("SELECT MIN(due_ms) AS t FROM scheduled_reviews")
        return None if row is None or row["t"] is None else from_ms(row["t"])

    def run_due(self, when: datetime) -> None:
        """Review each chapter whose time has come; one still running waits a minute."""
        limit = to_ms(when)
        for item in self.db.query(
            "SELECT * FROM scheduled_reviews WHERE due_ms <= ? ORDER BY due_ms, chapter_id",
            (limit,),
        ):
            chapter_id = item["chapter_id"]
            try:
                self.operations.review(chapter_id, at=item["due_ms"])
            except EmulatorError as refused:
                retry = item["due_ms"] + _REVIEW_RETRY_MS
                if refused.status == 409 and retry <= item["until_ms"]:
                    self.db.execute(
                        "UPDATE scheduled_reviews SET due_ms = ? WHERE chapter_id = ?",
                        (retry, chapter_id),
                    )
                    continue
            self.db.execute("DELETE FROM scheduled_reviews WHERE chapter_id = ?", (chapter_id,))

    # -- what is set on a chapter ----------------------------------------------------------

    def settings(self, chapter_id: str) -> dict[str, Any]:
        self._chapter(chapter_id)
        return self.described(chapter_id)

    def described(self, chapter_id: str) -> dict[str, Any]:
        holds = self.db.query(
            "SELECT phase, language_code FROM holds WHERE chapter_id = ? ORDER BY phase, "
            "language_code",
            (chapter_id,),
        )
        fate = self.db.one("SELECT * FROM next_fates WHERE chapter_id = ?", (chapter_id,))
        review = self.db.one("SELECT * FROM scheduled_reviews WHERE chapter_id = ?", (chapter_id,))
        parked = self.db.one(
            "SELECT phase FROM runs WHERE chapter_id = ? AND state = 'active' "
            "AND next_due_ms IS NULL",
            (chapter_id,),
        )
        return {
            "chapterId": chapter_id,
            "holds": [
                {"phase": h["phase"], "languageCode": h["language_code"] or None} for h in holds
            ],
            "heldAt": parked["phase"] if parked else None,
            "nextRun": None if fate is None else {"fate": fate["fate"], "step": fate["fate_step"]},
            "reviewAt": None if review is None else iso(from_ms(review["due_ms"])),
        }

    def _chapter(self, chapter_id: str) -> Row:
        chapter = self.state.chapter_any(chapter_id)
        if chapter is None:
            raise EmulatorError(404, f"chapter {chapter_id!r} not found")
        return chapter

    def _languages(self, chapter: Row) -> list[str]:
        rows = self.db.query(
            "SELECT language_code FROM chapter_languages WHERE chapter_id = ?", (chapter["id"],)
        )
        return [row["language_code"] for row in rows]


def _hold_fields(body: Any) -> tuple[str, str | None]:
    if not isinstance(body, dict) or set(body) - {"phase", "languageCode"}:
        raise EmulatorError(400, 'the body must be {"phase": ..., "languageCode"?: ...}')
    phase = body.get("phase")
    if phase not in _PHASES:
        raise EmulatorError(400, f"phase must be one of {', '.join(_PHASES)}, not {phase!r}")
    language = body.get("languageCode")
    if language is not None and (not isinstance(language, str) or phase not in _PER_LANGUAGE):
        raise EmulatorError(
            400, "languageCode goes with phase translate or package only, as a language code"
        )
    return phase, language


def _fate_fields(body: Any) -> tuple[str, int]:
    if not isinstance(body, dict) or set(body) - {"fate", "step"}:
        raise EmulatorError(400, 'the body must be {"fate": "fail"|"stall"|"ok", "step"?: n}')
    fate = body.get("fate")
    if fate not in _FATES:
        raise EmulatorError(400, f"fate must be one of {', '.join(_FATES)}, not {fate!r}")
    step = body.get("step", 1)
    if not isinstance(step, int) or isinstance(step, bool) or not 1 <= step <= 10**6:
        raise EmulatorError(400, f"step must be a translation step from 1, not {step!r}")
    return fate, step - 1  # the engine counts the steps done before it

"""What a run is made of: its units, its phases, and how long each step takes.

The durations (simulated time) are listed in docs/emulator.md ("Runs").
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from toolkit.emulator.core.state import Row

__all__ = [
    "CLEAN_MS",
    "DEFAULT_MODEL",
    "FAILURE_REASON",
    "LETTER_MS_PER_LANGUAGE",
    "PACKAGE_MS",
    "READ_MS",
    "STALL_ABANDON_MS",
    "STALL_REASON",
    "Run",
    "Unit",
    "encode_units",
    "novel_passages",
    "translate_ms",
]

DEFAULT_MODEL = "cts-emulator-mt-1"
_NOVEL_PASSAGE_LINES = 20
READ_MS = {"comic": 3_000, "novel": 2_000}
CLEAN_MS = 4_000
LETTER_MS_PER_LANGUAGE = 2_000
PACKAGE_MS = 30_000
STALL_ABANDON_MS = 2 * 3600 * 1000

FAILURE_REASON = (
    "The run failed while translating {item} {number} into {language}: the translation "
    "model returned no usable text, so re-scan the chapter to retry."
)
STALL_REASON = (
    "The run stalled with no progress for 2 hours and was abandoned; it should be "
    "retried with a re-scan."
)


def translate_ms(kind: str, lines: int) -> int:
    """How long translating a unit of `lines` lines takes, by the project's kind."""
    return 3_000 + 500 * lines if kind == "novel" else 8_000 + 2_000 * lines


@dataclass(frozen=True)
class Unit:
    """What one read or translation step works on: a page, or a novel's passage."""

    page_id: str | None
    number: int
    lines: int


def novel_passages(text: str) -> list[Unit]:
    """A novel's non-empty lines, in passages of `_NOVEL_PASSAGE_LINES`."""
    count = sum(1 for line in text.splitlines() if line.strip())
    return [
        Unit(None, index + 1, min(_NOVEL_PASSAGE_LINES, count - start))
        for index, start in enumerate(range(0, count, _NOVEL_PASSAGE_LINES))
    ]


def encode_units(units: list[Unit]) -> str:
    """A run's units as the JSON text its row keeps."""
    return json.dumps([[u.page_id, u.number, u.lines] for u in units])


@dataclass(frozen=True)
class Run:
    """A run of a chapter as the engine drives it: its row, units, languages and phases."""

    row: Row
    units: list[Unit]
    languages: list[str]
    phases: list[str]

    @classmethod
    def from_row(cls, row: Row) -> Run:
        units = [Unit(*item) for item in json.loads(row["units"])]
        phases = ["read", "translate"]
        if row["kind"] == "comic" and row["steps"] in ("clean", "full"):
            phases.append("clean")
        if row["kind"] == "comic" and row["steps"] == "full":
            phases.append("letter")
        phases.append("package")
        return cls(row, units, json.loads(row["languages"]), phases)

    @property
    def id(self) -> str:
        return str(self.row["id"])

    @property
    def chapter_id(self) -> str:
        return str(self.row["chapter_id"])

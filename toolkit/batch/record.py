"""The upload record: which chapters of a folder went to which project, and with what.

A hidden JSON file in the folder (`.toolkit-upload.json`) maps, per project id, each
chapter number to the chapter id the service gave it and the digest of what was sent.
A rerun that finds the same chapter id with the same digest knows the chapter is there
and skips it. The file is written after every chapter created, through a temporary
file and a rename, so a crash leaves the previous complete record, never half of one.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from toolkit.files import write_text_whole

__all__ = ["RECORD_NAME", "UploadRecord"]

RECORD_NAME = ".toolkit-upload.json"


@dataclass(frozen=True)
class _Recorded:
    chapter_id: str
    digest: str


class UploadRecord:
    """The folder's record of the chapters already uploaded (`RECORD_NAME`), by project and number.

    An unreadable record reads as empty: chapters are then compared by count."""

    def __init__(self, folder: Path) -> None:
        self.path = folder / RECORD_NAME
        self._data: dict[str, Any] = {"version": 1, "projects": {}}
        if self.path.exists():
            try:
                loaded = json.loads(self.path.read_text("utf-8"))
            except (OSError, ValueError):
                loaded = None  # unreadable: treated as empty; chapters are compared by count
            if isinstance(loaded, dict) and isinstance(loaded.get("projects"), dict):
                self._data = loaded

    def get(self, project_id: str, number: int) -> _Recorded | None:
        entry = self._data["projects"].get(project_id, {}).get(str(number))
        if not isinstance(entry, dict):
            return None
        return _Recorded(str(entry.get("chapter_id")), str(entry.get("sha256")))

    def add(self, project_id: str, number: int, chapter_id: str, digest: str) -> None:
        """Note a chapter created and write the record at once. Raises `OSError`."""
        chapters = self._data["projects"].setdefault(project_id, {})
        chapters[str(number)] = {
            "chapter_id": chapter_id,
            "sha256": digest,
            "uploaded_at": datetime.now(UTC).isoformat(timespec="seconds"),
        }
        write_text_whole(self.path, json.dumps(self._data, indent=1, sort_keys=True))

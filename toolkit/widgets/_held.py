"""The ids of the pages the toolkit held itself, kept beside the snapshot store.

The service lists no chapter's pages: on a chapter that has run, starting held pages
needs their ids (`POST /chapters/:id/start` with `pageIds`), which only the add-pages
answer gives. So the UploadPanel writes each hold here, and a Dashboard opened later, in
another kernel or on another day, reads them and offers Start. Pages held in the
service's own dashboard never pass through the toolkit: their ids are not here.

The journal is one small JSON file beside the store's folder (`<store>.held-pages.json`,
never inside it: the store's folder holds its tables only), per chapter: the ids held
and not yet started, when they were held (the service's clock) and, once started from
the toolkit, when. Each change re-reads the file and replaces it whole, so two panels in
one kernel never lose each other's holds. Without a store (or with a remote one) the
ids live as long as the panel, as before.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolkit.files import write_text_whole

if TYPE_CHECKING:
    from toolkit.store import SnapshotStore

SUFFIX = ".held-pages.json"


@dataclass(frozen=True)
class Held:
    """A chapter's held pages the toolkit knows."""

    page_ids: tuple[str, ...]  # held and not started from the toolkit
    held_at: datetime | None  # the latest hold, on the service's clock
    started_at: datetime | None  # when the toolkit last started held pages of it


class HeldPages:
    """The held pages' journal of one workspace (its store's), or a memory of them."""

    def __init__(self, store: SnapshotStore | None) -> None:
        self.path = journal_path(store)
        self._memory: dict[str, dict[str, Any]] = {}

    def _read(self) -> dict[str, dict[str, Any]]:
        if self.path is None:
            return self._memory
        try:
            found = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            raise OSError(
                f"the held pages' journal {self.path} cannot be read ({exc}); move it away "
                "to start afresh (held pages not in it can be started in the service's own "
                "dashboard)"
            ) from exc
        return found if isinstance(found, dict) else {}

    def _write(self, entries: dict[str, dict[str, Any]]) -> None:
        if self.path is None:
            self._memory = entries
            return
        write_text_whole(self.path, json.dumps(entries, indent=1, sort_keys=True) + "\n")

    def held(self, chapter_id: str, page_ids: list[str], at: datetime | None) -> None:
        """Record pages `add_pages(..., hold=True)` answered with."""
        entries = self._read()
        entry = entries.setdefault(chapter_id, {"page_ids": [], "held_at": None})
        known = entry["page_ids"]
        entry["page_ids"] = [*known, *(i for i in page_ids if i not in known)]
        entry["held_at"] = at.isoformat() if at is not None else entry.get("held_at")
        self._write(entries)

    def started(self, chapter_id: str, at: datetime | None) -> None:
        """The chapter's held pages were started from the toolkit: none is left to start."""
        entries = self._read()
        entry = entries.setdefault(chapter_id, {"page_ids": [], "held_at": None})
        entry["page_ids"] = []
        entry["started_at"] = at.isoformat() if at is not None else None
        self._write(entries)

    def get(self, chapter_id: str) -> Held:
        """What the toolkit knows of the chapter's held pages (no ids: none it held)."""
        return _held(self._read().get(chapter_id, {}))

    def ids(self, chapter_id: str) -> list[str]:
        return list(self.get(chapter_id).page_ids)

    def chapters(self) -> dict[str, Held]:
        """Every chapter with held pages the toolkit knows and has not started."""
        found = {cid: _held(entry) for cid, entry in self._read().items()}
        return {cid: held for cid, held in found.items() if held.page_ids}


def journal_path(store: SnapshotStore | None) -> Path | None:
    """`<store folder>.held-pages.json`, beside a local store; None for none or a remote one."""
    if store is None or re.match(r"^[a-z][a-z0-9+.-]*://", store.root):
        return None
    root = Path(store.root).resolve()
    return root.with_name(root.name + SUFFIX)


def _held(entry: dict[str, Any]) -> Held:
    return Held(
        page_ids=tuple(entry.get("page_ids", ())),
        held_at=_moment(entry.get("held_at")),
        started_at=_moment(entry.get("started_at")),
    )


def _moment(text: object) -> datetime | None:
    return datetime.fromisoformat(text) if isinstance(text, str) else None

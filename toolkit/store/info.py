"""What a take or a write wrote: a snapshot's manifest row, printed as one line."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from toolkit.formatting import utc_second

__all__ = ["SnapshotInfo"]


@dataclass(frozen=True, repr=False)
class SnapshotInfo:
    """What `take` or `write` wrote: the snapshot's manifest row. Prints as one line.

    Attributes:
        snapshot_id: The snapshot's id; ids sort by snapshot time.
        snapshot_at: The snapshot's time (aware, UTC).
        details: Which chapter details the pull read: "all", "changed" or "none".
        requests: The requests the pull made, retries included.
        seconds: How long the pull took.
        rows_projects: The projects the snapshot holds.
        rows_chapters: The chapters the snapshot holds.
        rows_languages: The chapter-language rows the snapshot holds.
        rows_exports: The prepared files the snapshot holds.
        workspace: The label stored with the snapshot, if one was given.
    """

    snapshot_id: str
    snapshot_at: datetime
    details: str
    requests: int
    seconds: float
    rows_projects: int
    rows_chapters: int
    rows_languages: int
    rows_exports: int
    workspace: str | None = None

    def __str__(self) -> str:
        at = utc_second(self.snapshot_at)
        return (
            f"snapshot {self.snapshot_id} at {at}: {self.rows_projects} projects, "
            f"{self.rows_chapters} chapters, {self.rows_languages} chapter languages, "
            f"{self.rows_exports} files; {self.requests} requests in {self.seconds:.1f} s "
            f"(details={self.details})"
        )

    def __repr__(self) -> str:
        return f"<SnapshotInfo {self}>"

    def _repr_html_(self) -> str:
        from toolkit.formatting import card, count, moment

        return card(f"Snapshot {self.snapshot_id}", {
            "taken at": f"{moment(self.snapshot_at)} UTC",
            "rows": f"{count(self.rows_projects, 'project')}, "
            f"{count(self.rows_chapters, 'chapter')}, "
            f"{count(self.rows_languages, 'chapter language')}, "
            f"{count(self.rows_exports, 'file')}",
            "requests": f"{self.requests:,} in {self.seconds:.1f} s (details={self.details})",
            "workspace": self.workspace or "default",
        })  # fmt: skip

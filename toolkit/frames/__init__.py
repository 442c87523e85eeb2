"""The service's resources as pandas DataFrames, shaped by one Arrow schema per table.

The parts: `schema` (the column contract), `fetcher` (concurrent GETs over one client)
and `pull` (the frames and `pull`).
"""

from __future__ import annotations

from toolkit.frames.pull import (
    Details,
    UnknownStatus,
    Workspace,
    chapter_rows,
    chapters_frame,
    export_rows,
    exports_frame,
    language_rows,
    languages_frame,
    project_rows,
    projects_frame,
    pull,
)

__all__ = [
    "Details",
    "UnknownStatus",
    "Workspace",
    "chapter_rows",
    "chapters_frame",
    "export_rows",
    "exports_frame",
    "language_rows",
    "languages_frame",
    "project_rows",
    "projects_frame",
    "pull",
]

"""The service's resources as pandas DataFrames, shaped by one Arrow schema per table.

The parts: `schema` (the column contract), `fetcher` (concurrent GETs over one client),
`pull` (the frames and `pull`), `states` (a chapter's derived `state`) and `joins` (an
outer join of frames that may be empty).
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
    project_group_rows,
    project_rows,
    projects_frame,
    pull,
)
from toolkit.frames.states import STATES, chapter_states, says_stalled

__all__ = [
    "STATES",
    "Details",
    "UnknownStatus",
    "Workspace",
    "chapter_rows",
    "chapter_states",
    "chapters_frame",
    "export_rows",
    "exports_frame",
    "language_rows",
    "languages_frame",
    "project_group_rows",
    "project_rows",
    "projects_frame",
    "pull",
    "says_stalled",
]

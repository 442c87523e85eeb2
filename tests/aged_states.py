"""The run stages' kept states made older, as the time between two snapshots leaves them.

A save drops the states older than ten minutes by their folders' times (`run_store`),
which a test or a benchmark that writes its snapshots seconds apart never reaches, while
an hourly `toolkit snapshot` always does: the tests, the seeded histories and the
`extend` benchmark age them by the interval they stand for."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["aged"]


def aged(folder: Path, seconds: float) -> None:
    """Every state folder in `folder` (a store's run stages: `run_store.FOLDER`) made
    `seconds` older; nothing when there is none."""
    for state in folder.iterdir() if folder.is_dir() else ():
        when = state.stat().st_mtime - seconds
        os.utime(state, (when, when))

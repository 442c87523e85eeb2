"""Which data files a bounded store check reads whole: the watch's, every cycle.

`toolkit store check` reads every data file each time it runs, to be sure each holds the
rows its log records; that takes as long as the history is big (0.6-1.6 s at 30,000
chapters x a month, growing with every snapshot). The watch runs the check every cycle,
so there it is bounded: every cycle still reads every table's log, checks each listed
file is there, readable and the size its log records, and reads whole

- each file it has not read whole before, or whose size or modification time changed
  since it did (a new snapshot's files; a file written over, however), and
- a rotating share of the others: the `1/cycles` of them read whole longest ago, so
  each is read again within `cycles` cycles (the watch asks for a day's cycles).

What it read whole and found sound is recorded in `<root>/_checked.json` (path, size,
modification time, when), written whole or not at all; a file that does not read is
never an error, only a check that reads every file again. So damage that rewrites a
file is named at the next cycle, and damage that changes neither its size nor its time
(a disk's silent corruption) within `cycles` cycles. A file found damaged is not
recorded: it is read, and named, every cycle until it is repaired.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import time
from typing import Final

from toolkit.files import write_text_whole

__all__ = ["FILE", "CheckRotation"]

FILE: Final = "_checked.json"


class CheckRotation:
    """The record of the files a store's bounded checks read whole, and the choice of
    which to read whole this time.

    Args:
        root: The store's folder.
        cycles: Each file is read whole at least once in this many checks.
    """

    def __init__(self, root: str, *, cycles: int) -> None:
        self.root = os.path.abspath(root.removeprefix("file://"))
        self.cycles = max(1, cycles)
        self._read: dict[str, tuple[int, int, float]] = _load(os.path.join(self.root, FILE))
        self._seen: dict[str, tuple[int, int, float]] = {}
        self._at = time.time()
        # The store's share of the files read whole before, those read longest ago:
        # chosen over all the tables at once, so each check reads about `1/cycles`.
        oldest = sorted(self._read, key=lambda key: (self._read[key][2], key))
        self._due = set(oldest[: math.ceil(len(oldest) / self.cycles)])

    def to_read(self, paths: list[str]) -> set[str]:
        """Of one table's listed files, those to read whole this time: new or changed
        since last read whole, and those of the store's share of the others read longest
        ago. A file that cannot be looked at is read whole too (the read names what is
        wrong)."""
        whole: set[str] = set()
        for path in paths:
            key = os.path.relpath(path, self.root)
            try:
                stat = os.stat(path)
            except OSError:
                whole.add(path)
                continue
            known = self._read.get(key)
            if known is None or known[:2] != (stat.st_size, stat.st_mtime_ns) or key in self._due:
                whole.add(path)
            else:
                self._seen[key] = known  # not read now: kept as it was
        return whole

    def read_sound(self, path: str) -> None:
        """Record that `path` was read whole and found to be the file its log lists."""
        try:
            stat = os.stat(path)
        except OSError:
            return
        key = os.path.relpath(path, self.root)
        self._seen[key] = (stat.st_size, stat.st_mtime_ns, self._at)

    def read_damaged(self, path: str) -> None:
        """Forget `path`: found damaged, it is read whole again next time."""
        self._seen.pop(os.path.relpath(path, self.root), None)

    def save(self) -> None:
        """Write the record of the files still listed; a store that cannot be written
        keeps none (every file is then read whole each time, as `store check` does)."""
        record = json.dumps({k: list(v) for k, v in sorted(self._seen.items())})
        with contextlib.suppress(OSError):
            write_text_whole(os.path.join(self.root, FILE), record)


def _load(path: str) -> dict[str, tuple[int, int, float]]:
    """The record; empty when there is none or it does not read."""
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
        return {str(k): (int(v[0]), int(v[1]), float(v[2])) for k, v in data.items()}
    except (OSError, ValueError, TypeError, KeyError, IndexError, AttributeError):
        return {}

"""What a read checks before it reads, and what it says when the store does not read.

A read refuses tables whose logs do not hold what the snapshots committed (`ledger`: a
commit missing, changed or made by another engine) and data files that are not the
files their table lists; a read that fails anyway names what `toolkit store check`
finds. Nothing here reads a data file.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

import pyarrow as pa

from toolkit.errors import DamagedStore, StoreError
from toolkit.formatting import utc_second
from toolkit.store.ledger import Disagreement
from toolkit.store.tables import Tables

if TYPE_CHECKING:
    from toolkit.store.engine import StoreEngine

__all__ = ["damaged", "refuse", "verify_reads"]


def verify_reads(engine: StoreEngine, manifest: pa.Table, tables: list[str]) -> None:
    """Refuse to read `tables` when their logs or files disagree with the manifest;
    checked once per version of the tables."""
    names = [*tables, "manifest"]
    found = [engine.tables.get(name) for name in names]
    now = tuple(t.version() if t is not None else None for t in found)
    key = (*names, *now)
    if key in engine.verified:
        return
    if not _appended_since_verified(engine, names, now):
        problems = [p for p in engine.ledger.verify(manifest, tables) if p.kind != "uncommitted"]
        refuse(engine.root, problems, manifest)
    unlike = [path for name in names for path in engine.tables.unlike_listed(name)]
    if unlike:
        error = OSError(f"{unlike[0]} is not the file its table lists")
        raise damaged(engine.tables, engine.root, error)
    engine.verified.add(key)


def _appended_since_verified(
    engine: StoreEngine, names: list[str], now: tuple[int | None, ...]
) -> bool:
    """Whether the logs of `names` (some of them, or all, once) were verified at versions
    from which every commit to `now` is one of this object's own appends: its write just
    after its read, so the logs hold what it committed and no other engine's commit is
    among them. A stat of each file still follows: a file replaced meanwhile is found."""
    own = engine.tables.appended
    for key in engine.verified:
        half = len(key) // 2
        then = dict(zip(key[:half], key[half:], strict=True))
        if all(
            name in then
            and (
                then[name] == new
                or (
                    isinstance(old := then[name], int)
                    and new is not None
                    and old < new
                    and own.get(name, set()).issuperset(range(old + 1, new + 1))
                )
            )
            for name, new in zip(names, now, strict=True)
        ):
            return True
    return False


def refuse(root: str, problems: list[Disagreement], manifest: pa.Table) -> None:
    """`DamagedStore` naming `problems` and the snapshots they make read wrong."""
    if problems:
        times = dict(zip(manifest.column("snapshot_id").to_pylist(),
                         manifest.column("snapshot_at").to_pylist(), strict=True))  # fmt: skip
        named = "; ".join(
            p.what + _affected([(i, times[i]) for i in p.snapshot_ids if i in times])
            for p in problems
        )
        raise DamagedStore(
            f"the store {root!r} would read wrong: {named}. Run `toolkit store check "
            f"--store {root} --repair`: it undoes another engine's commits, and names "
            "and removes every snapshot it cannot keep, so that the others read as taken"
        )


def damaged(tables: Tables, root: str, error: Exception) -> StoreError:
    """What a failed read says: the damaged files, found by the check, and what to do."""
    from toolkit.store.check import check

    reason = str(error).strip().splitlines()[0] if str(error).strip() else repr(error)
    try:
        found = check(tables.root) if tables.local else []
    except (StoreError, OSError):
        found = []
    named = "; ".join(str(f) for f in found) or reason
    return DamagedStore(
        f"the store {root} could not be read: {named}. Run `toolkit store check "
        f"--store {root}` to see which snapshots it touches and what `--repair` "
        "does about each"
    )


def _affected(snapshots: list[tuple[str, datetime]]) -> str:
    """Which snapshots read wrong, said in a few words."""
    if not snapshots:
        return ""
    at = [utc_second(when) for _, when in snapshots]
    if len(snapshots) == 1:
        return f" (snapshot {snapshots[0][0]} taken {at[0]} reads wrong)"
    return f" ({len(snapshots)} snapshots taken {at[0]} to {at[-1]} read wrong)"

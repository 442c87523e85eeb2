"""Undoing another engine's commits to a store table: the table restored to the toolkit's
last commit before them, with a record of what was undone.

A foreign commit (`ledger`: a `DELETE`, `UPDATE` or `OPTIMIZE` run with another engine)
changes rows no snapshot took, so every read refuses the table. Its data files stay on
disk until a vacuum, so a Delta `RESTORE` to the commit before it brings every snapshot's
rows back; a file vacuumed meanwhile is then missing, and `check` names the snapshots that
held it (only those are lost). The ledger takes a `RESTORE` that undoes only foreign
commits as the undo it is, whoever made it, so the advice `check` prints
(`DeltaTable(path).restore(version)`) works when followed.
"""

from __future__ import annotations

import json
import os

from deltalake import CommitProperties, DeltaTable

from toolkit.store.ledger import OPERATION_KEY

__all__ = ["restore_advice", "undo"]

# On the RESTORE commit `check --repair` makes: the foreign commits it undid.
_UNDID_KEY = "toolkit.undid"


def restore_advice(folder: str, version: int) -> str:
    """The command that undoes the foreign commits after `version` of the table at
    `folder`, as a user types it in Python."""
    return f"DeltaTable({os.path.abspath(folder)!r}).restore({version})"


def undo(folder: str, version: int, undid: list[str]) -> int:
    """Restore the table at `folder` to `version`, recording `undid` (what the foreign
    commits were, e.g. `"31 DELETE"`) in the restore's commit metadata.

    Returns:
        The version of the restore's commit.
    """
    metadata = {OPERATION_KEY: "undo", _UNDID_KEY: json.dumps(undid)}
    table = DeltaTable(folder)
    # A file vacuumed since is left out: `check` then names the snapshots it held.
    table.restore(
        version,
        ignore_missing_files=True,
        commit_properties=CommitProperties(custom_metadata=metadata),
    )
    return table.version()

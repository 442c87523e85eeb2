"""The store's layout version: recorded with the data, refused when newer than this
toolkit reads, and reached from an older one a named step at a time (as dlt versions its
storages: no reader guesses the layout from what it finds).

The version is the manifest table's property `toolkit.layout` (Delta table metadata:
it outlives log clean-up and checkpoints, and every engine shows it). The layouts:

1. Parquet files per table and a manifest folder (before Delta);
2. Delta tables, rows without `_changed` and `_previous`, manifest rows without
   `keeps_previous`;
3. what this toolkit writes.

A store written before the version was recorded is placed by the two detectors the
readers used to carry: a manifest that is not a Delta table is layout 1
(`migrate.is_old_store`), a manifest row without `keeps_previous` layout 2
(`upgrade.is_current`); otherwise it is layout 3, and the first write records that. A
toolkit from before the version that writes to a store recorded as 3 leaves rows without
the mark: the layout 2 detector then places it at 2 again, as before the version existed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from deltalake import CommitProperties
from deltalake.exceptions import CommitFailedError

from toolkit.errors import StoreError
from toolkit.store.ledger import OPERATION_KEY
from toolkit.store.migrate import is_old_store
from toolkit.store.tables import Tables

__all__ = ["LAYOUT", "Step", "record_layout", "recorded", "refuse_newer", "upgrade_in_steps"]

LAYOUT = 3
_LAYOUT_KEY = "toolkit.layout"


@dataclass(frozen=True)
class Step:
    """One migration: from layout `start` to `start + 1`, named for the log and the user."""

    start: int
    name: str
    run: Callable[[Tables], list[str]]


def recorded(tables: Tables) -> int | None:
    """The layout recorded on the manifest (as of the operation `tables` is in); None when
    none is, or there is no manifest."""
    manifest = tables.get("manifest")
    if manifest is None:
        return None
    value = manifest.metadata().configuration.get(_LAYOUT_KEY)
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def refuse_newer(tables: Tables, root: str) -> None:
    """`StoreError` in one line when the store's layout is newer than this toolkit reads."""
    found = recorded(tables)
    if found is not None and found > LAYOUT:
        raise StoreError(
            f"the store {root!r} is in layout {found}, written by a newer toolkit; this "
            f"toolkit reads layouts up to {LAYOUT}: upgrade the toolkit "
            "(`pip install -U` it) to read or write this store"
        )


def _detected(tables: Tables, is_current: Callable[[Tables], bool]) -> int:
    """The layout of a store that records none, by the detectors of layouts 1 and 2."""
    if tables.local and is_old_store(tables.root):
        return 1
    return LAYOUT if is_current(tables) else 2


def record_layout(tables: Tables, version: int) -> None:
    """Write `version` on the manifest (a commit that changes no rows).

    Writers of one store record it at once on their first takes: a metadata change
    conflicts with any commit made meanwhile, so it is tried again on the table as it now
    is (and left alone once another writer recorded it)."""
    properties = CommitProperties(custom_metadata={OPERATION_KEY: "layout"})
    for attempt in range(5):
        tables.begin()
        manifest = tables.get("manifest")
        if manifest is None or recorded(tables) == version:
            return
        try:
            manifest.alter.set_table_properties(
                {_LAYOUT_KEY: str(version)}, raise_if_not_exists=False, commit_properties=properties
            )
            return
        except CommitFailedError:
            if attempt == 4:
                raise


def upgrade_in_steps(
    tables: Tables, root: str, steps: list[Step], is_current: Callable[[Tables], bool]
) -> list[str]:
    """Bring the store to `LAYOUT` one step at a time, recording each version reached;
    returns what each step did, under its name."""
    tables.begin()
    refuse_newer(tables, root)
    version = recorded(tables)
    if version is None or (version == LAYOUT and not is_current(tables)):
        # Recorded 3 with unmarked rows: a toolkit from before the version wrote since
        # (it neither reads nor keeps the record), so layout 2's step runs again.
        version = _detected(tables, is_current)
    done: list[str] = []
    for step in steps:
        if step.start < version:
            continue
        said = step.run(tables)
        done += [f"{step.name}: {line}" for line in said] or [step.name]
        version = step.start + 1
        record_layout(tables, version)
        tables.begin()  # the step and the record changed the tables: look again
    if recorded(tables) != version and tables.get("manifest") is not None:
        record_layout(tables, version)
    return done

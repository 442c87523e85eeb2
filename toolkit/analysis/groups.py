"""The service's translation groups: each project's `translationGroupId`, as the store
kept it, to group figures by (the tag `translation_group`, which needs no config).

```python
tk.analysis.project_groups(store)          # project_id, project, translation_group
tk.analysis.project_groups(store, until="2026-03-08")   # as of a period's end
```

A project's group is the one the last snapshot up to `until` recorded for it: a group
stays with the project's figures after the project is gone, and a snapshot that recorded
none (a workspace written by hand) does not erase it. A project no snapshot up to
`until` recorded a group for is `(unknown)`: every project of a store written before the
toolkit kept groups, until its next snapshot. Never guessed. docs/figures.md, "The
service's translation groups".
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Final

import pandas as pd

from toolkit.analysis.calendar import utc_bound
from toolkit.analysis.observed import Observed, observe
from toolkit.analysis.workspaces import across
from toolkit.frames.schema import TEXT_DTYPE
from toolkit.timestamps import When

if TYPE_CHECKING:
    from toolkit.store import SnapshotStore

__all__ = ["GROUP_KEY", "UNKNOWN_GROUP", "group_tags", "project_groups", "reserved"]

GROUP_KEY: Final = "translation_group"
# A project whose snapshots up to the period's end recorded no group.
UNKNOWN_GROUP: Final = "(unknown)"


@across
def project_groups(
    store: SnapshotStore | Observed, *, until: When | None = None, tz: str | None = None
) -> pd.DataFrame:
    """Each project the store saw up to `until`, with its translation group.

    Args:
        store: A `SnapshotStore` or its `Observed` view; or several workspaces' stores at
            once (a mapping of label to store, or a list), and then the answer has a
            `workspace` column first, or is one dict per label where the call answers
            with a dict (`toolkit.analysis.workspaces`).
        until: the groups as the snapshots up to it recorded them (a naive time is read
            in `tz`); default every snapshot.
        tz: The time zone a naive `since` or `until` is read in; UTC by default.

    Returns:
        `project_id`, `project` (its last name) and `translation_group`: the group the
        service last gave, as sent (a bare UUID: the service names no group), null
        where it sent none, `(unknown)` where no snapshot recorded one. One row per
        project, in id order.
    """
    obs = observe(store)
    times = obs.manifest["snapshot_at"].reset_index(drop=True)
    last = len(times) if until is None else int((times <= utc_bound(until, tz)).sum())
    projects = _last_rows(obs.store.changes("projects"), last, keep_deleted=True)
    groups = _last_rows(obs.store.changes("project_groups"), last, keep_deleted=False)
    found = dict(zip(groups["project_id"], groups["translation_group_id"], strict=True))
    ids = projects["project_id"].tolist()
    return pd.DataFrame(
        {
            "project_id": pd.array(ids, dtype=TEXT_DTYPE),
            "project": pd.array(projects["name"].tolist(), dtype=TEXT_DTYPE),
            GROUP_KEY: pd.array([found.get(i, UNKNOWN_GROUP) for i in ids], dtype=TEXT_DTYPE),
        }
    )


def _last_rows(log: pd.DataFrame, last: int, *, keep_deleted: bool) -> pd.DataFrame:
    """Each project's last row of a change log among the first `last` snapshots; a
    row marking the project gone counts only with `keep_deleted` (a gone project keeps
    its name; a snapshot without groups keeps the group recorded before)."""
    rows = log[(log["idx"] < last).to_numpy(bool)]
    if not keep_deleted:
        rows = rows[~rows["_deleted"].fillna(False).to_numpy(bool)]
    rows = rows.sort_values(["project_id", "idx"], kind="stable")
    return rows.drop_duplicates("project_id", keep="last")


def group_tags(
    stores: Iterable[SnapshotStore | Observed], until: When | None = None, tz: str | None = None
) -> dict[str, dict[str, str]]:
    """The projects' groups as tags (`{project_id: {"translation_group": group}}`), by
    id over every store, to merge with a config's `[tags]`; a project the service gave
    no group is left out (it counts as untagged)."""
    tags: dict[str, dict[str, str]] = {}
    for store in stores:
        frame = project_groups(store, until=until, tz=tz)
        for project_id, group in zip(frame["project_id"], frame[GROUP_KEY], strict=True):
            if not pd.isna(group):
                tags[str(project_id)] = {GROUP_KEY: str(group)}
    return tags


def reserved(key: str) -> str | None:
    """Why a tag of the user's may not be named `key`, in words that say to rename it,
    or None when it may: `translation_group` is the service's own group."""
    if key != GROUP_KEY:
        return None
    return (f"{GROUP_KEY!r} is the service's translation group, which the toolkit reads "
            "itself (no config needed): rename this tag, e.g. to group or series")  # fmt: skip

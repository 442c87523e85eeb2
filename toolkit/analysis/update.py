"""After a snapshot: a store's run stages brought up to it (issue 43).

```python
store.take(client)
tk.analysis.update_runs(store)   # the next figure joins a part, not the log since
```
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from toolkit.analysis.observed import Observed
from toolkit.analysis.workspaces import across

if TYPE_CHECKING:
    from toolkit.store import SnapshotStore

__all__ = ["update_runs"]


@across
def update_runs(store: SnapshotStore | Observed) -> bool:
    """Keep a store's run stages up to date after a snapshot, as a part over the last
    state kept whole (`run_part`: the touched chapters' rows, charges and runs), so that
    the next question joins them instead of working them out again from the log since.
    `toolkit snapshot` runs it after each snapshot. Never an error: what could not be
    kept is worked out by the next question, as before.

    Args:
        store: A `SnapshotStore` or its `Observed` view; or several workspaces' stores at
            once (a mapping of label to store, or a list), and then the answer has a
            `workspace` column first, or is one dict per label where the call answers
            with a dict (`toolkit.analysis.workspaces`). Just after its snapshot
            (`SnapshotStore.take` or `write`).

    Returns:
        Whether anything was kept for the store's state (a part, or its stages whole); a
        store that keeps no stages (a short history, an object store) keeps none. For
        several workspaces, one answer per label.
    """
    try:
        return (store if isinstance(store, Observed) else Observed(store)).update()
    except Exception:  # a cache: the next question works the stages out itself
        return False

"""`toolkit store check`'s look at the rows a write kept for the next one
(`toolkit.store.latest`): those kept for the store's present state are compared with
the snapshot's rows worked out from the change log."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from toolkit.store.check import StoreFinding
from toolkit.store.engine import StoreEngine
from toolkit.store.latest import FOLDER, RECORD, read_folder, same_rows
from toolkit.store.tables import Tables

__all__ = ["check_latest_kept"]


def check_latest_kept(root: str, *, repair: bool = False) -> list[StoreFinding]:
    """A finding when the rows kept for the store's present state (the next write's
    base) do not read, or differ from the snapshot's rows in the change log: the next
    write would diff against them. With `repair`, what is kept is deleted."""
    folder = Path(root.removeprefix("file://")) / FOLDER
    if not folder.is_dir():
        return []
    engine = StoreEngine(root, Tables(root))
    manifest = engine.manifest()
    ids = set(manifest.column("snapshot_id").to_pylist())
    findings = []
    for entry in sorted(folder.iterdir()):
        try:
            record = json.loads((entry / RECORD).read_text(encoding="utf-8"))
            versions = tuple(record["versions"])
            current = record["snapshot_id"] in ids and (
                engine.kept_state(record["snapshot_id"]) == versions
            )
        except (OSError, ValueError, KeyError, TypeError):
            current = False  # another state's, or a write's unfinished folder: never read
        if not current:
            continue
        kept = read_folder(entry, record["snapshot_id"], versions)
        if kept is not None and same_rows(
            kept, engine.logged_state(record["snapshot_id"], manifest)
        ):
            continue
        what = "do not read" if kept is None else "differ from the snapshot's rows"
        findings.append(
            StoreFinding(
                "latest", FOLDER, str(entry),
                f"the rows kept for the next snapshot's write {what}: it would compare the "
                "service's rows with them",
                "deletes them; the next write works its base out from the snapshots",
                repairable=True,
            )
        )  # fmt: skip
    if repair and findings:
        shutil.rmtree(folder, ignore_errors=True)
        for finding in findings:
            finding.done = "deleted; the next write works its base out from the snapshots"
    return findings

"""`toolkit store check [--store PATH] [--repair]`: find damaged, orphaned and temporary
files in a store, and with `--repair` set them aside in `<root>/_quarantine/`.

What is checked, table by table (`<root>/<table>/`):

- **log**: every commit file in `_delta_log/` parses as JSON lines. A damaged commit
  that is the newest is quarantined (the commit is dropped: if it was a manifest row,
  that snapshot becomes invisible, as if its take had stopped); a damaged one older
  than the newest cannot be dropped, and the report says to restore it from a backup.
- **damaged** / **missing**: every data file the table's current version lists exists
  and has a readable Parquet footer. A damaged one is quarantined and the reference to
  it removed from the table (`DeltaTable.repair`); the report names the snapshots whose
  rows it held, by time: their states, and those after them up to the next full
  snapshot, lack those rows. Every other snapshot reads as before.
- **orphaned**: Parquet files no version of the table lists (a write stopped by a crash
  or a full disk, a file copied in by hand), older than `grace`; younger ones may belong
  to a write in progress and are left alone.
- **temporary**: staging files (`*.tmp`, `*#<n>`) older than `grace`.

Nothing committed is ever deleted: repair moves files, keeping their paths under
`_quarantine/<time>/`.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pyarrow as pa
import pyarrow.parquet as pq
from deltalake import DeltaTable

from toolkit.errors import StoreError
from toolkit.store.maintenance import layout
from toolkit.store.tables import first_line

QUARANTINE = "_quarantine"


@dataclass
class Finding:
    """One file that is not as it should be, and what to do about it."""

    kind: str  # log | damaged | missing | orphaned | temporary
    table: str
    path: str
    advice: str
    repairable: bool = False
    moved_to: str | None = None

    def __str__(self) -> str:
        done = f"; moved to {self.moved_to}" if self.moved_to else ""
        return f"{self.kind}: {self.path} ({self.table}): {self.advice}{done}"


def check(
    root: str, *, repair: bool = False, grace: timedelta = timedelta(hours=1)
) -> list[Finding]:
    """Every damaged, missing, orphaned or temporary file of the store at `root` (a local
    folder); with `repair`, each is set aside so the store reads again."""
    if "://" in root and not root.startswith("file://"):
        raise StoreError(
            f"toolkit store check reads local folders; for {root!r} run it on a copy, or "
            "use your object store's listing with DeltaTable(...).get_add_actions()"
        )
    root = os.path.abspath(root.removeprefix("file://"))
    if not os.path.isdir(root):
        raise StoreError(f"no store at {root!r}: it is not a folder")
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    quarantine = os.path.join(root, QUARANTINE, stamp)
    findings: list[Finding] = []
    for name in layout():
        folder = os.path.join(root, name)
        if not os.path.isdir(os.path.join(folder, "_delta_log")):
            continue
        table_findings = _check_log(folder, name)
        if repair:
            _set_aside([f for f in table_findings if f.repairable], root, quarantine)
        findings.extend(table_findings)
        try:
            table = DeltaTable(folder)
        except Exception as error:
            findings.append(
                Finding("log", name, os.path.join(folder, "_delta_log"),
                        f"the table's log cannot be read ({first_line(error)}); restore it "
                        "from a backup")
            )  # fmt: skip
            continue
        data = _check_data(table, folder, name, grace)
        if repair:
            _set_aside([f for f in data if f.repairable], root, quarantine)
            if any(f.kind in ("damaged", "missing") for f in data):
                table.repair(dry_run=False)
        findings.extend(data)
    return findings


def _check_log(folder: str, name: str) -> list[Finding]:
    log = os.path.join(folder, "_delta_log")
    commits = sorted(n for n in os.listdir(log) if n.endswith(".json") and n[:20].isdigit())
    damaged = [n for n in commits if not _parses(os.path.join(log, n))]
    findings = []
    newest = commits[-1] if commits else None
    for n in damaged:
        path = os.path.join(log, n)
        if n == newest:
            findings.append(
                Finding("log", name, path, "the newest commit is damaged; repair drops it "
                        "(the snapshot it held becomes invisible: take it again)", repairable=True)
            )  # fmt: skip
        else:
            findings.append(
                Finding("log", name, path, "a commit older than the newest is damaged; "
                        "restore this file from a backup")
            )  # fmt: skip
    return findings


def _check_data(table: DeltaTable, folder: str, name: str, grace: timedelta) -> list[Finding]:
    findings = []
    actions = pa.table(table.get_add_actions(flatten=True)).to_pylist()
    listed = set()
    for action in actions:
        path = os.path.join(folder, action["path"])
        listed.add(os.path.normpath(path))
        column = layout()[name].time
        low, high = action.get(f"min.{column}"), action.get(f"max.{column}")
        held = f"rows of snapshots from {low} to {high}" if low else "rows"
        if not os.path.exists(path):
            findings.append(
                Finding("missing", name, path, f"listed by the table but gone: its {held} are "
                        "lost; repair removes it from the table", repairable=True)
            )  # fmt: skip
        elif not _readable(path):
            findings.append(
                Finding("damaged", name, path, f"not a readable Parquet file: its {held} are "
                        "lost; repair sets it aside and removes it from the table", repairable=True)
            )  # fmt: skip
    limit = time.time() - grace.total_seconds()
    for current, folders, names in os.walk(folder):
        folders[:] = [f for f in folders if f != "_delta_log"]
        for n in names:
            path = os.path.normpath(os.path.join(current, n))
            if path in listed or os.path.getmtime(path) > limit:
                continue
            if n.endswith(".tmp") or "#" in n:
                findings.append(Finding("temporary", name, path, "left by a stopped write",
                                        repairable=True))  # fmt: skip
            elif n.endswith(".parquet"):
                findings.append(
                    Finding("orphaned", name, path, "in no version of the table (a stopped "
                            "write, or merged away and not yet vacuumed)", repairable=True)
                )  # fmt: skip
    return findings


def _set_aside(findings: list[Finding], root: str, quarantine: str) -> None:
    for finding in findings:
        if not os.path.exists(finding.path):
            finding.moved_to = "(nothing to move)"
            continue
        target = os.path.join(quarantine, os.path.relpath(finding.path, root))
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.move(finding.path, target)
        finding.moved_to = target


def _parses(path: str) -> bool:
    try:
        with open(path, encoding="utf-8") as handle:
            lines = [line for line in handle if line.strip()]
        return bool(lines) and all(isinstance(json.loads(line), dict) for line in lines)
    except (OSError, ValueError):
        return False


def _readable(path: str) -> bool:
    try:
        pq.read_metadata(path)
        return True
    except Exception:
        return False

"""`toolkit store check [--store PATH] [--repair]`: what is damaged in a store, said in
snapshots, and with `--repair` what can be done about it.

Past 400 lines on purpose: each kind of damage below is found (and repaired) by
functions reading the same Delta log, and one report gathers them.

Each finding is said once, with the snapshots it touches (from when to when) and what
`--repair` does about it:

- **checkpoint**: a checkpoint that does not read, or a `_last_checkpoint` that does
  not parse or names no checkpoint there. Repair sets it aside: the table is read from
  its JSON commits again, every snapshot comes back.
- **log**: a commit file that does not parse. The newest can be dropped (repair does;
  the snapshots it held are then lost, named); an older one cannot, but a snapshot's
  append is written again without its rows (its snapshots named lost, likewise); any
  other reads only once restored from a backup, and so does a table whose whole
  `_delta_log` is gone.
- **unreadable**: a data file this user may not read (permissions); repair leaves it.
- **foreign** (a commit no toolkit made, such as a `DELETE`, `UPDATE` or `OPTIMIZE` run
  with another engine, on a snapshot table, the events table or the manifest): repair
  undoes it, restoring the table to the toolkit's last commit before it (`undo`), so
  every snapshot whose rows are still on disk is kept; the finding prints that restore
  as a command, which works when followed by hand. When the toolkit committed after it,
  it is repaired as a lost file is.
- **lost** (a data file the table lists is missing, does not decode, or is not the file
  its log lists: another size, row count or range of values): the snapshots whose rows
  the file held would read other than they were taken, and so would the ones after them
  up to the next full snapshot (their states are built on those rows). Repair removes
  the file from its table and those snapshots from the manifest: they are named lost,
  and every other snapshot reads exactly as taken. Restore the file from a backup
  instead to keep them.

- **missing**, **commit**, **unbased** (a snapshot's commits disagree with its
  manifest row, see `ledger`): repair removes it and the ones built on it (on the
  events table, which no snapshot is built on, it removes none: it records the lost
  events' commits as settled); and **uncommitted** (a snapshot's rows without a
  manifest row): repair records it lost.

Repair records what it settled in its manifest commit's metadata, so it is not
reported again. Each damage is one finding.

Not damage: files no version lists any more (merged away, waiting for the daily vacuum),
files of a write that stopped and stray files (vacuum removes them after the
retention). They are counted in a note, never moved. Repair moves what it sets aside
to `<root>/_quarantine/<time>/` and deletes quarantine folders older than
`QUARANTINE_DAYS`.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import cache, partial
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from deltalake import CommitProperties, DeltaTable, write_deltalake

from toolkit.errors import StoreError
from toolkit.formatting import first_line, utc_second
from toolkit.frames import schema
from toolkit.store.columns import MANIFEST_STORED
from toolkit.store.ledger import (
    EVENTS,
    OPERATION_KEY,
    SETTLED_KEY,
    Disagreement,
    Ledger,
    recorded_commits,
    recorded_in,
)
from toolkit.store.maintenance import layout
from toolkit.store.rotation import CheckRotation
from toolkit.store.tables import SNAPSHOT_AT_KEY, Tables
from toolkit.store.undo import restore_advice, undo
from toolkit.timestamps import utc

__all__ = ["QUARANTINE_DAYS", "Span", "StoreFinding", "check", "check_report"]

_QUARANTINE = "_quarantine"
QUARANTINE_DAYS = 7
Span = tuple[datetime, datetime]
# What repair does about a snapshot whose commits do not match what it recorded.
_REMOVES = (
    "removes {them}, and the ones after up to the next full snapshot (built on {its} rows), "
    "from the manifest"
)


@dataclass
class StoreFinding:
    """One thing wrong with the store, the snapshots it touches, and what repair does."""

    kind: str  # checkpoint | log | lost | unreadable | foreign | missing | commit | ...
    table: str
    path: str
    what: str
    repair: str
    repairable: bool = False
    spans: list[Span] = field(default_factory=list)  # times of the rows it touches
    lost: list[tuple[str, datetime]] = field(default_factory=list)  # (id, time)
    also: list[str] = field(default_factory=list)  # more files repair sets aside
    rewrite: str | None = None  # what repair writes in place of the file it sets aside
    done: str | None = None
    settles: list[str] = field(default_factory=list)  # what repair records as settled

    def __str__(self) -> str:
        wrong = "not read" if self.kind == "uncommitted" else "read wrong"
        touched = f"; {_snapshots(self.lost)} {wrong}" if self.lost and not self.done else ""
        then = f"repaired: {self.done}" if self.done else f"--repair {self.repair}"
        return f"{self.kind}: {self.path} ({self.table}): {self.what}{touched}. {then}"


@dataclass
class _Report:
    findings: list[StoreFinding]
    notes: list[str]


def check(
    root: str, *, repair: bool = False, grace: timedelta = timedelta(hours=1)
) -> list[StoreFinding]:
    """What is wrong with a local store; with `repair`, what can be done is done.

    `check_report` gives the notes too. The module's docstring lists the findings.

    Args:
        root: The store's folder (a `file://` URI works too).
        repair: Repair what can be repaired, setting files aside under
            `<root>/_quarantine/`.
        grace: Files no version lists that are younger than this are taken as a write
            still going on, and not counted in the notes.

    Returns:
        One finding per damage, each naming the snapshots it touches and what repair
        does (or did) about it.

    Raises:
        StoreError: `root` is a remote URI or not a folder.
    """
    return check_report(root, repair=repair, grace=grace).findings


def check_report(
    root: str,
    *,
    repair: bool = False,
    grace: timedelta = timedelta(hours=1),
    rotation: CheckRotation | None = None,
) -> _Report:
    """`check`, with the notes: what is not damage but worth knowing (unlisted files,
    quarantine folders emptied).

    Args:
        root: The store's folder (a `file://` URI works too).
        repair: Repair what can be repaired, setting files aside under
            `<root>/_quarantine/`.
        grace: Files no version lists that are younger than this are taken as a write
            still going on, and not counted in the notes.
        rotation: Bounds the check (the watch's): only the data files it chooses are
            read whole, every other is checked by its size; the rest of the check is
            whole (`toolkit.store.rotation`).

    Returns:
        The findings and the notes.

    Raises:
        StoreError: `root` is a remote URI or not a folder.
    """
    if "://" in root and not root.startswith("file://"):
        raise StoreError(
            f"toolkit store check reads local folders; for {root!r} run it on a copy, or "
            "use your object store's listing with DeltaTable(...).get_add_actions()"
        )
    root = os.path.abspath(root.removeprefix("file://"))
    if not os.path.isdir(root):
        raise StoreError(f"no store at {root!r}: it is not a folder")
    quarantine = os.path.join(root, _QUARANTINE, datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ"))
    findings: list[StoreFinding] = []
    notes: list[str] = []
    undone = _undo_foreign(root) if repair else []
    # The manifest's rows, read once a check (0.1 s each at 100,000 chapters x a year,
    # and three readers); each reader reads it anew when repairing, which changes it.
    read_manifest = partial(_readable_manifest, os.path.join(root, "manifest"))
    manifest = read_manifest if repair else cache(read_manifest)
    for name in layout():
        folder = os.path.join(root, name)
        if os.path.isdir(os.path.join(folder, "_delta_log")):
            findings.extend(_check_table(folder, name, repair, quarantine, grace, notes, rotation))
        elif _without_log(name, manifest):
            findings.append(
                StoreFinding("log", name, os.path.join(folder, "_delta_log"),
                        "the table's log is gone (snapshots committed to it): without it, "
                        "which data files hold committed rows cannot be told",
                        "cannot rebuild it: restore the folder's `_delta_log` from a backup",
                        spans=[(datetime.min.replace(tzinfo=UTC),
                                datetime.max.replace(tzinfo=UTC))])
            )  # fmt: skip
    uncommitted = _check_ledger(root, findings, manifest)
    findings.extend(undone)
    _name_lost(root, findings, uncommitted, repair, manifest)
    if repair:
        notes.extend(_empty_old_quarantine(root))
    if rotation is not None:
        rotation.save()
    return _Report(findings, notes)


def _check_table(
    folder: str,
    name: str,
    repair: bool,
    quarantine: str,
    grace: timedelta,
    notes: list[str],
    rotation: CheckRotation | None,
) -> list[StoreFinding]:
    findings = _check_checkpoints(folder, name) + _check_log(folder, name)
    for finding in findings:
        if finding.kind == "log" and finding.repairable:
            finding.spans = _dropped_span(finding.path, folder)
            if name == "manifest" and finding.spans:
                low, high = finding.spans[0]
                taken = "at" if low == high else "after"
                finding.what += f": the snapshot it committed, taken {taken} {utc_second(low)}"
            if name == "manifest":
                finding.what += ", is lost (take it again)"
    if repair:
        for finding in findings:
            if finding.repairable:
                _set_aside(finding, quarantine)
    try:
        table = DeltaTable(folder)
    except Exception as error:
        if not findings:
            findings.append(
                StoreFinding("log", name, os.path.join(folder, "_delta_log"),
                        f"the table's log cannot be read ({first_line(error)})",
                        "cannot rebuild it: restore the folder from a backup")
            )  # fmt: skip
        return findings
    data = _check_data(table, folder, name, rotation)
    findings.extend(data)
    settled = [finding for finding in data if finding.repairable]
    if repair and settled:
        for finding in settled:
            _set_aside(finding, quarantine)
        table.repair(
            dry_run=False,
            commit_properties=CommitProperties(custom_metadata={OPERATION_KEY: "repair"}),
        )
    waiting = _unlisted(table, folder, grace)
    if waiting:
        notes.append(
            f"{name}: {waiting} file(s) no version lists (merged away or left by a "
            "stopped write) wait for the daily vacuum; not damage"
        )
    return findings


def _without_log(name: str, manifest: Callable[[], pa.Table]) -> bool:
    """Whether a table folder has no log although snapshots committed to it (a first
    write that stopped leaves data files and no log too: not damage)."""
    if name not in schema.SNAPSHOT_TABLES:
        return False
    return bool(len(recorded_in(recorded_commits(manifest()), name)))


def _check_checkpoints(folder: str, name: str) -> list[StoreFinding]:
    log = os.path.join(folder, "_delta_log")
    bad = [
        os.path.join(log, n)
        for n in sorted(os.listdir(log))
        if ".checkpoint" in n and n.endswith(".parquet") and not _readable(os.path.join(log, n))
    ]
    pointer = os.path.join(log, "_last_checkpoint")
    if not bad and (not os.path.exists(pointer) or _points_at_a_checkpoint(pointer, log)):
        return []
    first = min((n for n in os.listdir(log) if n.endswith(".json")), default="")
    rebuilt = first.startswith("0" * 20)
    finding = StoreFinding(
        "checkpoint", name, bad[0] if bad else pointer,
        "a checkpoint of the table's log does not read, so the table does not"
        if bad
        else "`_last_checkpoint` does not name a checkpoint that is there, so the table "
        "does not read",
        "sets it aside with `_last_checkpoint`: the table is read from its commits again "
        "and every snapshot comes back"
        if rebuilt
        else "cannot rebuild it (the commits before it were cleaned up): restore the "
        "checkpoint from a backup",
        repairable=rebuilt,
    )  # fmt: skip
    if bad:
        finding.also = [*bad[1:], pointer]
    return [finding]


def _points_at_a_checkpoint(pointer: str, log: str) -> bool:
    """Whether `_last_checkpoint` parses and the checkpoint it names is there."""
    try:
        with open(pointer, encoding="utf-8") as handle:
            version = int(json.loads(handle.read())["version"])
    except (OSError, ValueError, KeyError, TypeError):
        return False
    prefix = f"{version:020}.checkpoint"
    return any(n.startswith(prefix) and n.endswith(".parquet") for n in os.listdir(log))


def _check_log(folder: str, name: str) -> list[StoreFinding]:
    log = os.path.join(folder, "_delta_log")
    commits = sorted(n for n in os.listdir(log) if n.endswith(".json") and n[:20].isdigit())
    newest = commits[-1] if commits else None
    findings = []
    for n in commits:
        if _parses(os.path.join(log, n)):
            continue
        path = os.path.join(log, n)
        kept = _append_without_its_rows(path)
        if n == newest:
            findings.append(
                StoreFinding("log", name, path, "the newest commit does not parse",
                        "drops it: the snapshots whose rows it held are lost", repairable=True)
            )  # fmt: skip
        elif kept is not None:
            # A snapshot's append (it removed nothing): written again without its rows,
            # the table reads, and its snapshot is lost like a dropped newest commit's.
            findings.append(
                StoreFinding("log", name, path, "a commit older than the newest does not parse",
                        "writes it again without the rows it added: the snapshots whose rows "
                        "it held are lost", repairable=True, rewrite=kept)
            )  # fmt: skip
        else:
            findings.append(
                StoreFinding("log", name, path, "a commit older than the newest does not parse: "
                        "the table reads only once it is restored",
                        "cannot rebuild it: restore this file from a backup")
            )  # fmt: skip
    return findings


def _append_without_its_rows(path: str) -> str | None:
    """A damaged commit of a snapshot's append, without its `add` actions and the lines
    that no longer parse; None when the commit is not known to be one (its first line,
    the commit info, does not parse or names no snapshot, or it was not an append)."""
    with contextlib.suppress(OSError, ValueError), open(path, encoding="utf-8") as handle:
        lines = handle.read().splitlines()
        info = json.loads(lines[0]).get("commitInfo", {}) if lines else {}
        if SNAPSHOT_AT_KEY not in info or info.get("operationParameters", {}).get("mode") != (
            "Append"
        ):
            return None
        kept = []
        for line in lines:
            with contextlib.suppress(ValueError):
                action = json.loads(line)
                if isinstance(action, dict) and "add" not in action:
                    kept.append(line)
        return "\n".join(kept) + "\n"
    return None


def _check_data(
    table: DeltaTable, folder: str, name: str, rotation: CheckRotation | None
) -> list[StoreFinding]:
    findings = []
    column = layout()[name].time
    actions = pa.table(table.get_add_actions(flatten=True)).to_pylist()
    paths = [os.path.join(folder, action["path"]) for action in actions]
    whole = set(paths) if rotation is None else rotation.to_read(paths)
    for action, path in zip(actions, paths, strict=True):
        if os.path.exists(path) and not os.access(path, os.R_OK):
            findings.append(
                StoreFinding("unreadable", name, path, "a data file the table lists may not be "
                        "read by this user (permission denied); nothing is lost",
                        "cannot change permissions: give this user read access to it "
                        "(chmod or chown), then check again")
            )  # fmt: skip
            continue
        damage = _damage_of(path, action, column, whole=path in whole)
        if rotation is not None and path in whole:
            if damage is None:
                rotation.read_sound(path)
            else:
                rotation.read_damaged(path)
        if damage is None:
            continue
        low, high = action.get(f"min.{column}"), action.get(f"max.{column}")
        spans = [(utc(low), utc(high))] if low is not None and high is not None else []
        rows = "events" if name == "events" else "rows"
        when = "".join(f" from {utc_second(lo)} to {utc_second(hi)}" for lo, hi in spans)
        findings.append(
            StoreFinding("lost", name, path, f"a data file the table lists is {damage}: its {rows}"
                    f"{when} are lost", "removes it from the table and the snapshots that "
                    "read it from the manifest (restore the file from a backup instead to "
                    "keep them)", repairable=True, spans=spans)
        )  # fmt: skip
    return findings


def _damage_of(path: str, action: dict[str, Any], column: str, *, whole: bool) -> str | None:
    """What is wrong with a data file the table lists, None when nothing: it must be
    there, the size the log records, and (read `whole`) decode, and hold the rows and
    values the log's statistics say (a flipped byte that still decodes shows as a value
    out of range)."""
    if not os.path.exists(path):
        return "missing"
    if os.path.getsize(path) != action["size_bytes"]:
        return "another file than its log lists (of another size)"
    return _content_damage(path, action, column) if whole else None


def _content_damage(path: str, action: dict[str, Any], column: str) -> str | None:
    """What reading a data file whole shows wrong against its log: it does not decode,
    or its rows or values are not those the log's statistics record."""
    try:
        # Texts kept as dictionaries: every page is still decoded, but no text is made
        # (half the time; only numbers and times are held against the log).
        texts = [f.name for f in pq.read_schema(path) if f.type in (pa.string(), pa.large_string())]
        rows = pq.read_table(path, read_dictionary=texts)
    except Exception:
        return "not a readable Parquet file"
    if rows.num_rows != action["num_records"]:
        return "another file than its log lists (of another row count)"
    for name in rows.column_names:
        low, high = action.get(f"min.{name}"), action.get(f"max.{name}")
        values = rows.column(name)
        integers = pa.types.is_integer(values.type)
        if low is None or high is None or not (integers or name == column):
            continue  # texts: the log keeps only their first characters
        found = pc.min_max(values).as_py()
        if found["min"] is None:
            continue
        if integers:
            wrong = (found["min"], found["max"]) != (low, high)
        else:  # the log keeps times to the millisecond
            wrong = not (utc(low) - _MS <= utc(found["min"]) <= utc(found["max"])
                         <= utc(high) + _MS)  # fmt: skip
        if wrong:
            return f"damaged (its {name} values are not those its log records)"
    return None


_MS = timedelta(milliseconds=1)


def _commits(folder: str) -> Iterator[tuple[int, list[dict[str, Any]]]]:
    log = os.path.join(folder, "_delta_log")
    for n in sorted(os.listdir(log)):
        if n.endswith(".json") and n[:20].isdigit():
            try:
                with open(os.path.join(log, n), encoding="utf-8") as handle:
                    actions = [json.loads(line) for line in handle if line.strip()]
            except (OSError, ValueError):
                continue  # a damaged commit is its own finding
            yield int(n[:20]), actions


def _check_ledger(
    root: str, findings: list[StoreFinding], read_manifest: Callable[[], pa.Table]
) -> list[StoreFinding]:
    """Where the manifest and the tables' logs disagree (`ledger`): missing, changed and
    foreign commits, snapshots built on one without a manifest row. Tables with a
    damaged log or checkpoint are left out (that finding says it). Returns the
    snapshots with table commits but no manifest row, one finding each, apart."""
    damaged = {f.table for f in findings if f.kind in ("checkpoint", "log")}
    names = [n for n in (*schema.SNAPSHOT_TABLES, EVENTS) if n not in damaged]
    tables = Tables(root)
    tables.begin()
    try:
        manifest = read_manifest()
        problems = Ledger(tables).verify(manifest, names)
    except StoreError:
        return []
    at = [utc(t) for t in manifest.column("snapshot_at").to_pylist()]
    times = dict(zip(manifest.column("snapshot_id").to_pylist(), at, strict=True))
    uncommitted: dict[str, StoreFinding] = {}
    if any(p.kind == "foreign" and p.table == "manifest" for p in problems):
        # The manifest's rows were changed by another engine: what the other checks
        # compare against is that commit's doing (undoing it brings the rows back), so
        # it alone is said until it is undone.
        problems = [p for p in problems if p.kind == "foreign"]
    for problem in problems:
        log = os.path.join(root, problem.table, "_delta_log")
        if problem.version is not None:
            log = os.path.join(log, f"{problem.version:020}.json")
        path = log
        if problem.kind == "uncommitted":
            _add_uncommitted(uncommitted, problem, path)
        elif problem.kind == "foreign":
            assert problem.version is not None
            findings.append(_foreign(root, problem, path))
        elif problem.table == EVENTS:
            # No snapshot is built on the events: the events lost are named, and the
            # snapshots' records of them settled, so later checks pass.
            findings.append(
                StoreFinding(problem.kind, EVENTS, path, problem.what,
                        "records the loss (restore the events table's log from a backup "
                        "first to keep those events); no snapshot is touched",
                        repairable=True,
                        settles=[f"{EVENTS}@{i}" for i in problem.snapshot_ids])
            )  # fmt: skip
        else:
            spans = [(times[i], times[i]) for i in problem.snapshot_ids if i in times]
            them = "it" if len(spans) == 1 else "them"
            findings.append(
                StoreFinding(problem.kind, problem.table, path, problem.what,
                        _REMOVES.format(them=them, its="its" if them == "it" else "their")
                        + " (restore the table's log from a backup first to keep "
                        f"{them})", repairable=True, spans=spans)
            )  # fmt: skip
    return list(uncommitted.values())


def _add_uncommitted(found: dict[str, StoreFinding], problem: Disagreement, path: str) -> None:
    """One finding per snapshot without a manifest row, naming every table holding it."""
    (snapshot_id,) = problem.snapshot_ids
    finding = found.get(snapshot_id)
    if finding is not None:
        finding.table += f", {problem.table}"
        return
    at = _commit_time(path)
    when = f" taken {utc_second(at)}" if at else ""
    found[snapshot_id] = StoreFinding(
        "uncommitted", problem.table, path,
        f"snapshot {snapshot_id}{when} has rows in the tables but no manifest row: a take "
        "stopped before committing it, or the manifest's commit of it was lost; it is not "
        "read", "records it as lost (take a snapshot again to have that time)",
        repairable=True, lost=[(snapshot_id, at or datetime.min.replace(tzinfo=UTC))],
    )  # fmt: skip


def _commit_time(path: str) -> datetime | None:
    with contextlib.suppress(OSError, ValueError), open(path, encoding="utf-8") as handle:
        at = json.loads(handle.readline()).get("commitInfo", {}).get(SNAPSHOT_AT_KEY)
        return _parse(str(at)) if at else None
    return None


def _foreign(root: str, problem: Disagreement, path: str) -> StoreFinding:
    """A foreign commit, with the times of the rows it removed or added."""
    assert problem.version is not None
    version, name = problem.version, problem.table
    column = layout()[name].time
    spans: dict[str, Span] = {}
    touched: list[Span] = []
    for number, actions in _commits(os.path.join(root, name)):
        for action in actions:
            add = action.get("add")
            if add:
                stats = json.loads(add.get("stats") or "{}")
                low = stats.get("minValues", {}).get(column)
                high = stats.get("maxValues", {}).get(column)
                if low and high:
                    spans[add["path"]] = (_parse(low), _parse(high))
            if number == version:
                path_of = (action.get("remove") or action.get("add") or {}).get("path")
                if path_of in spans:
                    touched.append(spans[path_of])
    if not touched:  # its files' statistics were cleaned from the log: say all of it
        touched = [(datetime.min.replace(tzinfo=UTC), datetime.max.replace(tzinfo=UTC))]
    low, high = min(s[0] for s in touched), max(s[1] for s in touched)
    if problem.restore_to is not None:
        back = problem.restore_to
        return StoreFinding(
            "foreign", name, path,
            f"{problem.what}; it changed rows from {utc_second(low)} to {utc_second(high)}",
            f"undoes it: restores {name} to version {back}, the toolkit's last commit, and "
            "keeps every snapshot whose rows are still there (or do it yourself: "
            f"`{restore_advice(os.path.join(root, name), back)}`)",
            repairable=True, spans=[(low, high)],
        )  # fmt: skip
    return StoreFinding(
        "foreign", name, path,
        f"{problem.what}; it changed rows from {utc_second(low)} to {utc_second(high)}",
        "removes the snapshots that read those rows from the manifest (to keep them, "
        f"restore the table to version {version - 1} first: "
        f"`DeltaTable(...).restore({version - 1})`)",
        repairable=True, spans=[(low, high)],
    )  # fmt: skip


def _undo_foreign(root: str) -> list[StoreFinding]:
    """Each table's foreign commits undone by restoring it to the toolkit's last commit
    before them (`undo`), where that drops no commit of the toolkit's; one finding per
    table, already repaired. A table this cannot be done for is left to the usual check."""
    tables = Tables(root)
    tables.begin()
    try:
        manifest = _readable_manifest(os.path.join(root, "manifest"))
        problems = Ledger(tables).verify(manifest, [*schema.SNAPSHOT_TABLES, EVENTS])
    except Exception:  # a damaged table or manifest: its own finding, found below
        return []
    found: dict[str, list[Disagreement]] = {}
    for problem in problems:
        if problem.kind == "foreign" and problem.restore_to is not None:
            found.setdefault(problem.table, []).append(problem)
    undone = []
    for name, foreign in found.items():
        back = min(p.restore_to for p in foreign if p.restore_to is not None)
        versions = sorted(p.version for p in foreign if p.version is not None)
        folder = os.path.join(root, name)
        try:
            at = undo(folder, back, [f"{name}:{v}" for v in versions])
        except Exception as error:  # left to the usual check, which names it
            undone.append(
                StoreFinding("foreign", name, folder, f"the undo failed ({first_line(error)})",
                        f"restore it yourself: `{restore_advice(folder, back)}`")
            )  # fmt: skip
            continue
        log = os.path.join(folder, "_delta_log")
        for problem in foreign:
            undone.append(
                StoreFinding("foreign", name, os.path.join(log, f"{problem.version:020}.json"),
                        problem.what, "", repairable=True,
                        done=f"undone: {name} restored to version {back}, "
                        f"the toolkit's last commit before it (commit {at}); every snapshot "
                        "whose rows are still there is kept")
            )  # fmt: skip
    return undone


def _name_lost(
    root: str,
    findings: list[StoreFinding],
    uncommitted: list[StoreFinding],
    repair: bool,
    read_manifest: Callable[[], pa.Table],
) -> None:
    """Name the snapshots each finding makes read wrong: those with rows in its spans and
    the ones after them up to the next full snapshot; with `repair`, remove them from
    the manifest and record what was settled (one commit). A snapshot without a manifest
    row whose time a lost manifest file or commit covers is that finding's, not its own."""
    manifest = read_manifest()
    ids = manifest.column("snapshot_id").to_pylist()
    times = [utc(t) for t in manifest.column("snapshot_at").to_pylist()]
    full = pc.fill_null(manifest.column("full"), False).to_pylist()
    every: set[str] = set()
    for finding in findings:
        if not finding.spans:
            continue
        hit: list[tuple[str, datetime]] = []
        for low, high in finding.spans:
            # A manifest file's or commit's own rows are what was lost (they are not read
            # any more); elsewhere the snapshots with rows in the span. Then the ones
            # after, built on those rows, up to the next full snapshot.
            own = finding.table == "manifest" and finding.kind in ("lost", "log")
            inside = [] if own else [i for i, t in enumerate(times) if low <= t <= high]
            later = [i for i, t in enumerate(times) if t > high]
            for i in later:
                if full[i]:
                    break
                inside.append(i)
            hit.extend((ids[i], times[i]) for i in inside)
        finding.lost = sorted(set(hit), key=lambda x: x[0])
        every.update(i for i, _ in finding.lost)
    # A snapshot built on one a lost manifest file or commit held is that finding's,
    # named once.
    named = {i for f in findings if f.kind != "unbased" for i, _ in f.lost}
    findings[:] = [f for f in findings if f.kind != "unbased" or {i for i, _ in f.lost} - named]
    for orphan in uncommitted:
        at = orphan.lost[0][1]
        owner = next((f for f in findings if f.table == "manifest" and f.kind in ("lost", "log")
                      and any(lo <= at <= hi for lo, hi in f.spans)), None)  # fmt: skip
        if owner is not None:
            owner.lost = sorted({*owner.lost, *orphan.lost}, key=lambda x: x[0])
        else:
            findings.append(orphan)
    if repair:
        settled = [f"snapshot:{i}" for f in findings if f.repairable for i, _ in f.lost]
        settled += [
            f"{f.table}:{int(os.path.basename(f.path)[:20])}"
            for f in findings
            if f.kind == "foreign"
        ]
        settled += [key for f in findings if f.repairable for key in f.settles]
        if settled:
            _settle(root, every, settled)
    for finding in findings:
        if repair and finding.repairable:
            removed = every & {i for i, _ in finding.lost}
            gone = f"{_snapshots(finding.lost)} " + (
                "removed from the manifest" if removed else "recorded as lost"
            )
            finding.done = ", ".join(x for x in (finding.done, gone if finding.lost else "") if x)
            finding.done = finding.done or "recorded"


def _settle(root: str, remove: set[str], settled: list[str]) -> None:
    """One manifest commit removing snapshots `remove` and recording `settled` (what
    this repair dealt with, so that readers and later checks pass it)."""
    table = DeltaTable(os.path.join(root, "manifest"))
    metadata = {OPERATION_KEY: "repair", SETTLED_KEY: json.dumps(sorted(set(settled)))}
    properties = CommitProperties(custom_metadata=metadata)
    if remove:
        listed = ", ".join("'" + i.replace("'", "''") + "'" for i in sorted(remove))
        table.delete(f"snapshot_id IN ({listed})", commit_properties=properties)
    else:  # nothing to remove: an empty commit carries the record
        write_deltalake(table, MANIFEST_STORED.empty_table(), mode="append",
                        commit_properties=properties)  # fmt: skip


def _readable_manifest(folder: str) -> pa.Table:
    """The manifest's rows from the files that read (a damaged one is its own finding)."""
    try:
        table = DeltaTable(folder)
    except Exception:
        return MANIFEST_STORED.empty_table()
    parts = []
    for uri in table.file_uris():
        with contextlib.suppress(Exception):
            parts.append(schema.conform(pq.read_table(uri.removeprefix("file://")),
                                        MANIFEST_STORED))  # fmt: skip
    rows = pa.concat_tables(parts) if parts else MANIFEST_STORED.empty_table()
    return rows.sort_by("snapshot_id")


def _dropped_span(path: str, folder: str) -> list[Span]:
    """The times of the rows a dropped newest commit held: its snapshot's, when its
    first line still reads; none for a merge (it replaced rows with the same rows);
    else every snapshot after the newest the remaining commits hold."""
    with contextlib.suppress(OSError, ValueError), open(path, encoding="utf-8") as handle:
        info = json.loads(handle.readline()).get("commitInfo", {})
        if info.get(OPERATION_KEY) == "merge":
            return []
        if SNAPSHOT_AT_KEY in info:
            at = _parse(str(info[SNAPSHOT_AT_KEY]))
            return [(at, at)]
    return [(_newest_snapshot_time(folder), datetime.max.replace(tzinfo=UTC))]


def _newest_snapshot_time(folder: str) -> datetime:
    """Just after the newest snapshot the table's remaining commits hold."""
    newest = datetime.min.replace(tzinfo=UTC)
    for _, actions in _commits(folder):
        for action in actions:
            at = action.get("commitInfo", {}).get(SNAPSHOT_AT_KEY)
            if at:
                newest = max(newest, _parse(str(at)))
    return newest + timedelta(microseconds=1)


def _unlisted(table: DeltaTable, folder: str, grace: timedelta) -> int:
    listed = {os.path.normpath(u.removeprefix("file://")) for u in table.file_uris()}
    limit = time.time() - grace.total_seconds()
    count = 0
    for current, folders, names in os.walk(folder):
        folders[:] = [f for f in folders if f != "_delta_log"]
        for n in names:
            path = os.path.normpath(os.path.join(current, n))
            if path not in listed and os.path.getmtime(path) <= limit:
                count += 1
    return count


def _set_aside(finding: StoreFinding, quarantine: str) -> None:
    root = os.path.dirname(os.path.dirname(quarantine))
    moved = []
    for path in [finding.path, *finding.also]:
        if os.path.exists(path):
            target = os.path.join(quarantine, os.path.relpath(path, root))
            os.makedirs(os.path.dirname(target), exist_ok=True)
            shutil.move(path, target)
            moved.append(target)
    if finding.rewrite is not None:
        with open(finding.path, "w", encoding="utf-8") as handle:
            handle.write(finding.rewrite)
    written = " and written again without its rows" if finding.rewrite is not None else ""
    finding.done = f"moved to {moved[0]}{written}" if moved else "removed from the table"


def _empty_old_quarantine(root: str) -> list[str]:
    folder = os.path.join(root, _QUARANTINE)
    if not os.path.isdir(folder):
        return []
    limit = time.time() - QUARANTINE_DAYS * 86400
    removed = 0
    for n in os.listdir(folder):
        path = os.path.join(folder, n)
        if os.path.isdir(path) and os.path.getmtime(path) < limit:
            shutil.rmtree(path)
            removed += 1
    kept = f"quarantine kept {QUARANTINE_DAYS} days"
    return [f"{kept}: {removed} older folder(s) deleted"] if removed else []


def _snapshots(lost: list[tuple[str, datetime]]) -> str:
    if not lost:
        return ""
    first, last = lost[0][1], lost[-1][1]
    if len(lost) == 1:
        return f"1 snapshot ({utc_second(first)}: {lost[0][0]})"
    return f"{len(lost)} snapshots from {utc_second(first)} to {utc_second(last)}"


def _parse(text: str) -> datetime:
    return utc(datetime.fromisoformat(text.replace("Z", "+00:00")))


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

"""What each snapshot committed, per table, and the check that the tables still hold it.

Past 400 lines on purpose: every check below (missing, changed, foreign and undone
commits) reads the same parsed commits of a table's log, kept here once per store.

A snapshot's manifest row records in `commits`, for each table it wrote, the Delta
version of its commit and what that commit added: rows, data files and their bytes (from
the commit's `add` actions). Every store commit also carries the snapshot's id in its
commit metadata. So the manifest and the tables witness each other, and a reader checks
both against the tables' logs, never reading a data file:

- **missing**: a snapshot committed a table's rows as a version the table's log does not
  reach (the newest commit deleted), or to a table that has no log at all;
- **commit**: the commit at a recorded version does not add what the snapshot recorded
  (truncated, rewritten) or belongs to another snapshot;
- **foreign**: a commit no toolkit made (another engine's `DELETE`, say), unless a later
  `RESTORE` undid it (one made by hand, or by `check --repair`): a `RESTORE` to version
  `t` undoes the commits after `t` when none of them is the toolkit's, and is then no
  finding either;
- **unbased**: a snapshot built on another that has no manifest row (the manifest's
  commit of that one was lost);
- **events**: the events table, which no snapshot writes, against each snapshot's
  record of its newest commit as the take found it (*missing* or *commit* above, naming
  the snapshots whose record disagrees), and its foreign commits;
- **uncommitted**: a table commit of a snapshot without a manifest row. A take stopped
  before its manifest row leaves one, and so does a lost manifest commit; it reads as
  though the snapshot was never taken, so readers pass it and `check` names it.

Only the commits still in the log (log cleanup keeps a retention's worth) are checked;
each is read once per store object, since a commit never changes. Commits that an
earlier repair dealt with (`SETTLED_KEY` on the manifest's repair commits: foreign
commits as `table:version`, snapshots named lost as `snapshot:<id>`) are not findings.
Snapshots taken before `commits` existed have it null and are checked only for foreign
and uncommitted commits. On an object store only *missing* is checked (the log's files
are read directly on a local disk only; see `_read_commit`).
"""

from __future__ import annotations

import io
import json
import os
import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pa_json

from toolkit.frames import schema
from toolkit.store.tables import SNAPSHOT_AT_KEY, SNAPSHOT_ID_KEY, Tables

__all__ = [
    "COMMITS",
    "COMMITS_TYPE",
    "EVENTS",
    "OPERATION_KEY",
    "SETTLED_KEY",
    "Commit",
    "Disagreement",
    "Kind",
    "Ledger",
    "keeps_rows",
    "newest_witness",
    "recorded_commits",
    "recorded_in",
    "witness_of",
]

COMMITS = "commits"
OPERATION_KEY = "toolkit.operation"
# On a repair's manifest commit: the commits and snapshots it dealt with.
SETTLED_KEY = "toolkit.settled"
# Commits delta-rs makes for the toolkit's own maintenance without its metadata.
_MAINTENANCE = {"VACUUM START", "VACUUM END", "FSCK", "CREATE TABLE"}
_VACUUM = {"VACUUM START", "VACUUM END"}
# Commits kept in memory per table (a week of hourly snapshots and their maintenance).
_KEPT = 2000
_WITNESS = pa.struct(
    [
        pa.field("version", pa.int64()),
        pa.field("rows", pa.int64()),
        pa.field("files", pa.int64()),
        pa.field("bytes", pa.int64()),
    ]
)
# Stored as JSON text, `{"chapters": {"version": ..., "rows": ..., "files": ...,
# "bytes": ...}, "projects": null, ...}`: as a struct its 16 leaf columns made every
# manifest append some 9 ms slower (1.8x; delta-rs writes statistics per leaf), the
# text 1.5 ms. DuckDB, Spark and Trino read it with their JSON functions.
COMMITS_TYPE = pa.string()
# The webhook events table: its commits belong to no snapshot, so each snapshot records the
# events table's newest commit as it found it (a witness that a later deletion cannot
# erase), and its commits are marked by the toolkit like the others.
EVENTS = "events"
_PARSED = pa.schema([pa.field(name, _WITNESS) for name in (*schema.SNAPSHOT_TABLES, EVENTS)])
Kind = Literal["missing", "commit", "foreign", "unbased", "uncommitted"]


@dataclass(frozen=True)
class Commit:
    """One commit of a table's log: its commit info, the snapshot it names, and what its
    `add` actions added (rows, files, bytes)."""

    version: int
    info: dict[str, Any]
    rows: int | None
    files: int | None
    bytes: int | None
    removes: int = 0

    @property
    def restored_to(self) -> int | None:
        """The version a `RESTORE` commit went back to; None for any other commit (or a
        restore to a time, which names no version)."""
        if self.info.get("operation") != "RESTORE":
            return None
        version = (self.info.get("operationParameters") or {}).get("version")
        try:
            return int(version) if version is not None else None
        except (TypeError, ValueError):
            return None

    @property
    def snapshot_id(self) -> str | None:
        found = self.info.get(SNAPSHOT_ID_KEY)
        return str(found) if found else None

    def witness(self) -> dict[str, int | None]:
        """What a manifest row records of this commit."""
        return {"version": self.version, "rows": self.rows, "files": self.files,
                "bytes": self.bytes}  # fmt: skip

    def keeps_rows(self) -> bool:
        """Whether this commit changes no row of its table (`keeps_rows`)."""
        return keeps_rows(self.info)

    def by_toolkit(self) -> bool:
        """Whether a toolkit made this commit (a snapshot's, or its own maintenance)."""
        info = self.info
        return (
            SNAPSHOT_AT_KEY in info
            or OPERATION_KEY in info
            or info.get("operation") in _MAINTENANCE
            or self.version == 0
        )


def keeps_rows(info: Mapping[str, Any]) -> bool:
    """Whether a commit (its `commitInfo`) changes no row of its table: the toolkit's
    merge of a period's files (the same rows in fewer files) or delta-rs' vacuum (files
    no version reads any more)."""
    return info.get(OPERATION_KEY) == "merge" or info.get("operation") in _VACUUM


@dataclass(frozen=True)
class Disagreement:
    """A disagreement between the manifest and a table's log. `snapshot_ids`: the
    snapshots it makes read wrong (for `uncommitted`, the one not committed)."""

    kind: Kind
    table: str
    version: int | None
    snapshot_ids: tuple[str, ...]
    what: str
    # For a foreign commit: the toolkit's last commit before it, when restoring the
    # table to it drops no toolkit commit (none came after the foreign one).
    restore_to: int | None = None


# In an `add` action: the file's size, and its row count inside the stats text. Matched
# rather than parsed: a year's log is read on the first look at a store, and decoding
# every file's statistics cost most of that.
_SIZE = re.compile(r'"size":(\d+)')
_RECORDS = re.compile(r'numRecords\\?":(\d+)')


def _parse_commit(version: int, text: str) -> Commit:
    """A commit file's text as a Commit; ValueError when its commit info does not parse."""
    info: dict[str, Any] = {}
    rows = files = size = removes = 0
    for line in text.splitlines():
        if line.startswith('{"add"'):
            files += 1
            found_size, found_rows = _SIZE.search(line), _RECORDS.search(line)
            size += int(found_size.group(1)) if found_size else 0
            rows += int(found_rows.group(1)) if found_rows else 0
        elif line.startswith('{"remove"'):
            removes += 1
        elif line.startswith('{"commitInfo"'):
            info = json.loads(line)["commitInfo"]
    return Commit(version, info, rows, files, size, removes)


def _read_commit(tables: Tables, name: str, version: int) -> Commit | None:
    """Commit `version` of table `name`; None when it is not in the log, or the store is
    not on a local disk (delta-rs gives no commit's actions, and its `history()` numbers
    the commits of a table another writer moved on wrongly)."""
    if not tables.local:
        return None
    path = os.path.join(tables.uri(name), "_delta_log", f"{version:020}.json")
    try:
        with open(path, encoding="utf-8") as handle:
            return _parse_commit(version, handle.read())
    except (OSError, ValueError):
        return None


def witness_of(
    tables: Tables, name: str, version: int, snapshot_id: str, rows: int
) -> dict[str, Any]:
    """The record of snapshot `snapshot_id`'s commit of `rows` rows to table `name`,
    which delta-rs reports as `version`. On an object store: the version and the rows
    (the commit's files are not read there)."""
    if not tables.local:
        return {"version": version, "rows": rows, "files": None, "bytes": None}
    commit = _read_commit(tables, name, version)
    if commit is not None and commit.snapshot_id == snapshot_id:
        return commit.witness()
    # Another writer committed at the same moment: find the commit naming the snapshot.
    table = tables.get(name)
    if table is not None:
        table.update_incremental()
        for found in range(table.version(), max(table.version() - 100, -1), -1):
            commit = _read_commit(tables, name, found)
            if commit is not None and commit.snapshot_id == snapshot_id:
                return commit.witness()
    raise LookupError(f"no commit of snapshot {snapshot_id} in {tables.uri(name)}")


class Ledger:
    """Each table's retained commits, read once, and the check of a manifest against
    them."""

    def __init__(self, tables: Tables) -> None:
        self._tables = tables
        self._seen: dict[str, dict[int, Commit]] = {}
        self._lock = threading.Lock()

    def commits(self, name: str) -> dict[int, Commit]:
        """The commits still in table `name`'s log, by version (a commit that does not
        parse is left out: delta-rs refuses the table before this is asked)."""
        table = self._tables.get(name)
        if table is None or not self._tables.local:
            return {}  # see `read_commit`
        newest = table.version()
        with self._lock:
            seen = self._seen.setdefault(name, {})
            known = max(seen, default=-1)
        if known >= newest:
            return seen
        log = os.path.join(self._tables.uri(name), "_delta_log")
        versions = (
            range(known + 1, newest + 1)
            if seen
            else sorted(int(n[:20]) for n in os.listdir(log) if _is_commit(n))
        )
        found = [_read_commit(self._tables, name, v) for v in versions if v <= newest]
        with self._lock:
            seen.update({c.version: c for c in found if c is not None})
            # A process that lives for months keeps only the newest: older ones were
            # checked when they were new.
            for version in [v for v in seen if v <= newest - _KEPT]:
                del seen[version]
            return seen

    def settled(self) -> set[str]:
        """What earlier repairs dealt with: `table:version` and `snapshot:<id>`."""
        found: set[str] = set()
        for commit in self.commits("manifest").values():
            listed = commit.info.get(SETTLED_KEY)
            if listed:
                found.update(json.loads(str(listed)))
        return found

    def verify(self, manifest: pa.Table, names: list[str]) -> list[Disagreement]:
        """Where the manifest (its rows in snapshot order) and the logs of tables
        `names` disagree."""
        settled = self.settled()
        problems = _unbased(manifest) + self.foreign("manifest", settled)
        parsed = recorded_commits(manifest)
        for name in names:
            if name == EVENTS:
                problems += self._verify_events(manifest, parsed, settled)
            elif self._tables.get(name) is not None:
                problems += self._verify_table(manifest, parsed, name, settled)
            else:
                problems += _log_gone(manifest, parsed, name)
        return problems

    def _verify_table(
        self, manifest: pa.Table, parsed: pa.Table, name: str, settled: set[str]
    ) -> list[Disagreement]:
        table = self._tables.get(name)
        assert table is not None
        newest = table.version()
        commits = self.commits(name)
        ids = manifest.column("snapshot_id").to_pylist()
        position = {snapshot_id: i for i, snapshot_id in enumerate(ids)}
        recorded = _recorded(parsed, name)
        problems: list[Disagreement] = []
        beyond = np.flatnonzero(recorded["version"] > newest)
        if len(beyond):
            first = int(recorded["version"][beyond].min())
            problems.append(
                Disagreement("missing", name, first, tuple(ids[i] for i in beyond),
                        f"the log of {name} ends at version {newest}, but {_count(beyond)} "
                        f"committed rows to it as version {first} or later: those commits "
                        "are missing")
            )  # fmt: skip
        oldest = min(commits, default=newest + 1)
        # Each recorded version still in the log must be that snapshot's commit, adding
        # what the snapshot recorded. Compared as arrays: a manifest of a year is long.
        inside = np.flatnonzero((recorded["version"] >= oldest) & (recorded["version"] <= newest))
        if len(inside):
            span = range(oldest, newest + 1)
            holders = [c.snapshot_id if (c := commits.get(v)) else None for v in span]
            theirs = {
                k: np.array([_known(getattr(commits.get(v), k, None)) for v in span])
                for k in ("rows", "files", "bytes")
            }
            at = recorded["version"][inside] - oldest
            wrong = np.array([holders[a] != ids[i] for a, i in zip(at, inside, strict=True)])
            for k in theirs:
                mine, got = recorded[k][inside], theirs[k][at]
                wrong |= (mine >= 0) & (got >= 0) & (mine != got)
            for i in inside[wrong]:
                problems.append(self._mismatch(name, commits, ids[i], recorded, int(i)))
        for version, commit in sorted(commits.items()):
            snapshot_id = commit.snapshot_id
            if snapshot_id is None or snapshot_id in position:
                continue
            if f"snapshot:{snapshot_id}" not in settled:
                problems.append(
                    Disagreement("uncommitted", name, version, (snapshot_id,),
                            f"commit {version} of {name} holds rows of snapshot "
                            f"{snapshot_id}, which has no manifest row")
                )  # fmt: skip
        return problems + self.foreign(name, settled)

    def _verify_events(
        self, manifest: pa.Table, parsed: pa.Table, settled: set[str]
    ) -> list[Disagreement]:
        """The events table against what each snapshot saw of it: a recorded newest commit
        the log no longer reaches (deleted), or one that adds other than it did
        (replaced); then its foreign commits. A record a repair settled
        (`events@<snapshot id>`) is passed."""
        ids = manifest.column("snapshot_id").to_pylist()
        recorded = _recorded(parsed, EVENTS)
        held = [
            int(i)
            for i in np.flatnonzero(recorded["version"] >= 0)
            if f"{EVENTS}@{ids[i]}" not in settled
        ]
        table = self._tables.get(EVENTS)
        newest = table.version() if table is not None else -1
        commits = self.commits(EVENTS)
        problems: list[Disagreement] = []
        beyond = [i for i in held if recorded["version"][i] > newest]
        if beyond:
            last = max(int(recorded["version"][i]) for i in beyond)
            span = (
                f"commit {last} is" if last == newest + 1 else f"commits {newest + 1} to {last} are"
            )
            problems.append(
                Disagreement("missing", EVENTS, newest + 1, tuple(ids[i] for i in beyond),
                        f"the log of events ends at version {newest}, but a snapshot saw it "
                        f"at version {last}: events {span} missing, and the events "
                        "added with them")
            )  # fmt: skip
        wrong = [i for i in held if _differs(commits.get(int(recorded["version"][i])), recorded, i)]
        if wrong:
            version = int(recorded["version"][wrong[0]])
            commit = commits[version]
            problems.append(
                Disagreement("commit", EVENTS, version, tuple(ids[i] for i in wrong),
                        f"commit {version} of events adds {commit.rows} events in "
                        f"{commit.files} file(s), but snapshot {ids[wrong[0]]} saw it add "
                        f"{recorded['rows'][wrong[0]]}: the commit was changed or replaced")
            )  # fmt: skip
        return problems + (self.foreign(EVENTS, settled) if table is not None else [])

    def foreign(self, name: str, settled: set[str]) -> list[Disagreement]:
        """Table `name`'s commits no toolkit made that changed rows, unless a `RESTORE`
        undid them or a repair settled them (the manifest's own included: a `DELETE` of
        its rows would make snapshots vanish without a word)."""
        commits = self.commits(name)
        undone = _undone_commits(commits)
        unmarked = _unmarked_events(commits) if name == EVENTS else set()
        problems = []
        for version, commit in sorted(commits.items()):
            if version in undone or commit.snapshot_id is not None or commit.by_toolkit():
                continue
            if version in unmarked:
                continue
            if f"{name}:{version}" in settled or (commit.removes == 0 and not commit.rows):
                continue  # settled, or changed no rows (a property, an optimize of nothing)
            operation = commit.info.get("operation", "a write")
            problems.append(
                Disagreement("foreign", name, version, (),
                        f"commit {version} of {name} ({operation}) was not made by the "
                        "toolkit: the rows it removed or added were never a snapshot's",
                        restore_to=_restore_point(commits, version, undone))
            )  # fmt: skip
        return problems

    @staticmethod
    def _mismatch(
        name: str,
        commits: dict[int, Commit],
        snapshot_id: str,
        recorded: dict[str, np.ndarray],
        i: int,
    ) -> Disagreement:
        version = int(recorded["version"][i])
        commit = commits.get(version)
        if commit is None or commit.snapshot_id != snapshot_id:
            holder = commit.snapshot_id if commit is not None else None
            return Disagreement(
                "commit", name, version, (snapshot_id,),
                f"commit {version} of {name}, where snapshot {snapshot_id} committed its "
                f"rows, is {'missing' if commit is None else 'not its'}"
                + (f" (it holds snapshot {holder})" if holder else ""),
            )  # fmt: skip
        return Disagreement(
            "commit", name, version, (snapshot_id,),
            f"commit {version} of {name} adds {commit.rows} rows in {commit.files} file(s), "
            f"but snapshot {snapshot_id} committed {recorded['rows'][i]} rows in "
            f"{recorded['files'][i]}: the commit was changed or truncated",
        )  # fmt: skip


def _undone_commits(commits: dict[int, Commit]) -> set[int]:
    """The versions a `RESTORE` undid, and those `RESTORE`s: a restore to version `t` at
    version `v` undoes `t+1 .. v-1` when every one of them is in the log and none is the
    toolkit's (it would drop a snapshot's rows otherwise, and stays a finding)."""
    undone: set[int] = set()
    for version, commit in sorted(commits.items()):
        target = commit.restored_to
        if target is None or target >= version:
            continue
        between = range(target + 1, version)
        if all(v in commits and (v in undone or not commits[v].by_toolkit()) for v in between):
            undone.update(between)
            undone.add(version)
    return undone


def _differs(commit: Commit | None, recorded: dict[str, np.ndarray], i: int) -> bool:
    """Whether `commit` (None: no longer in the log's retained part, or beyond it) adds
    other than the record at position `i` says."""
    if commit is None:
        return False
    return any(
        recorded[k][i] >= 0 and _known(getattr(commit, k)) >= 0
        and recorded[k][i] != getattr(commit, k)
        for k in ("rows", "files", "bytes")
    )  # fmt: skip


def _unmarked_events(commits: dict[int, Commit]) -> set[int]:
    """The events table's plain appends from before the toolkit marked its events commits
    (earlier toolkits did not): taken as the toolkit's, as they always were."""
    marked = [v for v, c in commits.items() if OPERATION_KEY in c.info]
    first = min(marked, default=None)
    return {
        v
        for v, c in commits.items()
        if (first is None or v < first)
        and c.removes == 0
        and c.info.get("operation") == "WRITE"
        and (c.info.get("operationParameters") or {}).get("mode") == "Append"
    }


def newest_witness(tables: Tables, name: str) -> dict[str, int | None] | None:
    """What a manifest row records of table `name`'s newest commit (the events table's,
    which no snapshot writes); None when the table was never written or the store is not
    on a local disk."""
    table = tables.get(name)
    if table is None or not tables.local:
        return None
    commit = _read_commit(tables, name, table.version())
    return commit.witness() if commit is not None else None


def _restore_point(commits: dict[int, Commit], version: int, undone: set[int]) -> int | None:
    """The toolkit's last commit before foreign commit `version`, when no toolkit commit
    came after `version` (restoring to it then loses nothing the toolkit wrote)."""
    # A vacuum's START/END commits change no rows: restoring past them loses nothing.
    later = [
        v
        for v, c in commits.items()
        if v > version and v not in undone and c.by_toolkit() and (c.rows or c.removes)
    ]
    earlier = [v for v, c in commits.items() if v < version and v not in undone and c.by_toolkit()]
    if later or not earlier:
        return None
    return max(earlier)


def _known(value: int | None) -> int:
    return -1 if value is None else value


def _is_commit(name: str) -> bool:
    return name.endswith(".json") and len(name) == 25 and name[:20].isdigit()


def recorded_commits(manifest: pa.Table) -> pa.Table:
    """The manifest's `commits` texts parsed, a struct column per table (null where
    nothing was recorded). Parsed by Arrow's JSON reader: a year's manifest is 8,760
    texts, and every check after a write reads them."""
    empty = pa.nulls(manifest.num_rows, _WITNESS)
    if COMMITS not in manifest.column_names or manifest.num_rows == 0:
        return pa.table({name: empty for name in _PARSED.names})
    texts = pc.fill_null(manifest.column(COMMITS), "{}").to_pylist()
    lines = ("\n".join(texts) + "\n").encode()
    options = pa_json.ParseOptions(explicit_schema=_PARSED, unexpected_field_behavior="ignore")
    return pa_json.read_json(io.BytesIO(lines), parse_options=options)


def _recorded(parsed: pa.Table, name: str) -> dict[str, np.ndarray]:
    """The record of table `name`: version, rows, files, bytes per snapshot (-1 where
    none was recorded)."""
    witness = parsed.column(name)
    return {
        k: pc.fill_null(pc.struct_field(witness, k), -1).to_numpy(zero_copy_only=False)
        for k in ("version", "rows", "files", "bytes")
    }


def recorded_in(parsed: pa.Table, name: str) -> np.ndarray:
    """The positions of the snapshots that recorded a commit to table `name`."""
    return np.flatnonzero(_recorded(parsed, name)["version"] >= 0)


def _log_gone(manifest: pa.Table, parsed: pa.Table, name: str) -> list[Disagreement]:
    """A table with no log although snapshots committed to it: its `_delta_log` is gone
    (a table never written, or whose first write stopped, has none either)."""
    holders = recorded_in(parsed, name)
    if not len(holders):
        return []
    ids = manifest.column("snapshot_id").to_pylist()
    return [
        Disagreement("missing", name, None, tuple(ids[i] for i in holders),
                f"the table {name} has no log (its `_delta_log` is gone), but "
                f"{_count(holders)} committed rows to it")
    ]  # fmt: skip


def _unbased(manifest: pa.Table) -> list[Disagreement]:
    """Snapshots stored as a change from a snapshot that has no manifest row."""
    ids = manifest.column("snapshot_id").to_pylist()
    known = set(ids)
    bases = manifest.column("base_id").to_pylist()
    full = pc.fill_null(manifest.column("full"), False).to_pylist()
    problems = []
    for snapshot_id, base, whole in zip(ids, bases, full, strict=True):
        if base and not whole and base not in known:
            problems.append(
                Disagreement("unbased", "manifest", None, (snapshot_id,),
                        f"snapshot {snapshot_id} holds its change from snapshot {base}, "
                        "which has no manifest row (its manifest commit was lost)")
            )  # fmt: skip
    return problems


def _count(positions: np.ndarray) -> str:
    return "1 snapshot" if len(positions) == 1 else f"{len(positions)} snapshots"

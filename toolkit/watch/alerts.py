"""The alert state: which conditions are open, since when, and what each target is owed.

The `alerts` table is a Delta table in the watch's store (`<store>/alerts/`), appended
one commit per cycle: a row per alert that opened, was reminded, was seen again or
resolved. An alert's state is its newest row. `alert_id` is drawn at random when a
condition is first seen and kept by its reminders and its resolution; the same
condition opening again later is a new alert.

A row that tells people something is also a message: its `message_id` (the webhook-id)
is drawn then, and `owed_to` lists the targets it is owed to. The row is committed
before anything is sent, so a kill at any instant leaves either nothing decided (the
next cycle decides again, the ids not yet shown to anyone) or a message owed under ids
that every later attempt reuses. What was delivered is in the `deliveries` table
(`toolkit.watch.outbox`).

A cycle holds the store's watch lock (`<store>/.watch.lock`, an exclusive `flock`) from
reading the state to committing what it sent, so a second watcher waits and then sees
what the first did.
"""

from __future__ import annotations

import contextlib
import copy
import fcntl
import json
import os
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Literal

import pyarrow as pa

from toolkit.store.tables import Tables
from toolkit.watch.findings import Finding

__all__ = ["TIME", "Alert", "AlertLog", "Kind", "finding_of", "random_id", "transitions"]

Kind = Literal["opened", "reminder", "resolved", "seen"]
TIME = pa.timestamp("us", tz="UTC")
_SCHEMA = pa.schema(
    [
        ("alert_id", pa.string()),
        ("key", pa.string()),
        ("event", pa.string()),  # opened | reminder | resolved | seen
        ("status", pa.string()),  # open | resolved
        ("check", pa.string()),
        ("scope", pa.string()),
        ("subject", pa.string()),
        ("workspace", pa.string()),
        ("message", pa.string()),
        ("figures", pa.string()),  # JSON
        ("first_seen", TIME),
        ("last_seen", TIME),
        ("last_sent", TIME),  # the service's time of the last message sent about it
        ("message_id", pa.string()),  # the webhook-id of this row's message; null for seen
        ("owed_to", pa.list_(pa.string())),  # the targets this row's message is owed to
        ("recorded_at", TIME),  # the service's time of the cycle
        ("written_at", TIME),  # this machine's: orders commits made at one service time
    ]
)


@dataclass
class Alert:
    """One alert's state (its newest row), or one about to be written."""

    alert_id: str
    finding: Finding
    event: Kind
    first_seen: datetime
    last_seen: datetime
    last_sent: datetime | None
    message_id: str | None = None  # drawn when the message is decided, kept by re-sends
    owed_to: list[str] = field(default_factory=list)
    sent_to: list[str] = field(default_factory=list)  # this cycle's deliveries (not stored)
    failed_to: list[str] = field(default_factory=list)  # this cycle's failures, with why

    @property
    def status(self) -> str:
        return "resolved" if self.event == "resolved" else "open"

    @property
    def notifies(self) -> bool:
        return self.event != "seen"


def finding_of(row: dict[str, object]) -> Finding:
    """The finding an `alerts` row was written about."""
    return Finding(
        check=str(row["check"]),
        scope=str(row["scope"]),
        subject=str(row["subject"]),
        workspace=str(row["workspace"]),
        message=str(row["message"]),
        figures=json.loads(str(row["figures"] or "{}")),
        detail=str(row["key"]).split("|", 4)[-1],
    )


def random_id(prefix: str) -> str:
    """A fresh alert or message id. Random, not derived from the cycle's time: it is
    stored before anyone sees it, and a cycle that dies before storing it never showed
    it, so the next cycle drawing another is safe."""
    return f"{prefix}_{uuid.uuid4().hex[:24]}"


class AlertLog:
    """The `alerts` table of the store at `root`."""

    def __init__(self, root: str) -> None:
        self.root = root
        self.tables = Tables(root)
        self._files: dict[str, pa.Table] = {}
        # The open alerts of the files last read: asked again with no file added (a
        # surface that asks every refresh), they are not worked out again.
        self._open: tuple[frozenset[str], dict[str, Alert]] | None = None

    def reopen(self) -> None:
        """Open the Delta table afresh on the next read, keeping the files read: an open
        table keeps state for every commit applied to it since (docs/store.md,
        "Maintenance"), which a log asked for days would pile up."""
        self.tables = Tables(self.root)

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the store's watch lock (local stores; an object store has none)."""
        if not self.tables.local:
            yield
            return
        os.makedirs(self.tables.root, exist_ok=True)
        with open(os.path.join(self.tables.root, ".watch.lock"), "a+") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def rows(self) -> pa.Table:
        """Every row, oldest first (a dataset's files come in no set order)."""
        return _in_order(self._parts())

    def _parts(self) -> list[pa.Table]:
        self.tables.begin()
        # Read file by file, as the store reads its manifest: kept between cycles.
        return self.tables.read_files("alerts", self._files, _SCHEMA)

    def open_alerts(self, table: pa.Table | None = None) -> dict[str, Alert]:
        """The open alerts by condition key (each alert's newest row), from `table` when
        the rows were read already."""
        if table is not None:
            return self._open_in(table)
        parts = self._parts()
        files = frozenset(self._files)
        if self._open is None or self._open[0] != files:
            self._open = files, self._open_in(_in_order(parts))
        return {key: copy.copy(alert) for key, alert in self._open[1].items()}

    def _open_in(self, table: pa.Table) -> dict[str, Alert]:
        newest: dict[str, dict[str, object]] = {}
        for row in table.to_pylist():  # recorded in order: the last row of an id wins
            newest[str(row["alert_id"])] = row
        found = {}
        for row in newest.values():
            if row["status"] != "open":
                continue
            found[str(row["key"])] = Alert(
                alert_id=str(row["alert_id"]),
                finding=finding_of(row),
                event="seen",
                first_seen=row["first_seen"],  # type: ignore[arg-type]
                last_seen=row["last_seen"],  # type: ignore[arg-type]
                last_sent=row["last_sent"],  # type: ignore[arg-type]
            )
        return found

    def record(self, alerts: list[Alert], now: datetime) -> None:
        """Append the cycle's rows as one commit: its messages are owed from then on."""
        if not alerts:
            return
        written = datetime.now(UTC)
        rows = [
            {
                "alert_id": a.alert_id,
                "key": a.finding.key,
                "event": a.event,
                "status": a.status,
                "check": a.finding.check,
                "scope": a.finding.scope,
                "subject": a.finding.subject,
                "workspace": a.finding.workspace,
                "message": a.finding.message,
                "figures": a.finding.figures_json(),
                "first_seen": a.first_seen,
                "last_seen": a.last_seen,
                "last_sent": a.last_sent,
                "message_id": a.message_id,
                "owed_to": a.owed_to if a.notifies else [],
                "recorded_at": now,
                "written_at": written,
            }
            for a in alerts
        ]
        self.tables.append("alerts", pa.Table.from_pylist(rows, schema=_SCHEMA))


def transitions(
    open_alerts: dict[str, Alert],
    findings: list[Finding],
    now: datetime,
    remind: timedelta,
    unreadable: frozenset[str] = frozenset(),
    targets: tuple[str, ...] = (),
) -> list[Alert]:
    """What this cycle does about each condition: opens the new ones, reminds of those
    last told about `remind` ago or more, resolves the ones no longer found, and notes
    the rest as seen (no message). The open alerts of `unreadable` workspaces (a damaged
    store: nothing could be checked) stay as they were, neither resolved nor reminded.
    Each message gets its id now and is owed to `targets`."""
    changes = []
    found = {f.key: f for f in findings}
    for key, finding in found.items():
        known = open_alerts.get(key)
        if known is None:
            changes.append(Alert(random_id("alert"), finding, "opened", now, now, now))
            continue
        due = known.last_sent is None or now - known.last_sent >= remind
        event: Kind = "reminder" if due else "seen"
        changes.append(
            Alert(known.alert_id, finding, event, known.first_seen, now,
                  now if due else known.last_sent)
        )  # fmt: skip
    for key, known in open_alerts.items():
        if key not in found and known.finding.workspace not in unreadable:
            changes.append(
                Alert(known.alert_id, known.finding, "resolved", known.first_seen,
                      known.last_seen, now)
            )  # fmt: skip
    for change in changes:
        if change.notifies:
            change.message_id, change.owed_to = random_id("msg"), list(targets)
    return changes


def _in_order(parts: list[pa.Table]) -> pa.Table:
    """The rows of the alerts' files, oldest first."""
    table = pa.concat_tables(parts) if parts else _SCHEMA.empty_table()
    return table.sort_by([("written_at", "ascending"), ("recorded_at", "ascending")])

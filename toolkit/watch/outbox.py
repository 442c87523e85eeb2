"""The outbox: every message owed to every target, sent in order until delivered or
given up.

A message is an `alerts` row that tells people something: its `message_id` and the
targets it is owed to were committed before anything was sent (`alerts`). The
`deliveries` table (`<store>/deliveries/`) holds a row per outcome: a message
`delivered` to a target (after a 2xx), a round that `failed` (with why and when the next
is due), one `given_up` after `_ROUNDS` rounds, or one `skipped` (a reminder or
resolution for a target that was never told the alert opened). A message's state at a
target is its newest row there; no row means owed.

Each target's owed messages go in the order they were decided, so a resolution never
overtakes its opening. A round is one cycle's try: `retries` attempts at most, waiting
`retry_wait` doubling, or what `Retry-After` asks when that is at most `_MAX_PAUSE`; a
failed round puts the target's queue off by the next wait of `_WAITS` (on the service's
clock; a longer `Retry-After` wins, up to the last wait). The delivered rows are
committed after each target's sends: a kill in between sends those messages again, with
the same ids and body, which is what a receiver drops as a repeat.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pyarrow as pa

from toolkit.watch.alerts import TIME, AlertLog, finding_of
from toolkit.watch.findings import Finding

__all__ = ["Delivery", "Message", "Outbox", "Sender", "Undelivered", "messages"]

# After the first round: the waits before the next ones (Standard Webhooks senders wait
# 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h; the quick first retries happen in a round).
_WAITS = (timedelta(minutes=5), timedelta(minutes=30), timedelta(hours=2), timedelta(hours=5),
         timedelta(hours=10), timedelta(hours=10))  # fmt: skip
_ROUNDS = len(_WAITS) + 1  # about 27.6 hours from the first try to giving up
_MAX_PAUSE = 30.0  # seconds one wait inside a round may last: the store's lock is held

_SCHEMA = pa.schema(
    [
        ("message_id", pa.string()),
        ("alert_id", pa.string()),
        ("target", pa.string()),
        ("event", pa.string()),
        ("outcome", pa.string()),  # delivered | failed | given_up | skipped
        ("rounds", pa.int32()),  # failed rounds so far
        ("why", pa.string()),  # what went wrong, never a URL or a secret
        ("next_at", TIME),  # the service's time the next round may start
        ("at", TIME),  # the service's time of the cycle
        ("written_at", TIME),  # this machine's: orders rows written at one service time
    ]
)
_FINAL = ("delivered", "given_up", "skipped")


@dataclass(frozen=True)
class Message:
    """One owed message, as decided: the same ids and body on every attempt."""

    message_id: str
    alert_id: str
    event: str  # opened | reminder | resolved
    finding: Finding
    decided_at: datetime  # the service's time it was decided: the body's `timestamp`
    owed_to: tuple[str, ...]


@dataclass(frozen=True)
class Delivery:
    """What one message got at one target: delivered, failed, given up or skipped."""

    message: Message
    target: str
    outcome: str  # delivered | failed | given_up | skipped
    why: str = ""
    next_at: datetime | None = None


class Undelivered(Exception):
    """A send that stopped: the first `done` messages were delivered, the rest were not."""

    def __init__(self, why: str, *, done: int = 0, retry_after: float | None = None) -> None:
        super().__init__(why)
        self.why, self.done, self.retry_after = why, done, retry_after


Sender = Callable[[list[Message]], None]  # raises Undelivered


def messages(rows: pa.Table) -> list[Message]:
    """The messages of the `alerts` rows, in the order they were decided."""
    found = []
    for row in rows.filter(pa.compute.is_valid(rows["message_id"])).to_pylist():
        found.append(
            Message(
                message_id=row["message_id"],
                alert_id=row["alert_id"],
                event=row["event"],
                finding=finding_of(row),
                decided_at=row["recorded_at"],
                owed_to=tuple(row["owed_to"] or ()),
            )
        )
    return found


class Outbox:
    """The `deliveries` table beside the `alerts` table of `log`'s store."""

    def __init__(self, log: AlertLog) -> None:
        self.tables = log.tables
        self._files: dict[str, pa.Table] = {}

    def state(self) -> dict[tuple[str, str], dict[str, object]]:
        """The newest deliveries row of each (message, target)."""
        parts = self.tables.read_files("deliveries", self._files, _SCHEMA)
        if not parts:
            return {}
        table = pa.concat_tables(parts).sort_by("written_at")
        return {(row["message_id"], row["target"]): row for row in table.to_pylist()}

    def send(
        self,
        owed: list[Message],
        senders: dict[str, Sender],
        now: datetime,
        *,
        retries: int,
        wait: float,
    ) -> list[Delivery]:
        """Send what each target is owed and due, record each outcome; the outcomes."""
        state = self.state()
        opened = {m.alert_id: m for m in owed if m.event == "opened"}
        outcomes: list[Delivery] = []
        for target, sender in senders.items():
            queue = [
                m
                for m in owed
                if target in m.owed_to
                and state.get((m.message_id, target), {}).get("outcome") not in _FINAL
            ]
            done = _send_to(target, sender, queue, state, opened, now, retries, wait)
            self._record(done, state, now)
            outcomes += done
            for outcome in done:
                state[(outcome.message.message_id, target)] = {"outcome": outcome.outcome}
        return outcomes

    def _record(
        self, outcomes: list[Delivery], state: dict[tuple[str, str], dict[str, object]],
        now: datetime,
    ) -> None:  # fmt: skip
        if not outcomes:
            return
        written = datetime.now(UTC)
        rows = []
        for o in outcomes:
            before = state.get((o.message.message_id, o.target), {})
            rounds = int(before.get("rounds") or 0)  # type: ignore[call-overload]
            rows.append({
                "message_id": o.message.message_id, "alert_id": o.message.alert_id,
                "target": o.target, "event": o.message.event, "outcome": o.outcome,
                "rounds": rounds + (o.outcome in ("failed", "given_up")), "why": o.why,
                "next_at": o.next_at, "at": now, "written_at": written,
            })  # fmt: skip
        self.tables.append("deliveries", pa.Table.from_pylist(rows, schema=_SCHEMA))


def _send_to(
    target: str,
    sender: Sender,
    queue: list[Message],
    state: dict[tuple[str, str], dict[str, object]],
    opened: dict[str, Message],
    now: datetime,
    retries: int,
    wait: float,
) -> list[Delivery]:
    """One round for one target: skip what it must never get, send the rest in order."""
    outcomes: list[Delivery] = []
    told = {k[0] for k, row in state.items() if k[1] == target and row["outcome"] == "delivered"}
    pending = []
    for message in queue:
        first = opened.get(message.alert_id)
        never = first is None or target not in first.owed_to or (
            first.message_id not in told and first not in pending
        )  # fmt: skip
        if message.event != "opened" and never:
            outcomes.append(Delivery(message, target, "skipped", "never told it opened"))
        else:
            pending.append(message)
    if not pending:
        return outcomes
    due = state.get((pending[0].message_id, target), {}).get("next_at")
    if isinstance(due, datetime) and due > now:
        return outcomes  # the round is not due yet: the whole queue waits, in order
    attempt = 0
    while pending:
        try:
            try:
                sender(pending)
            except Undelivered:
                raise
            except Exception as exc:  # a bug or a bad secret: this target's failure alone
                raise Undelivered(type(exc).__name__) from None
            outcomes += [Delivery(m, target, "delivered") for m in pending]
            return outcomes
        except Undelivered as stopped:
            outcomes += [Delivery(m, target, "delivered") for m in pending[: stopped.done]]
            pending = pending[stopped.done :]
            attempt += 1
            pause = stopped.retry_after if stopped.retry_after is not None else (
                wait * 2 ** (attempt - 1)
            )  # fmt: skip
            if attempt < retries and pause <= _MAX_PAUSE:
                time.sleep(pause)
                continue
            return outcomes + _round_failed(target, pending, state, now, stopped)
    return outcomes


def _round_failed(
    target: str,
    pending: list[Message],
    state: dict[tuple[str, str], dict[str, object]],
    now: datetime,
    stopped: Undelivered,
) -> list[Delivery]:
    """Every message still owed to the target has had one more failed round."""
    outcomes = []
    for message in pending:
        rounds = int(state.get((message.message_id, target), {}).get("rounds") or 0) + 1  # type: ignore[call-overload]
        if rounds >= _ROUNDS:
            why = f"given up after {_ROUNDS} rounds: {stopped.why}"
            outcomes.append(Delivery(message, target, "given_up", why))
            continue
        delay = _WAITS[rounds - 1]
        if stopped.retry_after is not None:
            delay = min(max(delay, timedelta(seconds=stopped.retry_after)), _WAITS[-1])
        outcomes.append(Delivery(message, target, "failed", stopped.why, now + delay))
    return outcomes

"""Webhook deliveries: endpoints, signed attempts on the spec's schedule, the delivery log.

Everything lives in the shared database, so waiting attempts carry on after a restart;
the schedule and the decisions where the spec is silent are in docs/emulator.md.

Just past 400 lines: the delivery log's tables, choosing what is due, sending and
recording an attempt are one cycle over the same rows; the admin routes are apart
(`routes.webhooks`), and so is where a webhook may go (`netguard`).
"""

from __future__ import annotations

import asyncio
import base64
import functools
import json
import secrets
import ssl
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
from starlette.concurrency import run_in_threadpool

from toolkit import _signing
from toolkit.emulator.core.clock import Clock, iso
from toolkit.emulator.core.db import Database
from toolkit.emulator.delivery.netguard import (
    Resolver,
    UnsafeDestination,
    destination,
    system_resolver,
)
from toolkit.emulator.routes.errors import EmulatorError

__all__ = ["EVENT_TYPES", "Deliveries"]

EVENT_TYPES = ("chapter.finished", "chapter.failed", "export.ready")
_MAX_ENDPOINTS = 5
# Seconds from one failed attempt to the next: attempt 2 comes 1 min after attempt 1, ...
_RETRY_DELAYS = (60, 300, 1800, 7200, 21600, 43200, 86400)
_MAX_ATTEMPTS = len(_RETRY_DELAYS) + 1
_ANSWER_LIMIT = 10.0
_RETENTION = timedelta(days=30)
# The scheduler calls run_due at every run step too; the log is pruned at most this often.
_PRUNE_EVERY = timedelta(hours=1)
_USER_AGENT = "cts-webhooks/1"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS webhook_endpoints (
    id TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL,
    url TEXT NOT NULL,
    events TEXT NOT NULL,
    secret TEXT NOT NULL,
    allow_private INTEGER NOT NULL,
    created_ms INTEGER NOT NULL,
    deleted_ms INTEGER
);
CREATE TABLE IF NOT EXISTS webhook_events (
    id TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL,
    type TEXT NOT NULL,
    body TEXT NOT NULL,
    created_ms INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS webhook_deliveries (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    event_id TEXT NOT NULL REFERENCES webhook_events(id) ON DELETE CASCADE,
    endpoint_id TEXT NOT NULL REFERENCES webhook_endpoints(id),
    state TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    next_ms INTEGER,
    last_status INTEGER,
    last_error TEXT
);
CREATE INDEX IF NOT EXISTS webhook_deliveries_due ON webhook_deliveries(state, next_ms);
CREATE TABLE IF NOT EXISTS webhook_attempts (
    delivery_id INTEGER NOT NULL REFERENCES webhook_deliveries(id) ON DELETE CASCADE,
    number INTEGER NOT NULL,
    at_ms INTEGER NOT NULL,
    status INTEGER,
    error TEXT,
    PRIMARY KEY (delivery_id, number)
);
"""


@dataclass(frozen=True)
class _AttemptResult:
    """What one attempt got: the receiver's status, or why there was none."""

    status: int | None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.status is not None and 200 <= self.status < 300


@dataclass(frozen=True)
class _Due:
    delivery_id: int
    number: int
    webhook_id: str
    body: str
    url: str
    secret: str
    allow_private: bool


class Deliveries:
    """The webhook endpoints and what is owed to them: each event sent, retried, recorded."""

    def __init__(
        self,
        db: Database,
        clock: Clock,
        *,
        resolver: Resolver = system_resolver,
        answer_limit: float = _ANSWER_LIMIT,
    ) -> None:
        self.db = db
        self.clock = clock
        self.resolver = resolver
        self.answer_limit = answer_limit
        # Called after `emit` records new work, so a realtime scheduler can wake up.
        self.on_work: Callable[[], None] = lambda: None
        self._running = threading.Lock()
        self._pruned_at: datetime | None = None
        db.executescript(_SCHEMA)

    # -- the seam to the run engine and the scheduler --------------------------------

    def emit(self, workspace_id: str, type: str, data: dict[str, Any]) -> None:
        """Record an event for each endpoint that ticked `type`; the first attempt is due now."""
        endpoints = [
            row["id"]
            for row in self.db.query(
                "SELECT id, events FROM webhook_endpoints"
                " WHERE workspace_id = ? AND deleted_ms IS NULL ORDER BY created_ms, rowid",
                (workspace_id,),
            )
            if type in json.loads(row["events"])
        ]
        if not endpoints:
            return
        now = _ms(self.clock.now())
        event_id = "msg_" + secrets.token_hex(16)
        body = _body(type, _at(now), data)
        with self.db.transaction():
            self.db.execute(
                "INSERT INTO webhook_events (id, workspace_id, type, body, created_ms)"
                " VALUES (?, ?, ?, ?, ?)",
                (event_id, workspace_id, type, body, now),
            )
            self.db.executemany(
                "INSERT INTO webhook_deliveries (event_id, endpoint_id, state, next_ms)"
                " VALUES (?, ?, 'retrying', ?)",
                [(event_id, endpoint_id, now) for endpoint_id in endpoints],
            )
        self.on_work()

    def next_due(self) -> datetime | None:
        """When the earliest waiting attempt falls due, or None when nothing waits."""
        row = self.db.one(
            "SELECT MIN(next_ms) AS due FROM webhook_deliveries WHERE state = 'retrying'"
        )
        return None if row is None or row["due"] is None else _at(row["due"])

    def run_due(self, now: datetime) -> None:
        """Send every attempt due at or before `now`, concurrently; record and reschedule.

        Blocks until every attempt has its answer or its time limit. The database lock is
        not held while sending, so a receiver may call the emulator while it answers.
        """
        with self._running:
            due = self._due(_ms(now))
            if due:
                outcomes = _run_coroutine(self._send_all(due))
                self._record(due, outcomes, _ms(now))
            if self._pruned_at is None or now - self._pruned_at >= _PRUNE_EVERY:
                self._prune(now)
                self._pruned_at = now

    def close(self) -> None:
        """Wait for a batch being sent to finish; nothing runs in the background."""
        with self._running:
            pass

    # -- endpoints and the log ------------------------------------------------------

    def add_endpoint(
        self, workspace_id: str, url: str, events: Sequence[str], *, allow_private: bool = False
    ) -> dict[str, Any]:
        """Add an endpoint: `{id, url, events, secret}`; the secret is shown only here."""
        self._require_workspace(workspace_id)
        try:
            destination(url, allow_private=allow_private, resolver=self.resolver)
        except UnsafeDestination as exc:
            raise EmulatorError(400, str(exc)) from exc
        endpoint_id = secrets.token_hex(8)
        secret = "whsec_" + base64.b64encode(secrets.token_bytes(32)).decode()
        with self.db.transaction():
            count = self.db.one(
                "SELECT COUNT(*) AS n FROM webhook_endpoints"
                " WHERE workspace_id = ? AND deleted_ms IS NULL",
                (workspace_id,),
            )
            if count is not None and count["n"] >= _MAX_ENDPOINTS:
                raise EmulatorError(
                    409,
                    f"the workspace already has {_MAX_ENDPOINTS} webhook endpoints, the most "
                    "it can hold; delete one first",
                )
            self.db.execute(
                "INSERT INTO webhook_endpoints (id, workspace_id, url, events, secret,"
                " allow_private, created_ms) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    endpoint_id,
                    workspace_id,
                    url,
                    json.dumps(list(events)),
                    secret,
                    int(allow_private),
                    _ms(self.clock.now()),
                ),
            )
        return {"id": endpoint_id, "url": url, "events": list(events), "secret": secret}

    def delete_endpoint(self, endpoint_id: str) -> None:
        """Delete an endpoint; its waiting deliveries are given up (they stay in the log)."""
        with self.db.transaction():
            self._endpoint(endpoint_id)
            self.db.execute(
                "UPDATE webhook_endpoints SET deleted_ms = ? WHERE id = ?",
                (_ms(self.clock.now()), endpoint_id),
            )
            self.db.execute(
                "UPDATE webhook_deliveries SET state = 'given_up', next_ms = NULL"
                " WHERE endpoint_id = ? AND state = 'retrying'",
                (endpoint_id,),
            )

    async def test_endpoint(self, endpoint_id: str) -> dict[str, Any]:
        """Send a `ping` at once, outside the log: `{ok, status}` (status None: no answer)."""
        endpoint = await run_in_threadpool(self._endpoint, endpoint_id)
        body = _body("ping", self.clock.now(), {"endpointId": endpoint_id})
        due = _Due(
            0,
            1,
            "msg_" + secrets.token_hex(16),
            body,
            endpoint["url"],
            endpoint["secret"],
            bool(endpoint["allow_private"]),
        )
        (outcome,) = await self._send_all([due])
        return {"ok": outcome.ok, "status": outcome.status}

    def log(self, workspace_id: str | None = None) -> list[dict[str, Any]]:
        """The delivery log of the last 30 days, oldest first; every workspace's without id."""
        if workspace_id is not None:
            self._require_workspace(workspace_id)
        since = _ms(self.clock.now() - _RETENTION)
        rows = self.db.query(
            "SELECT e.id AS webhook_id, e.type, d.endpoint_id, d.state, d.attempts,"
            " d.last_status, e.body FROM webhook_deliveries d"
            " JOIN webhook_events e ON e.id = d.event_id"
            " WHERE (:ws IS NULL OR e.workspace_id = :ws) AND e.created_ms >= :since"
            " ORDER BY d.id",
            {"ws": workspace_id, "since": since},
        )
        return [
            {
                "webhookId": row["webhook_id"],
                "type": row["type"],
                "endpointId": row["endpoint_id"],
                "state": row["state"],
                "attempts": row["attempts"],
                "lastStatus": row["last_status"],
                "body": row["body"],
            }
            for row in rows
        ]

    # -- sending ----------------------------------------------------------------------

    async def _send_all(self, due: Sequence[_Due]) -> list[_AttemptResult]:
        # trust_env=False: a proxy from the environment would connect for us, to an
        # address we never checked.
        async with httpx.AsyncClient(
            trust_env=False, follow_redirects=False, timeout=self.answer_limit, verify=_tls()
        ) as client:
            return list(await asyncio.gather(*(self._send(client, item) for item in due)))

    async def _send(self, client: httpx.AsyncClient, due: _Due) -> _AttemptResult:
        try:
            target = await asyncio.to_thread(
                destination, due.url, allow_private=due.allow_private, resolver=self.resolver
            )
        except UnsafeDestination as exc:
            return _AttemptResult(None, str(exc))
        body = due.body.encode()
        stamp = int(time.time())
        headers = {
            "Host": target.host_header,
            "Content-Type": "application/json",
            "User-Agent": _USER_AGENT,
            "webhook-id": due.webhook_id,
            "webhook-timestamp": str(stamp),
            "webhook-signature": _signing.sign(due.secret, due.webhook_id, stamp, body),
        }
        extensions = {"sni_hostname": target.server_name} if target.server_name else {}
        error = "no address to connect to"
        try:
            async with asyncio.timeout(self.answer_limit):
                for address in target.addresses:
                    try:
                        async with client.stream(
                            "POST",
                            target.url_for(address),
                            content=body,
                            headers=headers,
                            extensions=extensions,
                        ) as response:
                            return _AttemptResult(response.status_code)
                    except httpx.ConnectError as exc:
                        error = f"could not connect to {address}: {exc}"
        except TimeoutError:
            return _AttemptResult(None, f"no answer within {self.answer_limit:g} s")
        except httpx.HTTPError as exc:
            return _AttemptResult(None, f"{type(exc).__name__}: {exc}")
        except Exception as exc:
            # Whatever a receiver does, it must not break the scheduler: it is a failure.
            return _AttemptResult(None, f"{type(exc).__name__}: {exc}")
        return _AttemptResult(None, error)

    # -- bookkeeping ------------------------------------------------------------------

    def _due(self, now_ms: int) -> list[_Due]:
        rows = self.db.query(
            "SELECT d.id, d.attempts, e.id AS event_id, e.body, p.url, p.secret, p.allow_private"
            " FROM webhook_deliveries d"
            " JOIN webhook_events e ON e.id = d.event_id"
            " JOIN webhook_endpoints p ON p.id = d.endpoint_id"
            " WHERE d.state = 'retrying' AND d.next_ms <= ? ORDER BY d.next_ms, d.id",
            (now_ms,),
        )
        return [
            _Due(
                row["id"],
                row["attempts"] + 1,
                row["event_id"],
                row["body"],
                row["url"],
                row["secret"],
                bool(row["allow_private"]),
            )
            for row in rows
        ]

    def _record(self, due: Sequence[_Due], outcomes: Sequence[_AttemptResult], now_ms: int) -> None:
        with self.db.transaction():
            for item, outcome in zip(due, outcomes, strict=True):
                if outcome.ok:
                    state, next_ms = "delivered", None
                elif item.number >= _MAX_ATTEMPTS:
                    state, next_ms = "given_up", None
                else:
                    state, next_ms = "retrying", now_ms + _RETRY_DELAYS[item.number - 1] * 1000
                # A delivery given up meanwhile (its endpoint was deleted) stays given up.
                changed = self.db.execute(
                    "UPDATE webhook_deliveries SET state = ?, attempts = ?, next_ms = ?,"
                    " last_status = ?, last_error = ? WHERE id = ? AND state = 'retrying'",
                    (state, item.number, next_ms, outcome.status, outcome.error, item.delivery_id),
                )
                if changed:
                    self.db.execute(
                        "INSERT INTO webhook_attempts (delivery_id, number, at_ms, status, error)"
                        " VALUES (?, ?, ?, ?, ?)",
                        (item.delivery_id, item.number, now_ms, outcome.status, outcome.error),
                    )

    def _prune(self, now: datetime) -> None:
        self.db.execute(
            "DELETE FROM webhook_events WHERE created_ms < ? AND NOT EXISTS (SELECT 1 FROM"
            " webhook_deliveries d WHERE d.event_id = webhook_events.id AND d.state = 'retrying')",
            (_ms(now - _RETENTION),),
        )

    def _endpoint(self, endpoint_id: str) -> dict[str, Any]:
        row = self.db.one(
            "SELECT * FROM webhook_endpoints WHERE id = ? AND deleted_ms IS NULL", (endpoint_id,)
        )
        if row is None:
            raise EmulatorError(404, f"webhook endpoint {endpoint_id} not found")
        return row

    def _require_workspace(self, workspace_id: str) -> None:
        if self.db.one("SELECT id FROM workspaces WHERE id = ?", (workspace_id,)) is None:
            raise EmulatorError(404, f"workspace {workspace_id} not found")


def _body(type: str, when: datetime, data: dict[str, Any]) -> str:
    return json.dumps({"type": type, "timestamp": iso(when), "data": data}, separators=(",", ":"))


def _run_coroutine(coroutine: Any) -> Any:
    """Run `coroutine` on a fresh event loop in a worker thread, whatever the caller's
    thread is doing (the scheduler may call from inside a running loop)."""
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="webhook-deliveries") as pool:
        return pool.submit(asyncio.run, coroutine).result()


# Integer arithmetic, not float seconds: a due time read back and passed to `run_due`
# must come out as the very same millisecond, or the attempt would never fall due.
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MS = timedelta(milliseconds=1)


def _ms(when: datetime) -> int:
    return (when - _EPOCH) // _MS


def _at(ms: int) -> datetime:
    return _EPOCH + ms * _MS


@functools.cache
def _tls() -> ssl.SSLContext:
    """One TLS context for every batch of deliveries: building one loads the CA bundle
    (14 ms of CPU against 0.4 ms for a client reusing it), which a batch per attempt paid
    again each time. httpx's own default context, made once."""
    return httpx.create_ssl_context()

"""One watch cycle, and the loop `toolkit watch` runs.

A cycle snapshots every workspace of the config, evaluates the checks, and, holding the
store's watch lock, works out what opened, needs a reminder or resolved, sends it and
records it. A workspace the service did not answer for is reported by the `snapshots`
check (one alert for the whole outage, resolved by the first snapshot after it); its
other findings stay as its store last showed them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from toolkit.client import Client
from toolkit.errors import ApiError, IncompletePull, StoreError, TransportError
from toolkit.store import SnapshotStore
from toolkit.watch.alerts import Alert, AlertLog, transitions
from toolkit.watch.checks import evaluate
from toolkit.watch.config import WatchConfig
from toolkit.watch.findings import Finding
from toolkit.watch.notify import deliver


@dataclass
class Cycle:
    """What one cycle found and did."""

    findings: list[Finding]
    changes: list[Alert]
    broken: dict[str, str] = field(default_factory=dict)  # workspace -> why no snapshot
    at: datetime | None = None  # the service's time the cycle ran at

    @property
    def needs_attention(self) -> bool:
        return bool(self.findings)

    def lines(self) -> list[str]:
        """What the command prints: one line per message sent, and what failed."""
        out = []
        for alert in self.changes:
            if not alert.notifies:
                continue
            f = alert.finding
            told = f" (sent to {', '.join(alert.sent_to)})" if alert.sent_to else ""
            failed = f" (not delivered: {'; '.join(alert.failed_to)})" if alert.failed_to else ""
            out.append(f"{alert.event} {f.check} [{f.workspace}] {f.message}{told}{failed}")
        return out


def run_cycle(config: WatchConfig, *, retry_wait: float | None = None) -> Cycle:
    stores = {name: SnapshotStore(w.store, workspace=name) for name, w in config.workspaces.items()}
    broken: dict[str, str] = {}
    for name, workspace in config.workspaces.items():
        try:
            with Client(workspace.base_url, workspace.api_key()) as client:
                stores[name].take(client, progress=False)  # cron mails what it prints
        except (TransportError, ApiError, IncompletePull) as exc:
            broken[name] = f"no answer from {workspace.base_url}: {exc}"
        except StoreError as exc:  # e.g. damaged: the `snapshots` check says what to do
            broken[name] = f"the snapshot could not be written: {exc}"
    times = [s.snapshots()["snapshot_at"] for s in stores.values()]
    known = [t.iloc[-1] for t in times if len(t)]
    now = max(known).to_pydatetime() if known else None
    findings = evaluate(stores, config, broken=broken)
    if now is None:  # never a snapshot: nothing to time alerts by but this machine's clock
        now = datetime.now().astimezone()
    log = AlertLog(config.store)
    with log.locked():
        unreadable = frozenset(f.workspace for f in findings if f.detail == "store_check")
        changes = transitions(log.open_alerts(), findings, now, config.checks.remind, unreadable)
        deliver(config, changes, now, wait=retry_wait)
        if any(alert.notifies for alert in changes):
            log.record(changes, now)
    return Cycle(findings, changes, broken, now)


def run_forever(
    config: WatchConfig,
    interval: timedelta,
    stop: threading.Event,
    report: Callable[[Cycle], None],
) -> None:
    """Cycles every `interval` (the first at once) until `stop` is set."""
    while not stop.is_set():
        report(run_cycle(config))
        stop.wait(interval.total_seconds())

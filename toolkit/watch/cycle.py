"""One watch cycle, and the loop `toolkit watch` runs.

A cycle snapshots every workspace of the config, evaluates the checks, and, holding the
store's watch lock, works out what opened, needs a reminder or resolved, records those
messages as owed (one commit), then sends everything owed and due, in order, recording
each target's outcomes (`outbox`). A workspace the service did not answer for is
reported by the `snapshots` check (one alert for the whole outage, resolved by the first
snapshot after it); its other findings stay as its store last showed them.
"""

from __future__ import annotations

import difflib
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from toolkit.analysis import GROUP_KEY, project_groups
from toolkit.client import Client
from toolkit.errors import ApiError, ConfigError, IncompletePull, StoreError, TransportError
from toolkit.store import SnapshotStore
from toolkit.watch import wording
from toolkit.watch.alerts import Alert, AlertLog, transitions
from toolkit.watch.checks import evaluate
from toolkit.watch.config import WatchConfig
from toolkit.watch.findings import Finding
from toolkit.watch.notify import senders
from toolkit.watch.outbox import Delivery, Outbox, messages

__all__ = ["Cycle", "run_cycle", "run_forever"]


@dataclass
class Cycle:
    """What one cycle found and did."""

    findings: list[Finding]
    changes: list[Alert]
    broken: dict[str, str] = field(default_factory=dict)  # workspace -> why no snapshot
    at: datetime | None = None  # the service's time the cycle ran at
    outcomes: list[Delivery] = field(default_factory=list)  # what each target got or not

    @property
    def needs_attention(self) -> bool:
        return bool(self.findings)

    def lines(self) -> list[str]:
        """What the command prints: a line per message this cycle decided or sent, with
        where it went and what is still owed, the check named in words (`opened: Budget
        [studio]: ...`)."""
        out = []
        ours = {a.message_id for a in self.changes if a.notifies}
        for alert in self.changes:
            if not alert.notifies:
                continue
            f = alert.finding
            told = f" (sent to {', '.join(alert.sent_to)})" if alert.sent_to else ""
            failed = f" (not delivered: {'; '.join(alert.failed_to)})" if alert.failed_to else ""
            out.append(f"{_named(alert.event, f)}{f.message}{told}{failed}")
        for o in self.outcomes:
            if o.message.message_id in ours:
                continue
            f = o.message.finding
            when = f"{o.next_at:%d %b %H:%M} UTC" if o.next_at else ""
            what = {"delivered": f"sent late to {o.target}",
                    "failed": f"not delivered: {o.target}: {o.why}; tried again from {when}",
                    "given_up": f"{o.target}: {o.why}",
                    "skipped": f"not sent to {o.target}: {o.why}"}[o.outcome]  # fmt: skip
            out.append(f"{_named(o.message.event, f)}{f.message} ({what})")
        return out


def _named(event: str, finding: Finding) -> str:
    """A line's lead: what happened to which check, in words, and where: `opened: Held
    pages never started [studio]: `."""
    kind = wording.kind_of(finding.figures)
    return f"{event}: {wording.title(finding.check, kind)} [{finding.workspace}]: "


def run_cycle(config: WatchConfig, *, retry_wait: float | None = None) -> Cycle:
    """One cycle of the watch: take a snapshot of each workspace, check, and notify."""
    stores = {name: SnapshotStore(w.store, workspace=name) for name, w in config.workspaces.items()}
    broken: dict[str, str] = {}
    for name, workspace in config.workspaces.items():
        try:
            with Client(workspace.base_url, workspace.api_key()) as client:
                stores[name].take(client, progress=False)  # cron mails what it prints
        except TransportError as exc:
            # The watch's URL comes from its config, not CTS_BASE_URL: say where it is.
            where = config.where.get(f"workspaces.{name}.base_url", f"workspaces.{name}.base_url")
            broken[name] = (
                f"no answer from {workspace.base_url}: {exc.reason or type(exc).__name__}; "
                f"check its base_url ({where}), that the service runs, and the network"
            )
        except (ApiError, IncompletePull) as exc:
            broken[name] = f"no answer from {workspace.base_url}: {exc}"
        except StoreError as exc:  # e.g. damaged: the `snapshots` check says what to do
            broken[name] = f"the snapshot could not be written: {exc}"
    times = [s.snapshots()["snapshot_at"] for s in stores.values()]
    known = [t.iloc[-1] for t in times if len(t)]
    now = max(known).to_pydatetime() if known else None
    if not broken:
        _check_projects(config, stores)
    findings = evaluate(stores, config, broken=broken)
    if now is None:  # never a snapshot: nothing to time alerts by but this machine's clock
        now = datetime.now().astimezone()
    log = AlertLog(config.store)
    targets = senders(config)
    with log.locked():
        unreadable = frozenset(f.workspace for f in findings if f.detail == "store_check")
        changes = transitions(log.open_alerts(log.rows()), findings, now, config.checks.remind,
                              unreadable, tuple(targets))  # fmt: skip
        if any(alert.notifies for alert in changes):
            log.record(changes, now)  # owed from here on, under the ids just drawn
        outcomes = Outbox(log).send(
            messages(log.rows()), targets, now, retries=config.retries,
            wait=config.retry_wait if retry_wait is None else retry_wait,
        )  # fmt: skip
    by_id = {a.message_id: a for a in changes if a.notifies}
    for o in outcomes:
        alert = by_id.get(o.message.message_id)
        if alert is not None and o.outcome == "delivered":
            alert.sent_to.append(o.target)
        elif alert is not None:
            alert.failed_to.append(f"{o.target}: {o.why}")
    return Cycle(findings, changes, broken, now, outcomes)


def _check_projects(config: WatchConfig, stores: Mapping[str, SnapshotStore]) -> None:
    """Every project a budget or a due date names, and every translation group a budget
    names, is in one of the workspaces: a `ConfigError` naming the file, line and key,
    and the names nearest, for the first that is not (else it would silently never be
    checked)."""
    named = [(f"budgets[{i}].name", b.name) for i, b in enumerate(config.budgets)
             if b.scope == "project" and b.name]  # fmt: skip
    named += [(f"due.{name}", name) for name in config.due]
    # A translation group's budget: its projects are the stores' to say, not [tags]'.
    grouped = [(f"budgets[{i}].name", b.name) for i, b in enumerate(config.budgets)
               if b.tag == GROUP_KEY and b.name]  # fmt: skip
    if not named and not grouped:
        return
    known: set[str] = set()
    groups: set[str] = set()
    for store in stores.values():
        try:
            projects = store.latest("projects")
            if grouped:
                groups |= set(project_groups(store)[GROUP_KEY].dropna().astype(str))
        except StoreError:
            return  # a damaged store: the `snapshots` check says so; judge names later
        known |= set(projects["name"].astype(str)) | set(projects["project_id"].astype(str))
    checked = [(key, name, "project", known) for key, name in named]
    checked += [(key, name, "translation group", groups) for key, name in grouped]
    for key, name, what, among in checked:
        if name not in among:
            near = difflib.get_close_matches(name, sorted(among), n=3, cutoff=0.6)
            hint = f"; the nearest: {', '.join(repr(n) for n in near)}" if near else ""
            raise ConfigError(
                f"{config.where.get(key, key)}: no {what} {name!r} in any workspace of the "
                f"config{hint}"
            )


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

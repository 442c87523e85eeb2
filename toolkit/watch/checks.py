"""The checks: a pure evaluation of the stores against the config (the one thing
written is each local store's record of the files its store check read whole,
`<store>/_checked.json`).

```python
tk.watch.checks("data/snapshots/studio", "watch.toml")   # open findings, as a frame
```

Every "for N hours" is measured on the service's clock: `now` is the latest snapshot's
time unless given. The checks and what each finds are in docs/watch.md.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from functools import cache
from typing import TYPE_CHECKING, Any

import pandas as pd

from toolkit import analysis
from toolkit.analysis.due import with_due
from toolkit.analysis.forecast import forecast_seen, seen_at
from toolkit.analysis.observed import observe
from toolkit.analysis.runs import runs_ended
from toolkit.errors import ConfigError, ToolkitError
from toolkit.formatting import count
from toolkit.watch import anomaly, budget, stuck, wording
from toolkit.watch.alerts import AlertLog
from toolkit.watch.config import CheckSettings, WatchConfig, read_config
from toolkit.watch.findings import Finding, Findings, as_frame

if TYPE_CHECKING:
    from toolkit.store import SnapshotStore

__all__ = ["checks", "evaluate", "open_alerts"]

# Each data file of a store is read whole again within a day's cycles (see `_snapshots`).
_REREAD_WITHIN = pd.Timedelta(days=1)


def checks(
    store: SnapshotStore | str | os.PathLike[str], config: WatchConfig | str | os.PathLike[str]
) -> Findings:
    """The open findings of one workspace's store (or of every workspace, given the
    config's store root), one row per finding: `check, scope, subject, workspace,
    message, figures`. Time is the latest snapshot's."""
    settings, stores = _stores(store, config)
    return as_frame(evaluate(stores, settings))


def open_alerts(
    store: SnapshotStore | str | os.PathLike[str], config: WatchConfig | str | os.PathLike[str]
) -> pd.DataFrame:
    """The alerts `toolkit watch` holds open for one workspace's store (or every
    workspace's, given the root), and the agency's budgets, which concern them all: what
    people were told, oldest first. Columns `check, scope, subject, workspace, message,
    first_seen, last_sent` (service time), and for showing it: `title` (the check in
    words), `action` (what clears it) and `age` (since `first_seen`, as of this call:
    a surface shows the age at the moment it shows the alert)."""
    settings, stores = _stores(store, config)
    ours = {*stores, budget.AGENCY}
    alerts = [a for a in _alert_log(settings.store).open_alerts().values()
              if a.finding.workspace in ours]  # fmt: skip
    shown_at = datetime.now(UTC)
    rows = [{"check": a.finding.check, "scope": a.finding.scope, "subject": a.finding.subject,
             "workspace": a.finding.workspace, "message": a.finding.message,
             "first_seen": a.first_seen, "last_sent": a.last_sent,
             "title": wording.title(a.finding.check, wording.kind_of(a.finding.figures)),
             "action": wording.action(a.finding.check, wording.kind_of(a.finding.figures)),
             "age": wording.age(a.first_seen, shown_at)} for a in alerts]  # fmt: skip
    columns = ["check", "scope", "subject", "workspace", "message", "first_seen", "last_sent",
               "title", "action", "age"]  # fmt: skip
    frame = pd.DataFrame(rows, columns=columns)
    return frame.sort_values(["first_seen", "check", "subject"], ignore_index=True)


# One alerts log per store root in a process: a surface asking every refresh (the
# Dashboard's alerts line) reads only the files written since it last asked, and works
# the open alerts out again only then (`AlertLog`), not the watch's whole history.
_ALERT_LOGS: dict[str, AlertLog] = {}


def _alert_log(root: str) -> AlertLog:
    if root not in _ALERT_LOGS:
        _ALERT_LOGS[root] = AlertLog(root)
    log = _ALERT_LOGS[root]
    log.reopen()  # a notebook's Dashboard may refresh for days
    return log


def _stores(
    store: SnapshotStore | str | os.PathLike[str], config: WatchConfig | str | os.PathLike[str]
) -> tuple[WatchConfig, dict[str, SnapshotStore]]:
    """The config, and the stores meant: the one given, labelled by its workspace, or
    every workspace's when given the config's store root."""
    from toolkit.store import SnapshotStore

    settings = config if isinstance(config, WatchConfig) else read_config(config)
    root = store.root if isinstance(store, SnapshotStore) else os.fspath(store)
    if _same(root, settings.store):
        return settings, {name: SnapshotStore(w.store, workspace=name)
                          for name, w in settings.workspaces.items()}  # fmt: skip
    label = _workspace_of(root, store, settings)
    chosen = store if isinstance(store, SnapshotStore) else SnapshotStore(root, workspace=label)
    return settings, {label: chosen}


def _same(a: str, b: str) -> bool:
    return os.path.abspath(a) == os.path.abspath(b)


def _workspace_of(root: str, store: object, config: WatchConfig) -> str:
    for name, workspace in config.workspaces.items():
        if _same(root, workspace.store) or getattr(store, "workspace_label", None) == name:
            return name
    if len(config.workspaces) == 1:
        return next(iter(config.workspaces))
    raise ConfigError(
        f"the store {root!r} is none of the workspaces in {config.path} "
        f"({', '.join(config.workspaces)}); give one of their stores, or the root {config.store!r}"
    )


def evaluate(
    stores: Mapping[str, SnapshotStore],
    config: WatchConfig,
    *,
    now: pd.Timestamp | None = None,
    broken: Mapping[str, str] | None = None,
) -> list[Finding]:
    """Every check over every workspace's store. `now` is the service's time (the
    latest snapshot's, by default); `broken` the workspaces whose snapshot failed this
    cycle, with why (the `snapshots` check reports them)."""
    found: list[Finding] = []
    times = {label: store.snapshots()["snapshot_at"] for label, store in stores.items()}
    known = [t.iloc[-1] for t in times.values() if len(t)]
    # The service's time as best known: a workspace whose snapshots stopped is behind it.
    latest = now if now is not None else (max(known) if known else None)
    for label, store in stores.items():
        if latest is None or times[label].empty:
            continue
        at = now if now is not None else times[label].iloc[-1]
        why = (broken or {}).get(label)
        found += _workspace_findings(store, label, config, at, why, newest=latest)
    if latest is not None and "budget" not in config.checks.off:
        damaged = {f.workspace for f in found if f.detail == "store_check"}  # unreadable
        healthy = {label: store for label, store in stores.items() if label not in damaged}
        found += budget.evaluate(config.budgets, healthy, latest)
    for label, why in (broken or {}).items():
        if label not in stores or times[label].empty:
            found.append(_no_snapshot(label, why))
    return found


def _workspace_findings(
    store: SnapshotStore,
    label: str,
    config: WatchConfig,
    now: pd.Timestamp,
    broken: str | None,
    *,
    newest: pd.Timestamp | None = None,
) -> list[Finding]:
    """The checks of one workspace (all but the budgets, which may span workspaces).
    `now` is its latest snapshot's time, `newest` the latest of any workspace's (how
    old its snapshots are is measured against it). Each project's findings follow its
    own settings (`config.checks_for`)."""
    times = store.snapshots()["snapshot_at"]
    if times.empty:
        return []
    found: list[Finding] = []
    if "snapshots" not in config.checks_for(label).off:
        found += _snapshots(store, label, config, newest or now, times.iloc[-1], broken)
        if any(f.detail == "store_check" for f in found):
            return found  # a damaged store is refused by every read: repair it first

    @cache  # asked for each of a cycle's findings: thousands may be a project's
    def settings(project_id: object, project: object) -> CheckSettings:
        return config.checks_for(label, str(project), str(project_id))

    everyone = [
        config.checks_for(label),
        *(config.checks_for(label, p) for p in config.project_checks),
    ]
    if any(not {"stalled", "failed_waiting", "held_pages"} <= s.off for s in everyone):
        found += stuck.evaluate(store, label, now, settings, everyone)
    if config.due and any("due" not in s.off for s in everyone):
        found += [f for f in _due(store, label, config)
                  if "due" not in settings(f.figures["project_id"], f.subject).off]  # fmt: skip
    for group in dict.fromkeys(everyone):  # bins differ by settings: a pass per kind
        if "anomaly" in group.off:
            continue
        found += [f for f in anomaly.evaluate(store, label, group, now)
                  if settings(f.figures["project_id"], f.subject) == group]  # fmt: skip
    if any("missing_events" not in s.off for s in everyone):
        found += _missing_events(store, label, now, settings, everyone)
    return found


_Settings = Callable[[object, object], CheckSettings]  # a project's, by its id and name


def _due(store: SnapshotStore, label: str, config: WatchConfig) -> list[Finding]:
    # `forecast` by project, its finishes alone: when the work waiting for a person
    # would be done if unblocked, and the review lag, are not what a due date reads.
    obs = observe(store)
    seen = seen_at(obs, obs.times[-1], stall_after=pd.Timedelta(analysis.STALL_AFTER))
    finishes = forecast_seen(obs, seen, by="project_id", reviewed=False, dated_waits=False)
    frame = with_due(finishes, config.due)
    late = frame[frame["will_miss"].fillna(False).astype(bool)]
    found = []
    row: Any
    for row in late.itertuples(index=False):
        message = (
            f"{row.project} is due on {row.due:%d %b %Y} but its forecast finish is "
            f"{row.finish_p50:%d %b %H:%M} UTC (p50), {row.late_hours_p50:.0f} h late"
        )
        if pd.notna(row.finish_p90):
            message += f"; {row.late_hours_p90:.0f} h late at p90"
        figures = {"due": row.due.isoformat(), "finish_p50": row.finish_p50.isoformat(),
                   "finish_p90": None if pd.isna(row.finish_p90) else row.finish_p90.isoformat(),
                   "late_hours_p50": float(row.late_hours_p50),
                   "late_hours_p90": _float_or_none(row.late_hours_p90),
                   "project_id": row.project_id}  # fmt: skip
        found.append(Finding("due", "project", str(row.project), label, message, figures))
    return found


def _float_or_none(value: Any) -> float | None:
    return None if pd.isna(value) else float(value)


def _missing_events(
    store: SnapshotStore,
    label: str,
    now: pd.Timestamp,
    settings: _Settings,
    everyone: list[CheckSettings],
) -> list[Finding]:
    """Runs the snapshots show finished or failed, each project's `missing_events_after`
    ago or more, with no webhook event for them; only once the store holds events (a
    receiver feeds it), and only for runs that ended after the first event arrived."""
    events = store.history("events")
    if events.empty:
        return []
    ended = runs_ended(observe(store), since=events["timestamp"].min())  # theirs alone
    shortest = min(s.missing_events_after for s in everyone)
    ended = ended[
        (ended["finished_source"] != "event")
        & (ended["finished_at"] <= now - pd.Timedelta(shortest))
    ]
    found = []
    row: Any
    for row in ended.itertuples(index=False):
        own = settings(row.project_id, row.project)
        if "missing_events" in own.off or row.finished_at > now - own.missing_events_after:
            continue
        subject = f"{row.project}: {row.chapter}"
        kind = "chapter.finished" if row.outcome == "finished" else "chapter.failed"
        message = (
            f"{subject} {'finished' if row.outcome == 'finished' else 'failed'} at "
            f"{row.finished_at:%d %b %H:%M} UTC and no {kind} event reached the store; "
            "check the webhook endpoint and the receiver"
        )
        figures = {"chapter_id": row.chapter_id, "run_id": row.run_id,
                   "project_id": row.project_id, "ended_at": row.finished_at.isoformat(),
                   "event": kind}  # fmt: skip
        found.append(
            Finding("missing_events", "chapter", subject, label, message, figures, row.run_id)
        )
    return found


def _snapshots(
    store: SnapshotStore,
    label: str,
    config: WatchConfig,
    now: pd.Timestamp,
    last: pd.Timestamp,
    broken: str | None,
) -> list[Finding]:
    """The last snapshot older than two intervals (or this cycle's failed), and what
    `toolkit store check` finds in a local store."""
    found = []
    age = now - last
    if broken or age > 2 * pd.Timedelta(config.interval):
        why = f": {broken}" if broken else ""
        found.append(
            Finding(
                "snapshots", "workspace", label, label,
                f"the last snapshot of {label} is from {last:%d %b %H:%M} UTC{why}",
                {"last_snapshot": last.isoformat(), "hours": round(age.total_seconds() / 3600, 2)},
                "age",
            )
        )  # fmt: skip
    if "://" not in store.root:
        from toolkit.store import check_report
        from toolkit.store.rotation import CheckRotation

        # Bounded: each data file is read whole when new or changed and again within a
        # day's cycles (`toolkit.store.rotation`); `toolkit store check` reads them all.
        cycles = math.ceil(_REREAD_WITHIN / pd.Timedelta(config.interval))
        problems: list[object]
        try:
            rotation = CheckRotation(store.root, cycles=cycles)
            problems = list(check_report(store.root, rotation=rotation).findings)
        except ToolkitError as exc:
            problems = [exc]
        if problems:
            found.append(
                Finding(
                    "snapshots", "store", label, label,
                    f"`toolkit store check --store {store.root}` finds "
                    f"{count(len(problems), 'problem')}, the first: {problems[0]}",
                    {"problems": len(problems)}, "store_check",
                )
            )  # fmt: skip
    return found


def _no_snapshot(label: str, why: str) -> Finding:
    return Finding(
        "snapshots", "workspace", label, label,
        f"no snapshot of {label} could be taken: {why}", {}, "age",
    )  # fmt: skip

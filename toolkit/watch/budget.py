"""The `budget` check: credits spent this calendar month or week against a budget.

Spend is counted as `toolkit.analysis.spend_in` and `monthly_spend` count it
(`analysis/spent.py`): each charge at its own moment, not at the snapshot that first
showed it (a first run at the chapter's creation; a re-scan or added pages at the
snapshot that showed the charge), from the period's start (UTC midnight on the 1st, or
on Monday) to the latest snapshot. So a charge at 23:50 on 31 January seen at 00:30 counts
in January. Each level of `warn_at` the spend reached is a `warn` finding of its own (50%,
then 80%: each announced once a period, as billing systems do, and resolved when the
period turns), and the credits reached a `limit` one (crossing the limit is news even
while the warnings are open). The runway is read from the spend of the last
`_BURN_WINDOW` (or since the first snapshot, if that is later), counted the same way:
"at this rate the budget runs out on 19 May".

A tag budget (`scope = "tag"`, `tag = "client"`, `name = "Acme"`) sums the projects the
config's `[tags]` tag so, by name or id, in every workspace; its alert is the agency's,
and names the tag: "client Acme has spent ...". With `tag = "translation_group"` and a
group's id as `name`, it sums the projects the stores last recorded in that group.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import pandas as pd

from toolkit import analysis
from toolkit.analysis.observed import observe
from toolkit.watch.config import Budget
from toolkit.watch.findings import Finding

if TYPE_CHECKING:
    from toolkit.store import SnapshotStore

__all__ = ["AGENCY", "bounds", "evaluate"]

_BURN_WINDOW = pd.Timedelta(days=7)
AGENCY = "agency"


def bounds(now: pd.Timestamp, period: str) -> tuple[pd.Timestamp, pd.Timestamp]:
    """The calendar month or ISO week (from Monday) holding `now`, in UTC: [start, end)."""
    day = now.tz_convert("UTC").normalize()
    if period == "month":
        start = day.replace(day=1)
        return start, start + pd.DateOffset(months=1)
    start = day - pd.Timedelta(days=day.weekday())
    return start, start + pd.Timedelta(days=7)


def _credits(store: SnapshotStore, budget: Budget, since: pd.Timestamp, freq: str = "1D") -> float:
    """Credits the budget's scope spent in `store` since `since`."""
    frame = analysis.spend_in(store, since=since)  # each charge at its own time
    if budget.scope == "project":
        frame = frame[(frame["project"] == budget.name) | (frame["project_id"] == budget.name)]
    if budget.scope == "tag":
        frame = frame[_covered(budget, frame, store)]
    return float(frame["credits"].sum())


def _covered(budget: Budget, projects: pd.DataFrame, store: SnapshotStore) -> pd.Series:
    """Which rows' projects (`project_id`, and the name in `project` or `name`) a tag
    budget covers: for `translation_group`, the projects in that group as the store
    last recorded it (a project gone since keeps its group, so its spend still counts)."""
    if budget.tag == analysis.GROUP_KEY:
        groups = analysis.project_groups(store)
        members = set(groups["project_id"][groups[analysis.GROUP_KEY] == budget.name])
        return projects["project_id"].isin(members).astype(bool)
    names = projects["project"] if "project" in projects else projects["name"]
    covered = [budget.covers(i, n) for i, n in zip(projects["project_id"], names, strict=True)]
    return pd.Series(covered, index=projects.index, dtype=bool)


def evaluate(
    budgets: tuple[Budget, ...], stores: Mapping[str, SnapshotStore], now: pd.Timestamp
) -> list[Finding]:
    """The budgets crossed, each checked over the stores its scope covers."""
    findings = []
    for budget in budgets:
        start, end = bounds(now, budget.period)
        spent, burn, covered, where = _measure(budget, stores, start, now)
        if covered is None:
            continue  # the project or workspace is not in these stores
        findings += _crossed(budget, spent, burn, start, end, now, where)
    return findings


def _measure(
    budget: Budget, stores: Mapping[str, SnapshotStore], start: pd.Timestamp, now: pd.Timestamp
) -> tuple[float, float | None, pd.Timestamp | None, str]:
    """Spent since `start`, the burn rate per hour, the first moment counted (None when
    the budget's subject is in none of the stores) and the workspace it is in."""
    spent, recent, covered, where = 0.0, 0.0, None, AGENCY
    window_start = now - _BURN_WINDOW
    for label, store in stores.items():
        if budget.scope == "workspace" and label != budget.name:
            continue
        if budget.scope == "project" and not _has_project(store, budget.name or ""):
            continue
        if (
            budget.scope == "tag"
            and not _covered(budget, observe(store).latest_projects, store).any()
        ):
            continue
        times = store.snapshots()["snapshot_at"]
        if times.empty:
            continue
        # A tag's projects may lie in several workspaces: its alert is the agency's.
        where = label if budget.scope in ("project", "workspace") else AGENCY
        covered = times.iloc[0] if covered is None else min(covered, times.iloc[0])
        spent += _credits(store, budget, start)
        recent += _credits(store, budget, window_start, freq="1h")
    if covered is None:
        return 0.0, None, None, where
    hours = (now - max(window_start, covered)).total_seconds() / 3600
    return spent, (recent / hours if hours >= 1 else None), covered, where


def _has_project(store: SnapshotStore, name: str) -> bool:
    projects = observe(store).latest_projects  # the cycle's own read of the latest
    return bool(((projects["name"] == name) | (projects["project_id"] == name)).any())


def _crossed(
    budget: Budget,
    spent: float,
    burn: float | None,
    start: pd.Timestamp,
    end: pd.Timestamp,
    now: pd.Timestamp,
    workspace: str,
) -> list[Finding]:
    """A finding per level reached: each warning level, and the limit."""
    share = spent / budget.credits
    levels = [w for w in budget.warn_at if w < 1 and share >= w] + ([1.0] if share >= 1 else [])
    return [_level(budget, spent, burn, start, end, now, workspace, at) for at in levels]


def _level(
    budget: Budget,
    spent: float,
    burn: float | None,
    start: pd.Timestamp,
    end: pd.Timestamp,
    now: pd.Timestamp,
    workspace: str,
    at: float,
) -> Finding:
    share = spent / budget.credits
    level = "limit" if at >= 1 else "warn"
    # One warning level keeps the key it always had; several are told apart by their share.
    name = level if level == "limit" or len(budget.warn_at) == 1 else f"warn{round(at * 100)}"
    what = {"agency": "the agency", "tag": f"{budget.tag} {budget.name}"}.get(
        budget.scope, budget.name
    )
    span = f"{start:%B %Y}" if budget.period == "month" else f"the week from {start.day} {start:%b}"
    message = (
        f"{what} has spent {spent:,.0f} of its {budget.credits:,} credits for {span} "
        f"({share:.0%} as of {now:%d %b %H:%M} UTC"
        + (", over the limit" if level == "limit" else f", warning at {at:.0%}")
        + ")"
    )
    runs_out = None
    if burn and burn > 0 and spent < budget.credits:
        runs_out = now + pd.Timedelta(hours=(budget.credits - spent) / burn)
        if runs_out < end:
            message += f"; at this rate the budget runs out on {runs_out.day} {runs_out:%B}"
        else:
            message += "; at this rate it lasts the period"
    return Finding(
        check="budget",
        scope=budget.scope,
        subject=what or "",
        workspace=workspace,
        message=message,
        figures={
            "spent": round(spent),
            "credits": budget.credits,
            "share": round(share, 3),
            "warn_at": at,
            "level": level,
            "period": budget.period,
            "period_start": start.isoformat(),
            "period_end": end.isoformat(),
            "burn_per_day": round(burn * 24, 1) if burn is not None else None,
            "runs_out": runs_out.isoformat() if runs_out is not None else None,
        },
        detail=f"{budget.period}:{start.date().isoformat()}:{name}",
    )

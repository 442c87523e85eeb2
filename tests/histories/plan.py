"""A seeded scenario: what the emulator is asked to do, drawn from one integer.

A plan is data only, so a failing seed prints as the scenario that failed and
Hypothesis can shrink the integers it is drawn from.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta

# Instants where calendars part: month, year and clock-change boundaries, and a plain
# morning. A seed starts a few minutes before or after one of them.
STARTS = (
    datetime(2026, 11, 18, 9, 0, tzinfo=UTC),  # a plain Wednesday morning
    datetime(2026, 11, 30, 23, 0, tzinfo=UTC),  # a month ends (and a Monday begins)
    datetime(2026, 12, 31, 22, 30, tzinfo=UTC),  # a year ends
    datetime(2026, 10, 25, 0, 0, tzinfo=UTC),  # summer time ends in Europe at 01:00 UTC
    datetime(2027, 3, 28, 0, 0, tzinfo=UTC),  # summer time begins in Europe at 01:00 UTC
    datetime(2026, 11, 1, 5, 0, tzinfo=UTC),  # summer time ends in New York at 06:00 UTC
)
INTERVALS = (300, 900, 1800, 3600, 3 * 3600, 6 * 3600)  # seconds between snapshots
ZONES = ("UTC", "Europe/Paris", "America/New_York", "Asia/Tokyo")
STEPS = ("text", "translate", "clean", "full")
LANGUAGES = ("en", "fr", "es", "de")
# The interleavings that make runs hard to tell apart, each played once when drawn.
TANGLES = (
    "held_after_rescan",  # a re-scan and pages held in one interval, started hours later
    "added_to_failed",  # pages added to a failed chapter, which stays failed
    "rescan_in_interval",  # a chapter created and re-scanned between two snapshots
    "staged",  # a chapter staged, given held pages, started later
    # Drawn last (below), so the seeds drawn before it was added keep their plans.
    "run_rescanned_held",  # pages run, a re-scan, pages held in one interval: (c)
    "ran_before_the_store",  # run before the first snapshot, pages added after it
)


@dataclass(frozen=True)
class ProjectPlan:
    name: str
    kind: str  # "comic" or "novel"
    languages: tuple[str, ...]
    process_steps: str
    idle: bool  # never given a chapter


@dataclass(frozen=True)
class Plan:
    seed: int
    start: datetime
    interval: int  # seconds between snapshots
    snapshots: int  # 1: the baseline alone
    projects: tuple[ProjectPlan, ...]
    failure_rate: float
    stall_rate: float
    review_rate: float  # the share of chapters at needs_review reviewed at each step
    uploads: float  # chapters uploaded per project and step, on average
    rescan_rate: float  # the share of failed comic chapters re-scanned at each step
    hold_rate: float  # the share of settled comic chapters given held pages
    add_rate: float  # the share of settled comic chapters given pages that run
    trash_rate: float  # the share of settled chapters trashed after a snapshot
    tangles: tuple[str, ...]
    events: bool  # the webhook events are recorded into the store
    tz: str  # the zone the calendar checks use

    @property
    def end(self) -> datetime:
        return self.start + timedelta(seconds=self.interval * max(self.snapshots - 1, 0))


def _rate(rng: random.Random) -> float:
    """From none to most: a quarter of seeds none, the rest spread up to 0.8."""
    return 0.0 if rng.random() < 0.25 else round(rng.uniform(0.05, 0.8), 2)


def draw(seed: int) -> Plan:
    """The scenario of `seed`; the same seed always draws the same plan."""
    rng = random.Random(seed)
    interval = rng.choice(INTERVALS)
    # From one snapshot to several days, capped at 14 so a seed stays a few seconds.
    longest = max(2, min(14, (4 * 86400) // interval + 1))
    snapshots = 1 if rng.random() < 0.08 else rng.randint(2, longest)
    count = rng.randint(1, 4)
    kinds = [rng.choice(("comic", "comic", "novel")) for _ in range(count)]
    projects = tuple(
        ProjectPlan(
            name=f"Series {n + 1}",
            kind=kind,
            languages=tuple(rng.sample(LANGUAGES, rng.randint(1, 4))),
            process_steps=rng.choice(STEPS) if kind == "comic" else "translate",  # novels' only
            idle=count > 1 and rng.random() < 0.2,
        )
        for n, kind in enumerate(kinds)
    )
    start = rng.choice(STARTS) + timedelta(minutes=rng.randint(-90, 90))
    tangles = tuple(t for t in TANGLES[:4] if rng.random() < 0.35)
    failure_rate = _rate(rng)
    plan = Plan(
        seed=seed,
        start=start,
        interval=interval,
        snapshots=snapshots,
        projects=projects,
        failure_rate=failure_rate,
        stall_rate=round(_rate(rng) / 2 * (1 - failure_rate), 2),  # together at most 1
        review_rate=_rate(rng),
        uploads=round(rng.uniform(0.1, 1.0), 2),
        rescan_rate=_rate(rng),
        hold_rate=_rate(rng) / 2,
        add_rate=_rate(rng) / 2,
        trash_rate=_rate(rng) / 4,
        tangles=tangles,
        events=rng.random() < 0.6,
        tz=rng.choice(ZONES),
    )
    later = tuple(t for t in TANGLES[4:] if rng.random() < 0.35)
    return replace(plan, tangles=plan.tangles + later)

"""Chaos rules: per-route faults a test names (a status, latency, a lost answer, a cut or
slow body, a reset connection), matched by method and route, drawn from seeded generators.

What each kind does, and the rules of matching, are in docs/emulator.md ("Chaos").
"""

from __future__ import annotations

import random
import re
import threading
from dataclasses import dataclass, field
from typing import Any, Literal

from toolkit.emulator.core.fields import rate_field, whole_field
from toolkit.emulator.routes.errors import EmulatorError

__all__ = ["Chaos", "ChaosRule", "Kind", "Target", "route_of"]

Kind = Literal["status", "latency", "drop", "cut", "reset", "trickle"]
_KINDS: tuple[Kind, ...] = ("status", "latency", "drop", "cut", "reset", "trickle")
_METHODS = ("GET", "POST", "*")

# The /api/v1 routes a rule can name, with their placeholders written as `{}`.
_ROUTES = (
    "/projects",
    "/projects/{}",
    "/projects/{}/chapters",
    "/chapters/{}",
    "/chapters/{}/pages",
    "/chapters/{}/start",
    "/chapters/{}/rescan",
)
_PLACEHOLDER = re.compile(r"\{[^/{}]*\}")
_MAX_MS = 60_000
_FIELDS = {
    "method",
    "route",
    "kind",
    "projectId",
    "chapterId",
    "probability",
    "count",
    "seed",
    "status",
    "body",
    "retryAfter",
    "latencyMs",
    "afterBytes",
    "chunkBytes",
    "intervalMs",
}


def route_of(path: str) -> tuple[str, str | None] | None:
    """The rule route of an `/api/v1` path (without the prefix), and the id in it."""
    parts = path.strip("/").split("/")
    if not parts or parts[0] not in ("projects", "chapters"):
        return None
    shape = "/" + "/".join("{}" if index % 2 else part for index, part in enumerate(parts))
    if shape not in _ROUTES or shape == "/chapters":
        return None
    return shape, parts[1] if len(parts) > 1 else None


@dataclass
class ChaosRule:
    """One rule: where it applies, how often, and what it does there."""

    id: str
    method: str
    route: str  # "*" or one of ROUTES
    kind: Kind
    project_id: str | None = None
    chapter_id: str | None = None
    probability: float = 1.0
    count: int | None = None  # times left to fire; None: every matching request
    seed: int = 0
    status: int | None = None
    body: Any = None
    retry_after: int | None = None
    latency_ms: int = 0
    after_bytes: int = 0
    chunk_bytes: int = 1
    interval_ms: int = 0
    applied: int = 0
    _draws: random.Random = field(default_factory=random.Random, repr=False)

    def __post_init__(self) -> None:
        self._draws = random.Random(f"{self.seed}:{self.id}")

    def to_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "id": self.id,
            "method": self.method,
            "route": self.route,
            "kind": self.kind,
            "projectId": self.project_id,
            "chapterId": self.chapter_id,
            "probability": self.probability,
            "count": self.count,
            "seed": self.seed,
            "applied": self.applied,
        }
        if self.kind == "status":
            body |= {"status": self.status, "body": self.body, "retryAfter": self.retry_after}
        elif self.kind == "latency":
            body["latencyMs"] = self.latency_ms
        elif self.kind == "cut":
            body["afterBytes"] = self.after_bytes
        elif self.kind == "trickle":
            body |= {"chunkBytes": self.chunk_bytes, "intervalMs": self.interval_ms}
        return body


def _parse_rule(body: Any, rule_id: str) -> ChaosRule:
    """A rule from the admin body; anything wrong is a 400 naming the field."""
    if not isinstance(body, dict):
        raise EmulatorError(400, "the body must be a JSON object: a chaos rule")
    unknown = set(body) - _FIELDS
    if unknown:
        raise EmulatorError(
            400, f"unknown chaos rule fields {sorted(unknown)}; use {sorted(_FIELDS)}"
        )
    method = str(body.get("method", "*")).upper()
    if method not in _METHODS:
        raise EmulatorError(400, f"method must be GET, POST or *, not {body.get('method')!r}")
    route = _route(body.get("route"))
    kind = body.get("kind")
    if kind not in _KINDS:
        raise EmulatorError(400, f"kind must be one of {', '.join(_KINDS)}, not {kind!r}")
    probability = rate_field(body.get("probability", 1.0), "probability")
    count = body.get("count")
    if count is not None:
        count = whole_field(count, "count", minimum=1, maximum=10**9)
    rule = ChaosRule(
        id=rule_id,
        method=method,
        route=route,
        kind=kind,
        project_id=_id(body, "projectId"),
        chapter_id=_id(body, "chapterId"),
        probability=float(probability),
        count=count,
        seed=whole_field(body.get("seed", 0), "seed", minimum=-(2**63), maximum=2**63 - 1),
    )
    if kind == "status":
        rule.status = whole_field(body.get("status"), "status", minimum=400, maximum=599)
        rule.body = body.get("body")
        retry_after = body.get("retryAfter")
        rule.retry_after = (
            None
            if retry_after is None
            else whole_field(retry_after, "retryAfter", minimum=0, maximum=86_400)
        )
    elif kind == "latency":
        rule.latency_ms = whole_field(
            body.get("latencyMs"), "latencyMs", minimum=0, maximum=_MAX_MS
        )
    elif kind == "cut":
        rule.after_bytes = whole_field(
            body.get("afterBytes", 0), "afterBytes", minimum=0, maximum=10**9
        )
    elif kind == "trickle":
        rule.chunk_bytes = whole_field(
            body.get("chunkBytes", 1), "chunkBytes", minimum=1, maximum=10**6
        )
        rule.interval_ms = whole_field(
            body.get("intervalMs"), "intervalMs", minimum=0, maximum=_MAX_MS
        )
    return rule


def _route(value: Any) -> str:
    if value == "*":
        return "*"
    if isinstance(value, str):
        shape = _PLACEHOLDER.sub("{}", value.removeprefix("/api/v1").rstrip("/") or "/")
        if shape in _ROUTES:
            return shape
    raise EmulatorError(
        400,
        f"route must be * or an /api/v1 route such as /chapters/{{chapter_id}}, not {value!r}; "
        f"the routes are {', '.join(_ROUTES)}",
    )


def _id(body: dict[str, Any], name: str) -> str | None:
    value = body.get(name)
    if value is not None and not isinstance(value, str):
        raise EmulatorError(400, f"{name} must be an id string, not {value!r}")
    return value


@dataclass(frozen=True)
class Target:
    """What a request touches, for matching: its method, rule route and ids."""

    method: str
    route: str
    project_id: str | None
    chapter_id: str | None


class Chaos:
    """The rules in force, in the order they were added; the first that fires wins.

    Rules live in memory: they belong to the test (or the `toolkit emulator` run) that
    set them, and a restart starts with none.
    """

    def __init__(self) -> None:
        self._rules: list[ChaosRule] = []
        self._lock = threading.Lock()
        self._next = 1

    @property
    def active(self) -> bool:
        return bool(self._rules)  # read without the lock: a list's truth is atomic

    @property
    def by_project(self) -> bool:
        """Whether a rule names a project (a chapter route then needs its project)."""
        return any(rule.project_id for rule in self._rules)

    def add(self, body: Any) -> ChaosRule:
        with self._lock:
            rule = _parse_rule(body, f"rule_{self._next}")
            self._next += 1
            self._rules.append(rule)
            return rule

    def rules(self) -> list[dict[str, Any]]:
        with self._lock:
            return [rule.to_json() for rule in self._rules]

    def remove(self, rule_id: str) -> None:
        with self._lock:
            kept = [rule for rule in self._rules if rule.id != rule_id]
            if len(kept) == len(self._rules):
                raise EmulatorError(404, f"chaos rule {rule_id!r} not found")
            self._rules = kept

    def clear(self) -> None:
        with self._lock:
            self._rules = []

    def matches(self, rule: ChaosRule, target: Target) -> bool:
        return (
            rule.method in ("*", target.method)
            and rule.route in ("*", target.route)
            and rule.chapter_id in (None, target.chapter_id)
            and rule.project_id in (None, target.project_id)
        )

    def draw(self, target: Target) -> ChaosRule | None:
        """The rule that fires on this request, if any; a count is used up as it fires.

        Each rule draws only for the requests it matches, from its own generator (seeded
        by its `seed` and id), so adding a rule for one route changes nothing elsewhere.
        """
        with self._lock:
            for rule in self._rules:
                if rule.count == 0 or not self.matches(rule, target):
                    continue
                if rule.probability < 1 and rule._draws.random() >= rule.probability:
                    continue
                rule.applied += 1
                if rule.count is not None:
                    rule.count -= 1  # a spent rule stays listed, with what it did
                return rule
        return None

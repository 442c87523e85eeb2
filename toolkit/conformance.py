"""`toolkit conformance`: check the decisions the toolkit relies on against a service.

Each decision (one the spec states, or one DESIGN and docs/emulator.md took where the
spec is silent or shows only a sample) is checked with `/api/v1` requests only and
reported as agrees, differs (with what was seen) or unchecked (with why). Read-only by
default; `write=True` creates one staged chapter (no credits are spent) to check the
write decisions. The decisions and the limits of each check are in docs/emulator.md
("Conformance").

Past 400 lines on purpose: each decision is checked in a few lines beside the sentence
that names it, and read in order they are the list of decisions a user sees; the
answers' shapes are apart, in `conformance_shapes`.

```python
findings = run_conformance("https://service.example", api_key, write=False)
print(*(finding.line() for finding in findings), sep="\n")
```
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

import httpx

from toolkit.config import Secret, Settings
from toolkit.conformance_shapes import (
    CHAPTER_DETAIL,
    CHAPTER_LIST_ITEM,
    NEW_CHAPTER,
    PROJECT,
    PROJECT_LIST_ITEM,
    STATUSES,
    is_iso,
    is_number,
    mismatches,
)
from toolkit.errors import AuthenticationError, TransportError
from toolkit.timestamps import parse_http_date

__all__ = ["PROJECTS_READ", "ConformanceFinding", "Verdict", "closing_line", "run_conformance"]

Verdict = Literal["agrees", "differs", "unchecked"]
# A workspace may have many projects: the per-project checks read this many.
PROJECTS_READ = 10
# 1973 in milliseconds, 33,658 AD in seconds: a time value above it is milliseconds.
_MS_FLOOR = 10**11


@dataclass(frozen=True)
class ConformanceFinding:
    """One decision and what the service showed about it."""

    verdict: Verdict
    decision: str
    seen: str | None = None  # what was seen (differs), or why it was not checked

    def line(self) -> str:
        """The line `toolkit conformance` prints: the verdict first, then the decision."""
        if self.verdict == "differs":
            return f"differs    {self.decision} -- seen: {self.seen}"
        if self.verdict == "unchecked":
            return f"unchecked  {self.decision} -- {self.seen}"
        return f"agrees     {self.decision}"


# -- the run ------------------------------------------------------------------------------


class _Run:
    """The requests and the findings of one conformance run."""

    def __init__(self, settings: Settings, transport: httpx.BaseTransport | None) -> None:
        self.findings: list[ConformanceFinding] = []
        self.http = httpx.Client(
            base_url=settings.api_url, timeout=30.0, transport=transport, follow_redirects=False
        )
        self.key = settings.api_key
        self.dates: list[str | None] = []

    def get(
        self, path: str, *, key: str | Literal[False] | None = False, **params: Any
    ) -> httpx.Response:
        return self.send("GET", path, key=key, params=params or None)

    def send(
        self, method: str, path: str, *, key: str | Literal[False] | None = False, **options: Any
    ) -> httpx.Response:
        """One request; `key` None sends no key, a text sends that one, False ours."""
        headers = {}
        if key is False:
            headers["Authorization"] = f"Bearer {self.key.reveal()}"
        elif key is not None:
            headers["Authorization"] = f"Bearer {key}"
        try:
            response = self.http.request(method, path, headers=headers, **options)
        except httpx.TransportError as exc:
            raise TransportError(
                f"no answer from {self.http.base_url} ({type(exc).__name__}); check the URL "
                "and that the service is up",
                reason=type(exc).__name__,
                advice="check --base-url",
            ) from None
        self.dates.append(response.headers.get("date"))
        return response

    def judge(self, decision: str, wrong: str | None) -> None:
        """Record a decision: agrees when nothing is wrong, else differs with what was seen."""
        verdict: Verdict = "agrees" if wrong is None else "differs"
        self.findings.append(ConformanceFinding(verdict, decision, wrong))

    def skip(self, decision: str, why: str) -> None:
        self.findings.append(ConformanceFinding("unchecked", decision, why))


def run_conformance(
    base_url: str | None = None,
    api_key: str | Secret[str] | None = None,
    *,
    write: bool = False,
    project: str | None = None,
    transport: httpx.BaseTransport | None = None,
    receiver: tuple[str, int] | None = None,
    wait: float = 120.0,
    webhook_secret: str | Secret[str] | None = None,
) -> list[ConformanceFinding]:
    """Check every decision the toolkit relies on against the service at `base_url`.

    Args:
        base_url: The service's root, without `/api/v1` (default `CTS_BASE_URL`).
        api_key: The workspace's key (default `CTS_API_KEY`).
        write: Also check the write decisions, creating one staged chapter (it stays:
            the API cannot delete it; no credits are spent).
        project: The project (name or id) to write in; by default the first comic one.
        transport: An httpx transport (tests).
        receiver: Where to receive deliveries (host, port): an endpoint added in the
            dashboard points there; without it the webhook decisions are unchecked.
        wait: Real seconds to wait for deliveries after the other checks (it ends
            early once every kind and the ping came).
        webhook_secret: The endpoint's signing secret (default `CTS_WEBHOOK_SECRET`).

    Returns:
        One finding per decision, in the order checked.

    Raises:
        ConfigError: No base URL or key.
        TransportError: The service did not answer.
        AuthenticationError: The key was refused.
    """
    settings = Settings.resolve(base_url, api_key)
    run = _Run(settings, transport)
    collector = None
    if receiver is not None:
        from toolkit.config import webhook_secret as configured_secret
        from toolkit.conformance_webhooks import DeliveryCollector

        webhook_secret = configured_secret(webhook_secret)
        collector = DeliveryCollector(*receiver)
    try:
        projects = _check_projects(run)
        chapters = _check_chapters(run, projects)
        _check_refusals(run, projects, chapters)
        _check_headers(run)
        if write:
            _check_writes(run, projects, project)
        else:
            for decision in _WRITE_DECISIONS:
                run.skip(decision, "a write; run with --write to check it")
        _check_webhooks(run, collector, wait, webhook_secret)
    finally:
        run.http.close()
        if collector is not None:
            collector.stop()
    return run.findings


def _check_webhooks(
    run: _Run, collector: Any, wait: float, secret: str | Secret[str] | None
) -> None:
    if collector is None:
        run.skip(
            "webhook deliveries: signed, their envelope, each event's data, the ping",
            "endpoints are added in the dashboard; point one at --receiver HOST:PORT",
        )
        return
    from toolkit.conformance_webhooks import judge_deliveries

    collector.wait(wait)
    assert secret is not None
    held = secret if isinstance(secret, Secret) else Secret(secret)
    for decision, verdict in judge_deliveries(collector.deliveries, held):
        if verdict is False:
            run.skip(decision, f"no such delivery came in {wait:g} s")
        else:
            run.judge(decision, verdict if isinstance(verdict, str) else None)


def _check_projects(run: _Run) -> list[dict[str, Any]]:
    answer = run.get("/projects")
    if answer.status_code in (401, 403):
        raise AuthenticationError(
            f"the key was refused ({answer.status_code}); set CTS_API_KEY to your workspace's key",
            status=answer.status_code,
        )
    body = _json(answer)
    run.judge(
        "GET /projects answers 200 with a JSON array",
        None if answer.status_code == 200 and isinstance(body, list) else _shown(answer),
    )
    projects = body if isinstance(body, list) else []
    wrong = [
        f"{p.get('name')!r}: {', '.join(m)}"
        for p in projects
        for m in [mismatches(p, PROJECT_LIST_ITEM)]
        if m
    ]
    run.judge(
        "listed projects have the spec's fields and types (seriesProfile, coverKey, "
        "deletedAt null; lastChapterAt a number or null)",
        "; ".join(wrong[:3]) or None,
    )
    times = [p.get("lastChapterAt") for p in projects]
    seconds = [t for t in times if is_number(t) and t < _MS_FLOOR]
    run.judge(
        "lastChapterAt is in milliseconds since 1970",
        f"values like {seconds[0]} (seconds?)" if seconds else None,
    )
    keys = [(t is None, -(t or 0)) for t in times]
    run.judge(
        "projects are listed newest chapter first (none last)",
        None if keys == sorted(keys) else f"lastChapterAt in order: {times[:6]}",
    )
    paged = run.get("/projects", page=2, limit=1, offset=1)
    run.judge(
        "list routes have no pagination: unknown query parameters are ignored",
        None if _json(paged) == body else f"?page=2&limit=1&offset=1 gave {_shown(paged)}",
    )
    if projects:
        first = projects[0]
        single = run.get(f"/projects/{first['id']}")
        detail = _json(single)
        wrong_single = mismatches(detail, PROJECT) if isinstance(detail, dict) else [_shown(single)]
        run.judge(
            "GET /projects/:id answers 200 with the list fields but targetLanguages, "
            "chapterCount and lastChapterAt",
            None
            if single.status_code == 200 and not wrong_single
            else "; ".join(wrong_single[:4]) or _shown(single),
        )
    else:
        run.skip("GET /projects/:id answers the project", "the workspace has no project")
    return projects


def _check_chapters(run: _Run, projects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    listed: list[dict[str, Any]] = []
    order, shape, counts, last, derived = [], [], [], [], []
    for project in projects[:PROJECTS_READ]:
        answer = run.get(f"/projects/{project['id']}/chapters")
        items = _json(answer)
        if answer.status_code != 200 or not isinstance(items, list):
            shape.append(f"{project['name']!r}: {_shown(answer)}")
            continue
        listed += items
        positions = [item.get("position") for item in items]
        if positions != sorted(positions, key=lambda p: (p is None, p)):
            order.append(f"{project['name']!r}: {positions[:8]}")
        shape += [
            f"chapter {item.get('position')}: {', '.join(m)}"
            for item in items
            for m in [mismatches(item, CHAPTER_LIST_ITEM)]
            if m
        ]
        if project.get("chapterCount") != len(items):
            count = project.get("chapterCount")
            counts.append(f"{project['name']!r}: chapterCount {count}, {len(items)} listed")
        created = [_ms(item.get("createdAt")) for item in items]
        newest = max((c for c in created if c is not None), default=None)
        if project.get("lastChapterAt") != newest and newest is not None:
            last.append(
                f"{project['name']!r}: {project.get('lastChapterAt')} vs newest createdAt {newest}"
            )
        for item in items:
            statuses = [lang.get("status") for lang in item.get("languages") or []]
            if statuses and all(s in STATUSES for s in statuses):
                lowest = min(statuses, key=STATUSES.index)
                if item.get("status") != lowest:
                    derived.append(
                        f"chapter {item.get('position')}: {item.get('status')} from {statuses}"
                    )
    if not listed:
        for decision in _CHAPTER_DECISIONS:
            run.skip(decision, "no chapter in the projects read")
        return listed
    run.judge(_CHAPTER_DECISIONS[0], "; ".join(order[:3]) or None)
    run.judge(_CHAPTER_DECISIONS[1], "; ".join(shape[:3]) or None)
    run.judge(_CHAPTER_DECISIONS[2], "; ".join(counts[:3]) or None)
    run.judge(_CHAPTER_DECISIONS[3], "; ".join(last[:3]) or None)
    run.judge(_CHAPTER_DECISIONS[4], "; ".join(derived[:3]) or None)
    detail = run.get(f"/chapters/{listed[0]['id']}")
    body = _json(detail)
    wrong = mismatches(body, CHAPTER_DETAIL) if isinstance(body, dict) else [_shown(detail)]
    run.judge(
        _CHAPTER_DECISIONS[5],
        None if detail.status_code == 200 and not wrong else "; ".join(wrong[:4]) or _shown(detail),
    )
    return listed


_CHAPTER_DECISIONS = (
    "chapters are listed by chapter number",
    "chapter list items have the spec's fields and types (statuses, languages, files)",
    "chapterCount counts the chapters listed",
    "lastChapterAt is the newest chapter's createdAt, in milliseconds",
    "a chapter's status is the lowest of its languages' statuses",
    "GET /chapters/:id answers 200 with the detail fields, its project and assignee null",
)


def _check_refusals(
    run: _Run, projects: list[dict[str, Any]], chapters: list[dict[str, Any]]
) -> None:
    shapes: list[str] = []
    missing = run.get("/projects", key=None)
    unknown = run.get("/projects", key="cts_conformance_not_a_key")
    run.judge("a request without a key is refused with 401", _unless_status(missing, 401))
    run.judge("a request with an unknown key is refused with 401", _unless_status(unknown, 401))
    no_project = run.get("/projects/00000000-0000-4000-8000-000000000000")
    no_chapter = run.get("/chapters/00000000-0000-4000-8000-000000000000")
    run.judge("an unknown project is 404", _unless_status(no_project, 404))
    run.judge("an unknown chapter is 404", _unless_status(no_chapter, 404))
    for answer in (missing, unknown, no_project, no_chapter):
        wrong = _error_shape(answer)
        if wrong:
            shapes.append(wrong)
    run.judge(
        'error answers are JSON {"error": {"status": <the status>, "message": <text>}}',
        "; ".join(shapes[:2]) or None,
    )


def _check_headers(run: _Run) -> None:
    unread = [d for d in run.dates if parse_http_date(d) is None]
    run.judge(
        "every answer carries a Date header (the client reads the service's clock there)",
        f"{len(unread)} of {len(run.dates)} answers without a readable Date ({unread[0]!r})"
        if unread
        else None,
    )
    run.skip(
        "429 and 503 answers carry Retry-After (seconds or an HTTP date)",
        "no 429 or 503 was met; the client reads both forms",
    )


_WRITE_DECISIONS = (
    "a staged chapter is created with 201, the NewChapter fields and no pages",
    "a chapter created without a number gets the next after the project's highest",
    "a staged chapter is listed not started, translating, with no pages and nothing spent",
    "a taken chapter number is refused with 409",
    "starting a chapter with no page is refused with 400",
    "re-scanning a chapter with no pages is refused with 400",
)


def _check_writes(run: _Run, projects: list[dict[str, Any]], wanted: str | None) -> None:
    chosen = [
        p
        for p in projects
        if (wanted is None and p.get("kind") == "comic") or wanted in (p.get("name"), p.get("id"))
    ]
    if not chosen:
        why = f"no project {wanted!r}" if wanted else "no comic project to stage a chapter in"
        for decision in _WRITE_DECISIONS:
            run.skip(decision, why)
        return
    project = chosen[0]
    before = _json(run.get(f"/projects/{project['id']}/chapters"))
    highest = max((c.get("position", 0) for c in before or []), default=0)
    created = run.send("POST", f"/projects/{project['id']}/chapters", data={"staged": "1"})
    body = _json(created)
    wrong = mismatches(body, NEW_CHAPTER) if isinstance(body, dict) else [_shown(created)]
    if isinstance(body, dict) and body.get("pages"):
        wrong.append(f"pages={body['pages']!r:.40}")
    run.judge(
        _WRITE_DECISIONS[0],
        None
        if created.status_code == 201 and not wrong
        else f"{created.status_code}: {'; '.join(wrong[:3])}",
    )
    if not isinstance(body, dict) or "id" not in body:
        for decision in _WRITE_DECISIONS[1:]:
            run.skip(decision, "the staged chapter was not created")
        return
    run.judge(
        _WRITE_DECISIONS[1],
        None
        if body.get("position") == highest + 1
        else f"position {body.get('position')} after {highest}",
    )
    items = _json(run.get(f"/projects/{project['id']}/chapters")) or []
    item = next((i for i in items if i.get("id") == body["id"]), None)
    seen = None
    if item is None:
        seen = "the new chapter is not listed"
    else:
        shown = {k: item.get(k) for k in ("started", "status", "pageCount", "creditsSpent")}
        if shown != {"started": False, "status": "translating", "pageCount": 0, "creditsSpent": 0}:
            seen = repr(shown)
    run.judge(_WRITE_DECISIONS[2], seen)
    taken = run.send(
        "POST",
        f"/projects/{project['id']}/chapters",
        data={"staged": "1", "position": str(body["position"])},
    )
    run.judge(_WRITE_DECISIONS[3], _unless_status(taken, 409))
    start = run.send("POST", f"/chapters/{body['id']}/start")
    run.judge(_WRITE_DECISIONS[4], _unless_status(start, 400))
    rescan = run.send("POST", f"/chapters/{body['id']}/rescan")
    run.judge(_WRITE_DECISIONS[5], _unless_status(rescan, 400))


# -- small readers ------------------------------------------------------------------------


def _json(response: httpx.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        return None


def _shown(response: httpx.Response) -> str:
    return f"{response.status_code} {response.text[:80]!r}"


def _unless_status(response: httpx.Response, status: int) -> str | None:
    return None if response.status_code == status else _shown(response)


def _error_shape(response: httpx.Response) -> str | None:
    body = _json(response)
    error = body.get("error") if isinstance(body, dict) else None
    if (
        isinstance(body, dict)
        and set(body) == {"error"}
        and isinstance(error, dict)
        and set(error) == {"status", "message"}
        and error["status"] == response.status_code
        and isinstance(error["message"], str)
    ):
        return None
    return _shown(response)


def _ms(value: Any) -> int | None:
    if not is_iso(value):
        return None
    return int(datetime.fromisoformat(value).timestamp() * 1000)


def closing_line(findings: list[ConformanceFinding]) -> str:
    """The closing line: how many decisions agree, differ, and were not checked."""
    counts = {
        verdict: sum(f.verdict == verdict for f in findings)
        for verdict in ("agrees", "differs", "unchecked")
    }
    return f"{counts['agrees']} agree, {counts['differs']} differ, {counts['unchecked']} unchecked"

"""What each check is called in words, and the action that clears its alerts.

Every surface that names a check (the Slack and e-mail lines, the command's output, the
Dashboard's alerts) takes its name and its action from here, so they say the same. The
action names the Dashboard panel that does it where there is one.
"""

from __future__ import annotations

import shlex
from datetime import datetime, timedelta
from typing import Any

__all__ = ["action", "age", "kind_of", "title"]

# The checks about a chapter that needs a person: their titles are the words of the one
# reasons table (`tk.analysis.reason_words`, per kind of chapter), so the watch, the
# Dashboard and notebook 02 say them alike.
_CHAPTER_REASONS = {"stalled": "stalled", "failed_waiting": "failed", "held_pages": "held_pages"}

_TITLES = {
    "budget": "Budget",
    "anomaly": "Unusual activity",
    "due": "Due date at risk",
    "missing_events": "Webhook events missing",
    "snapshots": "Snapshots not taken",
}

# What clears each check's alert, and the panel that does it; a novel cannot be
# re-scanned, so its chapter checks say what a novel needs instead.
_RESCAN = "re-scan the chapter (the Re-scan panel, tk.widgets.RescanPanel)"
_NOVEL_AGAIN = "upload its text again as a new chapter (the Upload panel's 'New novel chapter')"
_ACTIONS = {
    "budget": "raise the budget in the watch config, or wait for the next period",
    "anomaly": "look into the project; it clears once a period looks usual again",
    "stalled": "wait: the service abandons the run 2 hours after its last progress; then "
    + _RESCAN,
    "failed_waiting": _RESCAN,
    "held_pages": "start the held pages (the Upload panel's 'Add & start pages', "
    "'Start held pages')",
    "due": "move the due date in the watch config, or add capacity",
    "missing_events": "check the webhook receiver that feeds the store",
    "snapshots": "check the service and the store (`toolkit store check`)",
}
_NOVEL_ACTIONS = {
    "stalled": "wait: the service abandons the run 2 hours after its last progress; then "
    + _NOVEL_AGAIN,
    "failed_waiting": _NOVEL_AGAIN,
}


def title(check: str, kind: str | None = None) -> str:
    """The check's name in words, for a chapter of project `kind` where it is about one
    (the code itself for a check this list does not know): `held_pages` -> "Held pages
    never started"."""
    if check in _CHAPTER_REASONS:
        from toolkit.analysis import reason_words

        words = reason_words(_CHAPTER_REASONS[check], kind)
        return words[0].upper() + words[1:]
    return _TITLES.get(check, check)


def action(check: str, kind: str | None = None) -> str:
    """What clears the check's alert, naming the panel that does it; for a chapter of
    project `kind` (a novel is never told to re-scan)."""
    if kind == "novel" and check in _NOVEL_ACTIONS:
        return _NOVEL_ACTIONS[check]
    return _ACTIONS.get(check, "see docs/watch.md")


# The figure whose rows say why each check's alert was raised (`toolkit explain`): the
# chapters that need a person, the credits of a budget's period, the likely finish of a
# project due; an anomaly's measure names its own.
EXPLAINED_BY = {"stalled": "needs_action", "failed_waiting": "needs_action",
                "held_pages": "needs_action", "budget": "credits", "due": "finish_p50"}  # fmt: skip
_MEASURES = {"spend": "credits", "lines": "lines", "failure_rate": "runs_failed"}


def explain_command(
    check: str, figures: dict[str, Any], *, scope: str = "", subject: str = ""
) -> str | None:
    """The `toolkit explain` command that shows the rows behind an alert's figure, for
    its project and its period, from what the alert recorded (`scope` and `subject`: the
    finding's); None for a check no figure explains (missing events, snapshots not
    taken) and for the agency's budget (its credits span several stores). The store is
    the alert's workspace's, as the watch config names it (`--store`, or CTS_STORE)."""
    figure = EXPLAINED_BY.get(check) or _MEASURES.get(str(figures.get("measure")))
    if figure is None or scope == "agency":
        return None
    words = ["toolkit", "explain", figure]
    project = figures.get("project_id")
    if project is None and scope == "project" and subject:
        project = subject  # a budget or an anomaly names its project by name
    if project is not None:
        words += ["--project", str(project)]
    since = figures.get("period_start") or figures.get("bin_start")
    if since:
        words += ["--since", str(since)]
    if figures.get("period_end"):
        words += ["--until", str(figures["period_end"])]
    return shlex.join(words)


def kind_of(figures: dict[str, object]) -> str | None:
    """The kind of project an alert's chapter belongs to, as its figures recorded it
    (alerts written before the kind was recorded: unknown)."""
    kind = figures.get("kind")
    return kind if isinstance(kind, str) else None


def age(since: datetime, now: datetime) -> str:
    """How long ago `since` was, as of `now` (the moment it is shown): '3 h 10 min ago'."""
    seconds = max(0, int((now - since) / timedelta(seconds=1)))
    if seconds < 60:
        return "just now"
    minutes, hours, days = seconds // 60, seconds // 3600, seconds // 86400
    if days:
        return f"{days} d {hours % 24} h ago" if hours % 24 else f"{days} d ago"
    if hours:
        return f"{hours} h {minutes % 60} min ago" if minutes % 60 else f"{hours} h ago"
    return f"{minutes} min ago"

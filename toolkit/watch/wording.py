"""What each check is called in words, and the action that clears its alerts.

Every surface that names a check (the Slack and e-mail lines, the command's output, the
Dashboard's alerts) takes its name and its action from here, so they say the same. The
action names the Dashboard panel that does it where there is one.
"""

from __future__ import annotations

from datetime import datetime, timedelta

TITLES = {
    "budget": "Budget",
    "anomaly": "Unusual activity",
    "stalled": "Stalled run",
    "failed_waiting": "Failed chapter waiting for a re-scan",
    "held_pages": "Pages held, never started",
    "due": "Due date at risk",
    "missing_events": "Webhook events missing",
    "snapshots": "Snapshots not taken",
}

ACTIONS = {
    "budget": "raise the budget in the watch config, or wait for the next period",
    "anomaly": "look into the project; it clears once a period looks usual again",
    "stalled": "re-scan the chapter (Dashboard: Re-scan panel)",
    "failed_waiting": "re-scan the chapter (Dashboard: Re-scan panel)",
    "held_pages": "start the held pages (Dashboard: Upload panel, 'Start held pages')",
    "due": "move the due date in the watch config, or add capacity",
    "missing_events": "check the webhook receiver that feeds the store",
    "snapshots": "check the service and the store (`toolkit store check`)",
}


def title(check: str) -> str:
    """The check's name in words (the code itself for a check this list does not know)."""
    return TITLES.get(check, check)


def action(check: str) -> str:
    return ACTIONS.get(check, "see docs/watch.md")


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

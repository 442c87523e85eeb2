"""Notifications: a Standard Webhooks-signed webhook, a Slack-compatible message, e-mail.

The webhook's body is the contract of docs/watch.md:

    {"type": "alert.opened" | "alert.reminder" | "alert.resolved", "timestamp": ISO,
     "data": {"alert_id", "check", "scope", "subject", "workspace", "message", "figures"}}

signed with `webhook-id` (the alert's id and the message's kind: a resend after a crash
carries the same id), `webhook-timestamp` (the wall clock, as receivers check it) and
`webhook-signature`, by our own signing primitive (`toolkit._signing`). Every target is
tried `retries` times with a doubling wait; what still fails is returned, to be recorded.
"""

from __future__ import annotations

import hashlib
import json
import smtplib
import ssl
import time
from collections.abc import Callable
from datetime import datetime
from email.message import EmailMessage

import httpx

from toolkit._signing import sign
from toolkit.config import Secret
from toolkit.watch.alerts import Alert
from toolkit.watch.config import WatchConfig, check_target_url, secret_from

TIMEOUT = 10.0
Send = Callable[[list[Alert], datetime], None]


def payload(alert: Alert, now: datetime) -> dict[str, object]:
    """The webhook body of one alert message (contract)."""
    f = alert.finding
    return {
        "type": f"alert.{alert.event}",
        "timestamp": now.isoformat(),
        "data": {
            "alert_id": alert.alert_id,
            "check": f.check,
            "scope": f.scope,
            "subject": f.subject,
            "workspace": f.workspace,
            "message": f.message,
            "figures": f.figures,
        },
    }


def message_id(alert: Alert) -> str:
    """The `webhook-id` of one message: the same when a crash makes it go out again."""
    stamp = alert.last_sent.isoformat() if alert.last_sent else ""
    digest = hashlib.sha256(f"{alert.alert_id}|{alert.event}|{stamp}".encode()).hexdigest()
    return f"msg_{digest[:24]}"


def headline(alert: Alert) -> str:
    word = {"opened": "Alert", "reminder": "Still open", "resolved": "Resolved"}[alert.event]
    return f"[{word}] {alert.finding.check}: {alert.finding.message}"


def targets(config: WatchConfig) -> dict[str, Send]:
    """The configured targets by name (`webhook`, `slack`, `email`), each sending one
    cycle's messages; raising means not delivered."""
    found: dict[str, Send] = {}
    if config.webhook is not None:
        hook = config.webhook
        secret = secret_from(hook.secret_env, "the webhook signing secret")
        found["webhook"] = lambda alerts, now: _webhook(hook.url, secret, alerts, now)
    if config.slack is not None:
        address = config.slack.address()
        check_target_url(address.reveal(), config.slack.allow_private, "Slack")
        found["slack"] = lambda alerts, now: _slack(address, alerts)
    if config.email is not None:
        found["email"] = lambda alerts, now: _email(config, alerts)
    return found


def deliver(
    config: WatchConfig, alerts: list[Alert], now: datetime, *, wait: float | None = None
) -> None:
    """Send every notifying alert to every target, retrying; each alert's `sent_to` and
    `failed_to` say what happened."""
    telling = [a for a in alerts if a.notifies]
    if not telling:
        return
    pause = config.retry_wait if wait is None else wait
    for name, send in targets(config).items():
        problem = ""
        for attempt in range(config.retries):
            try:
                send(telling, now)
                problem = ""
                break
            except (httpx.HTTPError, OSError, smtplib.SMTPException, _Refused) as exc:
                problem = f"{name}: {_why(exc)}"
                if attempt < config.retries - 1:
                    time.sleep(pause * 2**attempt)
        for alert in telling:
            (alert.failed_to if problem else alert.sent_to).append(problem or name)


class _Refused(Exception):
    """A target answered, but not with 2xx."""


def _why(exc: Exception) -> str:
    if isinstance(exc, httpx.HTTPError):
        return f"{type(exc).__name__}"  # never the URL: a Slack URL is a secret
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


def _post(url: str, content: bytes, headers: dict[str, str]) -> None:
    answer = httpx.post(url, content=content, headers=headers, timeout=TIMEOUT,
                        follow_redirects=False)  # fmt: skip
    if not answer.is_success:
        raise _Refused(f"answered {answer.status_code}")


def _webhook(url: str, secret: Secret[str], alerts: list[Alert], now: datetime) -> None:
    for alert in alerts:
        body = json.dumps(payload(alert, now), separators=(",", ":")).encode()
        webhook_id = message_id(alert)
        timestamp = str(int(time.time()))  # wall clock: receivers check it against theirs
        headers = {
            "content-type": "application/json",
            "webhook-id": webhook_id,
            "webhook-timestamp": timestamp,
            "webhook-signature": sign(secret, webhook_id, timestamp, body),
        }
        _post(url, body, headers)


def _slack(address: Secret[str], alerts: list[Alert]) -> None:
    text = "\n".join(headline(a) for a in alerts)
    body = json.dumps({"text": text}).encode()
    _post(address.reveal(), body, {"content-type": "application/json"})


def _email(config: WatchConfig, alerts: list[Alert]) -> None:
    settings = config.email
    assert settings is not None
    message = EmailMessage()
    opened = sum(a.event == "opened" for a in alerts)
    resolved = sum(a.event == "resolved" for a in alerts)
    still = len(alerts) - opened - resolved
    message["Subject"] = f"CTS watch: {opened} new, {resolved} resolved, {still} still open"
    message["From"] = settings.sender
    message["To"] = ", ".join(settings.to)
    message.set_content("\n\n".join(headline(a) for a in alerts) + "\n")
    with smtplib.SMTP(settings.host, settings.port, timeout=TIMEOUT) as smtp:
        smtp.ehlo()
        if settings.starttls and smtp.has_extn("starttls"):
            smtp.starttls(context=ssl.create_default_context())
            smtp.ehlo()
        if settings.user_env and settings.password_env:
            user = secret_from(settings.user_env, "the SMTP user")
            password = secret_from(settings.password_env, "the SMTP password")
            smtp.login(user.reveal(), password.reveal())
        smtp.send_message(message)

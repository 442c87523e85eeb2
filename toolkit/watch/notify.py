"""Notifications: a Standard Webhooks-signed webhook, a Slack-compatible message, e-mail.

The webhook's body is the contract of docs/watch.md:

    {"type": "alert.opened" | "alert.reminder" | "alert.resolved", "timestamp": ISO,
     "data": {"alert_id", "check", "scope", "subject", "workspace", "message", "figures"}}

signed with `webhook-id` (the message's id, drawn when it was decided: every attempt
carries it and the same body), `webhook-timestamp` (the wall clock, as receivers check
it) and `webhook-signature`, by our own signing primitive (`toolkit._signing`). Slack
gets a post per message, its `webhook-id` header the message's id; e-mail one message
per round holding every owed message's line, each naming its alert, with the ids it
holds in `X-CTS-Message-Ids` (and its `Message-ID` made from them), so a repeat after a
kill is recognisable there too.

Each sender raises `Undelivered` (the outbox's) for anything that went wrong, naming the
exception's type or the status, never a URL (a Slack URL is a secret) nor a secret: one
target's failure never reaches another's.
"""

from __future__ import annotations

import hashlib
import json
import smtplib
import ssl
import time
from datetime import UTC, datetime
from email.message import EmailMessage
from email.utils import parsedate_to_datetime
from urllib.parse import urlsplit

import httpx

from toolkit._signing import sign
from toolkit.config import Secret
from toolkit.watch.config import Email, WatchConfig, check_destination, secret_from
from toolkit.watch.outbox import Message, Sender, Undelivered
from toolkit.watch.wording import action, explain_command, kind_of, title

__all__ = ["headline", "senders"]

_HEADLINE = {"opened": "Alert", "reminder": "Still open", "resolved": "Resolved"}


def _payload(message: Message) -> dict[str, object]:
    """The webhook body of one message (contract)."""
    f = message.finding
    return {
        "type": f"alert.{message.event}",
        "timestamp": message.decided_at.isoformat(),
        "data": {
            "alert_id": message.alert_id,
            "check": f.check,
            "scope": f.scope,
            "subject": f.subject,
            "workspace": f.workspace,
            "message": f.message,
            "figures": f.figures,
        },
    }


def headline(message: Message) -> str:
    """One message in words: what, the facts with their times, what clears it, its id."""
    f = message.finding
    text = f"[{_HEADLINE[message.event]}] {title(f.check, kind_of(f.figures))}: {f.message}"
    if message.event != "resolved":
        text += f" To clear it: {action(f.check, kind_of(f.figures))}."
        rows = explain_command(f.check, f.figures, scope=f.scope, subject=f.subject)
        if rows is not None:
            text += f" The rows behind it: `{rows}` (the {f.workspace} workspace's store)."
    return f"{text} ({message.alert_id})"


def _batch_id(messages: list[Message]) -> str:
    """The id of an e-mail holding `messages`: the same when the same ones go again."""
    digest = hashlib.sha256("|".join(m.message_id for m in messages).encode()).hexdigest()
    return f"msg_{digest[:24]}"


def senders(config: WatchConfig) -> dict[str, Sender]:
    """The configured targets by name (`webhook`, `slack`, `email`). Their secrets were
    checked when the watch started (`WatchConfig.check_secrets`); each is read when its
    target sends, so one missing (a library caller that did not check) fails that target
    alone."""
    found: dict[str, Sender] = {}
    if config.webhook is not None:
        hook = config.webhook
        found["webhook"] = lambda batch: _webhook(
            hook.url, hook.allow_private, secret_from(hook.secret_env, "the webhook secret"),
            batch, hook.timeout,
        )  # fmt: skip
    if config.slack is not None:
        slack = config.slack
        found["slack"] = lambda batch: _slack(slack.address(), slack.allow_private, batch,
                                              slack.timeout)  # fmt: skip
    if config.email is not None:
        email = config.email
        found["email"] = lambda batch: _email(email, batch)
    return found


def _why(exc: BaseException) -> str:
    """What went wrong, by the exception's type: its text may quote a URL or a secret."""
    return type(exc).__name__


def _retry_after(value: str | None) -> float | None:
    """`Retry-After` in seconds: a number of seconds or an HTTP date; None if unreadable."""
    if not value:
        return None
    if value.strip().isdigit():
        return float(value.strip())
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


def _post(
    url: str, allow_private: bool, content: bytes, headers: dict[str, str], timeout: float,
    what: str,
) -> None:  # fmt: skip
    """POST once; `Undelivered` unless a 2xx came back. The address is checked before
    every attempt, as the service checks its webhook URLs: a name may change its answer."""
    try:
        check_destination(urlsplit(url).hostname or "", allow_private, what, resolve=True)
        answer = httpx.post(url, content=content, headers=headers, timeout=timeout,
                            follow_redirects=False)  # fmt: skip
    except Exception as exc:  # any failure here is this target's alone
        raise Undelivered(_why(exc)) from None
    if not answer.is_success:
        wait = _retry_after(answer.headers.get("retry-after"))
        raise Undelivered(f"answered {answer.status_code}", retry_after=wait)


def _webhook(
    url: str, allow_private: bool, secret: Secret[str], batch: list[Message], timeout: float
) -> None:
    for done, message in enumerate(batch):
        body = json.dumps(_payload(message), separators=(",", ":")).encode()
        timestamp = str(int(time.time()))  # wall clock: receivers check it against theirs
        headers = {
            "content-type": "application/json",
            "webhook-id": message.message_id,
            "webhook-timestamp": timestamp,
            "webhook-signature": sign(secret, message.message_id, timestamp, body),
        }
        try:
            _post(url, allow_private, body, headers, timeout, "webhook")
        except Undelivered as stopped:
            stopped.done = done
            raise


def _slack(address: Secret[str], allow_private: bool, batch: list[Message], timeout: float) -> None:
    for done, message in enumerate(batch):
        body = json.dumps({"text": headline(message)}).encode()
        headers = {"content-type": "application/json", "webhook-id": message.message_id}
        try:
            _post(address.reveal(), allow_private, body, headers, timeout, "Slack")
        except Undelivered as stopped:
            stopped.done = done
            raise


def _email(settings: Email, batch: list[Message]) -> None:
    message = EmailMessage()
    opened = sum(m.event == "opened" for m in batch)
    resolved = sum(m.event == "resolved" for m in batch)
    still = len(batch) - opened - resolved
    message["Subject"] = f"CTS watch: {opened} new, {resolved} resolved, {still} still open"
    message["From"] = settings.sender
    message["To"] = ", ".join(settings.to)
    message["Message-ID"] = f"<{_batch_id(batch)}@cts-watch>"
    message["X-CTS-Message-Ids"] = " ".join(m.message_id for m in batch)
    message.set_content("\n\n".join(headline(m) for m in batch) + "\n")
    try:
        _smtp_send(settings, message)
    except Undelivered:
        raise
    except Exception as exc:  # smtplib's frames may hold the password: never re-raised
        raise Undelivered(_why(exc)) from None


def _smtp_send(settings: Email, message: EmailMessage) -> None:
    """Send over TLS (implicit, or STARTTLS, which the server must offer); in plain text
    only to the host `allow_plaintext` names."""
    check_destination(settings.host, settings.allow_private, "SMTP", resolve=True)
    context = ssl.create_default_context()
    smtp: smtplib.SMTP
    if settings.tls == "implicit":
        smtp = smtplib.SMTP_SSL(settings.host, settings.port, timeout=settings.timeout,
                                context=context)  # fmt: skip
    else:
        smtp = smtplib.SMTP(settings.host, settings.port, timeout=settings.timeout)
    with smtp:
        smtp.ehlo()
        if settings.tls == "starttls":
            if smtp.has_extn("starttls"):
                smtp.starttls(context=context)
                smtp.ehlo()
            elif settings.allow_plaintext != settings.host:
                raise Undelivered("the server offers no STARTTLS: nothing sent in plain text")
        if settings.user_env and settings.password_env:
            user = secret_from(settings.user_env, "the SMTP user")
            password = secret_from(settings.password_env, "the SMTP password")
            smtp.login(user.reveal(), password.reveal())
        smtp.send_message(message)

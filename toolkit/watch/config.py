"""The watch config: a TOML file read into typed settings (docs/watch.md has every key).

Past 400 lines on purpose: the settings' dataclasses and the reader that checks every
key (naming its line) mirror each other field for field.

```python
config = read_config("watch.toml")
config.workspaces["studio"].store     # data/snapshots/studio
config.checks_for("studio", "Moonlit Harbor").stalled_after
```

Unknown keys and bad values are refused with the file, the line and the key named.
tomllib gives no line numbers for values it parsed, so `_key_lines` finds them in the text.
Secrets (API keys, the webhook secret, the Slack URL, SMTP credentials) are named by
environment variable only, read into a `Secret` when the watch needs them, never printed.
"""

from __future__ import annotations

import difflib
import ipaddress
import math
import os
import re
import socket
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import date, timedelta
from functools import partial
from pathlib import Path
from typing import Any, Literal, TypeVar
from urllib.parse import urlsplit

from toolkit.analysis.groups import GROUP_KEY, reserved
from toolkit.analysis.trouble import STALL_AFTER
from toolkit.config import Secret, is_loopback_host, normalize_base_url
from toolkit.errors import ConfigError

__all__ = [
    "TIMEOUT",
    "Budget",
    "CheckSettings",
    "Email",
    "Period",
    "Scope",
    "Slack",
    "WatchConfig",
    "WatchedWorkspace",
    "Webhook",
    "check_destination",
    "parse_duration",
    "read_config",
    "secret_from",
]

Scope = Literal["project", "workspace", "agency", "tag"]
Period = Literal["month", "week"]
_CHECKS = ("budget", "anomaly", "stalled", "failed_waiting", "held_pages", "due",
          "missing_events", "snapshots")  # fmt: skip
# What a project's own table may switch off or set: the checks about its work.
_PROJECT_CHECKS = ("anomaly", "stalled", "failed_waiting", "held_pages", "due", "missing_events")
_T = TypeVar("_T")
Path_ = tuple[str | int, ...]  # where a value sits: ("budgets", 0, "credits")


@dataclass(frozen=True)
class CheckSettings:
    """Thresholds of the checks: `[checks]`, then a workspace's `[workspaces.X.checks]`,
    then a project's `[checks.projects."NAME"]`, each overriding the keys it sets."""

    stalled_after: timedelta = STALL_AFTER  # the one default (toolkit.analysis)
    failed_waiting_after: timedelta = timedelta(hours=4)
    missing_events_after: timedelta = timedelta(minutes=30)
    remind: timedelta = timedelta(hours=24)
    anomaly_period: timedelta = timedelta(days=1)
    anomaly_baseline: int = 14  # periods before the latest one
    anomaly_mads: float = 3.0  # how many scaled MADs from the median count as unusual
    off: frozenset[str] = frozenset()  # checks not run


@dataclass(frozen=True)
class WatchedWorkspace:
    """One `[workspaces.NAME]` table of `watch.toml`: its URL, key variable and store."""

    name: str
    base_url: str
    key_env: str
    store: str

    def api_key(self) -> Secret[str]:
        return secret_from(self.key_env, f"the API key of workspace {self.name!r}")


@dataclass(frozen=True)
class Budget:
    """A budget of `watch.toml`: credits per period for a project, workspace or the agency."""

    scope: Scope
    name: str | None  # a project's or workspace's name, a tag's value; None for the agency
    period: Period
    credits: int
    warn_at: tuple[float, ...] = (0.8,)  # warning levels, shares of the credits, ascending
    line: int = 0  # where it is written, for messages
    tag: str | None = None  # a tag budget's key (`client`): it covers `projects`
    projects: frozenset[str] = frozenset()  # names or ids tagged `tag = name` in [tags]

    def covers(self, project_id: object, name: object) -> bool:
        """Whether a tag budget counts this project (by its id or its name)."""
        return str(project_id) in self.projects or str(name) in self.projects


TIMEOUT = 10.0  # seconds a target may take to answer (the service's webhook limit)


@dataclass(frozen=True)
class Webhook:
    """Where the watch posts its messages as signed webhooks."""

    url: str
    secret_env: str
    allow_private: bool = False
    timeout: float = TIMEOUT


@dataclass(frozen=True)
class Slack:
    """The Slack webhook the watch posts its messages to."""

    url: Secret[str] | str | None = None  # written in the file (a loopback sink in tests)
    url_env: str | None = None  # else read from this variable: the usual Slack URL is secret
    allow_private: bool = False
    timeout: float = TIMEOUT

    def address(self) -> Secret[str]:
        if self.url_env:
            return secret_from(self.url_env, "the Slack webhook URL")
        return self.url if isinstance(self.url, Secret) else Secret(self.url or "")


@dataclass(frozen=True)
class Email:
    """The mail server and addresses the watch sends its messages to."""

    host: str
    to: tuple[str, ...]
    sender: str  # `from` in the file
    port: int = 587
    user_env: str | None = None
    password_env: str | None = None
    tls: Literal["starttls", "implicit"] = "starttls"  # STARTTLS must be offered
    allow_plaintext: str | None = None  # the one host that may be used without TLS
    allow_private: bool = False
    timeout: float = TIMEOUT


@dataclass(frozen=True)
class WatchConfig:
    """`watch.toml`, read and checked: the workspaces, budgets, checks and targets."""

    path: str
    store: str
    interval: timedelta
    workspaces: dict[str, WatchedWorkspace]
    budgets: tuple[Budget, ...] = ()
    checks: CheckSettings = CheckSettings()
    workspace_checks: dict[str, CheckSettings] = field(default_factory=dict)
    project_checks: dict[str, dict[str, Any]] = field(default_factory=dict)  # name or id: keys set
    due: dict[str, date] = field(default_factory=dict)
    webhook: Webhook | None = None
    slack: Slack | None = None
    email: Email | None = None
    retries: int = 3  # attempts per target and round (docs/watch.md: the outbox)
    retry_wait: float = 2.0  # seconds before the second attempt, doubling
    where: dict[str, str] = field(default_factory=dict)  # key -> "file, line N: key"
    # [tags."NAME or id"]: a project's tags (client, vendor, team: any key), by name or id
    tags: dict[str, dict[str, str]] = field(default_factory=dict)

    def checks_for(self, workspace: str, *project: str) -> CheckSettings:
        """The thresholds for one workspace, and for one of its projects when given its
        name or id (or both: a table for the id wins)."""
        settings = self.workspace_checks.get(workspace, self.checks)
        for key in reversed(project):
            if key in self.project_checks:
                return replace(settings, **self.project_checks[key])
        return settings

    def check_secrets(self) -> None:
        """Every secret the watch needs is set and usable: a `ConfigError` naming the
        file, line and key of the first that is not, never its value."""
        for name, workspace in self.workspaces.items():
            self._secret(f"workspaces.{name}.key_env", workspace.api_key)
        if self.webhook is not None:
            hook = self.webhook
            secret = self._secret("notify.webhook.secret_env", lambda: secret_from(
                hook.secret_env, "the webhook signing secret"))  # fmt: skip
            self._secret("notify.webhook.secret_env", lambda: _signing_secret(secret))
        if self.slack is not None and self.slack.url_env:
            slack = self.slack
            self._secret("notify.slack.url_env", lambda: _check_target_url(
                slack.address(), slack.allow_private, "Slack"))  # fmt: skip
        if self.email is not None:
            for key in ("user_env", "password_env"):
                name = getattr(self.email, key)
                if name:
                    value = self._secret(f"notify.email.{key}", partial(
                        secret_from, name, "the SMTP credentials"))  # fmt: skip
                    self._secret(f"notify.email.{key}", partial(_smtp_text, value))

    def _secret(self, key: str, check: Callable[[], _T]) -> _T:
        try:
            return check()
        except (ConfigError, ValueError) as exc:
            raise ConfigError(f"{self.where.get(key, key)}: {exc}") from None


def secret_from(variable: str, what: str) -> Secret[str]:
    """A secret read from an environment variable; a `ConfigError` names it when unset."""
    if not os.environ.get(variable):
        raise ConfigError(f"{what} is read from the environment: set {variable}")
    return Secret(os.environ[variable])


def _signing_secret(secret: Secret[str]) -> None:
    from toolkit._signing import decode_secret

    if not decode_secret(secret):  # raises ValueError, naming no secret, for non-base64
        raise ValueError("the webhook secret is empty after 'whsec_'")


def _smtp_text(value: Secret[str]) -> None:
    """SMTP AUTH carries ASCII only (smtplib would fail at the first send, quoting it)."""
    text = value.reveal()
    if not text.isascii() or any(c in text for c in "\r\n\0"):
        raise ValueError(
            "SMTP credentials must be plain ASCII without line breaks (the value is not shown)"
        )


# Names that lead to a cloud's metadata service or the local network, whatever DNS says.
_INTERNAL_NAMES = ("localhost", "metadata.google.internal", "metadata")
_INTERNAL_SUFFIXES = (".internal", ".local", ".localhost", ".localdomain", ".home.arpa")


def _ip(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(host.strip("[]").split("%")[0])
    except ValueError:
        return None


def check_destination(host: str, allow_private: bool, what: str, *, resolve: bool) -> None:
    """Refuse a host that is not public, as the service refuses webhook URLs: a literal
    private, loopback, link-local (metadata) or reserved address, an internal name, and,
    with `resolve` (before every send: names change their answers), a name resolving to
    one. `allow_private = true` on the target lets it through (tests, a local relay)."""
    if allow_private:
        return
    name = host.lower().rstrip(".")
    literal = _ip(name)
    if literal is not None:
        addresses = [literal]
    elif name in _INTERNAL_NAMES or name.endswith(_INTERNAL_SUFFIXES) or "." not in name:
        raise ConfigError(
            f"the {what} host {host} is an internal name: set allow_private = true to use it"
        )
    elif resolve:
        try:
            answers = socket.getaddrinfo(name, None, type=socket.SOCK_STREAM)
        except OSError as exc:
            raise ConfigError(
                f"the {what} host {host} does not resolve ({type(exc).__name__})"
            ) from None
        addresses = [a for a in (_ip(str(info[4][0])) for info in answers) if a]
    else:
        return
    for address in addresses:
        if not address.is_global or address.is_multicast:
            raise ConfigError(
                f"the {what} host {host} is a private, loopback, link-local or reserved "
                f"address ({address}): set allow_private = true to use it"
            )


def _check_target_url(url: str | Secret[str], allow_private: bool, what: str) -> str:
    """A notification URL: https to a public host, or (with allow_private = true) http or
    https to any. The message names only scheme and host: a Slack URL's path is its
    secret."""
    text = url.reveal() if isinstance(url, Secret) else url
    parts = urlsplit(text)
    host = parts.hostname or ""
    if parts.scheme not in ("https", "http") or not host:
        raise ConfigError(f"the {what} URL ({parts.scheme or 'no scheme'}://{host}) must be https")
    if parts.scheme == "http" and not allow_private:
        plain = "loopback" if is_loopback_host(host) else host
        raise ConfigError(
            f"the {what} URL (http://{host}) must be https (plain http to {plain} only "
            "with allow_private = true)"
        )
    check_destination(host, allow_private, what, resolve=False)
    return text


def read_config(path: str | os.PathLike[str]) -> WatchConfig:
    """The watch config at `path`, checked whole; a `ConfigError` names the file, the
    line and the key of the first problem."""
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"watch config {str(file)!r} cannot be read: {exc.strerror}") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{file}: not valid TOML: {exc}") from None
    except RecursionError:
        raise ConfigError(f"{file}: not valid TOML: nested too deeply") from None
    return _Reader(str(file), _key_lines(text), file.parent).config(data)


_HEADER = re.compile(r"^\s*(\[\[?)\s*(.+?)\s*\]\]?\s*(#.*)?$")
_KEY = re.compile(r"""^\s*("(?:[^"\\]|\\.)*"|'[^']*'|[A-Za-z0-9_.-]+)\s*=""")


def _parts(dotted: str) -> list[str]:
    """`notify.webhook` -> [notify, webhook]; `due."Moonlit Harbor"` keeps the quoted part."""
    found = re.findall(r"""\s*("(?:[^"\\]|\\.)*"|'[^']*'|[^."'\s]+)\s*(?:\.|$)""", dotted)
    return [part[1:-1] if part[:1] in "\"'" else part for part in found]


def _key_lines(text: str) -> dict[Path_, int]:
    """The line (from 1) of every table header and key in a TOML text, by its path: a
    `[[budgets]]` entry's keys under ("budgets", index, key)."""
    lines: dict[Path_, int] = {}
    counts: dict[tuple[str, ...], int] = {}
    table: Path_ = ()
    for number, line in enumerate(text.splitlines(), start=1):
        header = _HEADER.match(line)
        if header and not line.lstrip().startswith("#"):
            names = tuple(_parts(header.group(2)))
            if header.group(1) == "[[":
                counts[names] = counts.get(names, -1) + 1
                table = (*names, counts[names])
            else:
                table = names
            lines.setdefault(table, number)
            continue
        key = _KEY.match(line)
        if key:
            lines.setdefault((*table, *_parts(key.group(1))), number)
    return lines


_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|sec|m|min|h|hours?|d|days?|w|weeks?)\s*$")
_UNITS = {"s": 1, "sec": 1, "m": 60, "min": 60, "h": 3600, "hour": 3600, "hours": 3600,
          "d": 86400, "day": 86400, "days": 86400, "w": 604800, "week": 604800,
          "weeks": 604800}  # fmt: skip


_LONGEST = timedelta(days=3660)  # ten years: longer is a mistake, and near timedelta's end
_SHORTEST_INTERVAL = timedelta(minutes=1)  # a cycle snapshots every workspace


def parse_duration(text: str) -> timedelta:
    """ "15m", "90min", "4h", "2d", "1w" -> a positive timedelta of at most ten years
    (ValueError otherwise)."""
    match = _DURATION.match(text)
    if not match or float(match.group(1)) <= 0:
        raise ValueError(f"{text!r} is not a duration like 15m, 90min, 4h or 2d")
    seconds = float(match.group(1)) * _UNITS[match.group(2)]
    if not seconds <= _LONGEST.total_seconds():
        raise ValueError(f"{text!r} is longer than ten years")
    return timedelta(seconds=seconds)


def _interval(text: str) -> timedelta:
    value = parse_duration(text)
    if value < _SHORTEST_INTERVAL:
        raise ValueError(f"{text!r} is shorter than a minute (a cycle snapshots every workspace)")
    return value


def _timeout(text: str) -> float:
    seconds = parse_duration(text).total_seconds()
    if not 1 <= seconds <= 60:
        raise ValueError(f"{text!r} is not between 1s and 60s")
    return seconds


class _Reader:
    """Reads the parsed TOML into a `WatchConfig`, naming the line of each problem."""

    def __init__(self, file: str, lines: dict[Path_, int], folder: Path) -> None:
        self.file, self.lines, self.folder = file, lines, folder

    def fail(self, where: Path_, problem: str) -> ConfigError:
        return ConfigError(f"{self.at(where)}: {problem}")

    def at(self, where: Path_) -> str:
        """ "file, line N: key" for a key (its table's line when the key is not written)."""
        line = None
        for depth in range(len(where), 0, -1):  # the key's line, else its table's
            line = self.lines.get(where[:depth])
            if line is not None:
                break
        at = f", line {line}" if line else ""
        return f"{self.file}{at}: {_key(where)}"

    def table(self, value: Any, where: Path_, keys: tuple[str, ...]) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise self.fail(where, "must be a table")
        for key in value:
            if key not in keys:
                raise self.fail((*where, key), f"unknown key; expected one of {', '.join(keys)}")
        return value

    def get(
        self,
        data: Mapping[str, Any],
        where: Path_,
        key: str,
        kind: type[_T] | tuple[type, ...],
        convert: Callable[[Any], Any] | None = None,
    ) -> Any:
        value = data[key]
        if (isinstance(value, bool) and kind is not bool) or not isinstance(value, kind):
            names = kind.__name__ if isinstance(kind, type) else " or ".join(
                k.__name__ for k in kind
            )  # fmt: skip
            shown = "" if _secret_key(key) else f", not {_short(value)}"
            raise self.fail((*where, key), f"must be {_words.get(names, names)}{shown}")
        if convert is None:
            return value
        try:
            return convert(value)
        except (ValueError, ConfigError, OverflowError) as exc:
            raise self.fail((*where, key), str(exc)) from None

    def config(self, data: dict[str, Any]) -> WatchConfig:
        top = ("store", "interval", "workspaces", "budgets", "checks", "due", "notify", "retries",
               "retry_wait", "tags")  # fmt: skip
        self.table(data, (), top)
        store = self.get(data, (), "store", str) if "store" in data else "data/snapshots"
        if not os.path.isabs(store) and "://" not in store:
            store = str(self.folder / store) if str(self.folder) not in ("", ".") else store
        interval = (
            self.get(data, (), "interval", str, _interval)
            if "interval" in data
            else timedelta(minutes=15)
        )
        if "workspaces" not in data or not data["workspaces"]:
            raise self.fail(("workspaces",), "name at least one: [workspaces.studio]")
        spaces = self.table(data["workspaces"], ("workspaces",), tuple(data["workspaces"]))
        for name in spaces:
            if not _LABEL.fullmatch(name):
                raise self.fail(
                    ("workspaces", name),
                    "a workspace's label is a name (letters, "
                    "digits, - and _), not a path: its store is <store>/<label>",
                )
        checks_data = data.get("checks", {})
        base = replace(CheckSettings(), **self.checks(checks_data, ("checks",), "top"))
        workspaces, workspace_checks = {}, {}
        for name, table in spaces.items():
            workspaces[name], own = self.workspace(name, table, store)
            if own is not None:
                where: Path_ = ("workspaces", name, "checks")
                workspace_checks[name] = replace(base, **self.checks(own, where, "workspace"))
        projects = {
            name: self.checks(table, ("checks", "projects", name), "project")
            for name, table in self.table(
                checks_data.get("projects", {}), ("checks", "projects"),
                tuple(checks_data.get("projects", {})),
            ).items()
        }  # fmt: skip
        budgets = data.get("budgets", [])
        if not isinstance(budgets, list):
            raise self.fail(("budgets",), "must be [[budgets]] entries")
        due = {
            name: self.get(data["due"], ("due",), name, (date, str), _date)
            for name in self.table(data.get("due", {}), ("due",), tuple(data.get("due", {})))
        }
        notify = self.table(data.get("notify", {}), ("notify",), ("webhook", "slack", "email"))
        retries = self.get(data, (), "retries", int, _within(1, 5)) if "retries" in data else 3
        retry_wait = float(self.get(data, (), "retry_wait", str, parse_duration).total_seconds()
                           if "retry_wait" in data else 2.0)  # fmt: skip
        if retry_wait > 10:
            raise self.fail(("retry_wait",), "is at most 10s (the store's lock is held meanwhile)")
        tags = self.tags(data.get("tags", {}))
        read_budgets = tuple(self.budget(b, ("budgets", i), tags) for i, b in enumerate(budgets))
        for i, b in enumerate(read_budgets):
            if b.scope == "workspace" and b.name not in workspaces:
                near = ", ".join(repr(n) for n in difflib.get_close_matches(b.name or "", spaces))
                raise self.fail(("budgets", i, "name"), f"no workspace {b.name!r} in this config"
                                + (f"; the nearest: {near}" if near else ""))  # fmt: skip
        return WatchConfig(
            path=self.file,
            store=store,
            interval=interval,
            workspaces=workspaces,
            budgets=read_budgets,
            checks=base,
            workspace_checks=workspace_checks,
            project_checks=projects,
            due=due,
            webhook=self.webhook(notify["webhook"]) if "webhook" in notify else None,
            slack=self.slack(notify["slack"]) if "slack" in notify else None,
            email=self.email(notify["email"]) if "email" in notify else None,
            retries=retries,
            retry_wait=retry_wait,
            where={_key(k): self.at(k) for k in self.lines},
            tags=tags,
        )

    def tags(self, data: Any) -> dict[str, dict[str, str]]:
        """`[tags."NAME or id"]` tables: each key a tag's name (a label), each value text."""
        projects = self.table(data, ("tags",), tuple(data) if isinstance(data, dict) else ())
        read = {}
        for project, table in projects.items():
            where: Path_ = ("tags", project)
            table = self.table(table, where, tuple(table) if isinstance(table, dict) else ())
            for key in table:
                if not _LABEL.fullmatch(key):
                    raise self.fail(
                        (*where, key), "a tag's name is a word (letters, digits, - and _)"
                    )
                if (why := reserved(key)) is not None:
                    raise self.fail((*where, key), why)
            read[project] = {key: self.get(table, where, key, str, _tag_value) for key in table}
        return read

    def workspace(
        self, name: str, table: Any, root: str
    ) -> tuple[WatchedWorkspace, dict[str, Any] | None]:
        where: Path_ = ("workspaces", name)
        table = self.table(table, where, ("base_url", "key_env", "store", "checks"))
        for key in ("base_url", "key_env"):
            if key not in table:
                raise self.fail(where, f"lacks {key}")
        url = self.get(table, where, "base_url", str, normalize_base_url)
        key_env = self.get(table, where, "key_env", str, _variable)
        store = self.get(table, where, "store", str) if "store" in table else f"{root}/{name}"
        if "store" in table and not os.path.isabs(store) and "://" not in store:
            store = str(self.folder / store) if str(self.folder) not in ("", ".") else store
        return WatchedWorkspace(name, url, key_env, store), table.get("checks")

    def checks(
        self, data: Any, where: Path_, level: Literal["top", "workspace", "project"]
    ) -> dict[str, Any]:
        """The keys a checks table sets. `remind` and `projects` only at the top: the
        reminders are one rhythm, the project tables one list."""
        durations: tuple[str, ...] = ("stalled_after", "failed_waiting_after",
                                      "missing_events_after", "anomaly_period")  # fmt: skip
        keys: tuple[str, ...] = (*durations, "anomaly_baseline", "anomaly_mads", "off")
        if level == "top":
            keys = (*keys, "remind", "projects")
            durations = (*durations, "remind")
        if level != "top" and isinstance(data, dict) and "remind" in data:
            raise self.fail((*where, "remind"), "reminders are set once, in [checks]")
        data = self.table(data, where, keys)
        changed: dict[str, Any] = {
            key: self.get(data, where, key, str, parse_duration) for key in durations if key in data
        }
        if "anomaly_baseline" in data:
            changed["anomaly_baseline"] = self.get(
                data, where, "anomaly_baseline", int, _at_least(3)
            )
        if "anomaly_mads" in data:
            changed["anomaly_mads"] = float(
                self.get(data, where, "anomaly_mads", (int, float), _within(0.5, 1e6))
            )
        if "off" in data:
            names: tuple[str, ...] = _PROJECT_CHECKS if level == "project" else _CHECKS
            if level == "workspace":  # budgets are switched off by removing their entries
                names = tuple(name for name in _CHECKS if name != "budget")
            changed["off"] = frozenset(self.get(data, where, "off", list, _check_names(names)))
        return changed

    def budget(self, data: Any, where: Path_, tags: Mapping[str, Mapping[str, str]]) -> Budget:
        data = self.table(data, where, ("scope", "name", "tag", "period", "credits", "warn_at"))
        for key in ("scope", "period", "credits"):
            if key not in data:
                raise self.fail(where, f"lacks {key}")
        scope = self.get(data, where, "scope", str,
                         _choice("project", "workspace", "agency", "tag"))  # fmt: skip
        if scope == "tag" and ("tag" not in data or "name" not in data):
            raise self.fail(where, 'a tag budget names the tag and its value: tag = "client", '
                            'name = "Acme" (the projects tagged so in [tags])')  # fmt: skip
        if scope != "tag" and "tag" in data:
            raise self.fail((*where, "tag"), 'only a budget with scope = "tag" names a tag')
        if scope != "agency" and "name" not in data:
            raise self.fail(where, f'a {scope} budget needs the {scope}\'s name: name = "..."')
        if scope == "agency" and "name" in data:
            raise self.fail((*where, "name"), "an agency budget covers every workspace: no name")
        tag = self.get(data, where, "tag", str) if scope == "tag" else None
        projects: frozenset[str] = frozenset()
        if tag is not None and tag != GROUP_KEY:  # a group's projects: the stores say
            value = self.get(data, where, "name", str)
            projects = frozenset(p for p, own in tags.items() if own.get(tag) == value)
            if not projects:
                said = sorted({own[tag] for own in tags.values() if tag in own})
                near = ", ".join(repr(n) for n in difflib.get_close_matches(value, said))
                raise self.fail((*where, "name"), f"no project is tagged {tag} = {value!r} in "
                                "[tags]" + (f"; the nearest: {near}" if near else ""))  # fmt: skip
        warn_at = (
            self.get(data, where, "warn_at", (int, float, list), _shares)
            if "warn_at" in data
            else (0.8,)
        )
        return Budget(
            scope=scope,
            name=self.get(data, where, "name", str) if "name" in data else None,
            period=self.get(data, where, "period", str, _choice("month", "week")),
            credits=self.get(data, where, "credits", int, _positive),
            warn_at=warn_at,
            line=self.lines.get(where, 0),
            tag=tag,
            projects=projects,
        )

    def timeout(self, data: Mapping[str, Any], where: Path_) -> float:
        return self.get(data, where, "timeout", str, _timeout) if "timeout" in data else TIMEOUT

    def webhook(self, data: Any) -> Webhook:
        where: Path_ = ("notify", "webhook")
        data = self.table(data, where, ("url", "secret_env", "allow_private", "timeout"))
        for key in ("url", "secret_env"):
            if key not in data:
                raise self.fail(where, f"lacks {key}")
        private = self.get(data, where, "allow_private", bool) if "allow_private" in data else False
        return Webhook(
            url=self.get(
                data, where, "url", str, lambda u: _check_target_url(u, private, "webhook")
            ),
            secret_env=self.get(data, where, "secret_env", str, _variable),
            allow_private=private,
            timeout=self.timeout(data, where),
        )

    def slack(self, data: Any) -> Slack:
        where: Path_ = ("notify", "slack")
        data = self.table(data, where, ("url", "url_env", "allow_private", "timeout"))
        if ("url" in data) == ("url_env" in data):
            raise self.fail(where, "give url_env (the variable holding the URL) or url")
        private = self.get(data, where, "allow_private", bool) if "allow_private" in data else False
        timeout = self.timeout(data, where)
        if "url" in data:
            # Held as a Secret at once: the path of a Slack URL is what lets anyone post.
            url = Secret(self.get(data, where, "url", str))
            try:
                _check_target_url(url, private, "Slack")
            except ConfigError as exc:
                raise self.fail((*where, "url"), str(exc)) from None
            return Slack(url=url, allow_private=private, timeout=timeout)
        return Slack(url_env=self.get(data, where, "url_env", str, _variable),
                     allow_private=private, timeout=timeout)  # fmt: skip

    def email(self, data: Any) -> Email:
        where: Path_ = ("notify", "email")
        keys = ("host", "port", "from", "to", "user_env", "password_env", "tls",
                "allow_plaintext", "allow_private", "timeout")  # fmt: skip
        data = self.table(data, where, keys)
        for key in ("host", "from", "to"):
            if key not in data:
                raise self.fail(where, f"lacks {key}")
        to = self.get(data, where, "to", (list, str), _addresses)
        optional = {key: self.get(data, where, key, str, _variable)
                    for key in ("user_env", "password_env") if key in data}  # fmt: skip
        if len(optional) == 1:
            raise self.fail(where, "give both user_env and password_env, or neither")
        private = self.get(data, where, "allow_private", bool) if "allow_private" in data else False
        host = self.get(data, where, "host", str, lambda h: _smtp_host(h, private))
        tls: Literal["starttls", "implicit"] = self.get(
            data, where, "tls", str, _choice("starttls", "implicit")
        ) if "tls" in data else "starttls"  # fmt: skip
        plaintext = self.get(data, where, "allow_plaintext", str) if (
            "allow_plaintext" in data) else None  # fmt: skip
        if plaintext is not None and plaintext != host:
            raise self.fail(
                (*where, "allow_plaintext"),
                f"names {plaintext!r}, not the host "
                f"{host!r}: it allows plain text only to the host written here",
            )
        default_port = 465 if tls == "implicit" else 587
        return Email(
            host=host,
            to=to,
            sender=self.get(data, where, "from", str, _address),
            port=self.get(data, where, "port", int, _port) if "port" in data else default_port,
            tls=tls,
            allow_plaintext=plaintext,
            allow_private=private,
            timeout=self.timeout(data, where),
            **optional,
        )


_words = {"str": "text", "int": "a whole number", "bool": "true or false", "list": "a list",
          "int or float": "a number", "int or float or list": "a share or a list of them",
          "date or str": "a date (2026-12-20)",
          "list or str": "an address or a list of them"}  # fmt: skip


def _key(where: Path_) -> str:
    """("budgets", 0, "name") -> budgets[0].name, as refusals name a key."""
    key = ".".join(str(p) if isinstance(p, str) else f"[{p}]" for p in where)
    return key.replace(".[", "[")


_LABEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")
_SECRET_KEYS = ("key_env", "secret_env", "url_env", "user_env", "password_env", "url")


def _secret_key(key: str) -> bool:
    """A key whose value may be a secret written by mistake: never shown back."""
    return key in _SECRET_KEYS


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _variable(name: str) -> str:
    # Upper case only: a key or secret pasted here (`cts_live_...`, `whsec_...`) would
    # otherwise pass as a name and be shown back in "set cts_live_...".
    if not re.fullmatch(r"[A-Z_][A-Z0-9_]{0,127}", name):
        raise ValueError(
            "is not an environment variable's name (the value is not shown: if it is a "
            "secret, put it in a variable and name that variable here)"
        )
    return name


def _smtp_host(host: str, allow_private: bool) -> str:
    if not host or (any(c in host for c in "/:@ ") and _ip(host) is None):
        raise ValueError(f"{_short(host)} is not a host name")
    check_destination(host, allow_private, "SMTP", resolve=False)
    return host


def _within(low: float, high: float) -> Callable[[Any], Any]:
    def check(value: Any) -> Any:
        if not (math.isfinite(value) and low <= value <= high):
            raise ValueError(f"must be between {low:g} and {high:g}, not {value}")
        return value

    return check


def _choice(*allowed: str) -> Callable[[str], str]:
    def check(value: str) -> str:
        if value not in allowed:
            raise ValueError(f"{value!r} is not one of {', '.join(allowed)}")
        return value

    return check


def _positive(value: float) -> float:
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"must be above 0, not {value}")
    return value


def _at_least(low: int) -> Callable[[int], int]:
    def check(value: int) -> int:
        if value < low:
            raise ValueError(f"must be at least {low}, not {value}")
        return value

    return check


def _share(value: float) -> float:
    if not (math.isfinite(value) and 0 < value <= 1):
        raise ValueError(
            f"is a share of the budget, above 0 and at most 1 (0.8 is 80%), not {value}"
        )
    return value


def _shares(value: float | list[Any]) -> tuple[float, ...]:
    items = value if isinstance(value, list) else [value]
    if not items or len(items) > 10:
        raise ValueError("give one to ten warning levels, like 0.8 or [0.5, 0.8, 1.0]")
    for item in items:
        if isinstance(item, bool) or not isinstance(item, int | float):
            raise ValueError(f"{_short(item)} is not a share of the budget (0.8 is 80%)")
        _share(item)
    return tuple(sorted({float(item) for item in items}))


def _port(value: int) -> int:
    if not 0 < value < 65536:
        raise ValueError(f"{value} is not a port (1-65535)")
    return value


def _date(value: date | str) -> date:
    if isinstance(value, str):
        try:
            return date.fromisoformat(value)
        except ValueError:
            raise ValueError(f"{value!r} is not a date like 2026-12-20") from None
    return value


def _address(value: str) -> str:
    if not re.fullmatch(r"[^@\s]+@[^@\s]+", value):
        raise ValueError(f"{value!r} is not an e-mail address")
    return value


def _addresses(value: list[Any] | str) -> tuple[str, ...]:
    items = [value] if isinstance(value, str) else value
    if not items or not all(isinstance(item, str) for item in items):
        raise ValueError("must list at least one address")
    return tuple(_address(item) for item in items)


def _tag_value(value: str) -> str:
    if not value.strip() or len(value) > 200:
        raise ValueError("a tag's value is a name of 1 to 200 characters")
    return value


def _check_names(allowed: tuple[str, ...]) -> Callable[[list[Any]], list[str]]:
    def check(value: list[Any]) -> list[str]:
        unknown = [item for item in value if item not in allowed]
        if unknown:
            raise ValueError(
                f"{unknown[0]!r} is not a check that can be switched off here; "
                f"these can: {', '.join(allowed)}"
            )
        return value

    return check

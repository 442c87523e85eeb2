"""Settings: the service's base URL, the API key, the webhook secret and the store path.

Each comes from an argument when given, else from the environment (`CTS_BASE_URL`,
`CTS_API_KEY`, `CTS_WEBHOOK_SECRET`, `CTS_STORE`). The key is held in a `Secret` so that
it never shows in a repr, a log line or a traceback's locals.
"""

from __future__ import annotations

import ipaddress
import os
import re
from dataclasses import dataclass, field
from typing import Generic, TypeVar
from urllib.parse import urlsplit

from toolkit.errors import ConfigError

__all__ = [
    "Secret",
    "Settings",
    "V",
    "held",
    "is_loopback_host",
    "normalize_base_url",
    "store_path",
    "webhook_secret",
]

_API_PREFIX = "/api/v1"
_DEFAULT_STORE = "data/snapshots"
# What a bearer token may hold: visible ASCII, no spaces (RFC 6750 allows less still).
_KEY_TEXT = re.compile(r"[\x21-\x7e]+")
V = TypeVar("V", str, bytes)


class Secret(Generic[V]):
    """A value that does not print itself: an API key, a webhook secret or its key bytes.

    Held in one of these from the moment it is read, a secret shows as `Secret('***')` in
    a repr, a log line, and a traceback that prints every frame's locals.
    """

    __slots__ = ("_value",)
    _value: V

    def __init__(self, value: V) -> None:
        self._value = value

    def reveal(self) -> V:
        return self._value

    def __repr__(self) -> str:
        return "Secret('**********')"

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(self._value)


def held(value: str | Secret[str]) -> Secret[str]:
    """`value` in a `Secret`, unless it is one already."""
    return value if isinstance(value, Secret) else Secret(value)


def _check_api_key(key: Secret[str]) -> Secret[str]:
    """The key, or a `ConfigError` (that does not show it) when no HTTP header can carry it."""
    # Read through the holder, never bound to a local: a traceback must not show it.
    if not isinstance(key.reveal(), str) or not _KEY_TEXT.fullmatch(key.reveal()):
        raise ConfigError(
            "the API key holds whitespace, control characters or non-ASCII letters (a key "
            "read from a file often ends in a newline); strip it and set CTS_API_KEY again "
            "(the key is not shown here)"
        )
    return key


def is_loopback_host(host: str) -> bool:
    """True for localhost and loopback addresses (127.0.0.0/8, ::1)."""
    if host.lower() in {"localhost", "localhost."}:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def normalize_base_url(base_url: str) -> str:
    """Check a base URL and strip any trailing slash or `/api/v1`.

    Refuses plain `http://` to anything but loopback: the key would travel in clear. A
    message shows at most the URL's scheme, host and port, never what else it holds: a
    key pasted into it (as the whole URL, a user name, a query) must not be echoed.
    """
    url = base_url.strip().rstrip("/")
    if url.endswith(_API_PREFIX):
        url = url[: -len(_API_PREFIX)]
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        # urlsplit's own text quotes the URL: say what is wrong in our words instead.
        raise ConfigError(
            f"the base URL is malformed ({_url_problem(exc)}); "
            "give one like https://translate.example.com or http://127.0.0.1:8765"
        ) from None
    if parts.scheme not in {"http", "https"} or not parts.hostname:
        shown = f" {_shown(url)!r}" if "://" in url else ""
        raise ConfigError(
            f"the base URL{shown} is not an http(s) URL; "
            "give one like https://translate.example.com (CTS_BASE_URL or base_url=)"
        )
    if parts.username is not None or parts.password is not None or parts.query or parts.fragment:
        raise ConfigError(
            f"the base URL for {parts.hostname!r} carries a user name, password, query or "
            "fragment; give only scheme, host, port and path (the API key goes in CTS_API_KEY)"
        )
    if port == 0:
        raise ConfigError(f"the base URL for {parts.hostname!r} has port 0; give a port 1-65535")
    if parts.scheme == "http" and not is_loopback_host(parts.hostname):
        raise ConfigError(
            f"the base URL {_shown(url)!r} uses plain http to a host that is not loopback; "
            "the API key would travel in clear. Use https://"
        )
    return url


def _url_problem(exc: ValueError) -> str:
    text = str(exc)
    if "Port" in text or "port" in text:
        return "its port is not a number from 1 to 65535"
    if "IPv6" in text:
        return "an IPv6 address in it lacks its closing ']'"
    return "it cannot be read as a URL"


def _shown(url: str) -> str:
    """Scheme, host and port of `url`: the parts safe to print."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    host = f"[{host}]" if ":" in host else host
    try:
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        port = ""
    return f"{parts.scheme}://{host}{port}"


@dataclass(frozen=True)
class Settings:
    """The service's base URL and API key a client connects with."""

    base_url: str
    api_key: Secret[str] = field(repr=False)

    @classmethod
    def resolve(
        cls, base_url: str | None = None, api_key: str | Secret[str] | None = None
    ) -> Settings:
        """Settings from the arguments, falling back to the environment.

        The key goes into a `Secret` as it is read, so that no frame here holds it bare.
        """
        url = base_url or os.environ.get("CTS_BASE_URL")
        key = held(api_key) if api_key else _env_secret("CTS_API_KEY")
        emulator = "for a local emulator, `toolkit emulator --seed demo` prints both"
        if not url:
            raise ConfigError(
                f"no base URL: pass base_url= or set CTS_BASE_URL ({emulator})",
                command_line=f"no base URL: set CTS_BASE_URL to the service's address ({emulator})",
            )
        if key is None or not key.reveal():
            raise ConfigError(
                "no API key: pass api_key= or set CTS_API_KEY",
                command_line=f"no API key: set CTS_API_KEY to your workspace's key ({emulator})",
            )
        return cls(base_url=normalize_base_url(url), api_key=_check_api_key(key))

    @property
    def api_url(self) -> str:
        return self.base_url + _API_PREFIX


def _env_secret(name: str) -> Secret[str] | None:
    return Secret(os.environ[name]) if os.environ.get(name) else None


def webhook_secret(secret: str | Secret[str] | None = None) -> Secret[str]:
    """The webhook signing secret from the argument or `CTS_WEBHOOK_SECRET`, held."""
    value = held(secret) if secret else _env_secret("CTS_WEBHOOK_SECRET")
    if value is None:
        raise ConfigError("no webhook secret: pass secret= or set CTS_WEBHOOK_SECRET (whsec_...)")
    return value


def store_path(path: str | None = None) -> str:
    """The snapshot store location from the argument, `CTS_STORE`, or `data/snapshots`."""
    return path or os.environ.get("CTS_STORE") or _DEFAULT_STORE

"""Settings: the service's base URL, the API key, the webhook secret and the store path.

Each comes from an argument when given, else from the environment (`CTS_BASE_URL`,
`CTS_API_KEY`, `CTS_WEBHOOK_SECRET`, `CTS_STORE`). The key is held in a `Secret` so that
it never shows in a repr, a log line or a traceback's locals.
"""

from __future__ import annotations

import ipaddress
import os
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from toolkit.errors import ConfigError

API_PREFIX = "/api/v1"
DEFAULT_STORE = "data/snapshots"


class Secret:
    """A string that does not print itself."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "Secret('**********')"

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(self._value)


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

    Refuses plain `http://` to anything but loopback: the key would travel in clear.
    """
    url = base_url.strip().rstrip("/")
    if url.endswith(API_PREFIX):
        url = url[: -len(API_PREFIX)]
    parts = urlsplit(url)
    if parts.scheme not in {"http", "https"} or not parts.hostname:
        raise ConfigError(
            f"base URL {base_url!r} is not an http(s) URL; "
            "give one like https://translate.example.com"
        )
    if parts.scheme == "http" and not is_loopback_host(parts.hostname):
        raise ConfigError(
            f"base URL {base_url!r} uses plain http to a host that is not loopback; "
            "the API key would travel in clear. Use https://"
        )
    return url


@dataclass(frozen=True)
class Settings:
    base_url: str
    api_key: Secret = field(repr=False)

    @classmethod
    def resolve(cls, base_url: str | None = None, api_key: str | None = None) -> Settings:
        """Settings from the arguments, falling back to the environment."""
        url = base_url or os.environ.get("CTS_BASE_URL")
        key = api_key or os.environ.get("CTS_API_KEY")
        if not url:
            raise ConfigError(
                "no base URL: pass base_url= or set CTS_BASE_URL "
                "(for a local emulator: toolkit emulator --seed demo)"
            )
        if not key:
            raise ConfigError("no API key: pass api_key= or set CTS_API_KEY")
        return cls(base_url=normalize_base_url(url), api_key=Secret(key))

    @property
    def api_url(self) -> str:
        return self.base_url + API_PREFIX


def webhook_secret(secret: str | None = None) -> str:
    """The webhook signing secret from the argument or `CTS_WEBHOOK_SECRET`."""
    value = secret or os.environ.get("CTS_WEBHOOK_SECRET")
    if not value:
        raise ConfigError("no webhook secret: pass secret= or set CTS_WEBHOOK_SECRET (whsec_...)")
    return value


def store_path(path: str | None = None) -> str:
    """The snapshot store location from the argument, `CTS_STORE`, or `data/snapshots`."""
    return path or os.environ.get("CTS_STORE") or DEFAULT_STORE

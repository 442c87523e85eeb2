"""Where the emulator may send a webhook: https, to public addresses only, on the address
that was checked, so a name that changes its answer between the check and the
connection cannot slip through. The refused ranges are listed in docs/emulator.md.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from ipaddress import IPv4Address, IPv4Network, IPv6Address, IPv6Network
from urllib.parse import urlsplit

__all__ = ["Destination", "Resolver", "UnsafeDestination", "destination", "system_resolver"]

_IPAddress = IPv4Address | IPv6Address
Resolver = Callable[[str], Iterable[str]]
"""Host name -> its addresses as text; injectable so that tests never use real DNS."""

_DENIED: tuple[tuple[IPv4Network | IPv6Network, str], ...] = tuple(
    (ipaddress.ip_network(network), reason)
    for network, reason in (
        ("0.0.0.0/8", "'this network'"),
        ("10.0.0.0/8", "a private network"),
        ("100.64.0.0/10", "carrier-grade NAT"),
        ("127.0.0.0/8", "loopback"),
        ("169.254.0.0/16", "link-local (cloud metadata lives here)"),
        ("172.16.0.0/12", "a private network"),
        ("192.0.0.0/24", "reserved for protocol assignments"),
        ("192.0.2.0/24", "documentation"),
        ("192.88.99.0/24", "the 6to4 relay"),
        ("192.168.0.0/16", "a private network"),
        ("198.18.0.0/15", "benchmarking"),
        ("198.51.100.0/24", "documentation"),
        ("203.0.113.0/24", "documentation"),
        ("224.0.0.0/4", "multicast"),
        ("240.0.0.0/4", "reserved"),
        ("::/128", "unspecified"),
        ("::1/128", "loopback"),
        ("::ffff:0:0/96", "IPv4-mapped IPv6"),
        ("::/96", "IPv4-compatible IPv6"),
        ("64:ff9b::/96", "NAT64"),
        ("64:ff9b:1::/48", "local NAT64"),
        ("100::/64", "discard-only"),
        ("2001::/32", "Teredo"),
        ("2001:db8::/32", "documentation"),
        ("2002::/16", "6to4"),
        ("3fff::/20", "documentation"),
        ("fc00::/7", "unique-local"),
        ("fe80::/10", "link-local"),
        ("fec0::/10", "site-local"),
        ("ff00::/8", "multicast"),
    )
)


class UnsafeDestination(ValueError):
    """A webhook URL that may not be sent to; the message says why and what is allowed."""


def _refusal(address: _IPAddress) -> str | None:
    """Why `address` is not a public one, or None when it is."""
    for network, reason in _DENIED:
        if address.version == network.version and address in network:
            return reason
    if not address.is_global:
        return "not globally routable"
    return None


def system_resolver(host: str) -> list[str]:
    """Every A and AAAA answer for `host`, from the operating system's resolver."""
    answers = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    return [str(info[4][0]) for info in answers]


@dataclass(frozen=True)
class Destination:
    """A checked webhook URL and the addresses it may be sent to, in resolver order."""

    scheme: str
    host: str
    port: int
    target: str
    addresses: tuple[_IPAddress, ...]

    @property
    def host_header(self) -> str:
        """The `Host` header the receiver expects: the name from the URL."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        default = 443 if self.scheme == "https" else 80
        return host if self.port == default else f"{host}:{self.port}"

    @property
    def server_name(self) -> str | None:
        """The TLS server name (SNI and certificate check): the host unless it is an IP."""
        if self.scheme != "https" or _literal(self.host) is not None:
            return None
        return self.host

    def url_for(self, address: _IPAddress) -> str:
        """The URL with `address` in place of the name, so the connection goes there."""
        host = f"[{address}]" if address.version == 6 else str(address)
        return f"{self.scheme}://{host}:{self.port}{self.target}"


def destination(
    url: str, *, allow_private: bool = False, resolver: Resolver = system_resolver
) -> Destination:
    """Check `url` and resolve its host; raise `UnsafeDestination` if it may not be used.

    Call it before every attempt: the answer is only good for the connection made now.
    """
    parts = urlsplit(url)
    allowed = ("https", "http") if allow_private else ("https",)
    if parts.scheme not in allowed:
        raise UnsafeDestination(
            f"webhook URL {url!r} must be https (http only with allowPrivate, for local tests)"
        )
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError as exc:
        raise UnsafeDestination(f"webhook URL {url!r} has an invalid port") from exc
    if not parts.hostname:
        raise UnsafeDestination(f"webhook URL {url!r} has no host name")
    if parts.username is not None or parts.password is not None:
        raise UnsafeDestination(f"webhook URL {url!r} must not carry a user name or password")
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    addresses = _resolve(parts.hostname, allow_private=allow_private, resolver=resolver)
    return Destination(parts.scheme, parts.hostname, port, target, addresses)


def _resolve(
    host: str, *, allow_private: bool = False, resolver: Resolver = system_resolver
) -> tuple[_IPAddress, ...]:
    """Every address of `host`, each one checked unless `allow_private`."""
    literal = _literal(host)
    if literal is not None:
        answers: list[_IPAddress] = [literal]
    else:
        answers = _ask(resolver, host)
    if not allow_private:
        for address in answers:
            reason = _refusal(address)
            if reason is not None:
                raise UnsafeDestination(
                    f"webhook host {host!r} resolves to {address}, which is {reason}; "
                    "webhook URLs must resolve only to public addresses "
                    "(allowPrivate lifts this for local tests)"
                )
    return tuple(dict.fromkeys(answers))


def _ask(resolver: Resolver, host: str) -> list[_IPAddress]:
    try:
        raw = list(resolver(host))
    except (OSError, UnicodeError) as exc:
        raise UnsafeDestination(f"webhook host {host!r} does not resolve: {exc}") from exc
    answers = []
    for text in raw:
        address = _literal(str(text))
        if address is None:
            raise UnsafeDestination(f"webhook host {host!r} resolved to {text!r}, not an address")
        answers.append(address)
    if not answers:
        raise UnsafeDestination(f"webhook host {host!r} resolves to no address")
    return answers


def _literal(text: str) -> _IPAddress | None:
    """`text` as an IP address, or None; an IPv6 zone (`%eth0`) is dropped, and the
    numeric IPv4 shorthands that inet_aton reads (`2130706433`, `0x7f.1`, `0177.0.0.1`)
    count as the address they name: the connection would go there, whatever DNS says."""
    bare = text.strip("[]").split("%", 1)[0]
    try:
        return ipaddress.ip_address(bare)
    except ValueError:
        return _inet_aton(bare)


_NUMBER_PART = re.compile(r"0[xX][0-9a-fA-F]+|0[0-7]*|[1-9][0-9]*")


def _inet_aton(text: str) -> IPv4Address | None:
    """An IPv4 address in inet_aton's forms: 1 to 4 parts, each decimal, 0-octal or 0x-hex,
    the last part filling the bytes the others leave."""
    parts = text.removesuffix(".").split(".")
    if not 1 <= len(parts) <= 4 or not all(_NUMBER_PART.fullmatch(p) for p in parts):
        return None
    numbers = [int(p, 16 if p[:2].lower() == "0x" else 8 if p[0] == "0" else 10) for p in parts]
    *leading, last = numbers
    if any(n > 255 for n in leading) or last >= 256 ** (4 - len(leading)):
        return None
    value = last
    for index, number in enumerate(leading):
        value += number << (8 * (3 - index))
    return IPv4Address(value)

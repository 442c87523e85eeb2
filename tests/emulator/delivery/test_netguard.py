"""Webhook URLs: https to public addresses only, every answer checked, pinned to it."""

from __future__ import annotations

import ipaddress

import pytest

from toolkit.emulator.delivery.netguard import UnsafeDestination, _refusal, _resolve, destination

PUBLIC_V4 = "93.184.215.14"
PUBLIC_V6 = "2606:4700:4700::1111"


def resolver_for(*answers: str):
    """A resolver that answers every name with `answers` and records what it was asked."""
    asked: list[str] = []

    def resolve_name(host: str) -> list[str]:
        asked.append(host)
        return list(answers)

    resolve_name.asked = asked  # type: ignore[attr-defined]
    return resolve_name


# Each refused kind, as an address a hostile DNS name could answer with.
REFUSED = {
    "loopback v4": "127.0.0.1",
    "loopback v4 elsewhere in 127/8": "127.1.2.3",
    "loopback v6": "::1",
    "unspecified v4": "0.0.0.0",
    "unspecified v6": "::",
    "private 10/8": "10.1.2.3",
    "private 172.16/12": "172.31.255.254",
    "private 192.168/16": "192.168.0.1",
    "link-local": "169.254.10.10",
    "cloud metadata": "169.254.169.254",
    "carrier-grade NAT low": "100.64.0.1",
    "carrier-grade NAT high": "100.127.255.254",
    "multicast v4": "224.0.0.1",
    "multicast v4 global scope": "233.252.0.1",
    "multicast v6": "ff02::1",
    "reserved 240/4": "240.0.0.1",
    "broadcast": "255.255.255.255",
    "documentation v4": "203.0.113.7",
    "benchmarking": "198.18.0.1",
    "unique-local fc00::/7 (fd)": "fd12:3456:789a::1",
    "unique-local fc00::/7 (fc)": "fc00::1",
    "link-local v6": "fe80::1",
    "site-local v6": "fec0::1",
    "IPv4-mapped loopback": "::ffff:127.0.0.1",
    "IPv4-mapped public": "::ffff:8.8.8.8",
    "IPv4-compatible": "::127.0.0.1",
    "NAT64 of metadata": "64:ff9b::a9fe:a9fe",
    "NAT64 of a public address": "64:ff9b::808:808",
    "local NAT64": "64:ff9b:1::1",
    "6to4 of loopback": "2002:7f00:1::1",
    "6to4 of a public address": "2002:808:808::1",
    "Teredo": "2001:0:4136:e378:8000:63bf:3fff:fdd2",
    "documentation v6": "2001:db8::1",
}


@pytest.mark.parametrize("address", REFUSED.values(), ids=REFUSED.keys())
def test_each_non_public_kind_is_refused(address):
    assert _refusal(ipaddress.ip_address(address)) is not None
    with pytest.raises(UnsafeDestination, match="public addresses"):
        destination("https://hooks.example.com/in", resolver=resolver_for(address))


@pytest.mark.parametrize("address", REFUSED.values(), ids=REFUSED.keys())
def test_each_non_public_kind_is_refused_as_a_literal_in_the_url(address):
    host = f"[{address}]" if ":" in address else address
    with pytest.raises(UnsafeDestination):
        destination(f"https://{host}/in", resolver=resolver_for())


def test_nat64_and_6to4_are_refused_explicitly():
    # Python's is_global lets these through although they embed any IPv4 address.
    for address in ("64:ff9b::a9fe:a9fe", "2002:7f00:1::1"):
        assert _refusal(ipaddress.ip_address(address)) in {"NAT64", "6to4"}


@pytest.mark.parametrize("address", [PUBLIC_V4, PUBLIC_V6, "8.8.8.8", "1.1.1.1"])
def test_public_addresses_pass(address):
    assert _refusal(ipaddress.ip_address(address)) is None
    checked = destination("https://hooks.example.com/in", resolver=resolver_for(address))
    assert checked.addresses == (ipaddress.ip_address(address),)


def test_every_answer_is_checked_not_just_the_first():
    mixed = resolver_for(PUBLIC_V4, PUBLIC_V6, "10.0.0.5")
    with pytest.raises(UnsafeDestination, match=r"10\.0\.0\.5.*private"):
        destination("https://hooks.example.com/", resolver=mixed)


def test_a_name_that_changes_its_answer_is_refused_on_the_next_check():
    answers = iter([[PUBLIC_V4], ["169.254.169.254"]])

    def rebinding(host: str) -> list[str]:
        return next(answers)

    assert destination("https://hooks.example.com/", resolver=rebinding).addresses
    with pytest.raises(UnsafeDestination, match=r"169\.254\.169\.254"):
        destination("https://hooks.example.com/", resolver=rebinding)


@pytest.mark.parametrize(
    "url",
    ["http://hooks.example.com/in", "ftp://hooks.example.com/", "hooks.example.com/in", ""],
)
def test_only_https_is_accepted(url):
    with pytest.raises(UnsafeDestination, match="https"):
        destination(url, resolver=resolver_for(PUBLIC_V4))


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("https:///in", "no host"),
        ("https://hooks.example.com:99999/", "invalid port"),
        ("https://user:pw@hooks.example.com/", "user name or password"),
    ],
)
def test_malformed_urls_are_refused(url, message):
    with pytest.raises(UnsafeDestination, match=message):
        destination(url, resolver=resolver_for(PUBLIC_V4))


def test_unresolvable_names_are_refused():
    def failing(host: str) -> list[str]:
        raise OSError("Name or service not known")

    with pytest.raises(UnsafeDestination, match="does not resolve"):
        destination("https://nowhere.example/", resolver=failing)
    with pytest.raises(UnsafeDestination, match="no address"):
        destination("https://nowhere.example/", resolver=resolver_for())
    with pytest.raises(UnsafeDestination, match="not an address"):
        destination("https://nowhere.example/", resolver=resolver_for("garbage"))


def test_allow_private_lifts_the_https_and_address_rules_but_still_resolves():
    local = resolver_for("127.0.0.1")
    checked = destination("http://receiver.test:8080/hook", allow_private=True, resolver=local)
    assert checked.addresses == (ipaddress.ip_address("127.0.0.1"),)
    assert local.asked == ["receiver.test"]  # type: ignore[attr-defined]


def test_literal_addresses_skip_the_resolver():
    never = resolver_for()
    assert _resolve("8.8.8.8", resolver=never) == (ipaddress.ip_address("8.8.8.8"),)
    assert never.asked == []  # type: ignore[attr-defined]


class TestPinning:
    def test_url_for_puts_the_checked_address_in_place_of_the_name(self):
        checked = destination(
            "https://Hooks.Example.com/in/cts?x=1#frag",
            resolver=resolver_for(PUBLIC_V6, PUBLIC_V4, PUBLIC_V4),
        )
        assert checked.addresses == tuple(map(ipaddress.ip_address, (PUBLIC_V6, PUBLIC_V4)))
        assert checked.url_for(checked.addresses[0]) == f"https://[{PUBLIC_V6}]:443/in/cts?x=1"
        assert checked.url_for(checked.addresses[1]) == f"https://{PUBLIC_V4}:443/in/cts?x=1"

    def test_host_header_and_tls_name_keep_the_host_name(self):
        checked = destination("https://hooks.example.com/", resolver=resolver_for(PUBLIC_V4))
        assert checked.host_header == "hooks.example.com"
        assert checked.server_name == "hooks.example.com"
        other = destination("https://hooks.example.com:8443", resolver=resolver_for(PUBLIC_V4))
        assert other.host_header == "hooks.example.com:8443"
        assert other.target == "/"

    def test_no_tls_name_for_an_address_or_plain_http(self):
        assert destination(f"https://{PUBLIC_V4}/").server_name is None
        local = destination("http://127.0.0.1:9000/", allow_private=True)
        assert local.server_name is None
        assert local.host_header == "127.0.0.1:9000"

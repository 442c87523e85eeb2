"""The webhook-URL table: every way of writing a non-public address is refused, whatever
a resolver says; the resolver is injected, so no test asks real DNS."""

from __future__ import annotations

import pytest

from toolkit.emulator.delivery.netguard import UnsafeDestination, destination

PUBLIC = "93.184.215.14"


def lying_resolver(host: str) -> list[str]:
    """A resolver that knows no numeric shorthand: every name is a public address."""
    return [PUBLIC]


# Hosts that C's inet_aton (and so getaddrinfo, curl, browsers) read as an IPv4 address.
NUMERIC_FORMS = {
    "decimal loopback": "2130706433",
    "decimal metadata": "2852039166",
    "octal loopback": "0177.0.0.1",
    "octal metadata": "0251.0376.0251.0376",
    "hex loopback": "0x7f.0.0.1",
    "hex whole": "0x7f000001",
    "hex metadata": "0xa9fea9fe",
    "short loopback": "127.1",
    "short private": "10.1",
    "three-part private": "192.168.1",
    "mixed octal and hex": "0x7f.0.00.01",
    "zero": "0",
    "decimal private with a trailing dot": "167772161.",
}


@pytest.mark.parametrize("host", NUMERIC_FORMS.values(), ids=NUMERIC_FORMS.keys())
def test_numeric_shorthands_of_non_public_ipv4_are_refused(host):
    with pytest.raises(UnsafeDestination, match="public addresses"):
        destination(f"https://{host}/hook", resolver=lying_resolver)


IPV6_FORMS = {
    "mapped loopback": "::ffff:127.0.0.1",
    "mapped, hex": "::ffff:7f00:1",
    "mapped metadata": "::ffff:169.254.169.254",
    "NAT64 of loopback": "64:ff9b::7f00:1",
    "NAT64 of metadata, dotted": "64:ff9b::169.254.169.254",
    "6to4 of private": "2002:0a00:0001::1",
    "6to4 of metadata": "2002:a9fe:a9fe::",
    "loopback, long form": "0:0:0:0:0:0:0:1",
    "loopback with a zone": "fe80::1%25eth0",
}


@pytest.mark.parametrize("host", IPV6_FORMS.values(), ids=IPV6_FORMS.keys())
def test_ipv6_forms_that_embed_a_non_public_address_are_refused(host):
    with pytest.raises(UnsafeDestination):
        destination(f"https://[{host}]/hook", resolver=lying_resolver)


def test_a_public_numeric_shorthand_is_read_as_that_address():
    checked = destination("https://0x5db8d70e/hook", resolver=lambda host: ["10.0.0.1"])
    assert [str(a) for a in checked.addresses] == [PUBLIC]


@pytest.mark.parametrize("host", ["1.2.3.4.5", "256.1.1.1", "0x", "1..2", "example.com"])
def test_names_that_are_not_numeric_go_to_the_resolver(host):
    asked = []

    def resolver(name: str) -> list[str]:
        asked.append(name)
        return ["127.0.0.1"]

    with pytest.raises(UnsafeDestination, match="loopback"):
        destination(f"https://{host}/hook", resolver=resolver)
    assert asked == [host]

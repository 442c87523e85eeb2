"""`verify` against a forgery oracle: thousands of deliveries, some genuine, most forged
(another key, another body, id or time, a cut or random signature, another version); an
independent HMAC says which are genuine, and `verify` must agree on every one."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolkit.errors import WebhookVerificationError
from toolkit.webhooks import verify

NOW = 1_763_900_000
TOLERANCE = 300

keys = st.binary(min_size=1, max_size=40)
ids = st.text(st.characters(min_codepoint=0x21, max_codepoint=0x7E), min_size=1, max_size=30)
stamps = st.integers(min_value=NOW - 2 * TOLERANCE, max_value=NOW + 2 * TOLERANCE)
objects = st.dictionaries(st.text(max_size=8), st.integers() | st.text(max_size=8), max_size=4)
bodies = st.one_of(
    objects.map(lambda o: json.dumps(o).encode()),
    st.binary(max_size=60),
    st.just(b"[1, 2]"),
)


def oracle_signature(key: bytes, msg_id: str, stamp: str, body: bytes) -> bytes:
    return hmac.new(key, f"{msg_id}.{stamp}.".encode() + body, hashlib.sha256).digest()


def is_object(body: bytes) -> bool:
    try:
        return isinstance(json.loads(body.decode("utf-8")), dict)
    except (UnicodeDecodeError, ValueError, RecursionError):
        return False


@st.composite
def deliveries(draw):
    key, other_key = draw(keys), draw(keys)
    msg_id, stamp, body = draw(ids), str(draw(stamps)), draw(bodies)
    # What was signed may differ from what arrives: a forger replaying or editing.
    signed_id = draw(st.sampled_from([msg_id, msg_id + "x"]))
    signed_stamp = draw(st.sampled_from([stamp, str(int(stamp) + 1)]))
    signed_body = draw(st.sampled_from([body, body + b" ", body[:-1]]))
    genuine = oracle_signature(key, signed_id, signed_stamp, signed_body)
    kinds = st.sampled_from(["genuine", "other key", "cut", "random", "flipped", "v2"])
    entries = []
    for kind in draw(st.lists(kinds, min_size=1, max_size=4)):
        if kind == "genuine":
            entries.append(("v1", genuine))
        elif kind == "other key":
            entries.append(("v1", oracle_signature(other_key, msg_id, stamp, body)))
        elif kind == "cut":
            entries.append(("v1", genuine[: draw(st.integers(0, 31))]))
        elif kind == "random":
            entries.append(("v1", draw(st.binary(min_size=1, max_size=40))))
        elif kind == "flipped":
            at = draw(st.integers(0, 31))
            entries.append(("v1", genuine[:at] + bytes([genuine[at] ^ 1]) + genuine[at + 1 :]))
        else:
            entries.append(("v2", genuine))
    signature = " ".join(f"{v},{base64.b64encode(s).decode() or 'AA=='}" for v, s in entries)
    secret = "whsec_" + base64.b64encode(key).decode()
    if draw(st.booleans()):
        secret = secret.rstrip("=")  # secrets are handed out unpadded too
    headers = {"webhook-id": msg_id, "webhook-timestamp": stamp, "webhook-signature": signature}
    expected = oracle_signature(key, msg_id, stamp, body)
    valid = (
        abs(NOW - int(stamp)) <= TOLERANCE
        and any(v == "v1" and hmac.compare_digest(s, expected) for v, s in entries)
        and is_object(body)
    )
    return body, headers, secret, valid


@pytest.mark.slow
@settings(max_examples=2000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(deliveries())
def test_verify_accepts_exactly_what_the_oracle_calls_genuine(delivery):
    body, headers, secret, valid = delivery
    try:
        payload = verify(body, headers, secret, tolerance=TOLERANCE, now=NOW)
    except WebhookVerificationError:
        assert not valid, f"a genuine delivery was refused: {headers}"
        return
    assert valid, f"a forged delivery was accepted: {headers}"
    assert payload == json.loads(body)

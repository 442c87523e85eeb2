"""`tk.webhooks.verify`: known answers, the reference library both ways, malformed input."""

from __future__ import annotations

import base64
import contextlib
import json
import time
from datetime import UTC, datetime, timedelta

import httpx
import pytest
import standardwebhooks
from hypothesis import given, settings
from hypothesis import strategies as st
from starlette.datastructures import Headers

from toolkit import _signing
from toolkit.errors import WebhookVerificationError
from toolkit.webhooks import verify

# The vector every Standard Webhooks reference library tests (note the space in the body).
SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
MSG_ID = "msg_p5jXN8AQM9LWM0D4loKWxJek"
STAMP = 1614265330
BODY = b'{"test": 2432232314}'
SIGNATURE = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
# From the reference tests: the same signature with its last byte changed, and a decoy.
TAMPERED = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OA="
DECOY = "Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc="


def headers(signature: str = SIGNATURE, *, stamp: int | str = STAMP, msg_id: str = MSG_ID):
    return {"webhook-id": msg_id, "webhook-timestamp": str(stamp), "webhook-signature": signature}


def signed(body: bytes, *, stamp: int | None = None, msg_id: str = "msg_1") -> dict[str, str]:
    stamp = int(time.time()) if stamp is None else stamp
    return headers(_signing.sign(SECRET, msg_id, stamp, body), stamp=stamp, msg_id=msg_id)


class TestKnownAnswer:
    def test_signing_primitive_reproduces_the_published_signature(self):
        assert _signing.sign(SECRET, MSG_ID, STAMP, BODY) == SIGNATURE

    def test_published_vector_verifies_and_returns_the_payload(self):
        assert verify(BODY, headers(), SECRET, now=STAMP) == {"test": 2432232314}

    @pytest.mark.parametrize("secret", [SECRET, SECRET.removeprefix("whsec_"), SECRET + "\n"])
    def test_secret_with_or_without_prefix(self, secret):
        assert verify(BODY, headers(), secret, now=STAMP) == {"test": 2432232314}

    def test_unpadded_secret_is_accepted(self):
        key = base64.b64encode(b"k" * 32).decode()  # 32 bytes: base64 ends in "="
        secret = "whsec_" + key.rstrip("=")
        stamp = int(time.time())
        sent = headers(_signing.sign(key, "msg_x", stamp, BODY), stamp=stamp, msg_id="msg_x")
        assert verify(BODY, sent, secret) == {"test": 2432232314}

    def test_tampered_signature_from_the_reference_tests_is_refused(self):
        with pytest.raises(WebhookVerificationError, match="no v1 signature matches"):
            verify(BODY, headers(TAMPERED), SECRET, now=STAMP)

    def test_any_v1_match_among_several_is_valid_and_other_versions_are_skipped(self):
        many = f"v1,{DECOY} v2,{DECOY} {SIGNATURE} v1,{DECOY}"
        assert verify(BODY, headers(many), SECRET, now=STAMP) == {"test": 2432232314}

    def test_a_doubled_space_between_signatures_is_harmless(self):
        assert verify(BODY, headers(f"v1,{DECOY}  {SIGNATURE}"), SECRET, now=STAMP)

    def test_a_matching_value_under_another_version_does_not_count(self):
        v2_only = SIGNATURE.replace("v1,", "v2,")
        with pytest.raises(WebhookVerificationError, match="no v1 signature"):
            verify(BODY, headers(v2_only), SECRET, now=STAMP)

    @pytest.mark.parametrize(
        "change",
        [
            {"body": b'{"test": 2432232315}'},
            {"body": b'{"test":2432232314}'},  # re-serialised JSON does not match
            {"msg_id": "msg_other"},
            {"stamp": STAMP + 1},
            {"secret": "whsec_" + base64.b64encode(b"another key of 24 bytes!").decode()},
        ],
    )
    def test_any_change_breaks_the_signature(self, change):
        body = change.get("body", BODY)
        sent = headers(stamp=change.get("stamp", STAMP), msg_id=change.get("msg_id", MSG_ID))
        with pytest.raises(WebhookVerificationError, match="no v1 signature matches"):
            verify(body, sent, change.get("secret", SECRET), now=STAMP)

    def test_a_prefix_of_the_right_digest_is_no_match(self):
        digest = base64.b64decode(SIGNATURE.removeprefix("v1,"))
        short = "v1," + base64.b64encode(digest[:16]).decode()
        with pytest.raises(WebhookVerificationError):
            verify(BODY, headers(short), SECRET, now=STAMP)


class TestHeaders:
    @pytest.mark.parametrize(
        "wrap",
        [
            lambda h: {name.upper(): value for name, value in h.items()},
            lambda h: {name.title(): value for name, value in h.items()},
            lambda h: list(h.items()),
            lambda h: [(k.encode(), v.encode()) for k, v in h.items()],
            lambda h: httpx.Headers({"Content-Type": "application/json", **h}),
            lambda h: Headers(raw=[(k.encode(), v.encode()) for k, v in h.items()]),
        ],
        ids=["upper", "title", "pairs", "bytes-pairs", "httpx", "starlette"],
    )
    def test_header_names_in_any_case_and_container(self, wrap):
        assert verify(BODY, wrap(headers()), SECRET, now=STAMP) == {"test": 2432232314}

    def test_the_same_header_twice_with_different_values_is_refused(self):
        pairs = [*headers().items(), ("Webhook-Id", "msg_other")]
        with pytest.raises(WebhookVerificationError, match="twice"):
            verify(BODY, pairs, SECRET, now=STAMP)


class TestTimestamp:
    @pytest.mark.parametrize("offset", [-300, -1, 0, 1, 300])
    def test_within_five_minutes_either_way_verifies(self, offset):
        assert verify(BODY, headers(), SECRET, now=STAMP + offset)

    @pytest.mark.parametrize("offset", [-301, 301, 86_400])
    def test_beyond_five_minutes_either_way_is_refused(self, offset):
        with pytest.raises(WebhookVerificationError, match="tolerance"):
            verify(BODY, headers(), SECRET, now=STAMP + offset)

    def test_now_may_be_a_datetime_aware_or_naive_utc(self):
        aware = datetime.fromtimestamp(STAMP, UTC) + timedelta(seconds=200)
        assert verify(BODY, headers(), SECRET, now=aware)
        assert verify(BODY, headers(), SECRET, now=aware.replace(tzinfo=None))
        with pytest.raises(WebhookVerificationError):
            verify(BODY, headers(), SECRET, now=aware + timedelta(seconds=101))

    def test_tolerance_is_adjustable(self):
        assert verify(BODY, headers(), SECRET, tolerance=3600, now=STAMP + 3000)
        with pytest.raises(WebhookVerificationError):
            verify(BODY, headers(), SECRET, tolerance=10, now=STAMP + 11)

    def test_default_now_is_the_local_clock(self):
        body = b'{"type": "x"}'
        assert verify(body, signed(body), SECRET) == {"type": "x"}
        with pytest.raises(WebhookVerificationError, match="old"):
            verify(body, signed(body, stamp=int(time.time()) - 400), SECRET)

    def test_a_bad_now_argument_is_a_programming_error(self):
        with pytest.raises(TypeError):
            verify(BODY, headers(), SECRET, now="1614265330")  # type: ignore[arg-type]


MALFORMED = {
    "no headers": (BODY, {}),
    "missing id": (BODY, {k: v for k, v in headers().items() if k != "webhook-id"}),
    "missing timestamp": (BODY, {k: v for k, v in headers().items() if k != "webhook-timestamp"}),
    "missing signature": (BODY, {k: v for k, v in headers().items() if k != "webhook-signature"}),
    "empty id": (BODY, headers(msg_id="")),
    "empty timestamp": (BODY, headers(stamp="")),
    "empty signature header": (BODY, headers("")),
    "timestamp not a number": (BODY, headers(stamp="hello")),
    "timestamp with a fraction": (BODY, headers(stamp=f"{STAMP}.5")),
    "timestamp negative": (BODY, headers(stamp=f"-{STAMP}")),
    "timestamp huge": (BODY, headers(stamp="9" * 5000)),
    "entry without a comma": (BODY, headers("v1")),
    "entry without a comma beside a good one": (BODY, headers(f"{SIGNATURE} garbage")),
    "extra comma": (BODY, headers(SIGNATURE + ",x")),
    "empty v1 value": (BODY, headers("v1,")),
    "empty version": (BODY, headers("," + DECOY)),
    "bad base64": (BODY, headers("v1,not*base64!")),
    "base64 without padding": (BODY, headers("v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE")),
    "body not UTF-8": (b"\xff\xfe{}", signed(b"\xff\xfe{}", stamp=STAMP)),
    "body not JSON": (b"hello", signed(b"hello", stamp=STAMP)),
    "body a JSON array": (b"[1, 2]", signed(b"[1, 2]", stamp=STAMP)),
    "body nested too deep": (b"[" * 100_000, signed(b"[" * 100_000, stamp=STAMP)),
    "body a str": ('{"test": 2432232314}', headers()),
    "body None": (None, headers()),
    "headers None": (BODY, None),
    "headers a string": (BODY, "webhook-id: x"),
    "header value a number": (BODY, {**headers(), "webhook-timestamp": STAMP}),
    "header value with a lone surrogate": (BODY, headers(msg_id="msg_\ud800")),
}


@pytest.mark.parametrize("case", MALFORMED, ids=list(MALFORMED))
def test_malformed_input_raises_only_verification_error(case):
    body, sent = MALFORMED[case]
    with pytest.raises(WebhookVerificationError):
        verify(body, sent, SECRET, now=STAMP)


@pytest.mark.parametrize("secret", ["whsec_", "whsec_not base64!", "whsec_é", 42, None])
def test_a_bad_secret_raises_verification_error(secret):
    with pytest.raises(WebhookVerificationError, match="secret"):
        verify(BODY, headers(), secret, now=STAMP)


class TestReferenceLibrary:
    """The `standardwebhooks` package agrees with us in both directions."""

    def test_reference_signs_and_we_verify(self):
        body = '{"type": "chapter.finished", "data": {"chapterId": "c1"}}'
        sent_at = datetime.now(UTC).replace(microsecond=0)
        signature = standardwebhooks.Webhook(SECRET).sign("msg_ref", sent_at, body)
        sent = headers(signature, stamp=int(sent_at.timestamp()), msg_id="msg_ref")
        assert verify(body.encode(), sent, SECRET) == json.loads(body)

    def test_we_sign_and_reference_verifies(self):
        body = b'{"type": "export.ready", "data": {"format": "cbz"}}'
        assert standardwebhooks.Webhook(SECRET).verify(body, signed(body)) == json.loads(body)

    def test_both_agree_on_the_published_vector(self):
        reference = standardwebhooks.Webhook(SECRET).sign(
            MSG_ID, datetime.fromtimestamp(STAMP, UTC), BODY.decode()
        )
        assert reference == _signing.sign(SECRET, MSG_ID, STAMP, BODY) == SIGNATURE


header_values = st.one_of(
    st.text(max_size=60),
    st.binary(max_size=60),
    st.integers(),
    st.none(),
    st.sampled_from(["v1,", "v1", ",", "v1,=", "v1,====", SIGNATURE, f"{STAMP}", " "]),
)
header_maps = st.dictionaries(
    st.sampled_from(["webhook-id", "Webhook-Timestamp", "WEBHOOK-SIGNATURE", "other"]),
    header_values,
    max_size=4,
)


@settings(max_examples=300, deadline=None)
@given(
    body=st.one_of(st.binary(max_size=200), st.text(max_size=50), st.none()),
    sent=st.one_of(header_maps, st.lists(st.tuples(header_values, header_values), max_size=4)),
    now=st.one_of(st.none(), st.just(STAMP)),
)
def test_random_garbage_only_ever_raises_verification_error(body, sent, now):
    with contextlib.suppress(WebhookVerificationError):
        verify(body, sent, SECRET, now=now)


@settings(max_examples=200, deadline=None)
@given(body=st.binary(max_size=200) | st.text(max_size=80).map(str.encode))
def test_correctly_signed_garbage_gives_an_object_or_verification_error(body):
    try:
        payload = verify(body, signed(body, stamp=STAMP), SECRET, now=STAMP)
    except WebhookVerificationError:
        return
    assert isinstance(payload, dict)


@settings(max_examples=100, deadline=None)
@given(
    data=st.dictionaries(st.text(max_size=10), st.integers() | st.text(max_size=10), max_size=5),
    flip=st.integers(min_value=0),
)
def test_signed_bodies_verify_and_any_flipped_byte_is_refused(data, flip):
    body = json.dumps({"type": "t", "data": data}, ensure_ascii=False).encode()
    sent = signed(body, stamp=STAMP, msg_id="msg_prop")
    assert verify(body, sent, SECRET, now=STAMP) == {"type": "t", "data": data}
    position = flip % len(body)
    changed = body[:position] + bytes([body[position] ^ 0x01]) + body[position + 1 :]
    with pytest.raises(WebhookVerificationError):
        verify(changed, sent, SECRET, now=STAMP)

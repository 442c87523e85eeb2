"""Standard Webhooks verification: is this delivery from the service, and what does it say?

`toolkit._signing` holds the primitive, shared with the emulator; every malformed
delivery raises `WebhookVerificationError` (the cases are in docs/webhooks.md).
"""

from __future__ import annotations

import base64
import binascii
import functools
import hmac
import json
import math
import re
import time
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from toolkit import _signing
from toolkit.config import Secret, held
from toolkit.errors import WebhookVerificationError

__all__ = ["TOLERANCE", "HeaderSource", "check_signature", "parse_payload", "signing_key", "verify"]

HeaderSource = Mapping[str, str] | Iterable[tuple[str, str]]

TOLERANCE = 300
_WANTED = ("webhook-id", "webhook-timestamp", "webhook-signature")
_WANTED_NAMES = frozenset(_WANTED)
# Twelve digits reach the year 33658; anything longer is garbage, not a time.
_SECONDS = re.compile(r"[0-9]{1,12}")
# Tuples, not `bytes | ...` unions: a union is built anew each time the line runs.
_RAW_BODY = (bytes, bytearray, memoryview)
_NUMBER = (int, float)


def verify(
    body: bytes,
    headers: HeaderSource,
    secret: str | Secret[str],
    tolerance: int = TOLERANCE,
    now: datetime | float | None = None,
) -> dict[str, Any]:
    """Check a delivery's signature and timestamp; return its JSON payload.

    In a Starlette endpoint:

    ```python
    payload = verify(await request.body(), request.headers, os.environ["CTS_WEBHOOK_SECRET"])
    ```

    Args:
        body: The raw request body exactly as received (parsing and re-serialising it
            breaks the signature).
        headers: Any mapping or list of pairs; names in any case.
        secret: The endpoint's signing secret, with or without `whsec_` (text, or a
            `toolkit.config.Secret` holding it).
        tolerance: A timestamp more than this many seconds from `now`, either way, is
            refused.
        now: The time to compare with (an aware datetime or Unix seconds); the local
            clock when None.

    Returns:
        The delivery's JSON payload.

    Raises:
        WebhookVerificationError: The signature, the timestamp or the headers are wrong.
    """
    # Rebound to its holder at once, so a traceback's locals show no secret from here on.
    secret = held(secret) if isinstance(secret, str | Secret) else secret
    check_signature(body, headers, signing_key(secret), tolerance=tolerance, now=now)
    return parse_payload(body)


def signing_key(secret: str | Secret[str]) -> Secret[bytes]:
    """The HMAC key of a `whsec_` secret, held; `WebhookVerificationError` if it has none."""
    if isinstance(secret, str):
        secret = Secret(secret)
    if not isinstance(secret, Secret) or not isinstance(secret.reveal(), str):
        raise WebhookVerificationError("the webhook secret must be text like 'whsec_...'")
    try:
        key = _decoded(secret)
    except ValueError:
        # No chain: the decoder's error may quote the secret.
        raise WebhookVerificationError(
            "the webhook secret is not 'whsec_' followed by base64; "
            "copy it again from the endpoint's page"
        ) from None
    if not key.reveal():
        # An empty key would let anyone sign.
        raise WebhookVerificationError("the webhook secret is empty after 'whsec_'")
    return key


@functools.lru_cache(maxsize=8)
def _decoded(secret: Secret[str]) -> Secret[bytes]:
    # verify() is handed the secret on every call; decode each secret once.
    return Secret(_signing.decode_secret(secret.reveal().strip()))


def check_signature(
    body: bytes,
    headers: HeaderSource,
    key: Secret[bytes],
    *,
    tolerance: int = TOLERANCE,
    now: datetime | float | None = None,
) -> str:
    """Verify headers, timestamp and signature against `key`; return the `webhook-id`."""
    if not isinstance(body, _RAW_BODY):
        raise WebhookVerificationError(
            f"the body must be the raw bytes as received, not {type(body).__name__}; "
            "pass `await request.body()` untouched"
        )
    found = _webhook_headers(headers)
    webhook_id, stamp, signatures = (found[name] for name in _WANTED)
    if not _SECONDS.fullmatch(stamp):
        raise WebhookVerificationError(
            f"webhook-timestamp {stamp[:40]!r} is not whole seconds since 1970"
        )
    skew = _epoch_seconds(now) - int(stamp)
    if abs(skew) > _seconds(tolerance):
        raise WebhookVerificationError(
            f"webhook-timestamp is {abs(skew):.0f} s {'old' if skew > 0 else 'in the future'}, "
            f"beyond the {tolerance} s tolerance: a replay, or a clock that needs setting"
        )
    candidates = _v1_signatures(signatures)
    expected = _signing.signature(key.reveal(), webhook_id, stamp, bytes(body))
    # compare_digest on bytes of unequal length is simply False, never a prefix match.
    if not any(hmac.compare_digest(expected, candidate) for candidate in candidates):
        raise WebhookVerificationError(
            "no v1 signature matches: the secret is wrong or the body was changed "
            "(verify the raw bytes, not re-serialised JSON)"
        )
    return webhook_id


def parse_payload(body: bytes) -> dict[str, Any]:
    """The verified body as a JSON object, or `WebhookVerificationError`."""
    try:
        text = bytes(body).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise WebhookVerificationError("the body is not UTF-8 text") from exc
    try:
        payload = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise WebhookVerificationError("the body is not JSON") from exc
    if not isinstance(payload, dict):
        raise WebhookVerificationError(
            f"the body is JSON but a {type(payload).__name__}, not an object"
        )
    return payload


def _webhook_headers(headers: HeaderSource) -> dict[str, str]:
    """The three webhook headers by lower-case name; all present, non-empty, unambiguous."""
    found: dict[str, str] = {}
    try:
        pairs = headers.items() if isinstance(headers, Mapping) else headers
        for raw_name, raw_value in pairs:
            # Names are only compared, never signed: no Unicode check for the many
            # headers a delivery carries that are not ours (`_header_text` checks values).
            name = (raw_name if isinstance(raw_name, str) else _header_text(raw_name)).lower()
            if name not in _WANTED_NAMES:
                continue
            value = _header_text(raw_value).strip()
            if found.setdefault(name, value) != value:
                raise WebhookVerificationError(f"the {name} header is given twice, differently")
    except WebhookVerificationError:
        raise
    except Exception as exc:
        # Headers come from outside: whatever breaks while reading them is a bad delivery.
        raise WebhookVerificationError(
            "headers must be a mapping (or pairs) of header names to text"
        ) from exc
    missing = [name for name in _WANTED if not found.get(name)]
    if missing:
        raise WebhookVerificationError(
            f"missing or empty header(s): {', '.join(missing)}; is this a webhook delivery?"
        )
    return found


def _header_text(value: object) -> str:
    if isinstance(value, bytes):
        return value.decode("latin-1")
    if isinstance(value, str):
        try:
            value.encode("utf-8")  # the id goes into the signed bytes; lone surrogates cannot
        except UnicodeEncodeError as exc:
            raise WebhookVerificationError("a header holds text that is not valid Unicode") from exc
        return value
    raise WebhookVerificationError(f"a header name or value is {type(value).__name__}, not text")


def _v1_signatures(header: str) -> list[bytes]:
    """Decoded `v1` signatures; every entry must be `version,value`, others versions skipped."""
    signatures = []
    for entry in header.split():
        version, comma, value = entry.partition(",")
        if not (comma and version and value):
            raise WebhookVerificationError(
                f"signature entry {entry[:40]!r} is not 'version,signature' (like 'v1,K5o...=')"
            )
        if version != "v1":
            continue
        try:
            signatures.append(base64.b64decode(value, validate=True))
        except (binascii.Error, ValueError) as exc:
            raise WebhookVerificationError(f"v1 signature {value[:40]!r} is not base64") from exc
    if not signatures:
        raise WebhookVerificationError("the webhook-signature header has no v1 signature")
    return signatures


def _seconds(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, _NUMBER) or not math.isfinite(value):
        raise TypeError(f"expected seconds as a finite number, not {value!r}")
    return float(value)


def _epoch_seconds(now: datetime | float | None) -> float:
    if now is None:
        return time.time()
    if isinstance(now, datetime):
        return (now if now.tzinfo else now.replace(tzinfo=UTC)).timestamp()
    return _seconds(now)

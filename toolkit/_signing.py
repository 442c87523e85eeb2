"""The Standard Webhooks signing primitive, shared by the emulator (sender) and
`toolkit.webhooks` (receiver): the only code the two sides share."""

from __future__ import annotations

import base64
import hashlib
import hmac

SECRET_PREFIX = "whsec_"


def secret_key(secret: str) -> bytes:
    """The HMAC key of a signing secret: base64 after the optional `whsec_` prefix.

    Raises `ValueError` (or `binascii.Error`, a subclass) for text that is not base64.
    """
    encoded = secret.removeprefix(SECRET_PREFIX)
    # Secrets are sometimes handed out without their base64 padding.
    encoded += "=" * (-len(encoded) % 4)
    return base64.b64decode(encoded, validate=True)


def signature(key: bytes, webhook_id: str, timestamp: int | str, body: bytes) -> bytes:
    """HMAC-SHA256 over `{id}.{timestamp}.{body}`, the body as raw bytes."""
    signed = f"{webhook_id}.{timestamp}.".encode() + body
    return hmac.digest(key, signed, hashlib.sha256)


def sign(secret: str, webhook_id: str, timestamp: int | str, body: bytes) -> str:
    """The `webhook-signature` header value for one signature: `v1,<base64>`."""
    digest = signature(secret_key(secret), webhook_id, timestamp, body)
    return "v1," + base64.b64encode(digest).decode()

"""The Standard Webhooks signing primitive, shared by the emulator (sender) and
`toolkit.webhooks` (receiver): the only code the two sides share.

A secret or key is put in a `Secret` on the first line that receives it, so a traceback
printing every frame's locals shows `Secret('**********')`, never the value.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac

from toolkit.config import Secret

__all__ = ["decode_secret", "sign", "signature"]

SECRET_PREFIX = "whsec_"


def decode_secret(secret: str | Secret[str]) -> bytes:
    """The HMAC key of a signing secret: base64 after the optional `whsec_` prefix.

    Raises `ValueError`, without the secret or a chained decoder error (which would quote
    it), for text that is not base64.
    """
    secret = secret if isinstance(secret, Secret) else Secret(secret)
    try:
        return base64.b64decode(_padded(secret), validate=True)
    except (binascii.Error, ValueError):
        raise ValueError(
            "the webhook secret is not 'whsec_' followed by base64 (it is not shown)"
        ) from None


def _padded(secret: Secret[str]) -> str:
    # Secrets are sometimes handed out without their base64 padding.
    encoded = secret.reveal().removeprefix(SECRET_PREFIX)
    return encoded + "=" * (-len(encoded) % 4)


def signature(
    key: bytes | Secret[bytes], webhook_id: str, timestamp: int | str, body: bytes
) -> bytes:
    """HMAC-SHA256 over `{id}.{timestamp}.{body}`, the body as raw bytes."""
    key = key if isinstance(key, Secret) else Secret(key)
    signed = f"{webhook_id}.{timestamp}.".encode() + body
    return hmac.digest(key.reveal(), signed, hashlib.sha256)


def sign(secret: str | Secret[str], webhook_id: str, timestamp: int | str, body: bytes) -> str:
    """The `webhook-signature` header value for one signature: `v1,<base64>`."""
    secret = secret if isinstance(secret, Secret) else Secret(secret)
    digest = signature(Secret(decode_secret(secret)), webhook_id, timestamp, body)
    return "v1," + base64.b64encode(digest).decode()

"""Standard Webhooks signatures (https://www.standardwebhooks.com), version `v1`.

The signed content is `{webhook-id}.{webhook-timestamp}.{body}` with HMAC-SHA256, keyed by the
base64-decoded part of a `whsec_` secret; the `webhook-signature` header carries
`v1,<base64 signature>`, several of them space-separated while a rotated secret still overlaps
(a receiver accepts the message if any one matches). Receivers reject timestamps outside their
tolerance (five minutes, usually) and ids they have seen: each attempt is signed afresh with the
current time, and the id stays the notification's id, so retries are recognisable as such.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets as _random
import time
from collections.abc import Sequence

SECRET_PREFIX = "whsec_"
SECRET_BYTES = 24  # 192 bits: the spec asks for 24 to 64 bytes


class BadSigningSecret(ValueError):
    """Not a `whsec_<base64>` secret (or an empty one)."""

    def __init__(self) -> None:
        super().__init__("a signing secret is 'whsec_' followed by base64 of 24 to 64 bytes")


def new_signing_secret() -> str:
    """A fresh secret: `whsec_` + base64 of 24 random bytes."""
    return SECRET_PREFIX + base64.b64encode(_random.token_bytes(SECRET_BYTES)).decode("ascii")


def _key(secret: str) -> bytes:
    raw = secret.removeprefix(SECRET_PREFIX)
    try:
        key = base64.b64decode(raw, validate=True)
    except (binascii.Error, ValueError) as err:
        raise BadSigningSecret() from err
    if not 24 <= len(key) <= 64:
        raise BadSigningSecret()
    return key


def sign(secret: str, msg_id: str, timestamp: int, body: bytes) -> str:
    """`v1,<base64 HMAC-SHA256 of "{msg_id}.{timestamp}.{body}">`; `BadSigningSecret`."""
    content = msg_id.encode() + b"." + str(int(timestamp)).encode() + b"." + body
    digest = hmac.new(_key(secret), content, hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode("ascii")


def signature_header(secrets: Sequence[str], msg_id: str, timestamp: int, body: bytes) -> str:
    """The `webhook-signature` value: one signature per secret (current first), space-separated."""
    if not secrets:
        raise BadSigningSecret()
    return " ".join(sign(secret, msg_id, timestamp, body) for secret in secrets)


def webhook_headers(
    secrets: str | Sequence[str], msg_id: str, body: bytes, *, timestamp: int | None = None
) -> dict[str, str]:
    """`webhook-id`, `webhook-timestamp` (now, unless given) and `webhook-signature` for `body`,
    the exact bytes that will be sent."""
    keys = [secrets] if isinstance(secrets, str) else list(secrets)
    when = int(time.time()) if timestamp is None else int(timestamp)
    return {
        "webhook-id": msg_id,
        "webhook-timestamp": str(when),
        "webhook-signature": signature_header(keys, msg_id, when, body),
    }

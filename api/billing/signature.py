"""Verification of the `Stripe-Signature` header of a webhook.

HMAC-SHA-256, keyed by the endpoint's signing secret, over `f"{t}.{raw body}"`; any `v1`
entry may match (Stripe sends several while a secret is being rolled). Unlike the stripe
package's own check, which only refuses old timestamps, the timestamp must be within the
tolerance in both directions, so a signature minted for the future cannot be stockpiled.
"""

from __future__ import annotations

import hashlib
import hmac

from api.http.errors import ApiError

TOLERANCE_SECONDS = 300
MAX_HEADER_LENGTH = 4096


class InvalidSignature(ApiError):
    status, code, docs_url = 400, "invalid_signature", "/docs#billing"

    def __init__(self, why: str) -> None:
        super().__init__(f"Webhook signature refused: {why}")


def verify(
    payload: bytes, header: str | None, secret: str, now: float, tolerance: int = TOLERANCE_SECONDS
) -> None:
    """Return if `header` signs `payload` with `secret` within `tolerance` of `now`; else
    raise `InvalidSignature`. Comparison is constant-time."""
    if not header:
        raise InvalidSignature("no Stripe-Signature header")
    if len(header) > MAX_HEADER_LENGTH:
        raise InvalidSignature("header too long")
    timestamps: list[str] = []
    signatures: list[str] = []
    for item in header.split(","):
        key, sep, value = item.strip().partition("=")
        if not sep:
            continue
        if key == "t":
            timestamps.append(value)
        elif key == "v1":
            signatures.append(value)
    if len(timestamps) != 1 or not (timestamps[0].isascii() and timestamps[0].isdigit()):
        raise InvalidSignature("no single timestamp")
    if not signatures:
        raise InvalidSignature("no v1 signature")
    timestamp = int(timestamps[0])
    signed = timestamps[0].encode() + b"." + payload
    expected = hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()
    # Every candidate is compared, so timing does not tell which one matched.
    matched = [
        hmac.compare_digest(expected.encode(), candidate.encode("utf-8", "replace"))
        for candidate in signatures
    ]
    if not any(matched):
        raise InvalidSignature("no matching signature")
    if abs(now - timestamp) > tolerance:
        raise InvalidSignature("timestamp outside the tolerance")

"""The session the site's home page hands out: an anon id and an `access_token_web` JWT.

The real token is a JWT (`iss: vinted-iam-oauth`) whose `exp` says how long it lives
(MARKETPLACE.md): clients are told to read it rather than assume a lifetime. The simulator
signs nothing (the signature is random bytes: no client may check it), states `iat` and `exp`
on the wall clock as the real site does, and keeps its own expiry on the server's clock in the
app's token table.
"""

from __future__ import annotations

import base64
import json
import secrets
from collections.abc import Mapping

ISSUER = "vinted-iam-oauth"
_HEADER = {"alg": "RS256", "typ": "JWT"}


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _segment(claims: Mapping[str, object]) -> str:
    return _b64url(json.dumps(claims, separators=(",", ":")).encode())


def mint_token(anon_id: str, wall_now: float, ttl: float) -> str:
    """A fresh `access_token_web`: header.payload.signature, base64url without padding, with
    claims `iss`, `sub` (the anon id), `iat`, `exp` (`wall_now + ttl`, Unix seconds) and
    `scope`. Unique per call (the signature is random)."""
    claims: dict[str, object] = {
        "iss": ISSUER, "sub": anon_id, "iat": int(wall_now),
        # Rounded down: a client renewing by `exp` must never hold a token the server dropped.
        "exp": int(wall_now + ttl), "scope": "public",
    }  # fmt: skip
    return f"{_segment(_HEADER)}.{_segment(claims)}.{_b64url(secrets.token_bytes(256))}"

"""Secrets: password hashing, token minting and hashing, constant-time comparison.

Passwords are argon2id (argon2-cffi defaults), hashed in a worker thread so the event loop
keeps serving. Session ids, reset tokens and access tokens are 256-bit random secrets; only an
HMAC-SHA-256 of each is stored, keyed by the service secret, so a leaked table alone cannot be
replayed. Lookups are by that digest (an index) and confirmed with `hmac.compare_digest`.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets

import trio
from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError
from werkzeug.routing import BaseConverter

# The ids of new rows, made as the store makes its own (re-exported for the API).
from store import new_id as new_id

TOKEN_PREFIX = "nsc"
MIN_PASSWORD_LENGTH = 10
MAX_PASSWORD_LENGTH = 256

_hasher = PasswordHasher()
# Verified when the e-mail is unknown so that sign-in takes as long either way.
_DUMMY_HASH = _hasher.hash("nichescope-timing-equaliser")
# argon2 uses 64 MiB per hash by default; bound concurrent hashes so a burst of sign-ins
# cannot take the machine's memory.
_hash_slots = trio.CapacityLimiter(4)


async def hash_password(password: str) -> str:
    return await trio.to_thread.run_sync(_hasher.hash, password, limiter=_hash_slots)


async def verify_password(password_hash: str | None, password: str) -> bool:
    """True if `password` matches; runs a dummy verification when there is no hash."""

    def verify() -> bool:
        try:
            return _hasher.verify(password_hash or _DUMMY_HASH, password) and bool(password_hash)
        except (VerifyMismatchError, VerificationError, InvalidHashError):
            return False

    return await trio.to_thread.run_sync(verify, limiter=_hash_slots)


def new_secret() -> str:
    """256 random bits, URL-safe."""
    return secrets.token_urlsafe(32)


def new_access_token() -> str:
    return f"{TOKEN_PREFIX}_{new_secret()}"


RESOURCE_ID_PATTERN = r"[a-z]+_[0-9A-Za-z_]+"


class TokenHasher:
    """Keyed digests of secrets; the key is `NICHESCOPE_SECRET_KEY`."""

    def __init__(self, key: str) -> None:
        self._key = key.encode()

    def digest(self, secret: str) -> str:
        return hmac.new(self._key, secret.encode(), hashlib.sha256).hexdigest()

    def matches(self, secret: str, stored_digest: str) -> bool:
        return hmac.compare_digest(self.digest(secret), stored_digest)


def looks_like_access_token(value: str) -> bool:
    prefix, sep, secret = value.partition("_")
    return prefix == TOKEN_PREFIX and sep == "_" and 20 <= len(secret) <= 100


class ResourceIdConverter(BaseConverter):
    """`<id:name>` in a route: a resource id as `new_id` makes them (`mon_3f2a...`).

    Fixed paths beside an id route (`/api/monitoring/export-schema` beside
    `/api/monitoring/<id:monitor_id>`) then never match the id, so the methods a path allows
    (`Allow` on OPTIONS, 405s) are its own; an id of another shape is simply not found.
    """

    regex = RESOURCE_ID_PATTERN

"""A short-lived in-process cache of credential lookups (browser sessions and access tokens),
invalidated on logout, reset and revocation.

Every authenticated request would otherwise cost a database round trip. On this node,
logout, password reset and revoking a token drop the entry at once; in cluster mode every
node hears of the credentials the others end (a NOTIFY sent in the ending transaction, see
`Store.listen_for_session_ends`) and drops them too. Entries live `ttl` seconds at most, so
a notification lost to a dropped connection still ends the credential within that time.

Sessions and tokens share one cache: both are keyed by the keyed hash of their secret, which
never collide, and one notification channel names both.
"""

from __future__ import annotations

from collections import OrderedDict

import trio

from store import SessionOwner, TokenOwner

Owner = SessionOwner | TokenOwner


class CredentialCache:
    def __init__(self, ttl: float = 30.0, max_entries: int = 10_000) -> None:
        self._ttl = ttl
        self._max_entries = max_entries
        self._entries: OrderedDict[str, tuple[float, Owner]] = OrderedDict()

    def _get(self, digest: str) -> Owner | None:
        entry = self._entries.get(digest)
        if entry is None:
            return None
        stored_at, owner = entry
        if trio.current_time() - stored_at > self._ttl:
            del self._entries[digest]
            return None
        return owner

    def get(self, digest: str) -> SessionOwner | None:
        """The cached session of `digest` (a token's digest is never a session)."""
        owner = self._get(digest)
        return owner if isinstance(owner, SessionOwner) else None

    def get_token(self, digest: str) -> TokenOwner | None:
        owner = self._get(digest)
        return owner if isinstance(owner, TokenOwner) else None

    def put(self, digest: str, owner: Owner) -> None:
        self._entries[digest] = (trio.current_time(), owner)
        self._entries.move_to_end(digest)
        while len(self._entries) > self._max_entries:
            self._entries.popitem(last=False)

    def drop(self, *digests: str) -> None:
        for digest in digests:
            self._entries.pop(digest, None)

    def drop_token(self, token_id: str) -> None:
        """Forget the token `token_id` (revoked here: its digest is not at hand). A scan,
        but revocations are rare and the cache is bounded."""
        for digest, (_, owner) in list(self._entries.items()):
            if isinstance(owner, TokenOwner) and owner.token.id == token_id:
                del self._entries[digest]

    def session_ended(self, digest: str | None) -> None:
        """A node ended the session or revoked the token `digest`; None: some ends may have
        been missed (the listener reconnected), so forget every entry."""
        if digest is None:
            self._entries.clear()
        else:
            self.drop(digest)

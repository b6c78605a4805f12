"""A short-lived in-process cache of credential lookups (browser sessions and access tokens),
invalidated on logout, reset and revocation.

Every authenticated request would otherwise cost a database round trip. On this node,
logout, password reset and revoking a token drop the entry at once; in cluster mode every
node hears of the credentials the others end (a NOTIFY sent in the ending transaction, see
`Store.listen_for_session_ends`) and drops them too. Entries live `ttl` seconds at most, so
a notification lost to a dropped connection still ends the credential within that time.

Sessions and tokens share one cache: both are keyed by the keyed hash of their secret, which
never collide, and one notification channel names both.

A lookup that read a credential before its ending committed must not cache it after the
ending cleared the cache (the ended credential would live on for `ttl`): every ending bumps a
generation, a lookup reads it before asking the store and `put` refuses an answer read under
an older one. The generation is one for the whole cache, not per credential, because a
revocation here knows only the token's id and a reconnected listener knows nothing: a lookup
that crossed any ending is answered but not cached, which costs one more database read.
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
        self._generation = 0

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

    def generation(self) -> int:
        """Read before looking a credential up in the store, and handed to `put`."""
        return self._generation

    def put(self, digest: str, owner: Owner, *, looked_up_at: int) -> None:
        """Cache what the store answered for `digest`, unless a credential ended since the
        lookup began (`looked_up_at`, from `generation()`): the answer may be one the ending
        has already made false."""
        if looked_up_at != self._generation:
            return
        self._entries[digest] = (trio.current_time(), owner)
        self._entries.move_to_end(digest)
        while len(self._entries) > self._max_entries:
            self._entries.popitem(last=False)

    def drop(self, *digests: str) -> None:
        self._generation += 1
        for digest in digests:
            self._entries.pop(digest, None)

    def drop_token(self, token_id: str) -> None:
        """Forget the token `token_id` (revoked here: its digest is not at hand). A scan,
        but revocations are rare and the cache is bounded."""
        self._generation += 1
        for digest, (_, owner) in list(self._entries.items()):
            if isinstance(owner, TokenOwner) and owner.token.id == token_id:
                del self._entries[digest]

    def session_ended(self, digest: str | None) -> None:
        """A node ended the session or revoked the token `digest`; None: some ends may have
        been missed (the listener reconnected), so forget every entry."""
        if digest is None:
            self._generation += 1
            self._entries.clear()
        else:
            self.drop(digest)

"""A short-lived in-process cache of session lookups, invalidated on logout and reset.

Every authenticated browser request would otherwise cost a database round trip. On this
node, logout and password reset drop the entry at once; in cluster mode every node hears of
the sessions the others end (a NOTIFY sent in the deleting transaction, see
`Store.listen_for_session_ends`) and drops them too. Entries live `ttl` seconds at most, so
a notification lost to a dropped connection still ends the session within that time.
"""

from __future__ import annotations

from collections import OrderedDict

import trio

from store import SessionOwner


class SessionCache:
    def __init__(self, ttl: float = 30.0, max_entries: int = 10_000) -> None:
        self._ttl = ttl
        self._max_entries = max_entries
        self._entries: OrderedDict[str, tuple[float, SessionOwner]] = OrderedDict()

    def get(self, digest: str) -> SessionOwner | None:
        entry = self._entries.get(digest)
        if entry is None:
            return None
        stored_at, owner = entry
        if trio.current_time() - stored_at > self._ttl:
            del self._entries[digest]
            return None
        return owner

    def put(self, digest: str, owner: SessionOwner) -> None:
        self._entries[digest] = (trio.current_time(), owner)
        self._entries.move_to_end(digest)
        while len(self._entries) > self._max_entries:
            self._entries.popitem(last=False)

    def drop(self, *digests: str) -> None:
        for digest in digests:
            self._entries.pop(digest, None)

    def session_ended(self, digest: str | None) -> None:
        """A node ended the session `digest`; None: some ends may have been missed (the
        listener reconnected), so forget every entry."""
        if digest is None:
            self._entries.clear()
        else:
            self.drop(digest)

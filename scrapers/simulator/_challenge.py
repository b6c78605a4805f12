"""The browser challenge in front of the site origin (MARKETPLACE.md, "Since 13 September 2026").

While it is on, a request to the site origin without a valid `cf_clearance` cookie answers 403
(`cf-mitigated: challenge`, `server: cloudflare`, a `__cf_bm` cookie, never a session) with a
"Just a moment..." page whose script works the clearance out from numbers in the page, stores
it as a cookie and reloads after ~300 ms: a real browser passes without a visible step, a plain
HTTP client never does (unless it runs the arithmetic, which no client of ours may).

A clearance is valid when it answers a challenge this gate issued, comes with the User-Agent
that received the challenge page (real clearances are bound to the browser's User-Agent), and
that challenge was issued less than `clearance_ttl` server seconds ago. Issued challenges and
granted clearances are kept in two bounded LRU tables, so a client asking for millions of
challenges costs bounded memory and cannot push out the clearances browsers already hold.
"""

from __future__ import annotations

import secrets
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from ._answer import Answer

MAX_PENDING = 10_000  # challenges issued and not answered yet
MAX_CLEARED = 10_000  # clearances presented at least once
_MODULUS = 1_000_003  # keeps the arithmetic inside a JavaScript number's exact integers
_DELAY_MS = 300


@dataclass(frozen=True, slots=True)
class _Issued:
    clearance: str
    user_agent: str
    issued: float  # server clock


class ChallengeGate:
    """Issues challenges and checks clearances; `enabled` and `clearance_ttl` may change while
    the app runs (the side door). Plain state, touched only from the event loop."""

    def __init__(self, enabled: bool, clearance_ttl: float) -> None:
        self.enabled = enabled
        self.clearance_ttl = clearance_ttl
        self._pending: OrderedDict[str, _Issued] = OrderedDict()  # challenge id -> issued
        self._cleared: OrderedDict[str, _Issued] = OrderedDict()  # clearance -> issued

    def configure(self, enabled: bool | None = None, clearance_ttl: float | None = None) -> None:
        """Switch the challenge and/or change the clearances' lifetime (granted ones included:
        their age is measured from their challenge, against the ttl of the moment)."""
        if clearance_ttl is not None:
            if not clearance_ttl > 0:
                raise ValueError("clearance_ttl must be positive")
            self.clearance_ttl = clearance_ttl
        if enabled is not None:
            self.enabled = enabled

    def revoke_all(self) -> None:
        """Forget every issued challenge and granted clearance: each browser must pass again."""
        self._pending.clear()
        self._cleared.clear()

    def cleared(self, clearance: str | None, user_agent: str, now: float) -> bool:
        """Whether `clearance` (the `cf_clearance` cookie) is valid for `user_agent` at `now`.
        A wrong User-Agent is refused without spending the clearance: its browser keeps it."""
        if not clearance:
            return False
        granted = self._cleared.get(clearance)
        if granted is None:
            pending = self._pending.get(clearance.partition(".")[0])
            if pending is None or pending.clearance != clearance:
                return False
            granted = pending
        if now - granted.issued >= self.clearance_ttl:
            self._cleared.pop(clearance, None)
            return False
        if granted.user_agent != user_agent:
            return False
        if clearance not in self._cleared:  # first use: from the pending table to the granted
            del self._pending[clearance.partition(".")[0]]
            self._cleared[clearance] = granted
            if len(self._cleared) > MAX_CLEARED:
                self._cleared.popitem(last=False)
        self._cleared.move_to_end(clearance)
        return True

    def issue(self, user_agent: str, now: float) -> Answer:
        """A new challenge for `user_agent`: the 403 page that works its clearance out."""
        challenge_id = secrets.token_hex(12)
        a, b, c = (1_000 + secrets.randbelow(900_000) for _ in range(3))
        clearance = f"{challenge_id}.{(a * b + c) % _MODULUS}"
        self._pending[challenge_id] = _Issued(clearance, user_agent, now)
        if len(self._pending) > MAX_PENDING:
            self._pending.popitem(last=False)
        headers = [
            ("cf-mitigated", "challenge"),
            ("server", "cloudflare"),
            ("cache-control", "private, max-age=0, no-store, no-cache, must-revalidate"),
            ("set-cookie", f"__cf_bm={secrets.token_urlsafe(32)}; Path=/; HttpOnly"),
        ]
        page = _PAGE.format(ray=challenge_id, a=a, b=b, c=c, m=_MODULUS, delay=_DELAY_MS)
        return Answer(403, page.encode(), "text/html; charset=UTF-8", headers)

    def to_json(self) -> dict[str, Any]:
        return {
            "www": self.enabled, "clearance_ttl": self.clearance_ttl,
            "pending": len(self._pending), "cleared": len(self._cleared),
        }  # fmt: skip


# The numbers travel in data attributes and the script multiplies them: the clearance is not a
# string of the page that a client could copy without running the page.
_PAGE = """<!DOCTYPE html>
<html lang="en-US"><head><meta charset="UTF-8"><title>Just a moment...</title>
<meta name="robots" content="noindex,nofollow"></head>
<body><div id="challenge-stage" data-ray="{ray}" data-a="{a}" data-b="{b}" data-c="{c}"
data-m="{m}"><h1>Verifying you are human. This may take a few seconds.</h1>
<p>This site needs to review the security of your connection before proceeding.</p></div>
<noscript>Enable JavaScript and cookies to continue</noscript>
<script>
(function () {{
  var s = document.getElementById("challenge-stage").dataset;
  var v = (Number(s.a) * Number(s.b) + Number(s.c)) % Number(s.m);
  setTimeout(function () {{
    document.cookie = "cf_clearance=" + s.ray + "." + v + "; path=/";
    location.reload();
  }}, {delay});
}})();
</script></body></html>
"""

"""robots.txt per RFC 9309, read by protego: the rules for our product token, or a blanket
allow or deny when the file could not be read.

Protego does the RFC's matching: the group of our product token (case-insensitive; groups
of the same name merged) or else the `*` group, the longest matching rule, allow winning a
tie, `*` and `$` in patterns, percent-encoding normalised, and `/robots.txt` itself always
allowed. What protego leaves to its caller is here: what a status means (section 2.3.1) and the
parsing limit (section 2.5). The body was already capped by the client's `max_bytes` when it
was read, like every response.
"""

from __future__ import annotations

from typing import Final

from protego import Protego

PARSE_LIMIT: Final = 500 * 1024
"""How much of robots.txt is parsed (RFC 9309 section 2.5: at least 500 KiB); the rest is
ignored. Parsing runs on the event loop, and a file of tens of thousands of wildcard rules
takes seconds per 500 KiB."""


class RobotsRules:
    """What one origin's robots.txt lets our product token fetch."""

    __slots__ = ("_disallow_all", "_parsed", "_product")

    def __init__(
        self, parsed: Protego | None = None, product: str = "", *, disallow_all: bool = False
    ) -> None:
        self._parsed = parsed
        self._product = product
        self._disallow_all = disallow_all

    @classmethod
    def allowing_all(cls) -> RobotsRules:
        return cls()

    @classmethod
    def disallowing_all(cls) -> RobotsRules:
        return cls(disallow_all=True)

    @classmethod
    def for_status(cls, status: int, text: str, product: str) -> RobotsRules:
        """RFC 9309 section 2.3.1: 4xx (unavailable) allows all, 5xx (unreachable) disallows."""
        if 200 <= status < 300:
            return cls.parse(text, product)
        if 400 <= status < 500:
            return cls.allowing_all()
        return cls.disallowing_all()

    @classmethod
    def parse(cls, text: str, product: str) -> RobotsRules:
        """The rules of `text` for `product`, read up to `PARSE_LIMIT` characters (at least
        as many bytes); a line the limit cuts through is dropped whole, not misread."""
        if len(text) > PARSE_LIMIT:
            lines = text[:PARSE_LIMIT].splitlines(keepends=True)
            if lines and not lines[-1].endswith(("\n", "\r")):
                lines.pop()
            text = "".join(lines)
        return cls(Protego.parse(text), product)

    def can_fetch(self, target: str) -> bool:
        """Whether the path and query `target` may be fetched."""
        if self._disallow_all:
            return target == "/robots.txt"
        if self._parsed is None:
            return True
        return self._parsed.can_fetch(target or "/", self._product)

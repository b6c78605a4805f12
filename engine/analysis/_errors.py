"""Errors of the analysis package, and how they quote what they refuse."""

from __future__ import annotations

import reprlib
from typing import Final

QUOTE_LIMIT: Final = 80
"""The most of a refused value a message quotes: enough to recognise it, never the value
itself (a refused 5 MB string was echoed whole in the 422)."""


class _ShortRepr(reprlib.Repr):
    """`reprlib`'s bounded repr: a string's prefix (cut before it is copied), containers a
    few items and levels deep (so that no refusal recurses through a deeply nested value)."""

    def __init__(self) -> None:
        super().__init__()
        self.maxlevel = 3
        self.maxlist = self.maxtuple = self.maxdict = self.maxset = 4
        self.maxstring = self.maxother = self.maxlong = QUOTE_LIMIT

    def repr_str(self, x: str, level: int) -> str:
        # reprlib keeps both ends of a long string; a refusal quotes how it begins (its
        # first characters, their quotes and "..." within the limit).
        return repr(x) if len(x) <= self.maxstring else f"{x[: self.maxstring - 5]!r}..."


_SHORT = _ShortRepr()


def quote(value: object) -> str:
    """`value`'s repr for a message, at most `QUOTE_LIMIT` characters (cut with "...")."""
    text = _SHORT.repr(value)
    return text if len(text) <= QUOTE_LIMIT else f"{text[: QUOTE_LIMIT - 3]}..."


class InvalidExport(ValueError):
    """A monitor export document that cannot be analysed (the API answers it with a 4xx).

    `where` names the offending part (e.g. ``listings[3].price``) and `problem` says what is
    wrong with it; the message combines both. A value is quoted in either with `quote`.
    """

    def __init__(self, where: str, problem: str) -> None:
        self.where = where
        self.problem = problem
        super().__init__(f"invalid monitor export: {where}: {problem}")

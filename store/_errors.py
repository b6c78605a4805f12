"""Errors the store raises; the API maps them to the error envelope in one place."""

from __future__ import annotations


class StoreError(Exception):
    """Base class of every store error."""


class AlreadyExists(StoreError):
    def __init__(self, kind: str, key: str) -> None:
        super().__init__(f"{kind} {key!r} already exists")
        self.kind = kind
        self.key = key


class DatabaseUnavailable(StoreError):
    def __init__(self, reason: str) -> None:
        super().__init__(f"database unavailable: {reason}")
        self.reason = reason

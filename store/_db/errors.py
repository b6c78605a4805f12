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


class LeaseLost(StoreError):
    """This node no longer holds the lease on a monitor or run (another node claimed it, or
    it was deleted): its write is refused, so a paused or partitioned node cannot write
    stale results."""

    def __init__(self, kind: str, target_id: str) -> None:
        super().__init__(f"lease on {kind} {target_id} lost")
        self.kind = kind
        self.target_id = target_id


class NotFoundInWorkspace(StoreError):
    """A channel, rule or monitor named in a write is not in the caller's workspace (or does
    not exist); nothing was written."""

    def __init__(self, kind: str, key: str) -> None:
        super().__init__(f"{kind} {key!r} not found in this workspace")
        self.kind = kind
        self.key = key


class QuotaFull(StoreError):
    """A write a quota refused, counted in the writing transaction under the workspace's quota
    lock (`store/accounts/quotas.py`): the workspace has `in_use` of `quota` and may have
    `limit`; nothing was written."""

    def __init__(self, quota: str, limit: int, in_use: int) -> None:
        super().__init__(f"{quota}: {in_use} in use, at most {limit}")
        self.quota = quota
        self.limit = limit
        self.in_use = in_use

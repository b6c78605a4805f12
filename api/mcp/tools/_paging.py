"""Paging for the list tools: an opaque `cursor` argument in, `nextCursor` out.

A cursor is the offset of the next item, tagged with the list it belongs to, in URL-safe
base64. Agents pass it back unchanged; one that does not decode, or that belongs to another
list, is refused as invalid arguments (JSON-RPC -32602) before the tool runs. Pages are
offsets into a newest-first list, so an item created while paging shifts later pages by one.

A page holds `limit` items or as many as fit in an answer (`fitting`): the next cursor
starts after the last item answered, so a page cut short loses nothing.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any, ClassVar, TypedDict, TypeVar

from pydantic import BaseModel, ConfigDict, Field, field_validator

from api.mcp._registry import MAX_ANSWER_BYTES, answer_bytes, answer_text

DEFAULT_LIMIT = 20
MAX_LIMIT = 100
# What a page's items may take of an answer (the rest: `total`, `nextCursor`, room to spare).
ITEMS_BUDGET = MAX_ANSWER_BYTES - 1024
# The largest offset a cursor holds: far past any list's end, well inside a 64-bit OFFSET.
MAX_OFFSET = 10**9
Item = TypeVar("Item", bound=BaseModel)
# How every list tool's description ends.
PAGING_DOC = (
    f"Paged: {DEFAULT_LIMIT} items by default (`limit` 1-{MAX_LIMIT}; fewer when they would "
    f"not fit in the {MAX_ANSWER_BYTES // 1024} KB an answer holds); `total` counts them all "
    "and `nextCursor`, passed back as `cursor`, answers the next page (null on the last)."
)


def encode_cursor(kind: str, offset: int) -> str:
    return base64.urlsafe_b64encode(f"{kind}:{offset}".encode()).decode()


def decode_cursor(kind: str, cursor: str) -> int:
    """The offset in `cursor`; `ValueError` when it is not a cursor of list `kind`, or its
    offset is not one this tool could give out (digits only, at most `MAX_OFFSET`: a forged
    offset past the database's 64-bit OFFSET was an internal error)."""
    try:
        prefix, _, offset = base64.urlsafe_b64decode(cursor.encode()).decode().partition(":")
    except (binascii.Error, UnicodeDecodeError, ValueError) as err:
        raise ValueError("not a cursor this tool gave out") from err
    digits = offset.isascii() and offset.isdigit() and len(offset) <= len(str(MAX_OFFSET))
    if prefix != kind or not digits or int(offset) > MAX_OFFSET:
        raise ValueError("not a cursor this tool gave out")
    return int(offset)


class PageFields(TypedDict):
    """What a list tool's result says of its page, after its items."""

    total: int
    nextCursor: str | None


class PageArguments(BaseModel):
    """`cursor` (from the previous page's `nextCursor`) and `limit`; unknown fields refused. A
    list tool's arguments subclass it and name their list in `kind` (the schema's title is the
    subclass' name)."""

    model_config = ConfigDict(extra="forbid")
    kind: ClassVar[str]

    cursor: str | None = Field(
        default=None,
        max_length=200,
        description="Opaque: the `nextCursor` of the previous page; omit for the first page.",
    )
    limit: int = Field(
        default=DEFAULT_LIMIT,
        ge=1,
        le=MAX_LIMIT,
        description=f"Items per page (1-{MAX_LIMIT}, default {DEFAULT_LIMIT}); fewer when "
        f"they would not fit in the {MAX_ANSWER_BYTES // 1024} KB an answer holds.",
    )

    @field_validator("cursor")
    @classmethod
    def _valid_cursor(cls, value: str | None) -> str | None:
        if value is not None:
            decode_cursor(cls.kind, value)
        return value

    @property
    def offset(self) -> int:
        return 0 if self.cursor is None else decode_cursor(self.kind, self.cursor)

    def next_cursor(self, total: int, shown: int | None = None) -> str | None:
        """The cursor of the page after this one (of `shown` items, `limit` if not given),
        or None when this page is the last."""
        following = self.offset + (self.limit if shown is None else shown)
        return encode_cursor(self.kind, following) if following < total else None

    def fields(self, total: int, shown: int | None = None) -> PageFields:
        """The result's page fields: the `total` of the whole list and the next page's cursor
        (after the `shown` items answered, `limit` if not given)."""
        return PageFields(total=total, nextCursor=self.next_cursor(total, shown))


def fitting(items: list[Item]) -> list[Item]:
    """The first of `items` that fit in an answer together (at least one: an item too large
    on its own is the registry's `answer_too_large`)."""
    used = 0
    for count, item in enumerate(items):
        used += answer_bytes(answer_text(item.model_dump(mode="json"))) + 1
        if used > ITEMS_BUDGET and count > 0:
            return items[:count]
    return items


NEXT_CURSOR: Any = Field(
    default=None,
    description="Pass it as `cursor` to get the next page; null on the last page.",
)

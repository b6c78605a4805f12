"""What every resource's bodies share: `Strict` (unknown fields refused, text checked storable),
the highest page number, the paging query and page count, and the answer to a delete.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from api.http.storable import document_storable_text, storable_field


class Strict(BaseModel):
    # Unknown fields are refused (422) rather than silently dropped: a typo in a request must
    # not pass as a success, and mass assignment has nothing to grab.
    model_config = ConfigDict(extra="forbid", json_schema_extra=document_storable_text)

    _storable = field_validator("*", mode="after")(storable_field)


# The highest page number any paged list accepts (422 above): far past any real list, and
# it keeps `(page - 1) * page_size` inside the database's 64-bit OFFSET.
MAX_PAGE = 1_000_000


def exactly_one_of(first: str, second: str) -> Callable[[dict[str, Any]], None]:
    """`json_schema_extra` for "exactly one of two nullable fields is given", so that the
    document says what the model's validator enforces (and generated clients and fuzzers
    know it); plain strings are marked as `Strict` marks them."""

    def only(given: str, absent: str) -> dict[str, Any]:
        return {
            "required": [given],
            "properties": {given: {"type": "string"}, absent: {"type": "null"}},
        }

    def extra(schema: dict[str, Any]) -> None:
        document_storable_text(schema)
        schema["oneOf"] = [only(first, second), only(second, first)]

    return extra


def page_count(total: int, page_size: int) -> int:
    """How many pages of `page_size` hold `total` items: 1 for an empty list."""
    return max(1, -(-total // page_size))


class PageQuery(BaseModel):
    page: int = Field(default=1, ge=1, le=MAX_PAGE)
    page_size: int = Field(default=20, ge=1, le=100)

    @property
    def offset(self) -> int:
        """How many items the pages before this one hold."""
        return (self.page - 1) * self.page_size


class DeletedOut(BaseModel):
    id: str
    deleted: bool

"""What every resource's bodies share: `Strict` (unknown fields refused, text checked storable),
the highest page number, the paging query, its answer's page fields and page count, and the
answer to a delete.
"""

from __future__ import annotations

from typing import Any, ClassVar, Self, TypedDict

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from api.http.storable import document_storable_text, storable_field


class Strict(BaseModel):
    # Unknown fields are refused (422) rather than silently dropped: a typo in a request must
    # not pass as a success, and mass assignment has nothing to grab.
    model_config = ConfigDict(extra="forbid", json_schema_extra=document_storable_text)

    _storable = field_validator("*", mode="after")(storable_field)


# The highest page number any paged list accepts (422 above): far past any real list, and
# it keeps `(page - 1) * page_size` inside the database's 64-bit OFFSET.
MAX_PAGE = 1_000_000


def _one_source_schema(schema: dict[str, Any], model: type[OneSource]) -> None:
    """`OneSource`'s `json_schema_extra`: the document says what the validator enforces (so
    generated clients and fuzzers know it); plain strings are marked as `Strict` marks them."""

    def only(given: str, absent: str) -> dict[str, Any]:
        return {
            "required": [given],
            "properties": {given: {"type": "string"}, absent: {"type": "null"}},
        }

    first, second = model.sources
    document_storable_text(schema)
    schema["oneOf"] = [only(first, second), only(second, first)]


class OneSource(Strict):
    """A request that names exactly one of two nullable fields, `sources` (what to read: a
    catalogue URL, a monitor, an analysis): refused otherwise, and documented as `oneOf`."""

    model_config = ConfigDict(extra="forbid", json_schema_extra=_one_source_schema)
    sources: ClassVar[tuple[str, str]]

    @model_validator(mode="after")
    def _exactly_one_source(self) -> Self:
        first, second = self.sources
        if (getattr(self, first) is None) == (getattr(self, second) is None):
            raise ValueError(f"give exactly one of {first} or {second}")
        return self


def page_count(total: int, page_size: int) -> int:
    """How many pages of `page_size` hold `total` items: 1 for an empty list."""
    return max(1, -(-total // page_size))


class PageFields(TypedDict):
    """What a paged list's answer says of its page, after its items."""

    page: int
    page_size: int
    total: int


class PageQuery(BaseModel):
    page: int = Field(default=1, ge=1, le=MAX_PAGE)
    page_size: int = Field(default=20, ge=1, le=100)

    @property
    def offset(self) -> int:
        """How many items the pages before this one hold."""
        return (self.page - 1) * self.page_size

    def fields(self, total: int) -> PageFields:
        """The answer's page fields: this page, its size and the `total` of the whole list."""
        return PageFields(page=self.page, page_size=self.page_size, total=total)


class DeletedOut(BaseModel):
    id: str
    deleted: bool

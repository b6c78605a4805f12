"""`record_fields`, written once per record type: every field, in order, values shared (not
copied), and records of different types never mixed up."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from datetime import UTC, datetime
from decimal import Decimal

from store._db.rows import record_fields
from store.monitors.records import ListingFilter, ListingRecord


@dataclass(frozen=True, slots=True)
class _Pair:
    first: tuple[int, ...]
    second: str | None = None


def _listing(item_id: int) -> ListingRecord:
    now = datetime(2026, 11, 28, tzinfo=UTC)
    return ListingRecord(
        item_id=item_id, title="Jacket", brand="Levi's", size="M", condition="Good",
        category_id=1, price=Decimal("23.50"), currency="EUR", favourites=3, views=None,
        seller_id=7, url=None, photo_url=None, listed_at=None, first_seen_at=now,
        last_seen_at=now, state="sold", state_changed_at=now, in_feed=False,
        state_evidence="absence", absent_polls=2,
    )  # fmt: skip


def test_every_field_in_order_with_the_values_shared() -> None:
    listing = _listing(1)
    copied = record_fields(listing)
    assert list(copied) == [f.name for f in fields(ListingRecord)]
    assert copied == asdict(listing)
    pair = _Pair((1, 2), "x")
    assert record_fields(pair) == {"first": (1, 2), "second": "x"}
    assert record_fields(pair)["first"] is pair.first  # shared, not deep-copied as asdict does


def test_each_record_type_has_its_own_copier() -> None:
    wanted = ListingFilter(states=("sold",), brand="Nike")
    assert record_fields(wanted) == asdict(wanted)
    assert record_fields(_listing(2))["item_id"] == 2  # after another type's copier
    assert record_fields(_Pair((), None)) == {"first": (), "second": None}

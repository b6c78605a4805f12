"""Pure rule logic: each filter, niche confidence, quiet hours and digests across zones."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal

import pytest

from store import RuleFilters
from store.notify.rules import admits, confidence, due_at, matches, niche_subject


@dataclass(frozen=True)
class L:
    title: str | None = "Levi's 501 straight"
    brand: str | None = "Levi's"
    size: str | None = "W32"
    condition: str | None = "Very good"
    price: Decimal | None = Decimal("12.00")
    seller_id: int | None = 4242
    seller_login: str | None = "Jeanne"
    seller_business: bool | None = False


@pytest.mark.parametrize(
    ("filters", "passing", "failing"),
    [
        (RuleFilters(price_min=Decimal("10")), L(), L(price=Decimal("9.99"))),
        (RuleFilters(price_min=Decimal("10")), L(price=Decimal("10")), L(price=None)),
        (RuleFilters(price_max=Decimal("12")), L(), L(price=Decimal("12.01"))),
        (RuleFilters(brands=("levi's", "Diesel")), L(), L(brand="Levis")),
        (RuleFilters(sizes=("w32",)), L(), L(size="W33")),
        (RuleFilters(conditions=("very good",)), L(), L(condition="Good")),
        (RuleFilters(include_keywords=("501", "505")), L(), L(title="Levi's 511 slim")),
        (RuleFilters(exclude_keywords=("STRAIGHT",)), L(title="501 slim"), L()),
        (RuleFilters(exclude_sellers=("4243", "jeanne")), L(seller_login="paul"), L()),
        (RuleFilters(exclude_sellers=("4242",)), L(seller_id=1), L(seller_login="x")),
        (RuleFilters(business=False), L(), L(seller_business=True)),
        (RuleFilters(business=True), L(seller_business=True), L(seller_business=None)),
    ],
)
def test_each_filter_admits_and_refuses(filters: RuleFilters, passing: L, failing: L) -> None:
    assert matches(passing, filters)
    assert not matches(failing, filters)


def test_no_filter_admits_even_a_listing_that_says_nothing() -> None:
    bare = L(title=None, brand=None, size=None, condition=None, price=None, seller_id=None,
             seller_login=None, seller_business=None)  # fmt: skip
    assert matches(bare, RuleFilters())
    assert not matches(bare, RuleFilters(brands=("Levi's",)))


def test_confidence_bands_and_minimums() -> None:
    assert [confidence(n) for n in (0, 1, 4, 5, 19, 20)] == [
        "none", "low", "low", "medium", "medium", "high",
    ]  # fmt: skip
    assert admits("any", 0) and not admits("low", 0)
    assert admits("medium", 5) and not admits("medium", 4)
    assert admits("high", 20) and not admits("high", 19)


def test_niche_subject_is_stable_and_distinct() -> None:
    one = niche_subject(5, "Levi's", "W32", "Very good")
    assert one == niche_subject(5, "Levi's", "W32", "Very good")
    assert one.startswith("niche:") and len(one) == len("niche:") + 40
    assert one != niche_subject(5, "Levi's", "W32", None)


def _utc(*args: int) -> datetime:
    return datetime(*args, tzinfo=UTC)


def _instant(now: datetime, start: str | None, end: str | None, tz: str) -> datetime:
    return due_at(now, mode="instant", digest_hour=8, quiet_start=start, quiet_end=end, timezone=tz)


def test_quiet_hours_in_the_rules_zone() -> None:
    # 22:30 UTC is 23:30 in Paris (CET): inside 22:00-07:00, so due at 07:00 Paris = 06:00 UTC.
    assert _instant(_utc(2026, 11, 26, 22, 30), "22:00", "07:00", "Europe/Paris") == _utc(
        2026, 11, 27, 6, 0
    )
    # 21:30 UTC is 22:30 in Paris but only 16:30 in New York: quiet in one zone, not the other.
    now = _utc(2026, 11, 26, 21, 30)
    assert _instant(now, "22:00", "07:00", "Europe/Paris") == _utc(2026, 11, 27, 6, 0)
    assert _instant(now, "22:00", "07:00", "America/New_York") == now
    # After midnight, the same night's end (the same day): 03:00 Paris -> 07:00 Paris.
    assert _instant(_utc(2026, 11, 27, 2, 0), "22:00", "07:00", "Europe/Paris") == _utc(
        2026, 11, 27, 6, 0
    )
    # A span within one day, and no quiet hours at all.
    assert _instant(_utc(2026, 11, 26, 12, 30), "12:00", "14:00", "UTC") == _utc(
        2026, 11, 26, 14, 0
    )
    assert _instant(_utc(2026, 11, 26, 23, 0), None, None, "Europe/Paris") == _utc(
        2026, 11, 26, 23, 0
    )


def _digest(now: datetime, hour: int, tz: str) -> datetime:
    return due_at(
        now, mode="digest", digest_hour=hour, quiet_start=None, quiet_end=None, timezone=tz
    )


def test_digest_goes_at_the_next_digest_hour_in_the_rules_zone() -> None:
    # 12:00 UTC is 07:00 in New York (EST): today's 08:00 there, 13:00 UTC.
    assert _digest(_utc(2026, 11, 26, 12, 0), 8, "America/New_York") == _utc(2026, 11, 26, 13, 0)
    # 14:00 UTC is 09:00 there: tomorrow's.
    assert _digest(_utc(2026, 11, 26, 14, 0), 8, "America/New_York") == _utc(2026, 11, 27, 13, 0)
    # Across the spring DST change in Paris (29 March 2026): 08:00 CEST is 06:00 UTC.
    assert _digest(_utc(2026, 3, 28, 10, 0), 8, "Europe/Paris") == _utc(2026, 3, 29, 6, 0)
    # Quiet hours do not move a digest, and an unknown zone counts as UTC.
    assert due_at(
        _utc(2026, 11, 26, 5, 0),
        mode="digest",
        digest_hour=6,
        quiet_start="00:00",
        quiet_end="09:00",
        timezone="Nowhere/Atlantis",
    ) == _utc(2026, 11, 26, 6, 0)

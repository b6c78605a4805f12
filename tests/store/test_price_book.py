"""The price book: every recorded sale of a site once per (site, item id), whichever monitor
of whichever workspace saw it, kept in the poll's transaction (a likely sale confirmed later
is upgraded, one undone is removed); which niches a workspace may read; buying costs."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from decimal import Decimal

from engine import decide_poll
from store import (
    BookLevel,
    BuyingCosts,
    ConfirmedState,
    MarketSaleRecord,
    Niche,
    PollOutcome,
    Store,
)
from tests.store.notify_helpers import listing, new_monitor, poll

T0 = datetime(2026, 11, 26, 12, 0, tzinfo=UTC)
SITE = "https://www.vinted.fr"
JEANS = Niche(5, "Levi's", "W32", "Very good")


async def _sales(store: Store, niche: Niche = JEANS) -> tuple[MarketSaleRecord, ...]:
    """Every sale of the niche's category on the site (however old), newest first."""
    read = await store.prices.niche_sales(SITE, niche, since=T0 - timedelta(days=400), limit=50)
    return read.category


def _absent(at: datetime, *items: int) -> PollOutcome:
    """A poll whose feed lacks `items`, each answered without a state: absent once, which
    with `likely_after=1` makes a likely sale."""
    return replace(poll(at, []), absent=items, likely_after=1)


async def test_two_workspaces_seeing_one_sale_count_it_once(store: Store) -> None:
    first, _ = await new_monitor(store)
    second, _ = await new_monitor(store)  # another workspace, the same search
    for monitor_id in (first, second):
        await store.monitors.record_poll(
            monitor_id, poll(T0, [listing(1, "20")]), decide=decide_poll
        )
    # The first monitor's lookup cannot tell (a likely sale), the second's confirms it.
    await store.monitors.record_poll(
        first, _absent(T0 + timedelta(minutes=1), 1), decide=decide_poll
    )
    [likely] = await _sales(store)
    assert (likely.item_id, likely.evidence, likely.price) == (1, "likely", Decimal("20.00"))
    assert likely.sold_at == T0 + timedelta(minutes=1) and likely.site == SITE
    assert (likely.category_id, likely.brand, likely.size, likely.condition) == JEANS.key
    sold = poll(T0 + timedelta(minutes=2), [], [ConfirmedState(1, "sold")])
    await store.monitors.record_poll(second, sold, decide=decide_poll)
    [confirmed] = await _sales(store)
    assert confirmed.evidence == "confirmed" and confirmed.sold_at == likely.sold_at
    # The first monitor learns it too: still one sale.
    later = poll(T0 + timedelta(minutes=3), [], [ConfirmedState(1, "sold")])
    await store.monitors.record_poll(first, later, decide=decide_poll)
    assert [s.evidence for s in await _sales(store)] == ["confirmed"]


async def test_a_likely_sale_confirmed_later_keeps_its_time(store: Store) -> None:
    monitor_id, _ = await new_monitor(store)
    await store.monitors.record_poll(monitor_id, poll(T0, [listing(1, "20")]), decide=decide_poll)
    await store.monitors.record_poll(
        monitor_id, _absent(T0 + timedelta(days=2), 1), decide=decide_poll
    )
    confirm = poll(T0 + timedelta(days=3), [], [ConfirmedState(1, "sold")])
    await store.monitors.record_poll(monitor_id, confirm, decide=decide_poll)
    [sale] = await _sales(store)
    assert (sale.evidence, sale.sold_at, sale.days_to_sell) == (
        "confirmed",
        T0 + timedelta(days=2),
        2.0,
    )


async def test_a_likely_sale_undone_leaves_the_book(store: Store) -> None:
    monitor_id, _ = await new_monitor(store)
    seen = [listing(1, "20"), listing(2, "30")]
    await store.monitors.record_poll(monitor_id, poll(T0, seen), decide=decide_poll)
    await store.monitors.record_poll(
        monitor_id, _absent(T0 + timedelta(minutes=1), 1, 2), decide=decide_poll
    )
    assert {s.item_id for s in await _sales(store)} == {1, 2}
    # Item 1 is back in the feed (it was not sold); item 2's page says deleted.
    back = poll(T0 + timedelta(minutes=2), [listing(1, "20")], [ConfirmedState(2, "deleted")])
    await store.monitors.record_poll(monitor_id, back, decide=decide_poll)
    assert await _sales(store) == ()
    # A replayed poll changes nothing.
    await store.monitors.record_poll(monitor_id, back, decide=decide_poll)
    assert await _sales(store) == ()


async def test_levels_read_the_niche_its_brand_and_its_category(store: Store) -> None:
    monitor_id, _ = await new_monitor(store)
    seen = [
        listing(1, "20"),
        listing(2, "24", size="W34"),
        listing(3, "30", brand="Diesel"),
        listing(4, "40", category_id=6),
        listing(5, "50", brand=None),
    ]
    await store.monitors.record_poll(monitor_id, poll(T0, seen), decide=decide_poll)
    sold = [ConfirmedState(i, "sold") for i in range(1, 6)]
    await store.monitors.record_poll(
        monitor_id, poll(T0 + timedelta(hours=1), [], sold), decide=decide_poll
    )
    read = await store.prices.niche_sales(SITE, JEANS, since=T0, limit=50)
    assert [s.item_id for s in read.exact] == [1]
    assert sorted(s.item_id for s in read.brand) == [1, 2]
    assert sorted(s.item_id for s in read.category) == [1, 2, 3, 5]
    no_brand = await store.prices.niche_sales(SITE, Niche(5, None), since=T0, limit=50)
    assert [s.item_id for s in no_brand.brand] == [5]
    # Another site's book is another book; a window that starts later holds nothing.
    other = await store.prices.niche_sales("https://www.vinted.de", JEANS, since=T0, limit=50)
    assert other.category == ()
    later = await store.prices.niche_sales(SITE, JEANS, since=T0 + timedelta(days=1), limit=50)
    assert later.category == ()


async def test_a_workspace_reads_only_niches_its_listings_fall_in(store: Store) -> None:
    mine, my_workspace = await new_monitor(store)
    _theirs, their_workspace = await new_monitor(store)
    await store.monitors.record_poll(mine, poll(T0, [listing(1, "20")]), decide=decide_poll)
    since = T0 - timedelta(days=1)

    async def readable(
        workspace: str, niche: Niche, level: BookLevel = "exact", site: str = SITE
    ) -> bool:
        found = await store.prices.readable_niche_sales(
            workspace, site, niche, level, since=since, limit=50
        )
        return found is not None

    assert await readable(my_workspace, JEANS)
    assert await readable(my_workspace, Niche(5, "Levi's"), "brand")
    assert await readable(my_workspace, Niche(5), "category")
    assert not await readable(my_workspace, Niche(5, "Levi's", "W34", "Very good"))
    assert not await readable(my_workspace, Niche(6), "category")
    assert not await readable(my_workspace, JEANS, site="https://www.vinted.de")
    # The other workspace watches the same site but has no such listing: nothing.
    assert not await readable(their_workspace, JEANS)
    assert not await readable(their_workspace, Niche(5), "category")


async def test_buying_costs_default_then_set(store: Store) -> None:
    _, workspace_id = await new_monitor(store)
    assert await store.prices.buying_costs(workspace_id) == BuyingCosts()
    chosen = BuyingCosts(shipping=Decimal("3.20"), packaging=Decimal("0"), margin=Decimal("0.4"))
    saved = await store.prices.set_buying_costs(workspace_id, chosen)
    assert (saved.shipping, saved.packaging, saved.margin, saved.custom) == (
        Decimal("3.20"), Decimal("0.00"), Decimal("0.400"), True
    )  # fmt: skip
    assert await store.prices.buying_costs(workspace_id) == saved

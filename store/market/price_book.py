"""The price book's repository: every recorded sale of a site, once per (site, item id),
kept by the polls that record sales; the sales of a niche at each back-off level; whether a
workspace's own listings fall in a niche; a workspace's buying costs.

The store only reads and writes here: what the sales say (medians, intervals, which level and
which evidence a figure rests on) is the engine's pure computation (`engine.pricing`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

from sqlalchemy import ColumnElement, delete, func, literal, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from .._db.rows import record_fields, records, to_record
from ..monitors.models import Listing, Monitor, MonitorListing
from ..monitors.poll_decisions import ListingStep
from .price_book_models import BuyingCostsRow, MarketSale
from .price_book_records import (
    BookLevel,
    BuyingCosts,
    MarketSaleRecord,
    Niche,
    NicheSales,
    SaleEvidence,
)
from .site_listings import Description, field_of

_DEPTH: dict[BookLevel, int] = {"exact": 4, "brand": 2, "category": 1}


def site_of(url: str) -> str:
    """The marketplace site a catalogue URL belongs to: its origin, lower case
    (`https://www.vinted.fr`), which is what the price book is kept per."""
    parts = urlsplit(url.strip())
    return f"{parts.scheme}://{parts.netloc}".lower()


@dataclass(frozen=True, slots=True)
class SaleChange:
    """What one listing step changes in the price book: a sale to record (or a likely one
    now confirmed, recorded again as confirmed), or `sale` None: a likely sale undone."""

    site: str
    item_id: int
    sale: MarketSaleRecord | None


def sale_change(
    site: str,
    step: ListingStep,
    row: MonitorListing,
    described: Description | None,
    at: datetime,
) -> SaleChange | None:
    """The price book's side of one step `record_poll` applied to `row` (the monitor's side
    of the listing; `described`, the site's description) at `at` (the poll's stamp): a move
    to `sold`, a likely sale a source confirmed, a likely sale undone (seen in the feed
    again, or a source saying deleted or reserved). None for everything else."""
    before, after = step.before, step.after
    was_sold = before is not None and before.state == "sold"
    if after.state == "sold" and not was_sold:
        evidence: SaleEvidence = "likely" if after.evidence == "absence" else "confirmed"
        return SaleChange(site, row.item_id, _sale(site, row, described, evidence, at))
    if step.confirmed_by is not None:  # the sale keeps the time it was detected at
        sale = _sale(site, row, described, "confirmed", row.state_changed_at)
        return SaleChange(site, row.item_id, sale)
    if was_sold and before is not None and before.evidence == "absence" and after.state != "sold":
        return SaleChange(site, row.item_id, None)
    return None


def _sale(
    site: str,
    row: MonitorListing,
    described: Description | None,
    evidence: SaleEvidence,
    sold_at: datetime,
) -> MarketSaleRecord:
    listed = field_of(described, "listed_at") or row.first_seen_at
    days = None if listed is None else max(0.0, (sold_at - listed).total_seconds() / 86400)
    return MarketSaleRecord(
        site=site, item_id=row.item_id, category_id=row.category_id,
        category_name=row.category_name, brand=field_of(described, "brand"),
        size=field_of(described, "size"), condition=field_of(described, "condition"),
        price=row.price, currency=field_of(described, "currency"), days_to_sell=days,
        evidence=evidence, sold_at=sold_at,
    )  # fmt: skip


def record_sale_changes(db: Session, changes: Iterable[SaleChange]) -> None:
    """Apply `changes` in the caller's transaction, in (site, item id) order, each listing's
    in the order given. A sale another monitor already recorded is kept as it is (inserted
    ON CONFLICT), but for a likely one that this one confirms; an undone sale is removed
    only while likely (a confirmed sale is final).

    Why sorted: two monitors of one site record the same sales in their own steps' orders,
    and an upsert locks the row even when it changes nothing; X then Y beside Y then X was
    a deadlock on PostgreSQL (`tests/store/test_lock_order.py`)."""
    for change in sorted(changes, key=lambda change: (change.site, change.item_id)):
        if change.sale is not None:
            upsert_sales(db, [change.sale])
            continue
        db.execute(
            delete(MarketSale).where(
                MarketSale.site == change.site,
                MarketSale.item_id == change.item_id,
                MarketSale.evidence == "likely",
            )
        )


def upsert_sales(db: Session, sales: list[MarketSaleRecord]) -> None:
    """Insert `sales`; one already there stays, its evidence raised to confirmed when the
    newcomer is confirmed and it was likely (two monitors, one sale: counted once)."""
    if not sales:
        return
    dialect: Any = postgresql if db.get_bind().dialect.name == "postgresql" else sqlite
    insert = dialect.insert(MarketSale).values([record_fields(sale) for sale in sales])
    db.execute(
        insert.on_conflict_do_update(
            index_elements=[MarketSale.site, MarketSale.item_id],
            set_={"evidence": insert.excluded.evidence},
            where=(MarketSale.evidence == "likely") & (insert.excluded.evidence == "confirmed"),
        )
    )


def _in_niche(
    columns: tuple[Any, ...], niche: Niche, level: BookLevel
) -> list[ColumnElement[bool]]:
    """Equality on the keys `level` keeps; a key the listings did not give matches NULL."""
    return [
        column.is_(None) if value is None else column == value
        for column, value in list(zip(columns, niche.key, strict=True))[: _DEPTH[level]]
    ]


_SALE_KEYS = (MarketSale.category_id, MarketSale.brand, MarketSale.size, MarketSale.condition)
_LISTING_KEYS = (Listing.category_id, Listing.brand, Listing.size, Listing.condition)


def level_sales(
    db: Session, site: str, niche: Niche, level: BookLevel, *, since: datetime, limit: int
) -> tuple[MarketSaleRecord, ...]:
    """The newest `limit` confirmed and `limit` likely sales of the niche at `level`, sold at
    or after `since`, newest first (one query: a row number per evidence)."""
    number = func.row_number().over(
        partition_by=MarketSale.evidence,
        order_by=(MarketSale.sold_at.desc(), MarketSale.item_id.desc()),
    )
    ranked = (
        select(MarketSale, number.label("nth"))
        .where(
            MarketSale.site == site,
            MarketSale.sold_at >= since,
            *_in_niche(_SALE_KEYS, niche, level),
        )
        .subquery()
    )
    query = select(ranked).where(ranked.c.nth <= limit).order_by(ranked.c.sold_at.desc())
    return tuple(records(MarketSaleRecord, db.execute(query)))


def niche_sales(db: Session, site: str, niche: Niche, *, since: datetime, limit: int) -> NicheSales:
    """The niche's recent sales at every back-off level (three small indexed reads)."""
    at = {level: level_sales(db, site, niche, level, since=since, limit=limit) for level in _DEPTH}
    return NicheSales(
        site, niche, at["exact"], at["brand"], at["category"], since=since, limit=limit
    )


def many_niche_sales(
    db: Session, site: str, niches: Sequence[Niche], *, since: datetime, limit: int
) -> dict[tuple[int | None, str | None, str | None, str | None], NicheSales]:
    """`niche_sales` of each niche, by its key; a level several niches share (a brand within
    a category, a category) is read once."""
    read: dict[tuple[BookLevel, tuple[Any, ...]], tuple[MarketSaleRecord, ...]] = {}

    def sales(niche: Niche, level: BookLevel) -> tuple[MarketSaleRecord, ...]:
        key = (level, niche.key[: _DEPTH[level]])
        if key not in read:
            read[key] = level_sales(db, site, niche, level, since=since, limit=limit)
        return read[key]

    found = {}
    for niche in niches:
        exact, brand, category = (sales(niche, level) for level in _DEPTH)
        found[niche.key] = NicheSales(site, niche, exact, brand, category, since=since, limit=limit)
    return found


def workspace_sees_niche(
    db: Session, workspace_id: str, site: str, niche: Niche, level: BookLevel
) -> bool:
    """Whether a listing of one of the workspace's own monitors of `site` falls in the niche
    at `level`: the only niches whose price book a workspace may read."""
    prefix = site.rstrip("/") + "/"
    found = db.scalar(
        select(literal(True))
        .select_from(Listing)
        .join(Monitor, Monitor.id == Listing.monitor_id)
        .where(
            Monitor.workspace_id == workspace_id,
            Monitor.url.startswith(prefix, autoescape=True),
            *_in_niche(_LISTING_KEYS, niche, level),
        )
        .limit(1)
    )
    return bool(found)


def buying_costs(db: Session, workspace_id: str) -> BuyingCosts:
    """The workspace's buying costs, or the defaults when it never set them."""
    row = db.get(BuyingCostsRow, workspace_id)
    if row is None:
        return BuyingCosts()
    return to_record(BuyingCosts, row, custom=True)


def set_buying_costs(
    db: Session, workspace_id: str, costs: BuyingCosts, at: datetime
) -> BuyingCosts:
    """Replace the workspace's buying costs (insert or update)."""
    row = db.get(BuyingCostsRow, workspace_id)
    if row is None:
        row = BuyingCostsRow(workspace_id=workspace_id)
        db.add(row)
    row.shipping, row.packaging, row.margin = costs.shipping, costs.packaging, costs.margin
    row.updated_at = at
    db.flush()
    return to_record(BuyingCosts, row, custom=True)

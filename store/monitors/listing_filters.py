"""Pages of a monitor's listings narrowed to a niche: category, brand, size, condition, price.

The unfiltered pages (`listing_pages.py`) take their totals from the monitor's counters and seek
through bookmarks; a filtered page cannot, so it counts its rows and reads by OFFSET. Filters
are what a niche link asks for, so they match a niche's key exactly (text as stored, compared
case-insensitively for brand, size and condition as the marketplace's spelling varies), and
pages stay within the API's page limit, so the OFFSET walk stays bounded.
"""

from __future__ import annotations

from sqlalchemy import func, select
from sqlalchemy.orm import Session
from sqlalchemy.sql import ColumnElement

from .._db.rows import to_record
from .models import Listing, Monitor
from .records import ListingFilter, ListingPage, ListingRecord

_ORDER = {
    "id": (Listing.item_id.asc(),),
    "newest": (Listing.item_id.desc(),),
    "price": (Listing.price.asc(), Listing.item_id.asc()),
    "-price": (Listing.price.desc(), Listing.item_id.asc()),
    "last_change": (Listing.state_changed_at.desc(), Listing.item_id.asc()),
}
SORTS = tuple(_ORDER)


def _conditions(monitor_id: str, f: ListingFilter) -> list[ColumnElement[bool]]:
    where: list[ColumnElement[bool]] = [Listing.monitor_id == monitor_id]
    if f.states is not None:
        where.append(Listing.state.in_(f.states))
    if f.category_id is not None:
        where.append(Listing.category_id == f.category_id)
    for column, value in ((Listing.brand, f.brand), (Listing.size, f.size),
                          (Listing.condition, f.condition)):  # fmt: skip
        if value is not None:
            where.append(func.lower(column) == value.lower())
    if f.price_min is not None:
        where.append(Listing.price >= f.price_min)
    if f.price_max is not None:
        where.append(Listing.price <= f.price_max)
    return where


def filtered_listing_page(
    db: Session,
    monitor_id: str,
    workspace_id: str | None,
    f: ListingFilter,
    offset: int,
    limit: int,
) -> ListingPage | None:
    """The rows of `f` from `offset`, with their total; None when the monitor is not found (in
    `workspace_id`, when given)."""
    owner = select(Monitor.id).where(Monitor.id == monitor_id)
    if workspace_id is not None:
        owner = owner.where(Monitor.workspace_id == workspace_id)
    if db.scalar(owner) is None:
        return None
    where = _conditions(monitor_id, f)
    total = int(db.scalar(select(func.count()).select_from(Listing).where(*where)) or 0)
    if offset >= total:
        return ListingPage(listings=[], total=total)
    rows = db.scalars(
        select(Listing).where(*where).order_by(*_ORDER[f.sort]).offset(offset).limit(limit)
    )
    return ListingPage(listings=[to_record(ListingRecord, r) for r in rows], total=total)

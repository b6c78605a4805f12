"""Price book use cases shared by the REST handlers, the pages and the MCP tool. Each takes
the store it reads (no app lookup), so it runs and is tested without an app.

Isolation: the price book is market data, but a workspace reads only the niches its own
listings fall in (`store.prices` checks it in the same unit as the read); any other niche is
a 404, exactly like one the market never sold in. Nothing here names a monitor, a search or
how many workspaces watch a niche.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import timedelta
from typing import Any, cast

from api.http.errors import NotFound
from api.market.schemas import (
    AnalysisNicheOut,
    AnalysisPriceBookOut,
    BuyingCostsIn,
    BuyingCostsOut,
    PriceBookOut,
    PriceBookQuery,
)
from engine.pricing import NicheBook, buy_below, niche_book, rests_on, too_thin
from store import (
    BOOK_DAYS,
    BOOK_LEVELS,
    BOOK_SALES,
    AnalysisOrigin,
    AnalysisRecord,
    BookLevel,
    BuyingCosts,
    Niche,
    NicheSales,
    Store,
    site_of,
)

ANALYSIS_NICHES = 20  # an analysis' niches priced, best first
FORMULA = "buy below = typical sold price x (1 - margin) - shipping - packaging"


def book_out(book: NicheBook, costs: BuyingCosts, now: Any) -> PriceBookOut:
    """A niche's price book as answered, with what to pay for it."""
    first, figures, typical = book.levels[0], book.figures, book.typical_price
    buy = None if typical is None else buy_below(typical, costs, book.currency)
    return PriceBookOut.model_validate(
        {
            "site": book.site, **_keys(book.niche, first.level), "label": first.label,
            "currency": book.currency, "level": book.level, "basis": book.basis,
            "figures": None if figures is None else figures.to_json(),
            "explanation": rests_on(book, now) or too_thin(book),
            "buy_below": None if buy is None else buy.to_json(),
            "levels": [
                {"level": f.level, "label": f.label, "confirmed": f.confirmed.to_json(),
                 "likely": f.likely.to_json()}
                for f in book.levels
            ],
            "window_sales": BOOK_SALES, "window_days": BOOK_DAYS,
        }
    )  # fmt: skip


def _keys(niche: Niche, level: BookLevel) -> dict[str, Any]:
    depth = BOOK_LEVELS.index(level)
    return {
        "category_id": niche.category_id,
        "brand": niche.brand if depth < 2 else None,
        "size": niche.size if depth < 1 else None,
        "condition": niche.condition if depth < 1 else None,
    }


def _named(sales: NicheSales) -> NicheSales:
    """The niche named as the marketplace names its category (from its sales), for labels."""
    name = next((s.category_name for s in sales.category if s.category_name), None)
    return replace(sales, niche=replace(sales.niche, category_name=name))


async def price_book(store: Store, workspace_id: str, query: PriceBookQuery) -> PriceBookOut:
    """The price book of one niche of a site; `NotFound` unless a listing of the workspace's
    own monitors of that site falls in it."""
    level = query.chosen_level
    niche = Niche(query.category_id, query.brand, query.size, query.condition)
    site = site_of(query.site)
    now = store.clock()
    sales = await store.prices.readable_niche_sales(
        workspace_id, site, niche, level, since=now - timedelta(days=BOOK_DAYS), limit=BOOK_SALES
    )
    if sales is None:
        raise NotFound("niche in your monitors' listings")
    costs = await store.prices.buying_costs(workspace_id)
    return book_out(niche_book(_named(sales), start=level), costs, now)


def analysis_site(origin: AnalysisOrigin) -> str | None:
    """The site an analysis' listings came from: its monitor's, its run's catalogue URL's,
    or the URL it was made from."""
    for url in (
        origin.monitor.url if origin.monitor else None,
        origin.run.url if origin.run else None,
        origin.analysis.source_url,
    ):
        if url:
            return site_of(url)
    return None


def analysis_niches(result: dict[str, Any], limit: int) -> list[tuple[int, Niche, BookLevel, str]]:
    """(rank, niche, level, label) of an analysis' first `limit` niches."""
    found = []
    for entry in result.get("niches", [])[:limit]:
        key = entry.get("niche") if isinstance(entry, dict) else None
        if not isinstance(key, dict) or key.get("level") not in BOOK_LEVELS:
            continue
        niche = Niche(
            key.get("category_id"), key.get("brand"), key.get("size"), key.get("condition"),
            key.get("category_name"),
        )  # fmt: skip
        found.append(
            (
                int(entry.get("rank", 0)),
                niche,
                cast(BookLevel, key["level"]),
                str(key.get("label") or ""),
            )
        )
    return found


async def niche_books(
    store: Store, origin: AnalysisOrigin, result: dict[str, Any], limit: int = ANALYSIS_NICHES
) -> tuple[str | None, list[tuple[int, str, PriceBookOut | None]]]:
    """The price book of an analysis' best niches: (site, [(rank, label, book or None)]).

    A run's niches are the workspace's own listings, scraped for it; an import's are taken
    from a file, so each of its niches is read only when the workspace's own monitors hold
    a listing of it (as `price_book` checks)."""
    site = analysis_site(origin)
    niches = analysis_niches(result, limit)
    if site is None:
        return None, [(rank, label, None) for rank, _, _, label in niches]
    now = store.clock()
    workspace_id = origin.analysis.workspace_id
    read = await store.prices.many_niche_sales(
        site, [(niche, level) for _, niche, level, _ in niches],
        since=now - timedelta(days=BOOK_DAYS), limit=BOOK_SALES,
        workspace_id=workspace_id if origin.run is None else None,
    )  # fmt: skip
    costs = await store.prices.buying_costs(workspace_id)
    books = []
    for rank, niche, level, label in niches:
        sales = read.get(niche.key)
        book = None if sales is None else book_out(niche_book(sales, start=level), costs, now)
        books.append((rank, label, book))
    return site, books


async def analysis_price_book(
    store: Store, origin: AnalysisOrigin, result: dict[str, Any]
) -> AnalysisPriceBookOut:
    site, books = await niche_books(store, origin, result)
    return AnalysisPriceBookOut(
        analysis_id=origin.analysis.id,
        site=site,
        niches=[AnalysisNicheOut(rank=rank, label=label, book=book) for rank, label, book in books],
        note=None
        if site is not None
        else "The analysis names no catalogue URL: no site to read the price book of.",
    )


def costs_out(costs: BuyingCosts) -> BuyingCostsOut:
    return BuyingCostsOut(
        shipping=costs.shipping, packaging=costs.packaging, margin=costs.margin,
        custom=costs.custom, formula=FORMULA,
    )  # fmt: skip


async def buying_costs(store: Store, workspace_id: str) -> BuyingCostsOut:
    return costs_out(await store.prices.buying_costs(workspace_id))


async def set_buying_costs(store: Store, workspace_id: str, data: BuyingCostsIn) -> BuyingCostsOut:
    chosen = BuyingCosts(shipping=data.shipping, packaging=data.packaging, margin=data.margin)
    return costs_out(await store.prices.set_buying_costs(workspace_id, chosen))


async def niche_prices(
    store: Store,
    workspace_id: str,
    analysis: AnalysisRecord | None,
    result: dict[str, Any],
    limit: int,
) -> dict[int, dict[str, Any]]:
    """What a page's niches table shows of the analysis' first `limit` niches: per rank, the
    buy-below price and its line (`prices_by_rank`); nothing for no analysis or a gone one."""
    if analysis is None or not result:
        return {}
    origin = await store.runs.analysis_origin(analysis.id, workspace_id, with_result=False)
    if origin is None:
        return {}
    _, books = await niche_books(store, origin, result, limit)
    return prices_by_rank(books)


def prices_by_rank(
    books: Sequence[tuple[int, str, PriceBookOut | None]],
) -> dict[int, dict[str, Any]]:
    """What a niches table shows per rank: the buy-below price and its line, or why none."""
    shown: dict[int, dict[str, Any]] = {}
    for rank, _, book in books:
        if book is None:
            continue
        buy = book.buy_below
        shown[rank] = {
            "price": None if buy is None else buy.price,
            "line": buy.line if buy is not None else book.explanation,
            "currency": book.currency,
        }
    return shown

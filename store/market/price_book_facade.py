"""The trio-facing facade of the price book: `store.prices`."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from sqlalchemy.orm import Session

from ..notify.alert_decisions import NicheKey
from . import price_book as book
from .price_book_records import BookLevel, BuyingCosts, Niche, NicheSales

if TYPE_CHECKING:
    from .._store import Store


class PriceBookStore:
    def __init__(self, store: Store) -> None:
        self._store = store

    async def niche_sales(
        self, site: str, niche: Niche, *, since: datetime, limit: int
    ) -> NicheSales:
        """The niche's recent sales at each back-off level, for the engine's own use (no
        workspace check: say which workspace asks through `readable_niche_sales`)."""
        return await self._store.unit(
            lambda db: book.niche_sales(db, site, niche, since=since, limit=limit)
        )

    async def readable_niche_sales(
        self,
        workspace_id: str,
        site: str,
        niche: Niche,
        level: BookLevel,
        *,
        since: datetime,
        limit: int,
    ) -> NicheSales | None:
        """The niche's recent sales when a listing of the workspace's own monitors of `site`
        falls in it at `level`; None otherwise (a niche it does not watch reads as unknown,
        whatever the market holds). One unit."""

        def read(db: Session) -> NicheSales | None:
            if not book.workspace_sees_niche(db, workspace_id, site, niche, level):
                return None
            return book.niche_sales(db, site, niche, since=since, limit=limit)

        return await self._store.unit(read)

    async def many_niche_sales(
        self,
        site: str,
        niches: Sequence[tuple[Niche, BookLevel]],
        *,
        since: datetime,
        limit: int,
        workspace_id: str | None = None,
    ) -> dict[NicheKey, NicheSales]:
        """The recent sales of each niche (by its key), a level several share read once; with
        `workspace_id`, only of the niches a listing of its own monitors of `site` falls in at
        the niche's level (the others are left out, as unknown). One unit."""

        def read(db: Session) -> dict[NicheKey, NicheSales]:
            seen = [
                niche
                for niche, level in niches
                if workspace_id is None
                or book.workspace_sees_niche(db, workspace_id, site, niche, level)
            ]
            return book.many_niche_sales(db, site, seen, since=since, limit=limit)

        return await self._store.unit(read)

    async def buying_costs(self, workspace_id: str) -> BuyingCosts:
        """The workspace's buying costs (the defaults until it sets its own)."""
        return await self._store.unit(lambda db: book.buying_costs(db, workspace_id))

    async def set_buying_costs(self, workspace_id: str, costs: BuyingCosts) -> BuyingCosts:
        now = self._store.clock()
        return await self._store.unit(
            lambda db: book.set_buying_costs(db, workspace_id, costs, now)
        )

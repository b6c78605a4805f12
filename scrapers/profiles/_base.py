"""What a wire profile is: one generation of the marketplace's private API, in one module.

A profile builds requests (paths, parameters, headers), parses answers, and classifies the
answers that are not data (a catalogue that moved, an endpoint that refuses us). Everything else
(politeness, sessions, SSRF, retries) is the client's, and nothing above `scrapers/` knows which
profile served a page. Adding a profile when the marketplace moves again: a module like
`sept2026.py`, an entry in `PROFILES`, its place in `PROBE_ORDER`, and a real sample under test.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol

from .._query import CatalogueQuery
from .._sites import Site
from ..models import CataloguePage, ItemDetail

StateSource = Literal["detail_api", "item_page"]


@dataclass(frozen=True, slots=True)
class Call:
    """One request a profile wants made: the URL and the headers a real client would send."""

    url: str
    headers: tuple[tuple[str, str], ...] = ()


class WireProfile(Protocol):
    """One generation of the marketplace API. Implementations are stateless and frozen."""

    @property
    def name(self) -> str:
        """The profile's name (`NICHESCOPE_MARKET_PROFILE`), e.g. "2026-09"."""
        ...

    @property
    def state_sources(self) -> tuple[StateSource, ...]:
        """Where a listing's state is asked, best source first."""
        ...

    def catalogue_call(self, query: CatalogueQuery, site: Site, page: int, per_page: int) -> Call:
        """The feed page request for `query` (whose origin is `site.origin`)."""
        ...

    def parse_catalogue(self, content: bytes, site: Site) -> CataloguePage:
        """A feed page; `ParseError` when the answer is not a catalogue answer at all."""
        ...

    def catalogue_moved(self, status: int, body: bytes) -> bool:
        """True when a non-2xx catalogue answer means "this profile's path is gone"."""
        ...

    def detail_call(self, site: Site, item_id: int) -> Call: ...

    def parse_detail(self, content: bytes, site: Site) -> ItemDetail: ...

    def detail_refused(self, status: int, body: bytes) -> bool:
        """True when a 403 of the detail API refuses that endpoint only (not a block)."""
        ...

    def detail_gone(self, status: int) -> bool:
        """True when a detail API status proves the listing is gone (deleted or hidden)."""
        ...

    def item_page_url(self, site: Site, item_id: int) -> str: ...

    def item_page_read(self, content: bytes) -> bool:
        """True once enough of an item page has arrived to parse it (stop downloading)."""
        ...

    def parse_item_page(self, content: bytes, site: Site, item_id: int) -> ItemDetail: ...

"""Catalogue URL -> validated, normalised `CatalogueQuery` -> catalogue API parameters."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from decimal import Decimal, InvalidOperation
from urllib.parse import parse_qsl, urlencode, urlsplit

from .errors import InvalidCatalogueUrl

ORDERS = frozenset({"newest_first", "price_low_to_high", "price_high_to_low", "relevance"})
# URL key (without brackets) -> (CatalogueQuery field, API parameter)
_ARRAYS: dict[str, str] = {
    "catalog": "catalog_ids",
    "catalog_ids": "catalog_ids",
    "brand_ids": "brand_ids",
    "size_ids": "size_ids",
    "status_ids": "status_ids",
    "color_ids": "color_ids",
    "material_ids": "material_ids",
}
_PER_REQUEST = frozenset({"page", "per_page", "time", "search_id"})  # never part of a query
_BRACKETS = re.compile(r"^([a-z_]+)\[\d*\]$")
_CATALOG_PATH = re.compile(r"^/catalog(?:/(\d+)(?:-[^/]*)?)?/?$")
MAX_IDS = 200
_ID_FIELDS = ("catalog_ids", "brand_ids", "size_ids", "status_ids", "color_ids", "material_ids")


@dataclass(frozen=True, slots=True)
class CatalogueQuery:
    """A catalogue's filters, normalised (ids sorted and unique), with unknown params kept."""

    origin: str
    catalog_ids: tuple[int, ...] = ()
    brand_ids: tuple[int, ...] = ()
    size_ids: tuple[int, ...] = ()
    status_ids: tuple[int, ...] = ()
    color_ids: tuple[int, ...] = ()
    material_ids: tuple[int, ...] = ()
    price_from: Decimal | None = None
    price_to: Decimal | None = None
    currency: str | None = None
    search_text: str | None = None
    order: str | None = None
    extra: tuple[tuple[str, str], ...] = ()

    def _filters(self) -> list[tuple[str, str]]:
        params: list[tuple[str, str]] = []
        for name in _ID_FIELDS:
            ids = getattr(self, name)
            if ids:
                params.append((name, ",".join(map(str, ids))))
        return params + self.scalar_params() + list(self.extra)

    def scalar_params(self) -> list[tuple[str, str]]:
        """The filters that are not id lists (price range, currency, text, order), named the
        same in every generation of the API."""
        params: list[tuple[str, str]] = []
        if self.price_from is not None:
            params.append(("price_from", str(self.price_from)))
        if self.price_to is not None:
            params.append(("price_to", str(self.price_to)))
        if self.currency:
            params.append(("currency", self.currency))
        if self.search_text:
            params.append(("search_text", self.search_text))
        if self.order:
            params.append(("order", self.order))
        return params

    def api_params(self, page: int = 1, per_page: int = 96) -> list[tuple[str, str]]:
        """Parameters for `/api/v2/catalog/items` (array filters comma-joined as `*_ids`)."""
        return [("page", str(page)), ("per_page", str(per_page)), *self._filters()]

    def api_url(self, page: int = 1, per_page: int = 96) -> str:
        return f"{self.origin}/api/v2/catalog/items?{urlencode(self.api_params(page, per_page))}"

    def catalogue_url(self, page: int | None = None) -> str:
        """The canonical browser URL (`catalog[]=1&catalog[]=2` form) for the HTML catalogue."""
        params: list[tuple[str, str]] = []
        for name in _ID_FIELDS:
            key = "catalog[]" if name == "catalog_ids" else f"{name}[]"
            params += [(key, str(i)) for i in getattr(self, name)]
        params += [(k, v) for k, v in self._filters() if not k.endswith("_ids")]
        if page is not None:
            params.append(("page", str(page)))
        query = urlencode(params, safe="[]")
        return f"{self.origin}/catalog" + (f"?{query}" if query else "")


def _ids(url: str, key: str, values: list[str]) -> tuple[int, ...]:
    out: set[int] = set()
    for value in values:
        for part in value.split(","):
            part = part.strip()
            if not part:
                continue
            if not (part.isascii() and part.isdigit()) or len(part) > 12:
                raise InvalidCatalogueUrl(url, f"{key} must be numeric ids, got {part[:20]!r}")
            out.add(int(part))
    if len(out) > MAX_IDS:
        raise InvalidCatalogueUrl(url, f"too many {key}")
    return tuple(sorted(out))


def _price(url: str, key: str, value: str) -> Decimal | None:
    value = value.strip().replace(",", ".")
    if not value:
        return None
    try:
        price = Decimal(value)
    except InvalidOperation as err:
        raise InvalidCatalogueUrl(url, f"{key} is not a number") from err
    if not price.is_finite() or price < 0 or price > 10**7:
        raise InvalidCatalogueUrl(url, f"{key} out of range")
    return price


def parse_catalogue_url(url: str) -> CatalogueQuery:
    """Parse what a user copied from the address bar; `InvalidCatalogueUrl` when it is not a
    catalogue URL or a filter is malformed. Does not decide whether the URL may be fetched:
    that is the SSRF guard's job (`check_catalogue_url`)."""
    try:
        parts = urlsplit(url.strip())
    except ValueError as err:
        raise InvalidCatalogueUrl(url, "malformed URL") from err
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise InvalidCatalogueUrl(url, "not an absolute http(s) URL")
    path_match = _CATALOG_PATH.match(parts.path or "/")
    if path_match is None:
        raise InvalidCatalogueUrl(url, "path is not /catalog")
    origin = f"{parts.scheme}://{parts.netloc.lower().rsplit('@', 1)[-1]}"
    arrays: dict[str, list[str]] = {}
    if path_match.group(1):
        arrays.setdefault("catalog_ids", []).append(path_match.group(1))
    scalars: dict[str, str] = {}
    extra: list[tuple[str, str]] = []
    for raw_key, value in parse_qsl(parts.query, keep_blank_values=True):
        bracket = _BRACKETS.match(raw_key)
        key = bracket.group(1) if bracket else raw_key
        if key in _ARRAYS:
            arrays.setdefault(_ARRAYS[key], []).append(value)
        elif key in ("price_from", "price_to", "currency", "search_text", "order"):
            scalars[key] = value
        elif key not in _PER_REQUEST:
            extra.append((raw_key, value))
    price_from = _price(url, "price_from", scalars.get("price_from", ""))
    price_to = _price(url, "price_to", scalars.get("price_to", ""))
    if price_from is not None and price_to is not None and price_from > price_to:
        raise InvalidCatalogueUrl(url, "price_from is above price_to")
    currency = scalars.get("currency", "").strip().upper() or None
    if currency is not None and not re.fullmatch(r"[A-Z]{3}", currency):
        raise InvalidCatalogueUrl(url, "currency must be a 3-letter code")
    order = scalars.get("order", "").strip() or None
    if order is not None and order not in ORDERS:
        raise InvalidCatalogueUrl(url, f"unknown order {order[:30]!r}")
    search_text = " ".join(scalars.get("search_text", "").split())[:200] or None
    return CatalogueQuery(
        origin=origin,
        catalog_ids=_ids(url, "catalog", arrays.get("catalog_ids", [])),
        brand_ids=_ids(url, "brand_ids", arrays.get("brand_ids", [])),
        size_ids=_ids(url, "size_ids", arrays.get("size_ids", [])),
        status_ids=_ids(url, "status_ids", arrays.get("status_ids", [])),
        color_ids=_ids(url, "color_ids", arrays.get("color_ids", [])),
        material_ids=_ids(url, "material_ids", arrays.get("material_ids", [])),
        price_from=price_from,
        price_to=price_to,
        currency=currency,
        search_text=search_text,
        order=order,
        extra=tuple(sorted(extra)),
    )


def newest_first(url: str) -> str:
    """The canonical catalogue URL of `url` in `newest_first` order: what a monitor reads,
    whatever order the user's URL asked for (its feed window depends on the date order).
    `InvalidCatalogueUrl` as `parse_catalogue_url`."""
    return replace(parse_catalogue_url(url), order="newest_first").catalogue_url()

"""Which catalogue URLs the service takes, stated once for the checks and for the document.

The service refuses (400 `url_refused`) a catalogue URL that is not http(s), names a host that
is neither one of the marketplace's sites it accepts (`NICHESCOPE_MARKET_SITES`, by default
every site of the marketplace) nor an origin allowlisted by `NICHESCOPE_MARKET_ORIGINS`, or is
not a catalogue path with well-formed filters. `url_schema` states the same as a JSON Schema
pattern in the OpenAPI document, so that generated clients validate before they send. What no
schema can state stays a 400: a host that does not resolve, or resolves to a private address,
and a `price_from` above `price_to`.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit

from api.http.errors import BadRequest
from api.settings import Settings
from scrapers import MARKET_HOSTS, UrlRefused, check_public_url_syntax

_ID_KEYS = ("catalog", "catalog_ids", "brand_ids", "size_ids", "status_ids", "color_ids",
            "material_ids")  # fmt: skip
_ORDERS = ("newest_first", "price_low_to_high", "price_high_to_low", "relevance")
MAX_FILTERS = 20


def accepted_sites(settings: Settings) -> tuple[str, ...]:
    """The marketplace hosts catalogue URLs may name, sorted."""
    if settings.market_sites is None:
        return tuple(sorted(MARKET_HOSTS))
    return tuple(sorted(h for h in settings.market_sites if h in MARKET_HOSTS))


def refuse_unaccepted_site(url: str, settings: Settings, *, doing: str) -> None:
    """`BadRequest` `url_refused` when the URL's host is a marketplace site this service was
    told not to accept (the engine's own guard checks everything else)."""
    try:
        parts = urlsplit(url)
        host = (parts.hostname or "").lower().rstrip(".")
        origin = f"{parts.scheme}://{parts.netloc}".lower()
    except ValueError:
        return  # malformed: the engine's guard says why
    allowed = {o.lower().rstrip("/") for o in settings.market_origins}
    if host in MARKET_HOSTS and host not in accepted_sites(settings) and origin not in allowed:
        raise BadRequest(
            f"This catalogue URL cannot be {doing}: this service does not follow {host} "
            "(the sites it follows are its operator's NICHESCOPE_MARKET_SITES setting)",
            code="url_refused",
            suggest=[f"Use one of: {', '.join(accepted_sites(settings)) or 'no site'}"],
        )


def catalogue_url_refused(url: str, reason: str, *, doing: str) -> BadRequest:
    """The 400 `url_refused` for a catalogue URL the engine's guard refused for `reason`. A
    host that is none of the marketplace's sites, and that only the guard's list of origins
    keeps out, names the setting that adds an origin; a URL of the wrong shape (userinfo,
    control characters, ...) does not, as no setting admits it."""
    message = f"This catalogue URL cannot be {doing}: {reason}"
    if _another_origin(url):
        message += (
            " (only the marketplace's sites are fetched; its operator can add another "
            "origin with the NICHESCOPE_MARKET_ORIGINS setting)"
        )
    return BadRequest(
        message,
        code="url_refused",
        suggest=["Copy a catalogue URL of the marketplace from the browser's address bar"],
    )


def _another_origin(url: str) -> bool:
    """Whether `url` names a host that is none of the marketplace's sites, in a URL that the
    guard would fetch were its origin listed in NICHESCOPE_MARKET_ORIGINS."""
    try:
        parts = urlsplit(url)
        host = (parts.hostname or "").lower().rstrip(".")
        origin = f"{parts.scheme}://{parts.netloc}"
        check_public_url_syntax(url, (origin,), https_only=False)
    except (UrlRefused, ValueError):
        return False
    return host not in MARKET_HOSTS


def url_pattern(settings: Settings) -> str:
    """A regular expression every catalogue URL the service takes matches (but for the
    rules listed in the module's docstring)."""
    origins = [f"https://{re.escape(host)}" for host in accepted_sites(settings)]
    origins += [re.escape(origin.rstrip("/")) for origin in settings.market_origins]
    origin = "(?:" + "|".join(origins) + ")" if origins else "(?!)"
    ids = "(?:" + "|".join(_ID_KEYS) + r")(?:%5B%5D|\[\])?=[1-9][0-9]{0,8}"
    scalar = (
        "(?:order=(?:" + "|".join(_ORDERS) + ")"
        r"|search_text=[A-Za-z0-9_.~+-]{1,60}"
        r"|currency=[A-Z]{3}"
        r"|price_(?:from|to)=[0-9]{1,5}(?:\.[0-9]{1,2})?)"
    )
    parameter = f"(?:{ids}|{scalar})"
    query = rf"(?:\?{parameter}(?:&{parameter}){{0,{MAX_FILTERS - 1}}})?"
    return rf"^{origin}/catalog(?:/[1-9][0-9]{{0,8}}(?:-[a-z0-9-]{{0,40}})?)?/?{query}$"


def url_schema(settings: Settings) -> dict[str, Any]:
    return {
        "type": "string",
        "format": "uri",
        "minLength": 1,
        "maxLength": 2048,
        "pattern": url_pattern(settings),
        "description": "A catalogue URL of the marketplace, as the browser's address bar shows "
        "it: https, one of the sites this service follows, /catalog, its filters. Refused "
        "with 400 `url_refused` when its host does not resolve to a public address, or its "
        "price_from is above its price_to.",
    }

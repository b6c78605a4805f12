"""Marketplace sites: which hosts exist, where each site's API lives, and which locale it speaks.

A site is what a user's catalogue URL names (`https://www.vinted.<tld>`). Since September 2026 its
API may live on another origin (`https://api.vinted.<tld>`); the simulator and tests map their
own origins with `SiteMap.parse` (the service's `NICHESCOPE_MARKET_API_ORIGINS`). Both origins of
a site share one politeness budget and one session (see `MarketClient`), because they are one
marketplace.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import SplitResult, urlsplit

# Every TLD the item pages' `hreflang` links list (MARKETPLACE.md), with the site's locale.
_LOCALES: dict[str, str] = {
    "fr": "fr-FR", "be": "fr-BE", "lu": "fr-LU", "nl": "nl-NL", "de": "de-DE", "at": "de-AT",
    "it": "it-IT", "es": "es-ES", "pt": "pt-PT", "co.uk": "en-GB", "ie": "en-IE", "com": "en-US",
    "com.au": "en-AU", "pl": "pl-PL", "lt": "lt-LT", "lv": "lv-LV", "ee": "et-EE", "cz": "cs-CZ",
    "sk": "sk-SK", "hu": "hu-HU", "ro": "ro-RO", "si": "sl-SI", "hr": "hr-HR", "gr": "el-GR",
    "se": "sv-SE", "dk": "da-DK", "fi": "fi-FI",
}  # fmt: skip
MARKET_TLDS: tuple[str, ...] = tuple(_LOCALES)
SITE_HOSTS: frozenset[str] = frozenset(f"www.vinted.{tld}" for tld in MARKET_TLDS)
API_HOSTS: frozenset[str] = frozenset(f"api.vinted.{tld}" for tld in MARKET_TLDS)
MARKET_HOSTS: frozenset[str] = SITE_HOSTS | API_HOSTS
DEFAULT_LOCALE = "en-GB"


def split_origin(origin: str) -> SplitResult:
    """`origin` split, once checked to be one: http(s), a host, no userinfo, path or query
    (`ValueError` naming what is wrong)."""
    parts = urlsplit(origin.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"not an http(s) origin: {origin!r}")
    if parts.username is not None or parts.path not in ("", "/") or parts.query:
        raise ValueError(f"an origin has no userinfo, path or query: {origin!r}")
    return parts


def _origin(url: str) -> str:
    parts = split_origin(url)
    return f"{parts.scheme}://{parts.netloc.lower()}"


@dataclass(frozen=True, slots=True)
class Site:
    """One marketplace site: its public origin, its API origin and its locale."""

    origin: str  # e.g. https://www.vinted.it (no trailing slash, default port implicit)
    api_origin: str
    locale: str

    @property
    def referer(self) -> str:
        return self.origin + "/"


@dataclass(frozen=True, slots=True)
class SiteMap:
    """Site origin -> API origin. Real sites map `www.` to `api.`; other (allowlisted) origins
    use the explicit pairs, and without a pair their API is on the site origin itself."""

    pairs: tuple[tuple[str, str], ...] = ()

    @classmethod
    def parse(cls, raw: str) -> SiteMap:
        """Pairs from `site=api,site=api`; `ValueError` naming the bad entry, so that a typo
        stops start-up instead of the first poll."""
        pairs: list[tuple[str, str]] = []
        for entry in raw.split(","):
            if not entry.strip():
                continue
            site, sep, api = entry.partition("=")
            if not sep:
                raise ValueError(f"{entry.strip()!r} is not site=api")
            pairs.append((_origin(site), _origin(api)))
        return cls(tuple(pairs))

    @property
    def api_origins(self) -> tuple[str, ...]:
        return tuple(api for _, api in self.pairs)

    def site(self, origin: str) -> Site:
        origin = origin.rstrip("/")
        host = urlsplit(origin).hostname or ""
        for site, api in self.pairs:
            if site == origin:
                return Site(origin, api, locale_of(host))
        if host in SITE_HOSTS:
            return Site(origin, origin.replace("://www.", "://api.", 1), locale_of(host))
        return Site(origin, origin, locale_of(host))


def locale_of(host: str) -> str:
    """`fr-FR` for www.vinted.fr, `en-GB` for www.vinted.co.uk; the default for other hosts."""
    for tld in sorted(_LOCALES, key=len, reverse=True):  # "com.au" before "com"
        if host.endswith(f".vinted.{tld}"):
            return _LOCALES[tld]
    return DEFAULT_LOCALE

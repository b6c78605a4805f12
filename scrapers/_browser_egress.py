"""Where a browser opened on the marketplace may go: one policy, checked twice.

The browser runs whatever the marketplace serves (or whoever took its place: a hijacked CDN, a
poisoned cache). A page can point the browser anywhere: scripts, frames, `fetch`, beacons,
redirects, WebSockets. So every request the page makes is checked by Playwright's router
(`context.route`), and every connection the browser opens by the guard proxy
(`_browser_proxy`), which also sees what the router never does: redirect hops, WebSockets,
preconnects, service and shared workers.

Allowed:
- http(s) to an allowlisted origin (the site itself, its API origin, whatever the operator
  named, a simulator on loopback in tests): exact scheme, host and port;
- https on port 443 to a public host name (the real challenge loads its scripts from its
  vendor's host; Chromium's own update and account services ask at start-up too).

Refused: every other scheme; plain http to a host that is not allowlisted; IP literals (only
ever allowed as an exact allowlisted origin, as in `_ssrf`); `localhost` and names that only
mean something on a local network (single labels, `.local`, `.internal`, ...); ports other than
443 on hosts that are not allowlisted. The guard proxy then refuses a public host name that
resolves to a non-public address, and connects to the address it checked.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

from ._ssrf import _NUMERIC_HOST, normalise_origin, refuse_non_global
from .errors import UrlRefused

# Names that resolve (if at all) only on a local network or by convention never publicly.
_LOCAL_SUFFIXES = (
    ".localhost", ".local", ".localdomain", ".internal", ".intranet", ".lan", ".home",
    ".home.arpa", ".corp", ".private", ".test", ".invalid", ".example", ".onion",
)  # fmt: skip
_DEFAULT_PORTS = {"http": 80, "https": 443}


@dataclass(frozen=True, slots=True)
class EgressPolicy:
    """The origins a browser session may reach besides public https hosts (normalised:
    `scheme://host:port`, the port explicit)."""

    allowed: frozenset[str]

    @classmethod
    def for_site(cls, site_origin: str, allowed_origins: Iterable[str]) -> EgressPolicy:
        """The site and the allowlisted origins; `ValueError` naming one that is no origin."""
        return cls(frozenset(normalise_origin(o) for o in (site_origin, *allowed_origins)))

    def url_refusal(self, url: str) -> str | None:
        """Why the browser must not fetch `url`, or None when it may."""
        try:
            parts = urlsplit(url)
            scheme = parts.scheme.lower()
            host, port = parts.hostname, parts.port
        except ValueError:
            return "an unreadable URL"
        if scheme not in _DEFAULT_PORTS:
            return f"the {scheme or 'empty'} scheme"
        if not host:
            return "no host"
        return self.target_refusal(scheme, host, port or _DEFAULT_PORTS[scheme])

    def target_refusal(self, scheme: str, host: str, port: int) -> str | None:
        """Why the browser must not open `scheme://host:port`, or None when it may."""
        if self.allows(scheme, host, port):
            return None
        reason = host_refusal(host)
        if reason is not None:
            return reason
        if scheme != "https":
            return "plain http to a host that is not allowlisted"
        if port != 443:
            return f"https on port {port} to a host that is not allowlisted"
        return None

    def tunnel_refusal(self, host: str, port: int) -> str | None:
        """Why the browser must not open a tunnel (`CONNECT`) to `host:port`: https, or a
        WebSocket to an allowlisted plain-http origin."""
        if self.allows("http", host, port):
            return None
        return self.target_refusal("https", host, port)

    def allows(self, scheme: str, host: str, port: int) -> bool:
        """Whether `scheme://host:port` is an allowlisted origin."""
        host = host.lower()
        shown = f"[{host}]" if ":" in host else host
        return f"{scheme.lower()}://{shown}:{port}" in self.allowed


def host_refusal(host: str) -> str | None:
    """Why `host` is no public host name, or None. IP literals are refused, the non-public
    ones with the range named."""
    name = host.lower().strip("[]").rstrip(".")
    try:
        address = ipaddress.ip_address(name.split("%", 1)[0])
    except ValueError:
        pass
    else:
        return address_refusal(str(address)) or "an IP address, not a host name"
    if name == "localhost" or name.endswith(_LOCAL_SUFFIXES):
        return "a local host name"
    if "." not in name:
        return "a single-label host name"
    if _NUMERIC_HOST.match(name):
        return "a numeric host"  # an address in disguise (Chromium would read it as one)
    return None


def address_refusal(address: str) -> str | None:
    """Why a host must not be reached at `address` (loopback, private, link-local, reserved,
    metadata, ...), or None for a public address."""
    try:
        refuse_non_global("", address)
    except UrlRefused as err:
        # The proxy's refusals are the operator's log, where the address helps.
        return err.reason.replace("resolves to ", "") + f" ({err.address})"
    return None

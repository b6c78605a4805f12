"""CSRF defence for cookie-authenticated changes through `/api/*`.

The session cookie is SameSite=Lax, which stops other *sites* but not a sibling origin of the
same site (another port or subdomain of the host), and a page there could make a signed-in
browser pause a monitor with a plain form POST or import an analysis with a no-cors
`text/plain` fetch, or sign it out with one. A state-changing `/api/*` request authenticated
by the cookie, or carrying it to a public operation that acts on it (logout), must therefore:

- come from this origin when the browser says where it comes from: `Sec-Fetch-Site` must be
  `same-origin` and `Origin` must be the public URL's origin or the request's own host;
- carry its body as JSON (`application/json` or `+json`), which no page on another origin can
  send without a CORS preflight that this service never approves; a multipart upload (the
  import's file field, which any form can send) is accepted only with a same-origin signal
  from the browser, and a body of any other type not at all.

A client that sends neither header is not a browser (a script holding a copied cookie) and is
judged by the body rule alone. Bearer tokens are never sent by browsers on their own, so token
calls are not affected.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from quart import request

from api.http.errors import Forbidden, UnsupportedMediaType
from api.services import services

FORM_TYPES = frozenset({"multipart/form-data"})


class CrossSiteRefused(Forbidden):
    code = "cross_site_refused"


def _origin_of(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}".lower()


def _same_origin(origin: str) -> bool:
    if origin.lower() == _origin_of(services().settings.public_url):
        return True
    # The request's own host, as the browser addressed it (a service reached at 127.0.0.1
    # while its public URL names a proxy); a page elsewhere cannot make a browser send our
    # cookie with its own host in Origin.
    parts = urlsplit(origin)
    return parts.scheme in ("http", "https") and parts.netloc.lower() == request.host.lower()


def refuse_cross_site_writes() -> None:
    """Raise unless this cookie-authenticated write provably comes from our own pages."""
    site = request.headers.get("Sec-Fetch-Site")
    origin = request.headers.get("Origin")
    if site is not None and site != "same-origin":
        raise CrossSiteRefused(
            f"Refused a {site} request made with your session cookie",
            suggest=["Call the API from this site's pages, or with an access token"],
        )
    if origin is not None and not _same_origin(origin):
        raise CrossSiteRefused(
            "Refused a request from another origin made with your session cookie",
            suggest=["Call the API from this site's pages, or with an access token"],
        )
    if not _has_body():
        return
    if request.is_json:
        return
    browser_said_same_origin = site is not None or origin is not None
    if request.mimetype in FORM_TYPES and browser_said_same_origin:
        return
    raise UnsupportedMediaType(
        "Send the body as JSON (Content-Type: application/json)",
        suggest=["A request made with the session cookie must send JSON"],
    )


def _has_body() -> bool:
    length = request.content_length
    return bool(length) or "Transfer-Encoding" in request.headers

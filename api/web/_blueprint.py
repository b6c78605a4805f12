"""The `web` blueprint: templates, static files, security headers and error pages."""

from __future__ import annotations

import logging

from quart import Blueprint, Response, request
from werkzeug.exceptions import HTTPException, NotFound

from api.http.csp import content_security_policy
from api.http.errors import ApiError, http_problem
from api.web import csrf, flash
from api.web._render import page
from api.web._words import explain

log = logging.getLogger(__name__)

blueprint = Blueprint(
    "web",
    __name__,
    template_folder="templates",
    static_folder="static",
    static_url_path="/assets",
)

# Paths of the machine interfaces: a path under them no route serves answers problem+json,
# whatever the client accepts.
MACHINE_PREFIXES = ("/api/", "/mcp", "/openapi", "/.well-known/")

# No inline script or style anywhere: the copy button's script and the stylesheet are files.
CONTENT_SECURITY_POLICY = content_security_policy("'self'", "form-action 'self'")


@blueprint.after_request
async def _page_headers(response: Response) -> Response:
    response.headers["Content-Security-Policy"] = CONTENT_SECURITY_POLICY
    response.headers["X-Frame-Options"] = "DENY"
    response.headers["X-Content-Type-Options"] = "nosniff"
    # Reset links carry their token in the URL: never send it anywhere as a referrer.
    response.headers["Referrer-Policy"] = "no-referrer"
    if response.content_type and response.content_type.startswith("text/html"):
        # Pages show personal data and, once, a token's plaintext: keep them out of caches.
        response.headers["Cache-Control"] = "no-store"
    csrf.set_pre_cookie(response)
    flash.forget_taken(response)
    return response


@blueprint.errorhandler(csrf.CsrfRefused)
async def _csrf_refused(err: csrf.CsrfRefused) -> Response:
    return await page(
        "error.html",
        status=403,
        title="This form has expired",
        reason=err.reason,
        advice="For your safety we only accept forms this site showed you a moment ago. "
        "Go back, reload the page and send it again.",
    )


@blueprint.errorhandler(ApiError)
async def _api_error(err: ApiError) -> Response:
    return await page(
        "error.html",
        status=err.status,
        title="Page not found" if err.status == 404 else "That did not work",
        reason=explain(err),
    )


@blueprint.errorhandler(HTTPException)
async def _http_error(err: HTTPException) -> Response:
    status = err.code or 500
    titles = {404: "Page not found", 405: "That is not allowed here", 413: "That is too large"}
    return await page(
        "error.html",
        status=status,
        title=titles.get(status, "That did not work"),
        reason=err.description or "",
    )


@blueprint.app_errorhandler(NotFound)
async def _no_such_path(err: NotFound) -> Response:
    """A path no route serves (a mistyped or old address): a page with a way back for a
    browser; the API's problem+json for everything else."""
    if not _wants_a_page():
        return http_problem(err)
    response = await page(
        "error.html",
        status=404,
        title="Page not found",
        reason="There is no page at this address. It may have moved, or the link was mistyped.",
    )
    # No route of this blueprint ran, so its `after_request` does not: the same headers here.
    return await _page_headers(response)


def _wants_a_page() -> bool:
    """A browser asking for a page: GET or HEAD, HTML preferred to JSON, not an API path."""
    if request.method not in ("GET", "HEAD") or request.path.startswith(MACHINE_PREFIXES):
        return False
    return request.accept_mimetypes.best_match(["application/json", "text/html"]) == "text/html"


@blueprint.errorhandler(Exception)
async def _unexpected(err: Exception) -> Response:
    # Logged in full; the person sees a sentence, never a trace.
    log.exception("unhandled error on a page", exc_info=err)
    return await page(
        "error.html",
        status=500,
        title="Something went wrong on our side",
        reason="Please try again in a moment. If it keeps happening, tell us what you did.",
    )

"""The error model: one envelope for every 4xx/5xx, mapped from exceptions in one place.

Body: ``{"type", "title", "status", "error": {"code", "message", "docs_url", "suggest"}}``
served as ``application/problem+json`` (RFC 9457 members at the top level for generic
clients; ``error`` for ours). Validation failures too: 422 with code ``invalid_request``, a
message naming the offending fields and each of them in ``errors`` (``{"loc", "field", "msg",
"type"}``), so a client parses one shape whatever went wrong.
"""

from __future__ import annotations

import logging
from http import HTTPStatus
from typing import Any, TypeVar

from pydantic import ValidationError
from quart import Quart, Response, json
from quart_schema import RequestSchemaValidationError
from quart_schema.validation import QuerystringValidationError
from werkzeug.exceptions import HTTPException

from store import DatabaseUnavailable

log = logging.getLogger(__name__)
T = TypeVar("T")

PROBLEM_JSON = "application/problem+json"
DEFAULT_DOCS_URL = "/docs"


class ApiError(Exception):
    """An error a client can act on. Subclasses fix status and code; messages are per case."""

    status = 400
    code = "bad_request"
    docs_url = DEFAULT_DOCS_URL

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        suggest: list[str] | None = None,
        headers: dict[str, str] | None = None,
        extra: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        self.suggest = suggest or []
        self.headers = headers or {}
        self.extra = extra or {}


class BadRequest(ApiError):
    status, code = 400, "bad_request"


class Unauthorized(ApiError):
    status, code, docs_url = 401, "unauthorized", "/account/keys"

    def __init__(self, message: str = "Not authenticated") -> None:
        super().__init__(
            message,
            suggest=[
                "Sign in, or create a personal access token at /account/keys",
                "Send it as the header Authorization: Bearer <token>",
            ],
            headers={"WWW-Authenticate": 'Bearer realm="nichescope"'},
        )


class InvalidCredentials(ApiError):
    status, code = 401, "invalid_credentials"

    def __init__(self) -> None:
        super().__init__(
            "E-mail or password is incorrect",
            suggest=["Check the e-mail and password", "Reset the password at /forgot-password"],
        )


class Forbidden(ApiError):
    status, code = 403, "forbidden"


class InsufficientScope(ApiError):
    status, code, docs_url = 403, "insufficient_scope", "/account/keys"

    def __init__(self, needed: str) -> None:
        super().__init__(
            f"This access token lacks the '{needed}' scope",
            suggest=[f"Create a token with the '{needed}' scope at /account/keys"],
            extra={"required_scope": needed},
        )


class NotFound(ApiError):
    status, code = 404, "not_found"

    def __init__(self, what: str = "resource") -> None:
        super().__init__(f"No such {what}")


def found(record: T | None, what: str) -> T:
    """`record`, or `NotFound(what)` when the store found none (or only another workspace's:
    the store's scoped reads answer None for both, and so must the API)."""
    if record is None:
        raise NotFound(what)
    return record


def deleted(done: bool, what: str) -> None:
    """`NotFound(what)` unless the store's delete found something to delete."""
    if not done:
        raise NotFound(what)


class Conflict(ApiError):
    status, code = 409, "conflict"


class UnsupportedMediaType(ApiError):
    status, code = 415, "unsupported_media_type"


class TooManyRequests(ApiError):
    status, code = 429, "rate_limited"

    def __init__(self, retry_after_seconds: float, message: str = "Too many requests") -> None:
        seconds = max(1, int(retry_after_seconds + 0.999))
        super().__init__(
            message,
            suggest=[f"Wait {seconds} seconds before trying again"],
            headers={"Retry-After": str(seconds)},
            extra={"retry_after_seconds": seconds},
        )


class ServiceUnavailable(ApiError):
    status, code = 503, "unavailable"


def problem(
    status: int,
    code: str,
    message: str,
    *,
    suggest: list[str] | None = None,
    docs_url: str = DEFAULT_DOCS_URL,
    headers: dict[str, str] | None = None,
    extra: dict[str, Any] | None = None,
) -> Response:
    error: dict[str, Any] = {
        "code": code,
        "message": message,
        "docs_url": docs_url,
        "suggest": suggest or [],
    }
    body: dict[str, Any] = {
        "type": "about:blank",
        "title": HTTPStatus(status).phrase,
        "status": status,
        "error": error,
    }
    if extra:
        error.update(extra)
        body.update(extra)
    response = Response(json.dumps(body), status=status, content_type=PROBLEM_JSON)
    for name, value in (headers or {}).items():
        response.headers[name] = value
    return response


def api_error_response(err: ApiError) -> Response:
    return problem(
        err.status,
        err.code,
        err.message,
        suggest=err.suggest,
        docs_url=err.docs_url,
        headers=err.headers,
        extra=err.extra,
    )


# A body with thousands of unknown fields is thousands of problems: the answer lists this
# many (and counts them all), and its message names the first few.
MAX_LISTED_ERRORS = 20
NAMED_IN_MESSAGE = 3
# Keys in `loc` are the client's own (an unknown field's name): quoted this long at most, as
# other refusals quote input, so a 1 MB key is not echoed back.
QUOTE_LIMIT = 80
MESSAGE_LIMIT = 200


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else f"{text[: limit - 3]}..."


def _field_path(loc: tuple[int | str, ...]) -> str | None:
    """`("filters", "sizes", 2)` as `filters.sizes[2]`; None for the whole body or query."""
    path = ""
    for part in loc:
        path += f"[{part}]" if isinstance(part, int) else f"{'.' if path else ''}{part}"
    return path or None


def validation_errors(err: Exception, location: str) -> list[dict[str, Any]]:
    """Each problem of `err` as `{"loc", "field", "msg", "type"}`, `loc` starting with
    `location` ("body" or "query")."""
    if not isinstance(err, ValidationError):
        # Not a pydantic error: the body was not a JSON object the model could even read.
        message = _clip(str(err), MESSAGE_LIMIT) or "Invalid input"
        return [{"loc": [location], "field": None, "msg": message, "type": "value_error"}]
    found = []
    for error in err.errors(include_url=False, include_context=False, include_input=False):
        loc = tuple(p if isinstance(p, int) else _clip(str(p), QUOTE_LIMIT) for p in error["loc"])
        found.append(
            {
                "loc": [location, *loc],
                "field": _field_path(loc),
                "msg": _clip(error["msg"], MESSAGE_LIMIT),
                "type": error["type"],
            }
        )
    return found


def _where(error: dict[str, Any]) -> str:
    query = error["loc"][0] == "query"
    if error["field"] is None:
        return "the query string" if query else "the request body"
    return f"{'query parameter' if query else 'body field'} `{error['field']}`"


def validation_problem(errors: list[dict[str, Any]]) -> Response:
    """The 422 `invalid_request` envelope for `errors` (from `validation_errors`)."""
    named = "; ".join(f"{_where(e)}: {e['msg'].rstrip('.')}" for e in errors[:NAMED_IN_MESSAGE])
    more = len(errors) - NAMED_IN_MESSAGE
    return problem(
        422,
        "invalid_request",
        f"Invalid request: {named}" + (f" (and {more} more)" if more > 0 else ""),
        suggest=[
            "Correct the fields listed in `errors` and send the request again",
            "Each operation's parameters and body schema are in /openapi.json",
        ],
        extra={"errors": errors[:MAX_LISTED_ERRORS], "error_count": len(errors)},
    )


_HTTP_CODES = {
    400: "bad_request",
    404: "not_found",
    405: "method_not_allowed",
    413: "payload_too_large",
    415: "unsupported_media_type",
}


def http_problem(err: HTTPException) -> Response:
    """The problem+json of an HTTP error the framework raised (no route, wrong method...)."""
    status = err.code or 500
    code = _HTTP_CODES.get(status, HTTPStatus(status).phrase.lower().replace(" ", "_"))
    messages = {
        404: "No such page or resource",
        405: "This method is not allowed here",
        413: "The request body is too large",
    }
    response = problem(status, code, messages.get(status, HTTPStatus(status).phrase))
    if status == 405 and err.get_headers():
        for name, value in err.get_headers():
            if name.lower() == "allow":
                response.headers["Allow"] = value
    return response


def register_error_handlers(app: Quart) -> None:
    @app.errorhandler(ApiError)
    async def _api_error(err: ApiError) -> Response:
        return api_error_response(err)

    @app.errorhandler(RequestSchemaValidationError)
    async def _validation_error(err: RequestSchemaValidationError) -> Response:
        location = "query" if isinstance(err, QuerystringValidationError) else "body"
        return validation_problem(validation_errors(err.validation_error, location))

    @app.errorhandler(DatabaseUnavailable)
    async def _db_down(err: DatabaseUnavailable) -> Response:
        log.warning("database unavailable: %s", err.reason)
        return problem(
            503,
            "unavailable",
            "The database is not answering; try again shortly",
            headers={"Retry-After": "5"},
        )

    @app.errorhandler(HTTPException)
    async def _http_error(err: HTTPException) -> Response:
        return http_problem(err)

    @app.errorhandler(Exception)
    async def _unexpected(err: Exception) -> Response:
        # Logged in full here; the client gets no trace, only an envelope it can report.
        log.exception("unhandled error", exc_info=err)
        return problem(500, "internal_error", "Something went wrong on our side")

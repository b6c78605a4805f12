"""Request body limits: small for every route, larger where a route says so (imports), and
the request class that reads JSON bodies strictly within them.

Quart fixes one limit per app, so the app's limit is the largest any route allows and this
hook refuses, before the body is read, any request whose declared length exceeds its route's
own limit; bodies without a declared length are measured as they are read (`body_limit`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from quart import Quart, current_app, request
from quart_trio.wrappers import TrioRequest

from api.http.errors import ApiError, BadRequest, UnsupportedMediaType

MAX_BODY_ATTRIBUTE = "_nichescope_max_body"
F = TypeVar("F", bound=Callable[..., Any])


class PayloadTooLarge(ApiError):
    status, code = 413, "payload_too_large"


def allow_body(max_bytes_setting: str) -> Callable[[F], F]:
    """Let a route take bodies up to the `Settings` field named `max_bytes_setting`."""

    def decorate(func: F) -> F:
        setattr(func, MAX_BODY_ATTRIBUTE, max_bytes_setting)
        return func

    return decorate


def body_limit() -> int:
    from api.services import services

    settings = services().settings
    view = current_app.view_functions.get(request.endpoint or "")
    field = getattr(view, MAX_BODY_ATTRIBUTE, None)
    return int(getattr(settings, field)) if field else settings.max_body_bytes


def refuse_too_large(size: int) -> None:
    limit = body_limit()
    if size > limit:
        raise PayloadTooLarge(
            f"The request body is larger than {limit} bytes",
            suggest=[f"Send at most {limit} bytes"],
            extra={"max_bytes": limit},
        )


async def check_declared_length() -> None:
    if request.content_length is not None:
        refuse_too_large(request.content_length)
    else:
        # A chunked body is capped at the route's own limit as it arrives. Quart only knows the
        # app's limit (the largest route's), so without this, 64 MiB of chunks sent to any
        # small-body route were buffered before `get_json` measured them. Quart has no public
        # setter for the body's cap; tests/api/test_security_probes.py notices if this breaks.
        request.body._max_content_length = body_limit()


def install(app: Quart) -> None:
    app.before_request(check_declared_length)


class JsonStrictRequest(TrioRequest):
    """A request whose JSON body problems are clear 4xx answers instead of a silent None."""

    def on_json_loading_failed(self, error: Exception) -> Any:
        raise BadRequest(
            "The request body is not valid JSON",
            code="invalid_json",
            suggest=["Send a JSON object with Content-Type: application/json"],
        )

    async def get_json(self, *args: Any, **kwargs: Any) -> Any:
        body = await self.get_data()
        refuse_too_large(len(body))  # bodies sent without a declared length
        if body and self.method in {"POST", "PUT", "PATCH"} and not self.is_json:
            raise UnsupportedMediaType("Send the body as JSON with Content-Type: application/json")
        try:
            return await super().get_json(*args, **kwargs)
        except UnicodeDecodeError as err:  # JSON is UTF-8; other bytes were a 500
            raise BadRequest(
                "The request body is not valid UTF-8 JSON",
                code="invalid_json",
                suggest=["Send a JSON object encoded as UTF-8"],
            ) from err
        except RecursionError as err:
            # `json.loads` refuses nesting deeper than the recursion limit with a RecursionError,
            # not the ValueError Quart hands to `on_json_loading_failed`: without this, 20 KB of
            # `[[[[...` was a 500.
            raise BadRequest(
                "The request body is nested too deeply",
                code="invalid_json",
                suggest=["Send a JSON object with Content-Type: application/json"],
            ) from err

"""Third-party private internals the code relies on: each one checked by name and by use.

A release may rename or drop a private attribute without notice, and the code that reaches for
it would then fail at run time, or worse, quietly do nothing. pyproject.toml therefore caps each
of these packages below its next minor release, and this test is what a cap is raised against:
when it fails (after `make lock LOCK_FLAGS=--upgrade`, say), its message names the package, its
version, the internal and the code that depends on it.

- quart, quart-trio: `Body._max_content_length`, read by `Body.append`, on the body class of
  `TrioRequest`. Used by `check_declared_length` (api, limits): the per-route cap on chunked
  request bodies.
- flask (under Quart): `JSONProvider._prepare_response_obj(args, kwargs)`, used by
  `OrjsonProvider.response` (api, json_encoding); and `flask.sansio.blueprints`'
  `BlueprintSetupState`, used by the MCP blueprint's `record_once` set-up.
- quart-schema: `OpenAPIProvider._app`; `quart_schema.openapi.QUART_SCHEMA_OPERATION_ID_ATTRIBUTE`
  (which names the private `_quart_schema_operation_id` function attribute); and the hooks the
  provider overrides, by parameter name. Used by `NichescopeOpenAPIProvider` and `@operation`
  (api, openapi).
- httpx: `AsyncHTTPTransport._pool`, which `handle_async_request` sends through. Used by
  `GuardedTransport` (scrapers), whose pool connects only to addresses the SSRF guard accepts.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Iterable
from importlib.metadata import PackageNotFoundError, version
from types import ModuleType
from typing import Any, NoReturn

import httpcore
import httpx
import pytest
from quart import Quart
from quart_schema import OpenAPIProvider, QuartSchema
from quart_trio import QuartTrio
from quart_trio.wrappers import TrioRequest
from werkzeug.exceptions import RequestEntityTooLarge

MISSING = object()


def _versions(packages: str | Iterable[str]) -> str:
    names = [packages] if isinstance(packages, str) else list(packages)
    shown = []
    for name in names:
        try:
            shown.append(f"{name} {version(name)}")
        except PackageNotFoundError:
            shown.append(f"{name} (not installed)")
    return " / ".join(shown)


def broken(packages: str | Iterable[str], what: str, used_by: str, detail: str = "") -> NoReturn:
    pytest.fail(
        f"{_versions(packages)}: the internal `{what}` is gone or changed"
        + (f" ({detail})" if detail else "")
        + f". Used by {used_by}: adapt that code before raising the cap in pyproject.toml.",
        pytrace=False,
    )


def internal(obj: Any, name: str, packages: str | Iterable[str], used_by: str) -> Any:
    """`obj.name`, or a failure naming the package and the internal."""
    found = getattr(obj, name, MISSING)
    if found is MISSING:
        owner = obj.__name__ if isinstance(obj, ModuleType | type) else type(obj).__qualname__
        broken(packages, f"{owner}.{name}", used_by)
    return found


def internal_module(name: str, packages: str | Iterable[str], used_by: str) -> ModuleType:
    try:
        return importlib.import_module(name)
    except ImportError as err:
        error = err
    broken(packages, name, used_by, f"cannot import it: {error}")


def parameters(func: Any, expected: list[str], packages: str, what: str, used_by: str) -> None:
    found = list(inspect.signature(func).parameters)
    if found != expected:
        broken(packages, what, used_by, f"its parameters are {found}, the code has {expected}")


# Quart, Quart-Trio -----------------------------------------------------------------------------

BODY_USER = "`check_declared_length` (the per-route cap on chunked request bodies, api limits)"
QUARTS = ("quart", "quart-trio")


async def test_quart_request_body_honours_max_content_length_set_late() -> None:
    body_class = internal(TrioRequest, "body_class", QUARTS, BODY_USER)
    body = body_class(None, None)  # a chunked body, under no app-wide limit yet
    if not hasattr(body, "_max_content_length"):
        broken(QUARTS, f"{body_class.__qualname__}._max_content_length", BODY_USER)
    # What the code does once the route is known: `request.body._max_content_length = limit`.
    body._max_content_length = 4
    body.append(b"12345")
    body.set_complete()
    try:
        data = await body
    except RequestEntityTooLarge:
        return
    broken(
        QUARTS,
        f"{body_class.__qualname__}._max_content_length",
        BODY_USER,
        f"`append` took {len(data)} bytes past a limit of 4 set on it",
    )


# Flask, which Quart builds on ------------------------------------------------------------------

JSON_USER = "`OrjsonProvider.response` (the API's JSON encoder, api json_encoding)"
MCP_USER = "the MCP blueprint's `record_once` set-up (api mcp)"


def test_flask_json_provider_prepare_response_obj() -> None:
    from quart.json.provider import DefaultJSONProvider

    internal(DefaultJSONProvider, "_prepare_response_obj", "flask", JSON_USER)
    provider = DefaultJSONProvider(Quart(__name__))
    cases: list[tuple[tuple[Any, ...], dict[str, Any], Any]] = [
        (({"a": 1},), {}, {"a": 1}),
        ((), {"a": 1}, {"a": 1}),
        ((1, 2), {}, (1, 2)),
        ((), {}, None),
    ]
    for args, kwargs, expected in cases:
        try:
            got = provider._prepare_response_obj(args, kwargs)
        except TypeError as err:
            got = err
        if got != expected:
            broken(
                "flask",
                "JSONProvider._prepare_response_obj",
                JSON_USER,
                f"({args!r}, {kwargs!r}) gave {got!r}, not {expected!r}",
            )


def test_flask_sansio_blueprint_setup_state() -> None:
    blueprints = internal_module("flask.sansio.blueprints", "flask", MCP_USER)
    state_class = internal(blueprints, "BlueprintSetupState", "flask", MCP_USER)
    from quart import Blueprint

    states: list[Any] = []
    blueprint = Blueprint("probe", __name__)
    blueprint.record_once(states.append)
    app = QuartTrio(__name__)
    app.register_blueprint(blueprint)
    if len(states) != 1 or not isinstance(states[0], state_class) or states[0].app is not app:
        broken(
            ("flask", "quart"),
            "flask.sansio.blueprints.BlueprintSetupState",
            MCP_USER,
            f"`record_once` handed {states!r}, not one such state of the app",
        )


# quart-schema ----------------------------------------------------------------------------------

OPENAPI_USER = "`NichescopeOpenAPIProvider` and `@operation` (api openapi)"

# The hooks `NichescopeOpenAPIProvider` overrides (calling `super()`), by parameter name.
OVERRIDDEN_HOOKS = {
    "operation_id": ["self", "method", "path", "func"],
    "generate_rules": ["self"],
    "build_path_parameter": ["self", "name", "converter"],
    "build_request_body": ["self", "model", "source"],
    "build_paths": ["self", "rule"],
    "schema": ["self"],
}


def test_quart_schema_openapi_provider_internals() -> None:
    openapi = internal_module("quart_schema.openapi", "quart-schema", OPENAPI_USER)
    attribute = internal(
        openapi, "QUART_SCHEMA_OPERATION_ID_ATTRIBUTE", "quart-schema", OPENAPI_USER
    )
    if not isinstance(attribute, str) or not attribute.isidentifier():
        broken(
            "quart-schema",
            "quart_schema.openapi.QUART_SCHEMA_OPERATION_ID_ATTRIBUTE",
            OPENAPI_USER,
            f"{attribute!r} is no attribute name",
        )

    app = QuartTrio(__name__)

    @app.get("/probe")
    async def probe() -> str:
        return ""

    setattr(probe, attribute, "probeOperation")
    provider = QuartSchema(app).openapi_provider
    if not isinstance(provider, OpenAPIProvider):
        broken("quart-schema", "QuartSchema.openapi_provider", OPENAPI_USER, repr(provider))
    proxied = internal(provider, "_app", "quart-schema", OPENAPI_USER)
    if proxied.view_functions is not app.view_functions or proxied.extensions is not app.extensions:
        broken(
            "quart-schema", "OpenAPIProvider._app", OPENAPI_USER, "it no longer stands for the app"
        )
    # The constant still names what quart-schema itself reads as a view's operation id.
    operation_id = OpenAPIProvider.operation_id(provider, "GET", "/probe", probe)
    if not (operation_id or "").endswith("probeOperation"):
        broken(
            "quart-schema",
            "quart_schema.openapi.QUART_SCHEMA_OPERATION_ID_ATTRIBUTE",
            OPENAPI_USER,
            f"quart-schema no longer reads it as the operation id (it gave {operation_id!r})",
        )
    for name, expected in OVERRIDDEN_HOOKS.items():
        hook = internal(OpenAPIProvider, name, "quart-schema", OPENAPI_USER)
        parameters(hook, expected, "quart-schema", f"OpenAPIProvider.{name}", OPENAPI_USER)


# httpx -----------------------------------------------------------------------------------------

TRANSPORT_USER = "`GuardedTransport` (scrapers: sockets only to addresses the SSRF guard accepts)"


class _RecordingPool:
    """Stands for the httpcore pool `GuardedTransport` puts in `_pool`."""

    def __init__(self) -> None:
        self.requests: list[httpcore.Request] = []

    async def handle_async_request(self, request: httpcore.Request) -> httpcore.Response:
        self.requests.append(request)
        return httpcore.Response(299, content=b"through the pool")

    async def aclose(self) -> None:
        pass


async def test_httpx_transport_sends_through_pool() -> None:
    transport = httpx.AsyncHTTPTransport(trust_env=False)
    internal(transport, "_pool", "httpx", TRANSPORT_USER)
    pool = _RecordingPool()
    transport._pool = pool  # type: ignore[assignment]  # as `GuardedTransport.__init__` does
    # Loopback's discard port: were the pool not used, nothing leaves the machine.
    request = httpx.Request("GET", "http://127.0.0.1:9/probe")
    try:
        response = await transport.handle_async_request(request)
        await response.aread()
    except Exception as err:
        failure: Exception | None = err
    else:
        failure = None
    finally:
        await transport.aclose()
    if failure is not None:
        broken(
            "httpx",
            "AsyncHTTPTransport._pool",
            TRANSPORT_USER,
            f"a request did not go through the pool put there: {failure!r}",
        )
    if response.status_code != 299 or len(pool.requests) != 1:
        broken(
            "httpx",
            "AsyncHTTPTransport._pool",
            TRANSPORT_USER,
            "`handle_async_request` no longer sends through it",
        )

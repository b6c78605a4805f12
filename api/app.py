"""The app factory: collaborators in, a Quart-Trio ASGI app out."""

from __future__ import annotations

from typing import Any

from quart import Response
from quart_schema import Info, QuartSchema
from quart_trio import QuartTrio

from api import mcp, web
from api.accounts import keys
from api.accounts import rest as accounts
from api.accounts.actions import DEVICE_COOKIE_DAYS
from api.analyses import rest as analyses
from api.billing import rest as billing
from api.http import auth, limits
from api.http import docs as api_docs
from api.http.after_response import RunAfterResponse
from api.http.errors import register_error_handlers
from api.http.json_encoding import OrjsonProvider
from api.http.keep_alive import KeepAliveAfterEarlyAnswers
from api.http.limits import JsonStrictRequest
from api.http.openapi import INTERFACE_VERSION, NichescopeOpenAPIProvider
from api.http.ratelimit import ProgressiveDelay, SlidingWindowLimiter
from api.http.security import ResourceIdConverter, TokenHasher
from api.http.sessions import CredentialCache
from api.mail import mailer
from api.market import rest as market
from api.monitors import rest as monitors
from api.notifications import rest as notifications
from api.ops import rest as ops
from api.ops import system
from api.runs import rest as runs
from api.services import Services
from api.settings import Settings
from engine import Engine
from store import Store


def create_app(*, store: Store, engine: Engine, settings: Settings) -> QuartTrio:
    app = QuartTrio("nichescope")
    app.request_class = JsonStrictRequest
    # The largest body any route accepts; each route's own limit is enforced by `limits`.
    app.config["MAX_CONTENT_LENGTH"] = max(settings.max_body_bytes, settings.import_max_bytes)
    app.config["JSON_SORT_KEYS"] = False
    _describe(app)
    app.extensions["nichescope"] = _collaborators(store, engine, settings)
    app.url_map.converters["id"] = ResourceIdConverter
    register_error_handlers(app)
    limits.install(app)
    auth.install(app)
    for module in (
        system, accounts, keys, billing, monitors, notifications, ops, runs, analyses, market,
        mcp, web,
    ):  # fmt: skip
        app.register_blueprint(module.blueprint)
    app.register_blueprint(api_docs.blueprint)
    app.after_request(_security_headers)
    app.asgi_app = KeepAliveAfterEarlyAnswers(  # type: ignore[method-assign]
        RunAfterResponse(app, app.asgi_app)
    )
    return app


def _describe(app: QuartTrio) -> None:
    """The OpenAPI document (quart-schema) and the JSON encoders of answers."""
    # Response models are dumped to JSON-ready values by pydantic (dates as ISO 8601, decimals
    # as strings) in one pass, instead of every date and decimal reaching the JSON encoder's
    # fallback one exception at a time: a listings page costs half as much. (Set here because
    # quart-schema's typed option dict does not know `mode`; it passes it to `model_dump`.)
    app.config["QUART_SCHEMA_PYDANTIC_DUMP_OPTIONS"] = {"mode": "json"}
    QuartSchema(
        app,
        info=Info(
            title="Nichescope API",
            version=INTERFACE_VERSION,
            description="Find sales niches on a second-hand fashion marketplace.",
        ),
        openapi_provider_class=NichescopeOpenAPIProvider,
        redoc_ui_path=None,
        scalar_ui_path=None,
        swagger_ui_path=None,  # `api_docs` serves /docs with Swagger UI's own files (offline)
    )
    # After QuartSchema, which installs its own provider: its fallback (pydantic values) kept.
    app.json = OrjsonProvider(app, fallback=app.json)


def _collaborators(store: Store, engine: Engine, settings: Settings) -> Services:
    """What handlers reach through `services()`: one set per app (so per test app)."""
    window = settings.login_window_seconds
    return Services(
        store=store,
        engine=engine,
        settings=settings,
        mailer=mailer(settings),
        hasher=TokenHasher(settings.secret_key),
        sessions=CredentialCache(),
        login_ip_limiter=SlidingWindowLimiter(settings.login_attempts_per_ip, window),
        login_pair_limiter=SlidingWindowLimiter(settings.login_failures_per_account, window),
        login_account_delay=ProgressiveDelay(settings.login_failures_per_account, window),
        # As long as the cookie lives: a device that failed that often is trusted again only
        # after a sign-in, which gives it a new cookie.
        login_device_failures=SlidingWindowLimiter(
            settings.login_failures_per_account, DEVICE_COOKIE_DAYS * 86400.0
        ),
        mail_limiter=SlidingWindowLimiter(5, window),
        register_ip_limiter=SlidingWindowLimiter(settings.login_attempts_per_ip, window),
        owner_notice_limiter=SlidingWindowLimiter(1, window),
    )


async def _security_headers(response: Response) -> Response:
    headers: dict[str, Any] = {
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "same-origin",
        "X-Frame-Options": "DENY",
    }
    for name, value in headers.items():
        response.headers.setdefault(name, value)
    if response.content_type and response.content_type.startswith("application/"):
        response.headers.setdefault("Cache-Control", "no-store")
    return response

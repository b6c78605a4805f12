"""`Settings`: every `NICHESCOPE_*` variable, read in one place by one pydantic-settings model.

The fields are declared in four groups (the service, sign-in and polls, the marketplace,
billing and mail), which `Settings` combines: code reads them flat (`settings.market_rate`),
and each field's variable is `NICHESCOPE_` and its name in capitals.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, Field, ValidationError
from pydantic_settings import (
    BaseSettings,
    EnvSettingsSource,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

from scrapers import DEFAULT_USER_AGENT

from . import _values as value

ENV_PREFIX = "NICHESCOPE_"
DEFAULT_DATABASE_URL = "sqlite:///var/nichescope.db"
DEFAULT_SECRET_KEY_FILE = Path("var/secret_key")
TELEGRAM_API_BASE = "https://api.telegram.org"
# A field so marked is policy, not a knob: no variable sets it (code and tests may).
FIXED = object()
# Set to nothing, these variables say "none" rather than "the default".
EMPTY_MEANS_NONE = frozenset({"market_sites"})


class ConfigError(Exception):
    """A variable's value refused at start-up; the message names the variable."""

    def __init__(self, name: str, problem: str) -> None:
        super().__init__(f"{name}: {problem}")


def load_or_create_secret(path: Path) -> str:
    """The key in `path`, created (mode 0600) on first use.

    Token and session digests are keyed by it, so it must survive restarts: a fresh random
    key per process would sign everybody out and break every access token.
    """
    try:
        existing = path.read_text().strip()
    except FileNotFoundError:
        existing = ""
    if existing:
        return existing
    path.parent.mkdir(parents=True, exist_ok=True)
    key = secrets.token_urlsafe(48)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(key + "\n")
    return key


Flag = Annotated[bool, value.from_text(value.flag)]
Count = Annotated[int, value.from_text(value.whole())]
AtLeastOne = Annotated[int, value.from_text(value.whole(1))]
Amount = Annotated[float, value.from_text(value.number())]
Items = Annotated[tuple[str, ...], value.from_text(value.items)]
NoSlash = Annotated[str, value.from_text(value.without_trailing_slash)]


class _Service(BaseModel):
    """Database, secrets, addresses, sign-in limits, body limits, the node."""

    database_url: str = DEFAULT_DATABASE_URL
    # Keys the HMAC digests of session ids, reset tokens and access tokens.
    secret_key: str = Field(default_factory=lambda: secrets.token_urlsafe(32), repr=False)
    # Where `from_env` keeps a generated key.
    secret_key_file: Path = Field(default=DEFAULT_SECRET_KEY_FILE, repr=False)
    public_url: NoSlash = "http://127.0.0.1:8000"
    cookie_secure: Flag = True
    outbox_dir: Path = Path("var/outbox")
    operators: Annotated[tuple[str, ...], value.from_text(value.emails)] = ()
    trusted_proxies: Items = ()
    session_days: Annotated[int, FIXED] = 30
    reset_token_minutes: Annotated[int, FIXED] = 60
    login_attempts_per_ip: Count = 20
    login_failures_per_account: Count = 5
    login_window_seconds: Annotated[float, FIXED] = 900.0
    max_body_bytes: Count = 1 << 20
    import_max_bytes: Count = 64 << 20
    node_id: str = Field(default_factory=lambda: f"{os.uname().nodename}-{os.getpid()}")
    # Cluster mode: how long a node's claim on work lasts.
    lease_seconds: Annotated[float, value.from_text(value.number(1.0))] = 15.0
    git_revision: str = ""  # reported by /api/status; empty: the checkout's HEAD


class _SignInAndPolls(BaseModel):
    """Identity provider and monitor polling."""

    # OpenID Connect sign-in; the button shows only when issuer and client id are set.
    oidc_issuer: str = ""
    oidc_client_id: str = ""
    oidc_client_secret: str = Field(default="", repr=False)
    min_poll_seconds: Count = 60
    default_poll_seconds: Count = 300
    page_cap: AtLeastOne = 5
    monitor_max_errors: AtLeastOne = 5


class _Market(BaseModel):
    """The marketplace client: origins, pacing, profile, proxy, confirmations."""

    market_origins: Annotated[tuple[str, ...], value.from_text(value.checked_origins)] = ()
    # The marketplace's sites (hosts) catalogue URLs may name; None: every one it has.
    market_sites: Items | None = None
    market_rate: Amount = 1.0
    market_burst: AtLeastOne = 3
    # After a block page (403), no request to that origin for this long.
    market_block_seconds: Amount = 120.0
    # One marketplace request; past it the call fails.
    market_timeout_seconds: Annotated[float, value.from_text(value.number(0.5))] = 20.0
    # The marketplace's wire profile: auto, 2026-09 or legacy.
    market_profile: Annotated[str, value.from_text(value.market_profile)] = "auto"
    # (site, API) origin pairs.
    market_api_origins: Annotated[
        tuple[tuple[str, str], ...], value.from_text(value.api_origins)
    ] = ()
    market_user_agent: str = DEFAULT_USER_AGENT
    # May carry the proxy's credentials.
    market_proxy: Annotated[str, value.from_text(value.proxy_url)] = Field(default="", repr=False)
    # A real browser for sites that give their session only to one: auto, off or a path.
    market_browser: Annotated[str, value.from_text(value.market_browser)] = "auto"
    market_browser_timeout_seconds: Annotated[float, value.from_text(value.number(5.0))] = 45.0
    confirm_per_poll: Count = 40  # state requests one poll may spend on drop-outs
    absence_polls: AtLeastOne = 3  # polls absent and unconfirmed before a likely sale


class _BillingAndMail(BaseModel):
    """Stripe, plans, mail and notifications (see docs/billing.md)."""

    stripe_secret_key: str = Field(default="", repr=False)
    stripe_webhook_secret: str = Field(default="", repr=False)
    stripe_api_base: NoSlash = "https://api.stripe.com"
    stripe_price_starter: str = ""
    stripe_price_pro: str = ""
    trial_days: Annotated[int, FIXED] = 7
    # Quota overrides per plan, e.g. {"trial": {"active_monitors": 3, "min_poll_seconds": 300}}
    plan_quotas: Annotated[Mapping[str, Mapping[str, int]], value.from_text(value.plan_quotas)] = (
        Field(default_factory=dict)
    )
    trial_token_hours: Annotated[int, FIXED] = 48
    smtp_url: Annotated[str, value.from_text(value.smtp_url)] = Field(default="", repr=False)
    mail_from: str = "Nichescope <no-reply@nichescope.local>"
    # Notifications: where Telegram's Bot API lives, exact origins that user-given webhook
    # and Discord destinations may name although the SSRF guard would refuse them (tests and
    # demos only), and how long a channel may fail before it is disabled.
    telegram_api_base: Annotated[str, value.from_text(value.http_base(TELEGRAM_API_BASE))] = (
        TELEGRAM_API_BASE
    )
    outbound_allow: Annotated[tuple[str, ...], value.from_text(value.origins)] = ()
    notify_disable_after_hours: Annotated[float, value.from_text(value.number(0.01))] = 24.0


class Settings(_Service, _SignInAndPolls, _Market, _BillingAndMail, BaseSettings):
    """The service's configuration. `Settings.from_env()` reads it at start-up; code and tests
    build one with `Settings(field=value, ...)` and change one with `model_copy(update=...)`."""

    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX,
        frozen=True,
        # Lists and the quotas' JSON are parsed by the fields' own parsers (`_values`), whose
        # errors say what is wrong with the variable, not by pydantic-settings' JSON decoding.
        enable_decoding=False,
    )

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # `Settings(...)` takes what it is given, nothing from the process's environment, so
        # that a test's settings never depend on the shell it runs in; `from_env` reads it.
        return (init_settings,)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        """Every `NICHESCOPE_*` variable of `env` (default: the process's environment).

        A variable set to nothing counts as unset (but for `EMPTY_MEANS_NONE`). Without
        `NICHESCOPE_SECRET_KEY`, the key is read from `NICHESCOPE_SECRET_KEY_FILE`, made
        there on first start. Raises `ConfigError` naming the first variable refused.
        """
        source = EnvSettingsSource(cls)
        if env is not None:  # variable names are matched case-insensitively, as in the source
            source.env_vars = {name.lower(): text for name, text in env.items()}
        fixed = {name for name, field in cls.model_fields.items() if FIXED in field.metadata}
        given: dict[str, Any] = {
            name: text
            for name, text in source().items()
            if (text != "" or name in EMPTY_MEANS_NONE) and name not in fixed
        }
        if "secret_key" not in given:
            key_file = Path(given.get("secret_key_file") or DEFAULT_SECRET_KEY_FILE)
            given["secret_key"] = load_or_create_secret(key_file)
        try:
            return cls(**given)
        except ValidationError as err:
            refused = _naming_the_variable(err)
        # Raised outside the `except`: pydantic's error, which quotes the value (a proxy's
        # credentials, say), is then neither its cause nor its context.
        raise refused


def _naming_the_variable(err: ValidationError) -> ConfigError:
    first = err.errors(include_url=False, include_input=False)[0]
    problem = first["msg"].removeprefix("Value error, ")
    return ConfigError(ENV_PREFIX + str(first["loc"][0]).upper(), problem)

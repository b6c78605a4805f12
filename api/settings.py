"""Configuration: every knob is a `NICHESCOPE_*` environment variable, documented in
docs/configuration.md."""

from __future__ import annotations

import json
import os
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from urllib.parse import urlsplit

from scrapers import (
    API_ORIGINS_ENV,
    DEFAULT_USER_AGENT,
    PROFILE_MODES,
    SiteMap,
    normalise_origin,
)

DEFAULT_DATABASE_URL = "sqlite:///var/nichescope.db"


class ConfigError(Exception):
    def __init__(self, name: str, problem: str) -> None:
        super().__init__(f"{name}: {problem}")


def _flag(env: Mapping[str, str], name: str, default: bool) -> bool:
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    lowered = raw.strip().lower()
    if lowered in {"1", "true", "yes", "on"}:
        return True
    if lowered in {"0", "false", "no", "off"}:
        return False
    raise ConfigError(name, f"expected 1/0, true/false, yes/no or on/off, got {raw!r}")


def _number(env: Mapping[str, str], name: str, default: float) -> float:
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = float(raw)
    except ValueError as err:
        raise ConfigError(name, f"expected a number, got {raw!r}") from err
    if value < 0:
        raise ConfigError(name, "must not be negative")
    return value


def _list(env: Mapping[str, str], name: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in env.get(name, "").split(",") if part.strip())


def _origins(env: Mapping[str, str], name: str) -> tuple[str, ...]:
    """Exact origins (`scheme://host:port`), normalised; a bad entry names its variable."""
    try:
        return tuple(normalise_origin(item) for item in _list(env, name))
    except ValueError as err:
        raise ConfigError(name, str(err)) from err


def _origin_or_base(env: Mapping[str, str], name: str) -> str:
    """An http(s) base address without a trailing slash, or "" when unset."""
    raw = (env.get(name) or "").strip().rstrip("/")
    if not raw:
        return ""
    parts = urlsplit(raw)
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.query:
        raise ConfigError(name, f"expected an http(s) address, got {raw!r}")
    return raw


def _smtp_url(env: Mapping[str, str]) -> str:
    raw = env.get("NICHESCOPE_SMTP_URL") or ""
    if raw and (urlsplit(raw).scheme not in {"smtp", "smtps"} or not urlsplit(raw).hostname):
        raise ConfigError(
            "NICHESCOPE_SMTP_URL", "expected smtp://[user:pass@]host[:port][?starttls=1]"
        )
    return raw


PLAN_QUOTA_NAMES = ("active_monitors", "runs_per_day", "items_per_run", "min_poll_seconds")


def _plan_quotas(raw: str) -> dict[str, dict[str, int]]:
    """`NICHESCOPE_PLAN_QUOTAS`: a JSON object of plan name -> {quota: non-negative int}."""
    if not raw.strip():
        return {}
    name = "NICHESCOPE_PLAN_QUOTAS"
    try:
        data = json.loads(raw)
    except ValueError as err:
        raise ConfigError(name, f"not JSON: {err}") from err
    if not isinstance(data, dict):
        raise ConfigError(name, "expected a JSON object of plan name -> quotas")
    result: dict[str, dict[str, int]] = {}
    for plan, quotas in data.items():
        if not isinstance(quotas, dict):
            raise ConfigError(name, f"quotas of {plan!r} must be an object")
        for quota, value in quotas.items():
            if quota not in PLAN_QUOTA_NAMES:
                raise ConfigError(name, f"unknown quota {quota!r}; known: {PLAN_QUOTA_NAMES}")
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ConfigError(name, f"{plan}.{quota} must be a non-negative integer")
        result[str(plan)] = {str(k): int(v) for k, v in quotas.items()}
    return result


def _market_profile(env: Mapping[str, str]) -> str:
    name = "NICHESCOPE_MARKET_PROFILE"
    value = (env.get(name) or "auto").strip()
    if value not in PROFILE_MODES:
        raise ConfigError(name, f"expected one of {', '.join(PROFILE_MODES)}, got {value!r}")
    return value


def _market_browser(env: Mapping[str, str]) -> str:
    """`auto`, `off` or the path of a Chromium executable (checked now, not at first use)."""
    name = "NICHESCOPE_MARKET_BROWSER"
    value = (env.get(name) or "auto").strip()
    if value in ("auto", "off"):
        return value
    path = Path(value)
    if not path.is_absolute() or not path.is_file() or not os.access(path, os.X_OK):
        raise ConfigError(name, f"expected auto, off or an executable file's path, got {value!r}")
    return value


def _api_origins(env: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    try:
        return SiteMap.from_env(env).pairs
    except ValueError as err:
        raise ConfigError(API_ORIGINS_ENV, str(err)) from err


def _proxy(env: Mapping[str, str]) -> str:
    name = "NICHESCOPE_MARKET_PROXY"
    raw = (env.get(name) or "").strip()
    if not raw:
        return ""
    # Never echo the value: it may carry the proxy's credentials.
    problem = "expected an http://, https:// or socks5:// proxy URL with a host and valid port"
    try:
        parts = urlsplit(raw)
        parts.port  # noqa: B018 - raises ValueError for a port out of range
    except ValueError:
        raise ConfigError(name, problem) from None  # the cause could quote the value
    if parts.scheme not in ("http", "https", "socks5", "socks5h") or not parts.hostname:
        raise ConfigError(name, problem)
    return raw


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


@dataclass(frozen=True)
class Settings:
    database_url: str = DEFAULT_DATABASE_URL
    # Keys the HMAC digests of session ids, reset tokens and access tokens.
    secret_key: str = field(default_factory=lambda: secrets.token_urlsafe(32), repr=False)
    public_url: str = "http://127.0.0.1:8000"
    cookie_secure: bool = True
    outbox_dir: Path = Path("var/outbox")
    operators: tuple[str, ...] = ()
    trusted_proxies: tuple[str, ...] = ()
    session_days: int = 30
    reset_token_minutes: int = 60
    login_attempts_per_ip: int = 20
    login_failures_per_account: int = 5
    login_window_seconds: float = 900.0
    max_body_bytes: int = 1 << 20
    import_max_bytes: int = 64 << 20
    min_poll_seconds: int = 60
    default_poll_seconds: int = 300
    page_cap: int = 5
    monitor_max_errors: int = 5
    market_origins: tuple[str, ...] = ()
    # The marketplace's sites (hosts) catalogue URLs may name; None: every one it has.
    market_sites: tuple[str, ...] | None = None
    market_rate: float = 1.0
    market_burst: int = 3
    market_block_seconds: float = 120.0  # after a block page (403), no request to that origin
    market_timeout_seconds: float = 20.0  # one marketplace request; past it the call fails
    market_profile: str = "auto"  # the marketplace's wire profile: auto, 2026-09 or legacy
    market_api_origins: tuple[tuple[str, str], ...] = ()  # (site, API) origin pairs
    market_user_agent: str = DEFAULT_USER_AGENT
    market_proxy: str = field(default="", repr=False)  # may carry proxy credentials
    # A real browser for sites that give their session only to one: auto, off or a path.
    market_browser: str = "auto"
    market_browser_timeout_seconds: float = 45.0
    confirm_per_poll: int = 40  # state requests one poll may spend on drop-outs
    absence_polls: int = 3  # polls absent and unconfirmed before a listing is a likely sale
    node_id: str = field(default_factory=lambda: f"{os.uname().nodename}-{os.getpid()}")
    lease_seconds: float = 15.0  # cluster mode: how long a node's claim on work lasts
    # OpenID Connect sign-in; the button shows only when issuer and client id are set.
    oidc_issuer: str = ""
    oidc_client_id: str = ""
    oidc_client_secret: str = field(default="", repr=False)
    # Billing (Stripe) and e-mail (SMTP): see docs/billing.md.
    stripe_secret_key: str = field(default="", repr=False)
    stripe_webhook_secret: str = field(default="", repr=False)
    stripe_api_base: str = "https://api.stripe.com"
    stripe_price_starter: str = ""
    stripe_price_pro: str = ""
    trial_days: int = 7
    # Quota overrides per plan, e.g. {"trial": {"active_monitors": 3, "min_poll_seconds": 300}}
    plan_quotas: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    trial_token_hours: int = 48
    smtp_url: str = field(default="", repr=False)
    mail_from: str = "Nichescope <no-reply@nichescope.local>"
    # Notifications: where Telegram's Bot API lives, exact origins that user-given webhook
    # and Discord destinations may name although the SSRF guard would refuse them (tests and
    # demos only), and how long a channel may fail before it is disabled.
    telegram_api_base: str = "https://api.telegram.org"
    outbound_allow: tuple[str, ...] = ()
    notify_disable_after_hours: float = 24.0

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        """Every `NICHESCOPE_*` variable read, each bad value refused naming its variable."""
        env = os.environ if env is None else env
        settings = cls()
        # Each group returns the settings with its own fields read from `env` (their
        # defaults are still in place when it reads them: no two groups set one field);
        # `dataclasses.replace` is type-checked, so a misspelt field fails mypy.
        for group in (_service, _sign_in_and_polls, _market, _billing_and_mail):
            settings = group(env, settings)
        return settings


def _service(env: Mapping[str, str], settings: Settings) -> Settings:
    """Database, secrets, addresses, sign-in limits, body limits, the node."""
    return replace(
        settings,
        database_url=env.get("NICHESCOPE_DATABASE_URL") or DEFAULT_DATABASE_URL,
        secret_key=env.get("NICHESCOPE_SECRET_KEY")
        or load_or_create_secret(Path(env.get("NICHESCOPE_SECRET_KEY_FILE") or "var/secret_key")),
        public_url=(env.get("NICHESCOPE_PUBLIC_URL") or settings.public_url).rstrip("/"),
        cookie_secure=_flag(env, "NICHESCOPE_COOKIE_SECURE", True),
        outbox_dir=Path(env.get("NICHESCOPE_OUTBOX_DIR") or settings.outbox_dir),
        operators=tuple(e.lower() for e in _list(env, "NICHESCOPE_OPERATORS")),
        trusted_proxies=_list(env, "NICHESCOPE_TRUSTED_PROXIES"),
        login_attempts_per_ip=int(
            _number(env, "NICHESCOPE_LOGIN_ATTEMPTS_PER_IP", settings.login_attempts_per_ip)
        ),
        login_failures_per_account=int(
            _number(
                env,
                "NICHESCOPE_LOGIN_FAILURES_PER_ACCOUNT",
                settings.login_failures_per_account,
            )
        ),
        max_body_bytes=int(_number(env, "NICHESCOPE_MAX_BODY_BYTES", settings.max_body_bytes)),
        import_max_bytes=int(
            _number(env, "NICHESCOPE_IMPORT_MAX_BYTES", settings.import_max_bytes)
        ),
        node_id=env.get("NICHESCOPE_NODE_ID") or settings.node_id,
        lease_seconds=max(1.0, _number(env, "NICHESCOPE_LEASE_SECONDS", settings.lease_seconds)),
    )


def _sign_in_and_polls(env: Mapping[str, str], settings: Settings) -> Settings:
    """Identity provider and monitor polling."""
    return replace(
        settings,
        oidc_issuer=env.get("NICHESCOPE_OIDC_ISSUER") or "",
        oidc_client_id=env.get("NICHESCOPE_OIDC_CLIENT_ID") or "",
        oidc_client_secret=env.get("NICHESCOPE_OIDC_CLIENT_SECRET") or "",
        min_poll_seconds=int(
            _number(env, "NICHESCOPE_MIN_POLL_SECONDS", settings.min_poll_seconds)
        ),
        default_poll_seconds=int(
            _number(env, "NICHESCOPE_DEFAULT_POLL_SECONDS", settings.default_poll_seconds)
        ),
        page_cap=max(1, int(_number(env, "NICHESCOPE_PAGE_CAP", settings.page_cap))),
        monitor_max_errors=max(
            1, int(_number(env, "NICHESCOPE_MONITOR_MAX_ERRORS", settings.monitor_max_errors))
        ),
    )


def _market(env: Mapping[str, str], settings: Settings) -> Settings:
    """The marketplace client: origins, pacing, profile, proxy, confirmations."""
    return replace(
        settings,
        market_origins=_list(env, "NICHESCOPE_MARKET_ORIGINS"),
        market_sites=(
            _list(env, "NICHESCOPE_MARKET_SITES") if "NICHESCOPE_MARKET_SITES" in env else None
        ),
        market_rate=_number(env, "NICHESCOPE_MARKET_RATE", settings.market_rate),
        market_timeout_seconds=max(
            0.5,
            _number(env, "NICHESCOPE_MARKET_TIMEOUT_SECONDS", settings.market_timeout_seconds),
        ),
        market_burst=max(1, int(_number(env, "NICHESCOPE_MARKET_BURST", settings.market_burst))),
        market_block_seconds=max(
            0.0,
            _number(env, "NICHESCOPE_MARKET_BLOCK_SECONDS", settings.market_block_seconds),
        ),
        market_profile=_market_profile(env),
        market_api_origins=_api_origins(env),
        market_user_agent=env.get("NICHESCOPE_MARKET_USER_AGENT") or DEFAULT_USER_AGENT,
        market_proxy=_proxy(env),
        market_browser=_market_browser(env),
        market_browser_timeout_seconds=max(
            5.0,
            _number(
                env,
                "NICHESCOPE_MARKET_BROWSER_TIMEOUT_SECONDS",
                settings.market_browser_timeout_seconds,
            ),
        ),
        confirm_per_poll=int(
            _number(env, "NICHESCOPE_CONFIRM_PER_POLL", settings.confirm_per_poll)
        ),
        absence_polls=max(1, int(_number(env, "NICHESCOPE_ABSENCE_POLLS", settings.absence_polls))),
    )


def _billing_and_mail(env: Mapping[str, str], settings: Settings) -> Settings:
    """Stripe, plans, mail and notifications."""
    return replace(
        settings,
        stripe_secret_key=env.get("NICHESCOPE_STRIPE_SECRET_KEY") or "",
        stripe_webhook_secret=env.get("NICHESCOPE_STRIPE_WEBHOOK_SECRET") or "",
        stripe_api_base=(env.get("NICHESCOPE_STRIPE_API_BASE") or settings.stripe_api_base).rstrip(
            "/"
        ),
        stripe_price_starter=env.get("NICHESCOPE_STRIPE_PRICE_STARTER") or "",
        stripe_price_pro=env.get("NICHESCOPE_STRIPE_PRICE_PRO") or "",
        plan_quotas=_plan_quotas(env.get("NICHESCOPE_PLAN_QUOTAS") or ""),
        smtp_url=_smtp_url(env),
        mail_from=env.get("NICHESCOPE_MAIL_FROM") or settings.mail_from,
        telegram_api_base=_origin_or_base(env, "NICHESCOPE_TELEGRAM_API_BASE")
        or settings.telegram_api_base,
        outbound_allow=_origins(env, "NICHESCOPE_OUTBOUND_ALLOW"),
        notify_disable_after_hours=max(
            0.01,
            _number(
                env,
                "NICHESCOPE_NOTIFY_DISABLE_AFTER_HOURS",
                settings.notify_disable_after_hours,
            ),
        ),
    )

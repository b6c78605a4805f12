"""How the text of a `NICHESCOPE_*` variable becomes a setting's value.

Each parser takes the variable's text and raises `ValueError` saying what is wrong; the loader
(`Settings.from_env`) puts the variable's name in front. A parser never quotes a value that may
carry a secret (the proxy's credentials). A value that already has the field's type, as code
and tests pass to `Settings(...)`, is taken as given: only text is parsed.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit

from pydantic import BeforeValidator

from scrapers import PROFILE_MODES, SiteMap, normalise_origin

PLAN_QUOTA_NAMES = ("active_monitors", "runs_per_day", "items_per_run", "min_poll_seconds")


def from_text(parse: Callable[[str], object]) -> BeforeValidator:
    """A field validator that runs `parse` on text and lets any other value through."""

    def validate(value: object) -> object:
        return parse(value) if isinstance(value, str) else value

    return BeforeValidator(validate)


def flag(raw: str) -> bool:
    lowered = raw.strip().lower()
    if lowered in {"1", "true", "yes", "on"}:
        return True
    if lowered in {"0", "false", "no", "off"}:
        return False
    raise ValueError(f"expected 1/0, true/false, yes/no or on/off, got {raw!r}")


def number(minimum: float = 0.0) -> Callable[[str], float]:
    """A non-negative number, raised to `minimum` when below it (a knob turned past what works
    is taken at the least that works, as it always was)."""

    def parse(raw: str) -> float:
        try:
            value = float(raw)
        except ValueError as err:
            raise ValueError(f"expected a number, got {raw!r}") from err
        if value < 0:
            raise ValueError("must not be negative")
        return max(minimum, value)

    return parse


def whole(minimum: int = 0) -> Callable[[str], int]:
    """`number`, its fraction dropped (`2.5` pages are 2)."""
    parse_number = number(minimum)
    return lambda raw: int(parse_number(raw))


def items(raw: str) -> tuple[str, ...]:
    """Comma-separated, each item stripped, empty items skipped."""
    return tuple(part.strip() for part in raw.split(",") if part.strip())


def emails(raw: str) -> tuple[str, ...]:
    return tuple(item.lower() for item in items(raw))


def origins(raw: str) -> tuple[str, ...]:
    """Exact origins, normalised to `scheme://host:port`."""
    return tuple(normalise_origin(item) for item in items(raw))


def checked_origins(raw: str) -> tuple[str, ...]:
    """Origins checked now (a typo stops start-up, not the first fetch) but kept as written:
    the catalogue URL pattern of the OpenAPI document quotes them."""
    for item in items(raw):
        normalise_origin(item)
    return items(raw)


def api_origins(raw: str) -> tuple[tuple[str, str], ...]:
    return SiteMap.parse(raw).pairs


def without_trailing_slash(raw: str) -> str:
    return raw.rstrip("/")


def http_base(default: str) -> Callable[[str], str]:
    """An http(s) base address without a trailing slash; blank: `default`."""

    def parse(raw: str) -> str:
        stripped = raw.strip().rstrip("/")
        if not stripped:
            return default
        parts = urlsplit(stripped)
        if parts.scheme not in ("http", "https") or not parts.hostname or parts.query:
            raise ValueError(f"expected an http(s) address, got {stripped!r}")
        return stripped

    return parse


def smtp_url(raw: str) -> str:
    if raw and (urlsplit(raw).scheme not in {"smtp", "smtps"} or not urlsplit(raw).hostname):
        raise ValueError("expected smtp://[user:pass@]host[:port][?starttls=1]")
    return raw


def proxy_url(raw: str) -> str:
    stripped = raw.strip()
    if not stripped:
        return ""
    # Never echo the value: it may carry the proxy's credentials.
    problem = "expected an http://, https:// or socks5:// proxy URL with a host and valid port"
    try:
        parts = urlsplit(stripped)
        parts.port  # noqa: B018 - raises ValueError for a port out of range
    except ValueError:
        raise ValueError(problem) from None  # the cause could quote the value
    if parts.scheme not in ("http", "https", "socks5", "socks5h") or not parts.hostname:
        raise ValueError(problem)
    return stripped


def market_profile(raw: str) -> str:
    value = raw.strip()
    if value not in PROFILE_MODES:
        raise ValueError(f"expected one of {', '.join(PROFILE_MODES)}, got {value!r}")
    return value


def market_browser(raw: str) -> str:
    """`auto`, `off` or the path of a Chromium executable (checked now, not at first use)."""
    value = raw.strip()
    if value in ("auto", "off"):
        return value
    path = Path(value)
    if not path.is_absolute() or not path.is_file() or not os.access(path, os.X_OK):
        raise ValueError(f"expected auto, off or an executable file's path, got {value!r}")
    return value


def plan_quotas(raw: str) -> dict[str, dict[str, int]]:
    """A JSON object of plan name -> {quota: non-negative int}."""
    if not raw.strip():
        return {}
    try:
        data = json.loads(raw)
    except ValueError as err:
        raise ValueError(f"not JSON: {err}") from err
    if not isinstance(data, dict):
        raise ValueError("expected a JSON object of plan name -> quotas")
    result: dict[str, dict[str, int]] = {}
    for plan, quotas in data.items():
        if not isinstance(quotas, dict):
            raise ValueError(f"quotas of {plan!r} must be an object")
        for quota, value in quotas.items():
            if quota not in PLAN_QUOTA_NAMES:
                raise ValueError(f"unknown quota {quota!r}; known: {PLAN_QUOTA_NAMES}")
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"{plan}.{quota} must be a non-negative integer")
        result[str(plan)] = {str(k): int(v) for k, v in quotas.items()}
    return result

"""Client settings (frozen)."""

from __future__ import annotations

from dataclasses import dataclass, field

DEFAULT_USER_AGENT = "Mozilla/5.0 (compatible; Nichescope/1.0; +https://nichescope.invalid/bot)"


@dataclass(frozen=True, slots=True)
class ClientSettings:
    """Politeness, retry and safety knobs of a `MarketClient` (all per origin)."""

    rate: float = 1.0  # requests per second; <= 0 or inf lifts the limit
    burst: int = 3
    concurrency: int = 2
    max_retries: int = 4
    backoff_base: float = 0.5
    backoff_cap: float = 30.0
    max_retry_wait: float = 300.0  # longer Retry-After / block windows raise instead of waiting
    connect_timeout: float = 5.0
    request_timeout: float = 20.0  # one attempt, headers and body
    warmup_timeout: float = 20.0
    max_bytes: int = 8_000_000
    extra_origins: tuple[str, ...] = ()
    user_agent: str = DEFAULT_USER_AGENT
    robots_product: str = "nichescope"
    respect_robots: bool = True
    robots_ttl: float = 3600.0
    breaker_threshold: int = 5
    breaker_reset: float = 30.0
    block_cool_down: float = 120.0  # after a 403 block page, no request to that origin
    max_redirects: int = 3
    dns_cache_ttl: float = 60.0
    extra_headers: tuple[tuple[str, str], ...] = field(default=())
    proxy: str | None = None  # an egress proxy (http, https or socks5 URL) for every request

    @classmethod
    def unthrottled(cls, **overrides: object) -> ClientSettings:
        """Politeness lifted (benchmarks, tests against the local simulator)."""
        values: dict[str, object] = {
            "rate": 0.0, "burst": 1, "concurrency": 64, "respect_robots": False,
        }  # fmt: skip
        values.update(overrides)
        return cls(**values)  # type: ignore[arg-type]

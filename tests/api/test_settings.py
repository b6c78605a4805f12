from __future__ import annotations

from pathlib import Path

import pytest

from api.settings import DEFAULT_DATABASE_URL, ConfigError, Settings


def test_defaults_and_overrides(tmp_path: Path) -> None:
    key_file = tmp_path / "key"
    defaults = Settings.from_env({"NICHESCOPE_SECRET_KEY_FILE": str(key_file)})
    assert defaults.database_url == DEFAULT_DATABASE_URL
    assert defaults.cookie_secure is True
    custom = Settings.from_env(
        {
            "NICHESCOPE_DATABASE_URL": "postgresql+asyncpg://u@h/db",
            "NICHESCOPE_SECRET_KEY": "k" * 40,
            "NICHESCOPE_PUBLIC_URL": "https://niche.example/",
            "NICHESCOPE_COOKIE_SECURE": "0",
            "NICHESCOPE_OPERATORS": "Ops@Example.com, b@example.com",
        }
    )
    assert custom.database_url == "postgresql+asyncpg://u@h/db"
    assert custom.secret_key == "k" * 40
    assert custom.public_url == "https://niche.example"
    assert custom.cookie_secure is False
    assert custom.operators == ("ops@example.com", "b@example.com")


def test_generated_secret_key_survives_restarts(tmp_path: Path) -> None:
    env = {"NICHESCOPE_SECRET_KEY_FILE": str(tmp_path / "var" / "secret_key")}
    first = Settings.from_env(env).secret_key
    second = Settings.from_env(env).secret_key
    assert first == second and len(first) >= 48
    assert (tmp_path / "var" / "secret_key").stat().st_mode & 0o077 == 0


@pytest.mark.parametrize(
    ("name", "value"),
    [("NICHESCOPE_COOKIE_SECURE", "perhaps"), ("NICHESCOPE_MAX_BODY_BYTES", "lots")],
)
def test_bad_values_name_the_variable(name: str, value: str, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=name):
        Settings.from_env({name: value, "NICHESCOPE_SECRET_KEY": "x" * 40})


KEY = {"NICHESCOPE_SECRET_KEY": "x" * 40}


def test_numbers_lists_and_flags_parse_as_documented() -> None:
    settings = Settings.from_env(
        KEY
        | {
            "NICHESCOPE_COOKIE_SECURE": "off",
            "NICHESCOPE_PAGE_CAP": "0",  # raised to the least that works
            "NICHESCOPE_MARKET_BURST": "2.7",  # whole numbers drop the fraction
            "NICHESCOPE_LEASE_SECONDS": "0.2",
            "NICHESCOPE_MARKET_RATE": "0",
            "NICHESCOPE_TRUSTED_PROXIES": " 10.0.0.1 ,, 10.0.0.2",
            "NICHESCOPE_MARKET_ORIGINS": " http://127.0.0.1:8100 ,https://sim.example,",
            "NICHESCOPE_OUTBOUND_ALLOW": "https://hooks.example",
            "NICHESCOPE_MARKET_API_ORIGINS": "http://127.0.0.1:8100=http://127.0.0.1:8101",
            "NICHESCOPE_PLAN_QUOTAS": '{"trial": {"active_monitors": 3}}',
            "NICHESCOPE_TELEGRAM_API_BASE": "http://127.0.0.1:9000/",
            "NICHESCOPE_STRIPE_API_BASE": "http://127.0.0.1:9100/",
            "NICHESCOPE_GIT_REVISION": "abc123",
        }
    )
    assert settings.cookie_secure is False
    assert (settings.page_cap, settings.market_burst, settings.lease_seconds) == (1, 2, 1.0)
    assert settings.market_rate == 0
    assert settings.trusted_proxies == ("10.0.0.1", "10.0.0.2")
    # Checked at start-up, kept as written (the OpenAPI pattern quotes them).
    assert settings.market_origins == ("http://127.0.0.1:8100", "https://sim.example")
    assert settings.outbound_allow == ("https://hooks.example:443",)
    assert settings.market_api_origins == (("http://127.0.0.1:8100", "http://127.0.0.1:8101"),)
    assert settings.plan_quotas == {"trial": {"active_monitors": 3}}
    assert settings.telegram_api_base == "http://127.0.0.1:9000"
    assert settings.stripe_api_base == "http://127.0.0.1:9100"
    assert settings.git_revision == "abc123"


def test_empty_means_unset_but_an_empty_site_list_means_none() -> None:
    blank = {name: "" for name in ("NICHESCOPE_PUBLIC_URL", "NICHESCOPE_PAGE_CAP")}
    settings = Settings.from_env(KEY | blank)
    assert settings.public_url == Settings().public_url and settings.page_cap == 5
    assert "public_url" not in settings.model_fields_set  # `serve --port` may then set it
    assert settings.market_sites is None
    assert Settings.from_env(KEY | {"NICHESCOPE_MARKET_SITES": ""}).market_sites == ()
    sites = Settings.from_env(KEY | {"NICHESCOPE_MARKET_SITES": "www.vinted.fr, www.vinted.it"})
    assert sites.market_sites == ("www.vinted.fr", "www.vinted.it")


def test_policy_fields_have_no_variable() -> None:
    settings = Settings.from_env(
        KEY | {"NICHESCOPE_SESSION_DAYS": "1", "NICHESCOPE_TRIAL_DAYS": "1"}
    )
    assert (settings.session_days, settings.trial_days) == (30, 7)


def test_settings_built_in_code_ignore_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NICHESCOPE_PAGE_CAP", "9")
    monkeypatch.setenv("NICHESCOPE_SECRET_KEY", "x" * 40)
    assert Settings().page_cap == 5
    assert Settings(page_cap=2).model_copy(update={"market_rate": 0}).page_cap == 2
    assert Settings.from_env().page_cap == 9  # the process's environment by default
    assert Settings.from_env(KEY).page_cap == 5


@pytest.mark.parametrize(
    ("name", "value", "problem"),
    [
        ("NICHESCOPE_LEASE_SECONDS", "-1", "must not be negative"),
        ("NICHESCOPE_MARKET_ORIGINS", "ftp://x", "not an http(s) origin"),
        ("NICHESCOPE_MARKET_API_ORIGINS", "http://a:1", "'http://a:1' is not site=api"),
        ("NICHESCOPE_MARKET_PROFILE", "2019", "expected one of"),
        ("NICHESCOPE_MARKET_BROWSER", "chromium", "expected auto, off or an executable"),
        ("NICHESCOPE_PLAN_QUOTAS", '{"trial": {"seats": 1}}', "unknown quota 'seats'"),
        ("NICHESCOPE_TELEGRAM_API_BASE", "ftp://t", "expected an http(s) address"),
        ("NICHESCOPE_OUTBOUND_ALLOW", "http://x/path", "an origin has no userinfo"),
    ],
)
def test_a_bad_value_names_its_variable_without_a_traceback(
    name: str, value: str, problem: str
) -> None:
    with pytest.raises(ConfigError) as refused:
        Settings.from_env(KEY | {name: value})
    assert str(refused.value).startswith(f"{name}: {problem}")
    assert refused.value.__cause__ is None and refused.value.__context__ is None

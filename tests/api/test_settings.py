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

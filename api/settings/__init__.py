"""Configuration: every knob is a `NICHESCOPE_*` environment variable, documented in
docs/configuration.md, read at start-up by `Settings.from_env`."""

from ._model import (
    DEFAULT_DATABASE_URL,
    ConfigError,
    Settings,
    load_or_create_secret,
)
from ._values import PLAN_QUOTA_NAMES

__all__ = [
    "DEFAULT_DATABASE_URL",
    "PLAN_QUOTA_NAMES",
    "ConfigError",
    "Settings",
    "load_or_create_secret",
]

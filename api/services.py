"""The collaborators a request handler may use, attached to the app by `create_app`."""

from __future__ import annotations

from dataclasses import dataclass, field

import trio
from quart import current_app

from engine import Engine
from store import Store

from .mail import Mailer
from .ratelimit import SlidingWindowLimiter
from .security import TokenHasher
from .sessions import SessionCache
from .settings import Settings


@dataclass
class Services:
    store: Store
    engine: Engine
    settings: Settings
    mailer: Mailer
    hasher: TokenHasher
    sessions: SessionCache
    login_ip_limiter: SlidingWindowLimiter
    login_account_limiter: SlidingWindowLimiter
    mail_limiter: SlidingWindowLimiter
    started_at: float = field(default_factory=trio.current_time)


def services() -> Services:
    return current_app.extensions["nichescope"]  # type: ignore[no-any-return]

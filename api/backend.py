"""What the use cases shared by the REST handlers, the web pages and the MCP tools act on.

An action (`api/*/actions.py`) takes its collaborators as arguments: the `Store` when that is
all it reads, a `Backend` when it also asks the engine or reads the settings, `Mailing` when
it mails a link or opens a channel's sealed secrets. Only the handlers find them
(`api.services.services()`, inside a request) and pass them in, so an action runs, and is
tested, without an app.
"""

from __future__ import annotations

from dataclasses import dataclass

from api.http.ratelimit import SlidingWindowLimiter
from api.http.security import TokenHasher
from api.mail import Mailer
from api.settings import Settings
from engine import Engine
from store import Store


@dataclass(frozen=True, slots=True)
class Backend:
    store: Store
    engine: Engine
    settings: Settings


@dataclass(frozen=True, slots=True)
class Mailing:
    """What mailing a proving link (`api.email_links`) and a channel's secrets use: the links'
    digests (`hasher`), the mail server, the settings (public URL, secret key, outbound
    allowlist) and `limiter`, the confirmation mails per address and per workspace."""

    store: Store
    settings: Settings
    hasher: TokenHasher
    mailer: Mailer
    limiter: SlidingWindowLimiter

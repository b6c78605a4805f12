"""The collaborators a request handler may use, attached to the app by `create_app`."""

from __future__ import annotations

from dataclasses import dataclass, field

import trio
from quart import Quart, current_app

from api.analyses.cache import AnalysisCache
from api.backend import Backend, Mailing
from api.billing.state import Billing, BillingState
from api.http.ratelimit import ProgressiveDelay, SlidingWindowLimiter
from api.http.security import TokenHasher
from api.http.sessions import CredentialCache
from api.mail import Mailer
from api.ops.readiness import Readiness
from api.settings import Settings
from engine import Engine
from store import Store

NODE_IMPORTS = 2
HEALTH_TIMEOUT_SECONDS = 2.0  # a database slower than this to answer is not ready
TESTS_PER_MINUTE = 10


@dataclass
class ImportSlots:
    """What this node is importing (`api.analyses.imports`): a bounded number at once, one per
    workspace."""

    node: trio.CapacityLimiter = field(default_factory=lambda: trio.CapacityLimiter(NODE_IMPORTS))
    workspaces: set[str] = field(default_factory=set)


@dataclass
class Services:
    store: Store
    engine: Engine
    settings: Settings
    mailer: Mailer
    hasher: TokenHasher
    sessions: CredentialCache  # browser sessions and access tokens
    login_ip_limiter: SlidingWindowLimiter
    login_pair_limiter: SlidingWindowLimiter  # failures per (account, address)
    login_account_delay: ProgressiveDelay  # failures per account, for unknown browsers
    login_device_failures: SlidingWindowLimiter  # failures per device cookie: trust ends
    mail_limiter: SlidingWindowLimiter
    register_ip_limiter: SlidingWindowLimiter  # registrations per client address
    # One "someone tried to register with your e-mail" notice per owner per window.
    owner_notice_limiter: SlidingWindowLimiter
    # "Send a test" makes the service send a request to a user-named destination: a few a
    # minute per workspace is plenty for a person checking a channel.
    test_limiter: SlidingWindowLimiter = field(
        default_factory=lambda: SlidingWindowLimiter(TESTS_PER_MINUTE, 60.0)
    )
    started_at: float = field(default_factory=trio.current_time)
    import_slots: ImportSlots = field(default_factory=ImportSlots)
    analyses: AnalysisCache = field(default_factory=AnalysisCache)
    billing_state: BillingState = field(default_factory=BillingState)
    # `/health`'s database probes, one at a time (`api/ops/readiness.py`).
    readiness: Readiness = field(default_factory=lambda: Readiness(HEALTH_TIMEOUT_SECONDS))

    @property
    def backend(self) -> Backend:
        """What the monitor and run actions act on (`api.backend`)."""
        return Backend(self.store, self.engine, self.settings)

    @property
    def billing(self) -> Billing:
        """What the billing actions act on (`api.billing.state`)."""
        return Billing(self.store, self.settings, self.billing_state)

    @property
    def mailing(self) -> Mailing:
        """What mailing links and opening channels' secrets use (`api.backend`)."""
        return Mailing(self.store, self.settings, self.hasher, self.mailer, self.mail_limiter)


def services() -> Services:
    """The services of the app serving this request: for request handlers, page handlers and
    MCP tools only, which pass what an action uses into it (`api.backend`)."""
    return app_services(current_app)


def app_services(app: Quart) -> Services:
    """The services of `app`, outside a request (the runtime wiring them up)."""
    return app.extensions["nichescope"]  # type: ignore[no-any-return]

"""A device cookie is trusted until the password changes or its browser keeps failing (#33,
item 5).

Before: a browser that had once signed in to an account skipped the account's sign-in
slow-down for ever: after the password was reset (so the thief's browser too) and after any
number of failures of its own. Now (`identity.trusted_device`) the cookie's signature is bound
to the password hash, which a reset replaces, and a trusted cookie's failures are counted:
after `login_failures_per_account` of them it is a browser like any other, until a sign-in
gives it a new cookie.

The app is called in-process so that each attempt can come from its own address (the pair
limit would stop a single one) and so that an attack from many addresses can be recorded at
once: made one by one, the failures would each have to wait out the delay they build.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import timedelta
from http.cookies import SimpleCookie

import pytest
from quart import Response
from quart_trio import QuartTrio

from api.accounts.actions import DEVICE_COOKIE
from api.app import create_app
from api.http.security import new_secret
from api.process.node import open_node
from api.services import app_services
from api.settings import Settings
from tests.api.helpers import PASSWORD
from tests.conftest import unique_email
from tests.engine.fake_market import FakeMarket

FREE = 3  # login_failures_per_account
NEW_PASSWORD = "a brand new password"


@pytest.fixture
def settings(settings: Settings) -> Settings:
    return settings.model_copy(update={"login_failures_per_account": FREE})


@pytest.fixture
async def app(settings: Settings) -> AsyncIterator[QuartTrio]:
    async with open_node(settings, role="serve", market=FakeMarket()) as node:
        store, engine = node
        app = create_app(store=store, engine=engine, settings=settings)
        async with app.test_app():  # its start-up and shutdown, as when served
            yield app


async def _sign_in(
    app: QuartTrio, email: str, password: str, *, address: str, device: str | None = None
) -> Response:
    """One attempt from a browser at `address` holding the device cookie `device`."""
    cookies = {"Cookie": f"{DEVICE_COOKIE}={device}"} if device else {}
    return await app.test_client().post(
        "/api/auth/login",
        json={"email": email, "password": password},
        headers=cookies,
        scope_base={"client": (address, 50_000)},
    )


def _device_of(response: Response) -> str:
    assert response.status_code == 200
    cookie = SimpleCookie("\n".join(response.headers.getlist("Set-Cookie")))
    return cookie[DEVICE_COOKIE].value


async def _registered(app: QuartTrio) -> str:
    email = unique_email("owner")
    account = {"email": email, "password": PASSWORD}
    assert (await app.test_client().post("/api/auth/register", json=account)).status_code == 201
    return email


def _attacked(app: QuartTrio, email: str) -> None:
    """Record 20 failures from other addresses: past `FREE`, the account's delay for browsers
    it does not trust is at its cap (60 s), so a 429 below is that delay and nothing else."""
    for _ in range(20):
        app_services(app).login_account_delay.failed(email)


async def test_a_password_reset_ends_the_trust_of_every_device(app: QuartTrio) -> None:
    email = await _registered(app)
    thief = _device_of(await _sign_in(app, email, PASSWORD, address="203.0.113.66"))
    _attacked(app, email)
    trusted = await _sign_in(app, email, "a guess", address="203.0.113.67", device=thief)
    assert trusted.status_code == 401  # not slowed: the cookie is trusted

    svc = app_services(app)
    credentials = await svc.store.get_credentials(email)
    assert credentials is not None
    secret = new_secret()
    await svc.store.add_password_reset(
        token_hash=svc.hasher.digest(secret),
        user_id=credentials.user.id,
        expires_at=svc.store.clock() + timedelta(minutes=10),
    )
    reset = await app.test_client().post(
        "/api/auth/reset-password", json={"token": secret, "password": NEW_PASSWORD}
    )
    assert reset.status_code == 200

    for password in ("another guess", NEW_PASSWORD):
        after = await _sign_in(app, email, password, address="203.0.113.68", device=thief)
        assert after.status_code == 429, "a device trusted under the old password skips the delay"
    # The owner's browser signs in once the delay has passed, and is trusted from then on.
    app_services(app).login_account_delay.reset(email)
    owner = _device_of(await _sign_in(app, email, NEW_PASSWORD, address="198.51.100.7"))
    _attacked(app, email)
    again = await _sign_in(app, email, NEW_PASSWORD, address="198.51.100.7", device=owner)
    assert again.status_code == 200


async def test_a_device_that_keeps_failing_is_trusted_no_more(app: QuartTrio) -> None:
    email = await _registered(app)
    stolen = _device_of(await _sign_in(app, email, PASSWORD, address="198.51.100.7"))
    owners = _device_of(await _sign_in(app, email, PASSWORD, address="198.51.100.8"))
    _attacked(app, email)
    # Each guess from its own address, so the (account, address) limit never stops them.
    for n in range(FREE):
        guess = await _sign_in(app, email, f"guess {n}", address=f"203.0.113.{n}", device=stolen)
        assert guess.status_code == 401, f"guess {n} was slowed: the cookie was not trusted"
    slowed = await _sign_in(app, email, PASSWORD, address="203.0.113.99", device=stolen)
    assert slowed.status_code == 429, "a device cookie that keeps failing still skips the delay"
    assert 0 < int(slowed.headers["Retry-After"]) <= 60
    # The owner's other browser is still trusted: trust ends per device, not per account.
    fine = await _sign_in(app, email, PASSWORD, address="198.51.100.8", device=owners)
    assert fine.status_code == 200

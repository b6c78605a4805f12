"""Nobody's address counts until its owner proves it (#33, item 3).

Before: registering `victim@...` with a password was enough for (a) an OpenID Connect sign-in
with that verified address to be linked to the account, whose first holder's password, session
and access token all kept opening it, and (b) an address listed in `NICHESCOPE_OPERATORS` to
make an operator (`/api/ops/actors` shows every workspace's monitors).

Now a link mailed at registration proves the address (so do a password reset link and a trial
link mailed to it); until then the account signs in and works, but is never linked by an
identity provider (the identity takes the address over and the first holder loses every way
in) and makes no operator. Over the real service, its outbox and the local OIDC provider.
"""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
import trio

from api.settings import Settings
from tests.api.helpers import PASSWORD, assert_envelope, bearer, register, signed_in
from tests.conftest import RunningService, ServiceClient, start_service, unique_email
from tests.web.oidc_provider import LocalOidcProvider, run_provider

OPERATOR = "ops@example.com"  # the `settings` fixture's operator
CONFIRM_SUBJECT = "Confirm your e-mail address for Nichescope"
BOT_TOKEN = "123456789:" + "A" * 35


async def _sign_in(client: httpx.AsyncClient, email: str, password: str = PASSWORD) -> int:
    answer = await client.post("/api/auth/login", json={"email": email, "password": password})
    return answer.status_code


async def _link_token(service: RunningService, email: str, count: int = 1) -> str:
    """The token of the latest confirmation link mailed to `email` (waiting for the `count`th:
    registration mails it after its answer)."""
    messages = await service.mails(CONFIRM_SUBJECT, f"To: {email}", count=count)
    match = re.search(r"/confirm-email\?token=([A-Za-z0-9_\-]+)", messages[-1])
    assert match, messages[-1]
    return match.group(1)


async def _me(client: httpx.AsyncClient) -> dict[str, object]:
    answer = await client.get("/api/auth/me")
    assert answer.status_code == 200, answer.text
    return answer.json()  # type: ignore[no-any-return]


async def test_an_operators_address_makes_no_operator_until_its_owner_confirms_it(
    service: RunningService,
) -> None:
    async with service.client() as squatter:
        await register(squatter, OPERATOR)
        assert await _sign_in(squatter, OPERATOR) == 200
        assert_envelope(await squatter.get("/api/ops/actors"), 403, "forbidden")
        me = await _me(squatter)
        assert me["operator"] is False and me["user"]["email_verified"] is False  # type: ignore[index]
        # The dashboard asks to confirm, and says where the link went.
        assert "Confirm your e-mail address" in (await squatter.get("/dashboard")).text

        # Whoever reads the operator's mailbox opens the link: from then on, operator.
        token = await _link_token(service, OPERATOR)
        confirmed = await squatter.post("/api/auth/confirm-email", json={"token": token})
        assert confirmed.status_code == 200, confirmed.text
        assert (await squatter.get("/api/ops/actors")).status_code == 200
        me = await _me(squatter)
        assert me["operator"] is True and me["user"]["email_verified"] is True  # type: ignore[index]
        assert "Confirm your e-mail address" not in (await squatter.get("/dashboard")).text

        # A link works once; a token never issued is no link.
        again = await squatter.post("/api/auth/confirm-email", json={"token": token})
        assert_envelope(again, 410, "token_used")
        forged = await squatter.post("/api/auth/confirm-email", json={"token": "A" * 43})
        assert_envelope(forged, 400, "invalid_token")


async def test_a_new_link_replaces_the_old_and_mails_are_limited(
    service: RunningService,
) -> None:
    email = unique_email()
    async with service.client() as client:
        await register(client, email)
        assert await _sign_in(client, email) == 200
        first = await _link_token(service, email)
        resent = await client.post("/api/auth/confirm-email/resend")
        assert resent.status_code == 200, resent.text
        second = await _link_token(service, email, count=2)
        assert second != first
        old = await client.post("/api/auth/confirm-email", json={"token": first})
        assert_envelope(old, 400, "invalid_token")  # only the latest e-mail works
        assert (await client.post("/api/auth/confirm-email", json={"token": second})).is_success
        # Confirmed: nothing more is sent.
        done = await client.post("/api/auth/confirm-email/resend")
        assert done.status_code == 200 and "already" in done.json()["message"]
        assert len(await service.mails(CONFIRM_SUBJECT, f"To: {email}", count=2)) == 2

    other = unique_email()
    async with service.client() as client:
        await register(client, other)
        assert await _sign_in(client, other) == 200
        answers = [(await client.post("/api/auth/confirm-email/resend")).status_code
                   for _ in range(6)]  # fmt: skip
        # Five mails per window from one client address, which asked once above already.
        assert answers == [200] * 4 + [429] * 2, answers
        assert len(await service.mails(CONFIRM_SUBJECT, f"To: {other}", count=5)) == 5


async def test_a_reset_link_and_a_trial_link_to_the_address_prove_it(
    service: RunningService,
) -> None:
    async with service.client() as client:
        email = await signed_in(client)  # its trial started through the link mailed to it
        me = await _me(client)
        assert me["user"]["email_verified"] is True  # type: ignore[index]

    async with service.client() as client:
        email = unique_email()
        await signed_in(client, email, trial=False)
        # A trial link mailed to another address proves nothing about this one.
        elsewhere = unique_email("elsewhere")
        started = await client.post("/api/billing/trial/start", json={"email": elsewhere})
        assert started.status_code == 200, started.text
        [mail] = await service.mails("Confirm your Nichescope trial", f"To: {elsewhere}")
        match = re.search(r"/billing/trial/confirm\?token=([A-Za-z0-9_\-]+)", mail)
        assert match, mail
        trial = await client.get("/api/billing/trial/confirm", params={"token": match.group(1)})
        assert trial.status_code == 200, trial.text
        assert (await _me(client))["user"]["email_verified"] is False  # type: ignore[index]

        assert (await client.post("/api/auth/forgot-password", json={"email": email})).is_success
        (reset_mail,) = await service.mails("Reset your Nichescope password", email)
        reset = re.search(r"/reset-password\?token=([A-Za-z0-9_\-]+)", reset_mail)
        assert reset, reset_mail
        body = {"token": reset.group(1), "password": "a brand new password"}
        assert (await client.post("/api/auth/reset-password", json=body)).is_success
        assert await _sign_in(client, email, "a brand new password") == 200
        assert (await _me(client))["user"]["email_verified"] is True  # type: ignore[index]


# -- OpenID Connect ---------------------------------------------------------------------------


async def _oidc_service(
    settings: Settings, nursery: trio.Nursery, provider: LocalOidcProvider
) -> RunningService:
    configured = settings.model_copy(
        update={
            "oidc_issuer": provider.issuer,
            "oidc_client_id": "nichescope-test",
            "oidc_client_secret": "test-secret",
        }
    )
    service, _stop = await start_service(nursery, configured)
    return service


async def _oidc_sign_in(client: ServiceClient, provider: LocalOidcProvider, sub: str) -> None:
    """Sign `client` in as `sub` through the provider, as a browser would: start, the
    provider's consent form posted, back to the callback with the code."""
    start = await client.get("/auth/oidc/start")
    assert start.status_code == 303, start.text
    async with httpx.AsyncClient() as browser_at_provider:
        consent = await browser_at_provider.post(start.headers["location"], data={"sub": sub})
    assert consent.status_code in (302, 303), consent.text
    back = parse_qs(urlsplit(consent.headers["location"]).query)
    params = {name: values[0] for name, values in back.items()}
    callback = await client.get("/auth/oidc/callback", params=params)
    assert callback.status_code == 303, callback.text
    assert "session_token" in client.cookies


async def _provider_user(provider: LocalOidcProvider, sub: str, email: str) -> None:
    async with httpx.AsyncClient(base_url=provider.issuer) as admin:
        claims = {"email": email, "email_verified": True, "name": sub.title()}
        assert (await admin.put(f"/users/{sub}", json=claims)).status_code < 300


# authlib, inside the provider, warns that the provider package uses a deprecated hook.
@pytest.mark.filterwarnings("ignore::DeprecationWarning")
async def test_an_identity_takes_over_an_address_nobody_proved(
    settings: Settings, nursery: trio.Nursery
) -> None:
    victim = unique_email("victim")
    with run_provider() as provider:
        service = await _oidc_service(settings, nursery, provider)
        await _provider_user(provider, "victim", victim)
        async with service.client() as attacker:
            # The attacker registers the victim's address first, and digs in.
            await register(attacker, victim, "the attacker's password")
            assert await _sign_in(attacker, victim, "the attacker's password") == 200
            minted = await attacker.post(
                "/api/account/keys", json={"label": "backdoor", "scopes": ["read"]}
            )
            assert minted.status_code == 201, minted.text
            token = str(minted.json()["token"])
            channel = await attacker.post(
                "/api/notifications/channels",
                json={"kind": "telegram", "name": "mine", "bot_token": BOT_TOKEN, "chat_id": "1"},
            )
            assert channel.status_code == 201, channel.text
            squatted = str((await _me(attacker))["user"]["id"])  # type: ignore[index]

            async with service.client() as owner:
                await _oidc_sign_in(owner, provider, "victim")

                # None of the attacker's ways in is left: password, session, token.
                async with service.client() as again:
                    assert await _sign_in(again, victim, "the attacker's password") == 401
                assert (await attacker.get("/api/auth/me")).status_code == 401
                async with service.client(headers=bearer(token)) as agent:
                    assert (await agent.get("/api/monitoring")).status_code == 401

                # The same account (what is in it stays), the address proven, and the
                # channel the attacker made turned off until its owner looks at it.
                me = await _me(owner)
                assert me["user"]["id"] == squatted  # type: ignore[index]
                assert me["user"]["email"] == victim  # type: ignore[index]
                assert me["user"]["email_verified"] is True  # type: ignore[index]
                [turned_off] = (await owner.get("/api/notifications/channels")).json()["channels"]
                assert turned_off["enabled"] is False and turned_off["disabled_reason"]


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
async def test_an_identity_is_linked_to_an_account_whose_owner_proved_the_address(
    settings: Settings, nursery: trio.Nursery
) -> None:
    email = unique_email("owner")
    with run_provider() as provider:
        service = await _oidc_service(settings, nursery, provider)
        await _provider_user(provider, "owner", email)
        async with service.client() as client:
            await register(client, email)
            assert await _sign_in(client, email) == 200
            token = await _link_token(service, email)
            assert (await client.post("/api/auth/confirm-email", json={"token": token})).is_success
            mine = (await _me(client))["user"]["id"]  # type: ignore[index]
        async with service.client() as browser:
            await _oidc_sign_in(browser, provider, "owner")
            assert (await _me(browser))["user"]["id"] == mine  # type: ignore[index]
        async with service.client() as client:  # the owner's password still opens it
            assert await _sign_in(client, email) == 200

"""The e-mailed trial and SMTP delivery, over real sockets and a real SMTP server."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import httpx
import trio

from bench._common import free_port
from tests.api.helpers import PASSWORD, assert_envelope, signed_in
from tests.billing.conftest import billing_settings
from tests.billing.fake_stripe import FakeStripe
from tests.billing.helpers import subscribed, subscription
from tests.conftest import RunningService, start_service, unique_email
from tests.engine.fake_market import FakeMarket
from tests.smtp import SmtpInbox

LINK = re.compile(r"(http://\S+/billing/trial/confirm\?token=(\S+))")


def _link(inbox: SmtpInbox, address: str) -> tuple[str, str]:
    messages = inbox.to(address)
    assert messages, f"no mail to {address}"
    body = messages[-1].get_content()  # type: ignore[attr-defined]
    match = LINK.search(body)
    assert match, body
    return match.group(1), match.group(2)


def _path(link: str) -> str:
    """The JSON API behind the e-mailed page link (the page's button posts to the same logic)."""
    page_path = link.split("testserver.local", 1)[1]
    assert page_path.startswith("/billing/trial/confirm?token=")
    return "/api" + page_path


async def test_trial_start_confirm_and_single_use(
    billing: RunningService, inbox: SmtpInbox
) -> None:
    async with billing.client() as client:
        email = await signed_in(client)
        before = await subscription(client)
        started = await client.post("/api/billing/trial/start", json={"email": email})
        assert started.status_code == 200, started.text
        message = inbox.to(email)[-1]
        assert message["From"] == "Nichescope <billing@nichescope.test>"
        assert message["Subject"] == "Confirm your Nichescope trial"
        link, token = _link(inbox, email)
        assert "card" in message.get_content()  # type: ignore[attr-defined]
        # The link is public: it works from any browser, signed in or not.
        async with httpx.AsyncClient(base_url=billing.url) as anonymous:
            confirmed = await anonymous.get(_path(link))
            reused = await anonymous.get(_path(link))
        state = await subscription(client)
        again = await client.post("/api/billing/trial/start", json={"email": email})
    assert before["can_create"] is False and before["plan"] is None
    assert confirmed.status_code == 200, confirmed.text
    assert confirmed.json()["plan"] == "trial"
    assert state["plan"] == "trial" and state["status"] == "trialing" and state["can_create"]
    trial_end = datetime.fromisoformat(state["trial_end"])
    expected = datetime.now(UTC) + timedelta(days=7)
    assert abs((trial_end - expected).total_seconds()) < 120
    assert state["quotas"]["active_monitors"] == 2
    assert_envelope(reused, 410, "token_used")
    assert_envelope(again, 409, "trial_used")
    assert len(token) >= 40


async def test_trial_once_per_email_across_workspaces(
    billing: RunningService, inbox: SmtpInbox
) -> None:
    shared = unique_email("shared")
    async with billing.client() as first, billing.client() as second:
        await signed_in(first)
        await signed_in(second)
        assert (await first.post("/api/billing/trial/start", json={"email": shared})).is_success
        # The second workspace asks for the same address before the first confirms...
        assert (await second.post("/api/billing/trial/start", json={"email": shared})).is_success
        links = [m.get_content() for m in inbox.to(shared)]  # type: ignore[attr-defined]
        assert len(links) == 2
        paths = [_path(LINK.search(body).group(1)) for body in links]  # type: ignore[union-attr]
        ok = await first.get(paths[0])
        refused = await second.get(paths[1])
        later = await second.post("/api/billing/trial/start", json={"email": shared})
        second_state = await subscription(second)
    assert ok.status_code == 200
    assert_envelope(refused, 409, "trial_used")
    assert_envelope(later, 409, "trial_used")
    assert second_state["plan"] is None and second_state["can_create"] is False


async def test_bad_trial_tokens_are_clear_errors(billing: RunningService) -> None:
    async with httpx.AsyncClient(base_url=billing.url) as client:
        empty = await client.get("/api/billing/trial/confirm")
        blank = await client.get("/api/billing/trial/confirm?token=")
        unknown = await client.get("/api/billing/trial/confirm?token=not-a-real-token")
        anonymous_start = await client.post(
            "/api/billing/trial/start", json={"email": unique_email()}
        )
    assert_envelope(empty, 400, "invalid_token")
    assert_envelope(blank, 400, "invalid_token")
    assert_envelope(unknown, 400, "invalid_token")
    assert_envelope(anonymous_start, 401, "unauthorized")


async def test_an_expired_trial_link_is_refused(
    settings: object,
    fake_stripe: FakeStripe,
    smtp: tuple[SmtpInbox, int],
    nursery: trio.Nursery,
) -> None:
    # Links that expire at once: the service issues them with a validity of zero hours.
    billed = billing_settings(settings, fake_stripe, smtp[1])  # type: ignore[arg-type]
    expiring = billed.model_copy(update={"trial_token_hours": 0})
    running, stop = await start_service(nursery, expiring, FakeMarket())
    inbox = smtp[0]
    async with running.client() as client:
        email = await signed_in(client)
        assert (await client.post("/api/billing/trial/start", json={"email": email})).is_success
        link, _ = _link(inbox, email)
        expired = await client.get(_path(link))
        state = await subscription(client)
    stop.set()
    assert_envelope(expired, 410, "token_expired")
    assert state["can_create"] is False


async def test_a_subscribed_workspace_gets_no_trial(
    billing: RunningService, fake_stripe: FakeStripe
) -> None:
    async with billing.client() as client:
        email = await signed_in(client)
        await subscribed(client, fake_stripe)
        response = await client.post("/api/billing/trial/start", json={"email": email})
    assert_envelope(response, 409, "already_subscribed")


async def test_password_reset_mail_goes_over_smtp(
    billing: RunningService, inbox: SmtpInbox
) -> None:
    async with billing.client() as client:
        email = await signed_in(client)
        sent = await client.post("/api/auth/forgot-password", json={"email": email})
        assert sent.status_code == 200
        with trio.fail_after(30):  # the link is mailed after the answer
            while not [m for m in inbox.to(email) if "reset-password" in str(m.get_content())]:  # type: ignore[attr-defined]
                await trio.sleep(0.02)
        body = inbox.to(email)[-1].get_content()  # type: ignore[attr-defined]
        match = re.search(r"/reset-password\?token=(\S+)", body)
        assert match, body
        new_password = PASSWORD + " again"
        reset = await client.post(
            "/api/auth/reset-password", json={"token": match.group(1), "password": new_password}
        )
        login = await client.post(
            "/api/auth/login", json={"email": email, "password": new_password}
        )
    assert reset.status_code == 200, reset.text
    assert login.status_code == 200
    assert billing.outbox() == []  # nothing fell back to the folder


async def test_an_unreachable_smtp_server_is_a_clear_error(
    settings: object, fake_stripe: FakeStripe, nursery: trio.Nursery
) -> None:
    broken = billing_settings(settings, fake_stripe, free_port())  # type: ignore[arg-type]
    running, stop = await start_service(nursery, broken, FakeMarket())
    async with running.client() as client:
        email = await signed_in(client)
        response = await client.post("/api/billing/trial/start", json={"email": email})
    stop.set()
    assert_envelope(response, 503, "mail_unavailable")


def test_smtp_urls_are_parsed_and_checked() -> None:
    import pytest

    from api.mail import SmtpTarget
    from api.settings import ConfigError, Settings

    target = SmtpTarget.parse("smtp://us%40er:p%3Ass@mail.example.com:587?starttls=1&timeout=5")
    assert (target.host, target.port, target.username, target.password) == (
        "mail.example.com",
        587,
        "us@er",
        "p:ss",
    )
    assert target.starttls and not target.implicit_tls and target.timeout == 5
    implicit = SmtpTarget.parse("smtps://mail.example.com")
    assert implicit.implicit_tls and implicit.port == 465 and implicit.username is None
    env = {"NICHESCOPE_SECRET_KEY": "k"}
    assert Settings.from_env(env | {"NICHESCOPE_SMTP_URL": "smtp://h:25"}).smtp_url == "smtp://h:25"
    with pytest.raises(ConfigError, match="NICHESCOPE_SMTP_URL"):
        Settings.from_env(env | {"NICHESCOPE_SMTP_URL": "http://h"})

"""The pages in a real browser (Debian's chromium through Playwright), with screenshots.

Screenshots land in `test-artifacts/screenshots/` (git-ignored) for a person to look at.
"""

from __future__ import annotations

import re
from typing import Any

import httpx
import pytest

from tests.conftest import unique_email
from tests.web.conftest import PASSWORD, InBrowser, StartWeb, screenshot
from tests.web.oidc_provider import LocalOidcProvider

NEW_PASSWORD = "a brand new passphrase"


def _sign_up_and_in(page: Any, base: str, email: str, password: str = PASSWORD) -> None:
    page.goto(f"{base}/signup")
    page.get_by_label("E-mail").fill(email)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Create account").click()
    page.wait_for_url(re.compile(r"/login\?notice=registered"))
    page.get_by_label("E-mail").fill(email)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(f"{base}/dashboard")


async def test_sign_up_keys_and_sign_out(start_web: StartWeb, in_browser: InBrowser[Any]) -> None:
    service = await start_web()
    base = service.url
    email = unique_email("browser")

    def scenario(page: Any) -> None:
        page.goto(f"{base}/signup")
        assert "Continue with" not in page.content()  # OIDC not configured: no button
        page.get_by_label("E-mail").fill("not an e-mail")
        page.get_by_label("Password").fill("short")
        page.get_by_role("button", name="Create account").click()
        assert page.get_by_text("Enter an e-mail address such as name@example.com.").is_visible()
        screenshot(page, "signup-errors")
        page.get_by_label("E-mail").fill(email)
        page.get_by_label("Password").fill(PASSWORD)
        page.get_by_role("button", name="Create account").click()
        page.wait_for_url(re.compile(r"/login\?notice=registered"))
        assert page.get_by_role("status").is_visible()
        screenshot(page, "login")
        page.get_by_label("E-mail").fill(email)
        page.get_by_label("Password").fill(PASSWORD)
        page.get_by_role("button", name="Sign in").click()
        page.wait_for_url(f"{base}/dashboard")
        assert page.get_by_role("heading", name="Top niches").is_visible()
        screenshot(page, "dashboard")
        page.keyboard.press("Tab")  # keyboard users land on the skip link first
        assert page.evaluate("document.activeElement.textContent") == "Skip to content"
        page.keyboard.press("Enter")
        assert page.evaluate("document.activeElement.id") == "main"

        page.get_by_role("navigation", name="Main").get_by_role("link", name="API keys").click()
        page.wait_for_url(f"{base}/account/keys")
        assert page.get_by_text("No keys yet").is_visible()
        page.get_by_label("Name").fill("laptop script")
        page.get_by_label("Write").check()
        page.get_by_role("button", name="Create key").click()
        token = page.get_by_label("New token").input_value()
        assert token.startswith("nsc_")
        assert page.get_by_text("Copy this token now.").is_visible()
        page.context.grant_permissions(["clipboard-read", "clipboard-write"])
        page.get_by_role("button", name="Copy").click()
        # The clipboard write is asynchronous: wait for the confirmation instead of reading
        # its visibility at once (which flaked in CI).
        page.get_by_text("Copied to the clipboard.").wait_for(state="visible", timeout=10_000)
        assert page.evaluate("navigator.clipboard.readText()") == token
        screenshot(page, "keys-created")

        me = httpx.get(f"{base}/api/auth/me", headers={"Authorization": f"Bearer {token}"})
        assert me.status_code == 200 and me.json()["user"]["email"] == email
        page.goto(f"{base}/account/keys")  # the plaintext is never shown again
        assert token not in page.content()
        row = page.get_by_role("row", name=re.compile("laptop script"))
        assert "Never" not in row.inner_text()  # last use recorded
        page.get_by_role("button", name="Revoke key laptop script").click()
        page.wait_for_url(re.compile(r"/account/keys\?notice=revoked"))
        assert page.get_by_text("Revoked", exact=True).is_visible()
        screenshot(page, "keys-list")
        me = httpx.get(f"{base}/api/auth/me", headers={"Authorization": f"Bearer {token}"})
        assert me.status_code == 401

        page.set_viewport_size({"width": 390, "height": 844})
        screenshot(page, "keys-phone")
        for path in ("/account/keys", "/dashboard"):  # nothing wider than a phone
            page.goto(f"{base}{path}")
            assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
        page.get_by_role("button", name="Sign out").click()
        page.wait_for_url(re.compile(r"/login\?notice=signed-out"))
        page.goto(f"{base}/dashboard")
        page.wait_for_url(re.compile(r"/login\?notice=signin-needed"))

    await in_browser(scenario)


async def test_forgot_and_reset_password(start_web: StartWeb, in_browser: InBrowser[Any]) -> None:
    service = await start_web()
    base = service.url
    email = unique_email("reset")
    async with service.client() as client:
        registered = await client.post(
            "/api/auth/register", json={"email": email, "password": PASSWORD}
        )
        assert registered.status_code == 201
        login = {"email": email, "password": PASSWORD}
        assert (await client.post("/api/auth/login", json=login)).status_code == 200
        minted = await client.post(
            "/api/account/keys", json={"label": "thief's laptop", "scopes": ["read"]}
        )
        assert minted.status_code == 201, minted.text
        stolen = minted.json()["token"]

    def scenario(page: Any) -> None:
        page.goto(f"{base}/login")
        page.get_by_role("link", name="Forgot your password?").click()
        page.get_by_label("E-mail").fill(email)
        page.get_by_role("button", name="Send reset link").click()
        assert page.get_by_text("a reset link is on its way").is_visible()
        # No SMTP here: the page says where the e-mail went, never the link itself.
        outbox = page.locator("[data-outbox]").inner_text()
        assert str(service.settings.outbox_dir) in outbox and "reset-password" not in outbox
        screenshot(page, "forgot-sent")
        (message,) = service.mails_blocking("Reset your Nichescope password")
        link = re.search(r"http://\S+/reset-password\?token=\S+", message)
        assert link is not None
        assert "thief's laptop" in message  # the e-mail lists the live tokens
        page.goto(link.group(0))
        # The reset page lists them too, and revokes them unless told not to.
        assert page.get_by_text("thief's laptop").is_visible()
        assert page.get_by_label("Revoke all 1 access token").is_checked()
        screenshot(page, "reset")
        page.get_by_label("New password", exact=True).fill(NEW_PASSWORD)
        page.get_by_role("button", name="Save new password").click()
        page.wait_for_url(re.compile(r"/login\?notice=password-changed"))
        page.get_by_label("E-mail").fill(email)
        page.get_by_label("Password").fill(PASSWORD)
        page.get_by_role("button", name="Sign in").click()
        assert page.get_by_role("alert").inner_text().startswith("That e-mail and password")
        page.get_by_label("Password").fill(NEW_PASSWORD)
        page.get_by_role("button", name="Sign in").click()
        page.wait_for_url(f"{base}/dashboard")
        page.goto(link.group(0))  # single use: the dead link says so at once
        assert "invalid, already used or expired" in page.get_by_role("alert").inner_text()
        assert page.get_by_label("New password", exact=True).count() == 0

    await in_browser(scenario)
    async with service.client(headers={"Authorization": f"Bearer {stolen}"}) as thief:
        assert (await thief.get("/api/monitoring")).status_code == 401


async def test_csrf_refusal_in_the_browser(start_web: StartWeb, in_browser: InBrowser[Any]) -> None:
    service = await start_web()
    base = service.url

    def scenario(page: Any) -> None:
        _sign_up_and_in(page, base, unique_email("csrf"))
        page.goto(f"{base}/account/keys")
        missing = page.request.post(f"{base}/account/keys", form={"label": "x", "scopes": "read"})
        assert missing.status == 403
        wrong = page.request.post(
            f"{base}/account/keys", form={"label": "x", "scopes": "read", "csrf_token": "f" * 64}
        )
        assert wrong.status == 403
        # A tampered form, submitted by the browser itself, gets the refusal page.
        page.locator("form[action='/account/keys'] input[name=csrf_token]").evaluate(
            "input => { input.value = 'forged' }"
        )
        page.get_by_label("Name").fill("forged")
        page.get_by_role("button", name="Create key").click()
        assert page.get_by_role("heading", name="This form has expired").is_visible()
        screenshot(page, "csrf-refused")
        page.goto(f"{base}/account/keys")
        assert page.get_by_text("No keys yet").is_visible()

    await in_browser(scenario)


# authlib, inside the provider, warns that the provider package uses a deprecated hook.
@pytest.mark.filterwarnings("ignore::DeprecationWarning")
async def test_oidc_sign_in(
    start_web: StartWeb, in_browser: InBrowser[Any], oidc_provider: LocalOidcProvider
) -> None:
    service = await start_web(
        oidc_issuer=oidc_provider.issuer,
        oidc_client_id="nichescope-test",
        oidc_client_secret="test-secret",
    )
    base = service.url
    verified, unverified = unique_email("oidc"), unique_email("unverified")
    async with httpx.AsyncClient(base_url=oidc_provider.issuer) as provider:
        for sub, email, ok in (("alice", verified, True), ("mallory", unverified, False)):
            claims = {"email": email, "email_verified": ok, "name": sub.title()}
            assert (await provider.put(f"/users/{sub}", json=claims)).status_code < 300
    async with service.client() as client:  # an existing password account gets linked
        await client.post("/api/auth/register", json={"email": verified, "password": PASSWORD})

    def scenario(page: Any) -> None:
        page.goto(f"{base}/login")
        screenshot(page, "login-oidc")
        page.get_by_role("link", name="Continue with your company account").click()
        page.wait_for_url(re.compile(re.escape(oidc_provider.issuer) + "/oauth2/authorize"))
        page.locator("input[name=sub]").fill("alice")
        page.get_by_role("button", name="Authorize").click()
        page.wait_for_url(f"{base}/dashboard")
        assert verified in page.locator("header").inner_text()
        me = page.request.get(f"{base}/api/auth/me").json()
        assert me["user"]["email"] == verified and me["auth"]["via"] == "session"
        page.get_by_role("button", name="Sign out").click()

        page.get_by_role("link", name="Continue with your company account").click()
        page.locator("input[name=sub]").fill("mallory")
        page.get_by_role("button", name="Authorize").click()
        assert page.get_by_role("heading", name="Sign-in did not work").is_visible()
        assert "did not confirm your e-mail" in page.content()
        page.goto(f"{base}/dashboard")
        page.wait_for_url(re.compile(r"/login"))

    await in_browser(scenario)
    assert oidc_provider.pkce.verified == 2 and oidc_provider.pkce.refused == 0

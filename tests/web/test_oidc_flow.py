"""The OIDC routes over plain HTTP: what the callback refuses (the happy path is in the
browser suite)."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

from tests.web.conftest import StartWeb
from tests.web.oidc_provider import LocalOidcProvider


async def test_callback_refuses_a_forged_state_or_a_missing_attempt(
    start_web: StartWeb, oidc_provider: LocalOidcProvider
) -> None:
    service = await start_web(
        oidc_issuer=oidc_provider.issuer, oidc_client_id="app", oidc_client_secret="s"
    )
    async with service.client() as browser:
        start = await browser.get("/auth/oidc/start")
        assert start.status_code == 303
        query = parse_qs(urlsplit(start.headers["location"]).query)
        assert query["code_challenge_method"] == ["S256"]
        assert query["redirect_uri"] == [f"{service.url}/auth/oidc/callback"]
        assert "ns_oidc" in browser.cookies
        forged = await browser.get("/auth/oidc/callback", params={"state": "x", "code": "y"})
        assert forged.status_code == 400
        assert "does not match the one started here" in forged.text
        assert "session_token" not in browser.cookies
        cancelled = await browser.get(
            "/auth/oidc/callback", params={"error": "access_denied", "state": query["state"][0]}
        )
        assert cancelled.status_code == 400
    async with service.client() as stranger:  # a callback with no attempt started here
        lone = await stranger.get("/auth/oidc/callback", params={"state": "x", "code": "y"})
        assert lone.status_code == 400 and "not started here" in lone.text
    assert oidc_provider.pkce.verified == 0


async def test_an_unreachable_provider_is_explained(start_web: StartWeb) -> None:
    service = await start_web(oidc_issuer="http://127.0.0.1:9", oidc_client_id="app")
    async with service.client() as browser:
        login = await browser.get("/login")
        assert "Continue with your company account" in login.text
        start = await browser.get("/auth/oidc/start")
    assert start.status_code == 400
    assert "could not be reached" in start.text

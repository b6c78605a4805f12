"""Pages over plain HTTP: security headers, CSRF refusals, redirects (no browser needed)."""

from __future__ import annotations

import re
from typing import Any, cast

import httpx

from api.app import create_app
from api.settings import Settings
from api.web._blueprint import CONTENT_SECURITY_POLICY
from tests.conftest import unique_email
from tests.web.conftest import PASSWORD, StartWeb

TOKEN = re.compile(r'name="csrf_token" value="([0-9a-f]{64})"')


def csrf_of(html: str) -> str:
    found = TOKEN.search(html)
    assert found, "no CSRF token in the form"
    return found.group(1)


async def submit(
    client: httpx.AsyncClient, page: str, data: dict[str, str], action: str | None = None
) -> httpx.Response:
    """Post `data` with the CSRF token of the form on `page`, to `action` (else `page`)."""
    form = await client.get(page)
    return await client.post(action or page, data={**data, "csrf_token": csrf_of(form.text)})


async def sign_in(client: httpx.AsyncClient) -> str:
    email = unique_email("web")
    response = await submit(client, "/signup", {"email": email, "password": PASSWORD})
    assert response.status_code == 303
    response = await submit(client, "/login", {"email": email, "password": PASSWORD})
    assert response.status_code == 303 and response.headers["location"] == "/dashboard"
    return email


async def test_pages_send_a_strict_policy_and_security_headers(start_web: StartWeb) -> None:
    service = await start_web()
    async with service.client() as client:
        response = await client.get("/login")
        css = await client.get("/assets/site.css")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/html")
    policy = response.headers["content-security-policy"]
    assert "default-src 'self'" in policy and "script-src 'self'" in policy
    assert "unsafe-inline" not in policy
    assert response.headers["x-frame-options"] == "DENY"
    assert response.headers["x-content-type-options"] == "nosniff"
    assert response.headers["referrer-policy"] == "no-referrer"
    assert response.headers["cache-control"] == "no-store"
    assert "<script>" not in response.text and " style=" not in response.text
    assert css.status_code == 200 and css.headers["content-type"].startswith("text/css")
    # OIDC is not configured here: no button.
    assert "/auth/oidc/start" not in response.text


async def test_forms_without_the_right_token_are_refused(start_web: StartWeb) -> None:
    service = await start_web()
    async with service.client() as client:
        email = await sign_in(client)
        keys_page = await client.get("/account/keys")
        good = csrf_of(keys_page.text)
        for data in ({"label": "x", "scopes": "read"}, {"label": "x", "csrf_token": "0" * 64}):
            refused = await client.post("/account/keys", data=data)
            assert refused.status_code == 403
            assert refused.headers["content-type"].startswith("text/html")
            assert "This form has expired" in refused.text
        assert "No keys yet" in (await client.get("/account/keys")).text
        # Sign-out is a state change too.
        assert (await client.post("/logout", data={})).status_code == 403
        created = await client.post(
            "/account/keys", data={"label": "ok", "scopes": ["read"], "csrf_token": good}
        )
        assert created.status_code == 303 and created.headers["location"] == "/account/keys"
        shown = await client.get("/account/keys")  # the plaintext once, then never again
        assert "nsc_" in shown.text and "nsc_" not in (await client.get("/account/keys")).text
    async with service.client() as stranger:
        # No pre-session cookie and no token: a cross-site sign-in attempt.
        login = await stranger.post("/login", data={"email": email, "password": PASSWORD})
        assert login.status_code == 403
        assert "session_token" not in login.cookies


async def test_signed_out_visitors_are_sent_to_sign_in(start_web: StartWeb) -> None:
    service = await start_web()
    async with service.client() as client:
        for path in ("/dashboard", "/account/keys"):
            response = await client.get(path)
            assert response.status_code == 303
            assert response.headers["location"].startswith("/login?notice=signin-needed&next=")
        assert (await client.get("/")).headers["location"] == "/login"
        assert (await client.get("/auth/oidc/start")).status_code == 404


async def test_form_errors_are_sentences(start_web: StartWeb) -> None:
    service = await start_web()
    async with service.client() as client:
        response = await submit(client, "/signup", {"email": "not-an-email", "password": "short"})
        assert response.status_code == 422
        assert "Enter an e-mail address such as name@example.com." in response.text
        assert "Use at least 10 characters." in response.text
        assert 'aria-invalid="true"' in response.text
        wrong = await submit(client, "/login", {"email": unique_email(), "password": "x" * 12})
        assert wrong.status_code == 401
        assert "That e-mail and password do not match" in wrong.text
        # A redirect target that would leave the site is ignored.
        await sign_in(client)
        bounced = await client.get("/login", params={"next": "//evil.example/"})
        assert bounced.headers["location"] == "/dashboard"


async def test_page_sign_in_shares_the_api_limits(start_web: StartWeb) -> None:
    service = await start_web(login_failures_per_account=2)
    email = unique_email("limited")

    async def page_login(client: httpx.AsyncClient, password: str) -> httpx.Response:
        return await submit(client, "/login", {"email": email, "password": password})

    async with service.client() as client:
        await client.post("/api/auth/register", json={"email": email, "password": PASSWORD})
        wrong = await client.post("/api/auth/login", json={"email": email, "password": "wrong"})
        assert wrong.status_code == 401
        assert (await page_login(client, "also wrong")).status_code == 401
        locked = await page_login(client, PASSWORD)  # even the right password now waits
    assert locked.status_code == 429
    assert "Too many attempts. Try again in 15 minutes." in locked.text
    assert "session_token" not in client.cookies


async def test_the_emailed_trial_link_needs_a_click_and_works_once(start_web: StartWeb) -> None:
    service = await start_web()
    async with service.client() as client:
        email = await sign_in(client)
        sent = await submit(client, "/billing", {}, action="/billing/trial")
        assert sent.status_code == 303
        (mail,) = [m for m in service.outbox() if f"To: {email}" in m and "trial" in m]
        link = re.search(r"http://\S+(/billing/trial/confirm\?token=(\S+))", mail)
        assert link is not None
    async with service.client() as visitor:  # the link works signed out, from any browser
        landing = await visitor.get(link.group(1))
        assert landing.status_code == 200 and "Start my trial" in landing.text
        again = await visitor.get(link.group(1))  # opening it (a mail scanner) used nothing
        form = {"token": link.group(2), "csrf_token": csrf_of(again.text)}
        forged = await visitor.post("/billing/trial/confirm", data={"token": link.group(2)})
        assert forged.status_code == 403
        started = await visitor.post("/billing/trial/confirm", data=form)
        assert started.status_code == 303, started.text
        landed = await visitor.get(started.headers["location"])
        assert landed.status_code == 200 and "Your free trial has started" in landed.text
        assert "It runs until" in landed.text  # the date, carried by the one-shot cookie
        reused = await visitor.post("/billing/trial/confirm", data=form)
        assert reused.status_code == 410 and "cannot be used" in reused.text


async def _form_routes() -> list[str]:
    """Every path the web pages accept a POST on, any record id filled in with one that
    exists nowhere (the token is checked before the record is looked up)."""
    app = create_app(store=cast(Any, None), engine=cast(Any, None), settings=Settings())
    return [
        re.sub(r"<id:\w+>", "xx_none", rule.rule)
        for rule in app.url_map.iter_rules()
        if rule.endpoint.startswith("web.") and "POST" in (rule.methods or ())
    ]


async def test_every_form_refuses_a_post_without_its_token(start_web: StartWeb) -> None:
    routes = await _form_routes()
    assert "/monitors/xx_none/pause" in routes and "/account/keys/xx_none/revoke" in routes
    service = await start_web()
    async with service.client() as client:
        await sign_in(client)
        for path in routes:
            for data in ({}, {"csrf_token": "0" * 64}):
                refused = await client.post(path, data=data)
                assert refused.status_code == 403, path
                assert "This form has expired" in refused.text, path
        assert (await client.get("/dashboard")).status_code == 200  # still signed in


async def test_a_mistyped_address_is_a_page_for_browsers_and_problem_json_for_agents(
    start_web: StartWeb,
) -> None:
    service = await start_web()
    browser = {"Accept": "text/html,application/xhtml+xml,*/*;q=0.8"}
    async with service.client() as client:
        await sign_in(client)
        shown = await client.get("/alertz", headers=browser)
        assert shown.status_code == 404
        assert shown.headers["content-type"].startswith("text/html")
        assert "Page not found" in shown.text and 'href="/dashboard"' in shown.text
        assert shown.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
        assert shown.headers["cache-control"] == "no-store"
        # Agents, scripts and every machine path keep the documented envelope.
        for path, headers in (
            ("/alertz", {"Accept": "application/json"}),
            ("/alertz", {"Accept": "*/*"}),
            ("/api/no-such-thing", browser),
            ("/mcp/nothing", browser),
        ):
            refused = await client.get(path, headers=headers)
            assert refused.status_code == 404, path
            assert refused.headers["content-type"] == "application/problem+json", (path, headers)
            assert refused.json()["error"]["code"] == "not_found"
        # What the navigation calls a page, typed by hand, leads to it.
        for typed, page in (("/alerts", "/notifications"), ("/settings", "/account/settings"),
                            ("/account", "/account/settings")):  # fmt: skip
            led = await client.get(typed, headers=browser)
            assert led.status_code == 303 and led.headers["location"] == page, typed
        # A form posted to no route is not a page to show (nothing was done).
        posted = await client.post("/alertz", headers=browser, data={"x": "1"})
        assert posted.status_code == 404
        assert posted.headers["content-type"] == "application/problem+json"

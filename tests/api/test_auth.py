"""Accounts over real sockets, on SQLite and PostgreSQL: register, sign in/out, me, resets."""

from __future__ import annotations

import re
from http.cookies import SimpleCookie

import httpx

from tests.api.helpers import PASSWORD, assert_envelope, assert_invalid, register, signed_in
from tests.conftest import RunningService, ServiceClient, unique_email


def _set_cookie(response: httpx.Response) -> SimpleCookie:
    """The session cookie the response sets (a sign-in also sets `ns_device`)."""
    cookie = SimpleCookie()
    for header in response.headers.get_list("set-cookie"):
        if header.startswith("session_token="):
            cookie.load(header)
    return cookie


async def test_register_answers_the_same_for_new_and_taken_emails(service: RunningService) -> None:
    email = unique_email()
    async with service.client() as client:
        first = await client.post("/api/auth/register", json={"email": email, "password": PASSWORD})
        again = await client.post(
            "/api/auth/register", json={"email": email.upper(), "password": "another password"}
        )
    assert first.status_code == again.status_code == 201
    assert first.json() == again.json()
    assert "set-cookie" not in first.headers
    # The owner of the taken address is told; the original password still works.
    assert await service.mails("Someone tried to register")
    async with service.client() as client:
        ok = await client.post("/api/auth/login", json={"email": email, "password": PASSWORD})
    assert ok.status_code == 200


async def test_register_validation_errors(service: RunningService) -> None:
    async with service.client() as client:
        short = await client.post(
            "/api/auth/register", json={"email": unique_email(), "password": "short"}
        )
        bad_email = await client.post(
            "/api/auth/register", json={"email": "not-an-email", "password": PASSWORD}
        )
        extra = await client.post(
            "/api/auth/register",
            json={"email": unique_email(), "password": PASSWORD, "is_admin": True},
        )
        missing = await client.post("/api/auth/register", json={})
        not_json = await client.post("/api/auth/register", content=b"email=a")
        broken = await client.post(
            "/api/auth/register",
            content=b'{"email": ',
            headers={"Content-Type": "application/json"},
        )
    for response, field in ((short, "password"), (bad_email, "email"), (extra, "is_admin")):
        assert_invalid(response, ["body", field])
    assert_invalid(missing, ["body", "email"], ["body", "password"])
    assert_envelope(not_json, 415, "unsupported_media_type")
    assert_envelope(broken, 400, "invalid_json")


async def test_login_sets_a_hardened_cookie_and_me_works(service: RunningService) -> None:
    email = unique_email()
    async with service.client() as client:
        await register(client, email)
        response = await client.post("/api/auth/login", json={"email": email, "password": PASSWORD})
        assert response.status_code == 200
        cookie = _set_cookie(response)["session_token"]
        assert len(cookie.value) >= 40  # 256 bits, URL-safe
        assert cookie["httponly"] is True
        assert cookie["samesite"] == "Lax"
        assert cookie["max-age"] == str(30 * 24 * 3600)
        assert cookie["path"] == "/"
        me = await client.get("/api/auth/me")
    assert me.status_code == 200
    body = me.json()
    assert body["user"]["email"] == email
    assert body["auth"] == {"via": "session", "scopes": ["read", "write"], "token_id": None}
    assert body["workspace"]["id"].startswith("ws_")
    assert "password" not in me.text and "argon2" not in me.text


async def test_cookie_is_secure_by_default(service: RunningService) -> None:
    # The test service runs with NICHESCOPE_COOKIE_SECURE=0; check the default itself.
    from api.settings import Settings

    assert Settings.from_env({}).cookie_secure is True
    assert Settings.from_env({"NICHESCOPE_COOKIE_SECURE": "0"}).cookie_secure is False


async def test_wrong_password_and_unknown_email_look_the_same(service: RunningService) -> None:
    email = unique_email()
    async with service.client() as client:
        await register(client, email)
        wrong = await client.post("/api/auth/login", json={"email": email, "password": "nope nope"})
        unknown = await client.post(
            "/api/auth/login", json={"email": unique_email(), "password": "nope nope"}
        )
    assert_envelope(wrong, 401, "invalid_credentials")
    assert wrong.json() == unknown.json()
    assert "set-cookie" not in wrong.headers


async def test_every_login_gets_a_fresh_session_and_ends_the_old_one(
    service: RunningService,
) -> None:
    email = unique_email()
    async with service.client() as client:
        await register(client, email)
        # Session fixation: a cookie planted before sign-in must not become the session.
        client.cookies.set("session_token", "attacker-chosen-value-0123456789")
        first = await client.post("/api/auth/login", json={"email": email, "password": PASSWORD})
        first_id = _set_cookie(first)["session_token"].value
        assert first_id != "attacker-chosen-value-0123456789"
        client.cookies.clear()
        client.cookies.set("session_token", first_id)
        second = await client.post("/api/auth/login", json={"email": email, "password": PASSWORD})
        second_id = _set_cookie(second)["session_token"].value
    assert first_id != second_id
    async with service.client(cookies={"session_token": first_id}) as old:
        assert (await old.get("/api/auth/me")).status_code == 401
    async with service.client(cookies={"session_token": second_id}) as new:
        assert (await new.get("/api/auth/me")).status_code == 200


async def test_logout_is_idempotent_and_ends_the_session(service: RunningService) -> None:
    async with service.client() as anonymous:
        for cookies in ({}, {"session_token": "garbage"}):
            anonymous.cookies.clear()
            anonymous.cookies.update(cookies)
            response = await anonymous.post("/api/auth/logout")
            assert response.status_code == 200
            assert 'session_token=""' in response.headers["set-cookie"] or (
                "session_token=;" in response.headers["set-cookie"]
            )
    async with service.client() as client:
        await signed_in(client)
        session_id = client.cookies["session_token"]
        assert (await client.get("/api/auth/me")).status_code == 200  # now cached
        out = await client.post("/api/auth/logout")
        assert out.status_code == 200
        assert "Max-Age=0" in out.headers["set-cookie"]
        again = await client.post("/api/auth/logout")
        assert again.status_code == 200
    async with service.client(cookies={"session_token": session_id}) as replay:
        assert_envelope(await replay.get("/api/auth/me"), 401, "unauthorized")


async def test_unauthenticated_envelope_is_exactly_as_documented(service: RunningService) -> None:
    async with service.client() as client:
        response = await client.get("/api/auth/me")
    body = assert_envelope(response, 401, "unauthorized")
    error = body["error"]
    assert isinstance(error, dict)
    assert error["message"] == "Not authenticated"
    assert error["docs_url"] == "/account/keys"
    assert any("Bearer" in s for s in error["suggest"])
    assert response.headers["www-authenticate"].startswith("Bearer")


async def test_update_profile_name(client: ServiceClient) -> None:
    response = await client.patch("/api/auth/me", json={"name": "  Ada  "})
    assert response.status_code == 200
    assert response.json()["user"]["name"] == "Ada"
    too_long = await client.patch("/api/auth/me", json={"name": "x" * 201})
    assert too_long.status_code == 422


async def test_forgot_and_reset_password(service: RunningService) -> None:
    email = unique_email()
    async with service.client() as client:
        await signed_in(client, email)
        known = await client.post("/api/auth/forgot-password", json={"email": email})
        unknown = await client.post("/api/auth/forgot-password", json={"email": unique_email()})
        assert known.status_code == unknown.status_code == 200
        assert known.json() == unknown.json()
        mails = await service.mails("Reset your Nichescope password")
        assert len(mails) == 1
        match = re.search(r"/reset-password\?token=([A-Za-z0-9_\-]+)", mails[0])
        assert match, mails[0]
        token = match.group(1)

        weak = await client.post(
            "/api/auth/reset-password", json={"token": token, "password": "short"}
        )
        assert weak.status_code == 422
        reset = await client.post(
            "/api/auth/reset-password", json={"token": token, "password": "a brand new password"}
        )
        assert reset.status_code == 200
        # Every session of the user ended, including this one.
        assert (await client.get("/api/auth/me")).status_code == 401
        reused = await client.post(
            "/api/auth/reset-password", json={"token": token, "password": "yet another password"}
        )
        assert_envelope(reused, 400, "invalid_token")
        bogus = await client.post(
            "/api/auth/reset-password", json={"token": "bogus", "password": "yet another password"}
        )
        assert_envelope(bogus, 400, "invalid_token")
        old = await client.post("/api/auth/login", json={"email": email, "password": PASSWORD})
        assert old.status_code == 401
        new = await client.post(
            "/api/auth/login", json={"email": email, "password": "a brand new password"}
        )
        assert new.status_code == 200

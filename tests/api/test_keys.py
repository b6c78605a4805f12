"""Personal access tokens: created from a browser session only, scoped, revocable at once."""

from __future__ import annotations

from tests.api.helpers import assert_envelope, bearer, create_token, signed_in
from tests.conftest import RunningService, ServiceClient


async def test_token_is_shown_once_and_never_listed(client: ServiceClient) -> None:
    created = await client.post("/api/account/keys", json={"label": "ci", "scopes": ["read"]})
    assert created.status_code == 201
    body = created.json()
    token = body["token"]
    assert token.startswith("nsc_") and len(token) >= 4 + 43
    assert "shown once" in body["warning"]
    listed = await client.get("/api/account/keys")
    assert listed.status_code == 200
    keys = listed.json()["keys"]
    assert [k["label"] for k in keys] == ["ci"]
    assert token not in listed.text
    assert token.removeprefix("nsc_") not in listed.text
    assert set(keys[0]) == {
        "id",
        "label",
        "scopes",
        "created_at",
        "last_used_at",
        "revoked_at",
        "revoked",
    }


async def test_token_authenticates_and_records_last_use(service: RunningService) -> None:
    async with service.client() as browser:
        email = await signed_in(browser)
        token = await create_token(browser, ["read"])
        async with service.client() as agent:
            me = await agent.get("/api/auth/me", headers=bearer(token))
        assert me.status_code == 200
        assert me.json()["user"]["email"] == email
        assert me.json()["auth"]["via"] == "token"
        assert me.json()["auth"]["scopes"] == ["read"]
        keys = (await browser.get("/api/account/keys")).json()["keys"]
    assert keys[0]["last_used_at"] is not None


async def test_scopes_are_enforced(service: RunningService) -> None:
    async with service.client() as browser:
        await signed_in(browser)
        read_only = await create_token(browser, ["read"])
        write_only = await create_token(browser, ["write"])
        both = await create_token(browser, ["write", "read"])
    async with service.client() as agent:
        denied = await agent.patch("/api/auth/me", json={"name": "x"}, headers=bearer(read_only))
        assert_envelope(denied, 403, "insufficient_scope")
        allowed = await agent.patch("/api/auth/me", json={"name": "x"}, headers=bearer(write_only))
        assert allowed.status_code == 200
        no_read = await agent.get("/api/auth/me", headers=bearer(write_only))
        assert_envelope(no_read, 403, "insufficient_scope")
        assert (await agent.get("/api/auth/me", headers=bearer(both))).status_code == 200


async def test_tokens_cannot_manage_tokens(service: RunningService) -> None:
    async with service.client() as browser:
        await signed_in(browser)
        token = await create_token(browser, ["read", "write"])
        key_id = (await browser.get("/api/account/keys")).json()["keys"][0]["id"]
    async with service.client() as agent:
        for response in (
            await agent.get("/api/account/keys", headers=bearer(token)),
            await agent.post(
                "/api/account/keys", json={"label": "x", "scopes": ["read"]}, headers=bearer(token)
            ),
            await agent.delete(f"/api/account/keys/{key_id}", headers=bearer(token)),
        ):
            assert_envelope(response, 403, "forbidden")


async def test_revocation_is_immediate_and_scoped_to_the_owner(service: RunningService) -> None:
    async with service.client() as owner, service.client() as stranger:
        await signed_in(owner)
        await signed_in(stranger)
        token = await create_token(owner, ["read"])
        key_id = (await owner.get("/api/account/keys")).json()["keys"][0]["id"]
        async with service.client() as agent:
            assert (await agent.get("/api/auth/me", headers=bearer(token))).status_code == 200
            foreign = await stranger.delete(f"/api/account/keys/{key_id}")
            assert_envelope(foreign, 404, "not_found")
            assert (await agent.get("/api/auth/me", headers=bearer(token))).status_code == 200
            revoked = await owner.delete(f"/api/account/keys/{key_id}")
            assert revoked.status_code == 200 and revoked.json()["revoked"] is True
            assert_envelope(
                await agent.get("/api/auth/me", headers=bearer(token)), 401, "unauthorized"
            )
        again = await owner.delete(f"/api/account/keys/{key_id}")
        assert again.status_code == 200
        listed = (await owner.get("/api/account/keys")).json()["keys"]
        assert listed[0]["revoked"] is True
        assert (await stranger.get("/api/account/keys")).json()["keys"] == []


async def test_bad_credentials_are_401(service: RunningService) -> None:
    async with service.client() as browser:
        await signed_in(browser)
        token = await create_token(browser, ["read"])
    async with service.client() as agent:
        for header in (
            "Bearer",
            "Bearer nsc_",
            "Bearer nsc_" + "A" * 43,
            "Basic dXNlcjpwYXNz",
            f"Token {token}",
            f"Bearer {token}x",
            "Bearer " + token.replace("nsc_", "abc_"),
        ):
            response = await agent.get("/api/auth/me", headers={"Authorization": header})
            assert_envelope(response, 401, "unauthorized")


async def test_a_bearer_header_never_falls_back_to_the_cookie(service: RunningService) -> None:
    async with service.client() as browser:
        await signed_in(browser)
        response = await browser.get("/api/auth/me", headers=bearer("nsc_" + "B" * 43))
    assert_envelope(response, 401, "unauthorized")


async def test_key_validation(service: RunningService) -> None:
    async with service.client() as browser:
        await signed_in(browser)
        for body in (
            {"label": "x", "scopes": []},
            {"label": "x", "scopes": ["admin"]},
            {"label": "x", "scopes": ["read", "read"]},
            {"label": "   ", "scopes": ["read"]},
            {"label": "x" * 101, "scopes": ["read"]},
            {"scopes": ["read"]},
        ):
            response = await browser.post("/api/account/keys", json=body)
            assert response.status_code == 422, (body, response.text)
    async with service.client() as anonymous:
        response = await anonymous.post(
            "/api/account/keys", json={"label": "x", "scopes": ["read"]}
        )
    assert_envelope(response, 401, "unauthorized")

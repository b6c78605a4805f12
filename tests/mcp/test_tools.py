"""`tools/call` over raw HTTP: PAT authentication and scopes, whoami, argument errors."""

from __future__ import annotations

import json

import jsonschema

from tests.api.helpers import assert_envelope, bearer, create_token, signed_in
from tests.conftest import RunningService
from tests.mcp.helpers import call_tool, post, request, rpc_error


async def test_whoami_with_a_read_token_and_argument_errors(service: RunningService) -> None:
    async with service.client() as browser, service.client() as agent:
        email = await signed_in(browser)
        token = await create_token(browser, ["read"])
        auth = bearer(token)

        response = await call_tool(agent, "whoami", {}, auth)
        assert response.status_code == 200, response.text
        result = response.json()["result"]
        assert result["isError"] is False
        structured = result["structuredContent"]
        assert structured["user"]["email"] == email
        assert structured["auth"] == {
            "via": "token",
            "scopes": ["read"],
            "token_id": structured["auth"]["token_id"],
        }
        assert json.loads(result["content"][0]["text"]) == structured
        assert result["content"][0]["type"] == "text"
        listed = (await post(agent, request("tools/list"))).json()["result"]["tools"]
        schema = next(t for t in listed if t["name"] == "whoami")["outputSchema"]
        jsonschema.validate(structured, schema)
        # The same document as the REST call with the same token.
        assert (await agent.get("/api/auth/me", headers=auth)).json() == structured

        # Arguments omitted is fine; wrong ones, a wrong shape or an unknown tool are -32602.
        assert (await call_tool(agent, "whoami", None, auth)).json()["result"]["isError"] is False
        extra = await call_tool(agent, "whoami", {"verbose": True}, auth)
        assert rpc_error(extra, 200, -32602)["error"]["data"]["errors"]
        rpc_error(
            await post(agent, request("tools/call", {"name": "whoami", "arguments": []}), auth),
            200,
            -32602,
        )
        rpc_error(await post(agent, request("tools/call", {"arguments": {}}), auth), 200, -32602)
        unknown = rpc_error(await call_tool(agent, "list_everything", {}, auth), 200, -32602)
        assert "whoami" in unknown["error"]["data"]["known"]


async def test_tools_call_refusals(service: RunningService) -> None:
    async with service.client() as browser, service.client() as agent:
        await signed_in(browser)
        write_only = await create_token(browser, ["write"])
        created = await browser.post(
            "/api/account/keys", json={"label": "to revoke", "scopes": ["read"]}
        )
        revoked, key_id = created.json()["token"], created.json()["id"]
        assert (await browser.delete(f"/api/account/keys/{key_id}")).status_code == 200

        for headers in (
            {},
            {"Authorization": f"Bearer {revoked}"},
            {"Authorization": "Bearer nsc_" + "x" * 43},
            {"Authorization": "Bearer not-a-token"},
            {"Authorization": "Basic dXNlcjpwYXNz"},
        ):
            response = await call_tool(agent, "whoami", {}, headers)
            body = assert_envelope(response, 401, "unauthorized")
            assert body["error"]["docs_url"] == "/account/keys"  # type: ignore[index]
            assert response.headers["www-authenticate"].startswith("Bearer")

        # A browser session cookie is never a credential on /mcp.
        assert_envelope(await call_tool(browser, "whoami", {}), 401, "unauthorized")

        scoped = await call_tool(agent, "whoami", {}, bearer(write_only))
        assert_envelope(scoped, 403, "insufficient_scope")
        assert 'error="insufficient_scope"' in scoped.headers["www-authenticate"]

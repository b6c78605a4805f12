"""A password reset can evict a thief's access tokens, not only their sessions (#21, item 9).

Before: a reset ended every session while every personal access token kept working, so
recovering a stolen account left the thief's tokens alive. The reset e-mail and page now list
the live tokens, and a reset revokes them all unless told not to (`revoke_tokens`, default on;
the page's box is ticked by default: tests/web/test_browser.py).
"""

from __future__ import annotations

import re

from tests.api.helpers import signed_in
from tests.conftest import RunningService, ServiceClient, unique_email

NEW_PASSWORD = "a brand new password"


async def _reset_link_token(client: ServiceClient, email: str) -> tuple[str, str]:
    """Ask for a reset; the e-mail's text and its link's token."""
    assert (await client.post("/api/auth/forgot-password", json={"email": email})).is_success
    (message,) = await client.service.mails("Reset your Nichescope password", email)
    match = re.search(r"/reset-password\?token=([A-Za-z0-9_\-]+)", message)
    assert match, message
    return message, match.group(1)


async def _token(client: ServiceClient, label: str) -> str:
    minted = await client.post("/api/account/keys", json={"label": label, "scopes": ["read"]})
    assert minted.status_code == 201, minted.text
    return str(minted.json()["token"])


async def _works(service: RunningService, token: str) -> bool:
    async with service.client(headers={"Authorization": f"Bearer {token}"}) as agent:
        answer = await agent.get("/api/monitoring")
        assert answer.status_code in (200, 401), answer.text
        return answer.status_code == 200


async def test_a_reset_lists_and_revokes_every_access_token(service: RunningService) -> None:
    email = unique_email("victim")
    async with service.client() as client:
        await signed_in(client, email)
        tokens = [await _token(client, label) for label in ("ci runner", "thief's script")]
        revoked_before = await _token(client, "old and revoked")
        keys = (await client.get("/api/account/keys")).json()
        old = next(k for k in keys["keys"] if k["label"] == "old and revoked")
        assert (await client.delete(f"/api/account/keys/{old['id']}")).is_success
        message, reset_token = await _reset_link_token(client, email)
        assert "2 active access token(s)" in message
        assert "ci runner" in message and "thief's script" in message
        assert "old and revoked" not in message
        reset = await client.post(
            "/api/auth/reset-password", json={"token": reset_token, "password": NEW_PASSWORD}
        )
        assert reset.status_code == 200, reset.text
    for token in [*tokens, revoked_before]:
        assert not await _works(service, token)


async def test_a_reset_can_keep_the_tokens_when_asked(service: RunningService) -> None:
    email = unique_email("keeper")
    async with service.client() as client:
        await signed_in(client, email)
        token = await _token(client, "my own agent")
        _, reset_token = await _reset_link_token(client, email)
        reset = await client.post(
            "/api/auth/reset-password",
            json={"token": reset_token, "password": NEW_PASSWORD, "revoke_tokens": False},
        )
        assert reset.status_code == 200, reset.text
    assert await _works(service, token)

"""Small helpers for API tests: sign up and sign in over the real HTTP interface."""

from __future__ import annotations

import httpx

from tests.conftest import unique_email

PASSWORD = "correct horse battery"


async def register(client: httpx.AsyncClient, email: str, password: str = PASSWORD) -> None:
    response = await client.post("/api/auth/register", json={"email": email, "password": password})
    assert response.status_code == 201, response.text


async def signed_in(client: httpx.AsyncClient, email: str | None = None) -> str:
    """Register and sign in `client` (its cookie jar keeps the session); returns the e-mail."""
    email = email or unique_email()
    await register(client, email)
    response = await client.post("/api/auth/login", json={"email": email, "password": PASSWORD})
    assert response.status_code == 200, response.text
    return email


async def create_token(client: httpx.AsyncClient, scopes: list[str], label: str = "agent") -> str:
    response = await client.post("/api/account/keys", json={"label": label, "scopes": scopes})
    assert response.status_code == 201, response.text
    token = response.json()["token"]
    assert isinstance(token, str)
    return token


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def assert_envelope(response: httpx.Response, status: int, code: str) -> dict[str, object]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    body = response.json()
    assert body["status"] == status
    assert isinstance(body["title"], str) and body["title"]
    error = body["error"]
    assert error["code"] == code
    assert isinstance(error["message"], str) and error["message"]
    assert isinstance(error["docs_url"], str) and error["docs_url"].startswith("/")
    assert isinstance(error["suggest"], list)
    assert "Traceback" not in response.text
    return body  # type: ignore[no-any-return]

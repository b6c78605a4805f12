"""Small helpers for API tests: sign up and sign in over the real HTTP interface."""

from __future__ import annotations

import re
from typing import Any

import httpx
import trio

from tests.conftest import ServiceClient, unique_email

PASSWORD = "correct horse battery"


async def register(client: httpx.AsyncClient, email: str, password: str = PASSWORD) -> None:
    response = await client.post("/api/auth/register", json={"email": email, "password": password})
    assert response.status_code == 201, response.text


async def signed_in(
    client: httpx.AsyncClient, email: str | None = None, *, trial: bool = True
) -> str:
    """Register and sign in `client` (its cookie jar keeps the session); returns the e-mail.

    With `trial` (and a client of a test service writing mail to its outbox), the free trial
    is started the way a person starts it, through the e-mailed link, so that the account
    may create things. Services with SMTP (the billing tests) manage trials themselves.
    """
    email = email or unique_email()
    await register(client, email)
    response = await client.post("/api/auth/login", json={"email": email, "password": PASSWORD})
    assert response.status_code == 200, response.text
    if trial and isinstance(client, ServiceClient) and not client.service.settings.smtp_url:
        await start_trial(client, email)
    return email


async def start_trial(client: ServiceClient, email: str) -> None:
    started = await client.post("/api/billing/trial/start", json={"email": email})
    assert started.status_code == 200, started.text
    mails = [m for m in client.service.outbox() if f"To: {email}" in m and "trial" in m]
    match = re.search(r"/billing/trial/confirm\?token=([A-Za-z0-9_\-]+)", mails[-1])
    assert match, mails[-1]
    confirmed = await client.get("/api/billing/trial/confirm", params={"token": match.group(1)})
    assert confirmed.status_code == 200, confirmed.text


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


def assert_invalid(response: httpx.Response, *locs: list[str | int]) -> list[dict[str, Any]]:
    """A 422 `invalid_request` envelope whose `errors` list each of `locs`; those errors."""
    body: dict[str, Any] = assert_envelope(response, 422, "invalid_request")
    errors: list[dict[str, Any]] = body["errors"]
    assert body["error"]["errors"] == errors and 1 <= len(errors) <= body["error_count"]
    assert all(set(item) == {"loc", "field", "msg", "type"} for item in errors), errors
    assert all(item["loc"][0] in {"body", "query"} for item in errors), errors
    listed = [item["loc"] for item in errors]
    assert all(loc in listed for loc in locs), (locs, listed)
    return errors


async def wait_active(client: httpx.AsyncClient, monitor_id: str) -> dict[str, object]:
    """Poll the monitor until its bootstrap made it `active`; its JSON then."""
    with trio.fail_after(60):
        while True:
            body = (await client.get(f"/api/monitoring/{monitor_id}")).json()
            if body["status"] == "active":
                return body  # type: ignore[no-any-return]
            await trio.sleep(0.05)


async def start_monitor(
    client: httpx.AsyncClient, url: str, interval_seconds: int | None = 60, **body: object
) -> dict[str, object]:
    """Start a monitor of `url` (`interval_seconds` None: the plan's default); its JSON."""
    interval = {} if interval_seconds is None else {"interval_seconds": interval_seconds}
    response = await client.post("/api/monitoring/start", json={"url": url, **interval, **body})
    assert response.status_code == 202, response.text
    return response.json()  # type: ignore[no-any-return]


async def active_monitor(
    client: httpx.AsyncClient, url: str, interval_seconds: int | None = 60
) -> str:
    """The id of a monitor of `url`, started and past its bootstrap (`active`)."""
    monitor_id = str((await start_monitor(client, url, interval_seconds))["id"])
    await wait_active(client, monitor_id)
    return monitor_id


async def resume_until_sold(client: httpx.AsyncClient, monitor_id: str, sold: int) -> None:
    """Resume the monitor (it polls at once), then wait until it counts `sold` sales."""
    await client.post(f"/api/monitoring/{monitor_id}/resume")
    with trio.fail_after(60):
        while (await client.get(f"/api/monitoring/{monitor_id}")).json()["counts"]["sold"] < sold:
            await trio.sleep(0.05)


async def wait_finished_run(client: httpx.AsyncClient, run_id: str) -> dict[str, object]:
    """Poll the run until it has ended (succeeded, failed or cancelled); its JSON then."""
    with trio.fail_after(30):
        while True:
            run = (await client.get(f"/api/runs/{run_id}")).json()
            if run["state"] in {"succeeded", "failed", "cancelled"}:
                return run  # type: ignore[no-any-return]
            await trio.sleep(0.05)

"""Health, status, error model, limits and the OpenAPI description."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import jsonschema
import trio

from api.settings import Settings
from tests.api.helpers import PASSWORD, assert_envelope, register
from tests.conftest import RunningService, start_service, unique_email


async def test_health_and_status(service: RunningService) -> None:
    async with service.client() as client:
        health = await client.get("/health")
        status = await client.get("/api/status")
    assert health.status_code == 200
    assert health.json() == {"status": "ok", "database": "ok"}
    body = status.json()
    assert body["service"] == "nichescope"
    assert body["interface_version"] == "1.0.0"
    assert body["node_id"] == service.settings.node_id
    assert body["uptime_seconds"] >= 0
    assert body["database"] in {"sqlite", "postgresql"}


async def test_health_is_503_when_the_database_is_down(
    settings: Settings, nursery: trio.Nursery
) -> None:
    # Port 1 on loopback: nothing listens, so every connection is refused.
    down = settings.model_copy(
        update={"database_url": "postgresql+asyncpg://postgres@127.0.0.1:1/nothing"}
    )
    running, stop = await start_service(nursery, down)
    async with running.client() as client:
        health = await client.get("/health")
        login = await client.post(
            "/api/auth/login", json={"email": unique_email(), "password": PASSWORD}
        )
    stop.set()
    assert_envelope(health, 503, "unavailable")
    assert_envelope(login, 503, "unavailable")


async def test_unknown_route_and_wrong_method_use_the_envelope(service: RunningService) -> None:
    async with service.client() as client:
        missing = await client.get("/api/nothing-here")
        wrong = await client.delete("/api/auth/login")
    assert_envelope(missing, 404, "not_found")
    assert_envelope(wrong, 405, "method_not_allowed")
    assert "POST" in wrong.headers["allow"]


async def test_oversized_body_is_refused(service: RunningService) -> None:
    async with service.client() as client:
        response = await client.post(
            "/api/auth/register",
            content=b'{"email": "' + b"a" * (service.settings.max_body_bytes + 10) + b'"}',
            headers={"Content-Type": "application/json"},
        )
    assert_envelope(response, 413, "payload_too_large")


async def test_login_is_rate_limited_per_account(settings: Settings, nursery: trio.Nursery) -> None:
    tight = settings.model_copy(
        update={"login_failures_per_account": 3, "login_attempts_per_ip": 100}
    )
    running, stop = await start_service(nursery, tight)
    email = unique_email()
    async with running.client() as client:
        await register(client, email)
        for _ in range(3):
            wrong = await client.post("/api/auth/login", json={"email": email, "password": "x"})
            assert wrong.status_code == 401
        # Locked now, even with the right password: guessing cannot continue.
        locked = await client.post("/api/auth/login", json={"email": email, "password": PASSWORD})
        other = await client.post(
            "/api/auth/login", json={"email": unique_email(), "password": "x"}
        )
    stop.set()
    body = assert_envelope(locked, 429, "rate_limited")
    assert int(locked.headers["retry-after"]) == body["retry_after_seconds"]
    assert 0 < int(locked.headers["retry-after"]) <= 900
    assert other.status_code == 401  # another account is not affected


async def test_login_is_rate_limited_per_ip(settings: Settings, nursery: trio.Nursery) -> None:
    tight = settings.model_copy(update={"login_attempts_per_ip": 4})
    running, stop = await start_service(nursery, tight)
    async with running.client() as client:
        codes = [
            (
                await client.post(
                    "/api/auth/login", json={"email": unique_email(), "password": "x"}
                )
            ).status_code
            for _ in range(6)
        ]
    stop.set()
    assert codes == [401, 401, 401, 401, 429, 429]


async def test_openapi_document(service: RunningService) -> None:
    async with service.client() as client:
        document = (await client.get("/openapi.json")).json()
    assert document["openapi"] == "3.1.0"
    assert document["info"]["version"] == "1.0.0"
    schemes = document["components"]["securitySchemes"]
    assert schemes["bearerAuth"]["scheme"] == "bearer"
    assert schemes["cookieAuth"] == {"type": "apiKey", "in": "cookie", "name": "session_token"}
    operation_ids = []
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            operation_ids.append(operation["operationId"])
            assert re.fullmatch(r"[a-z]+[A-Za-z0-9]*", operation["operationId"]), operation
            for status in ("400", "401", "403", "404", "429", "500"):
                content = operation["responses"][status]["content"]
                if path == "/mcp" and status in ("400", "404"):
                    # The MCP transport refuses with JSON-RPC error bodies (MCP clients show
                    # those); everything else answers with the envelope.
                    schema = content["application/json"]["schema"]
                    assert schema == {"$ref": "#/components/schemas/JsonRpcError"}
                    continue
                assert content["application/problem+json"]["schema"] == {
                    "$ref": "#/components/schemas/ApiErrorEnvelope"
                }
            if operation.get("requestBody") or operation.get("parameters"):
                # Validation failures are sent as every other error is: problem+json.
                refused = operation["responses"]["422"]["content"]["application/problem+json"]
                assert refused["schema"]["$ref"].rsplit("/", 1)[-1] in {
                    "HTTPValidationError",
                    "ApiErrorEnvelope",
                }, (method, path)
            assert any(code.startswith("2") for code in operation["responses"])
    assert len(operation_ids) == len(set(operation_ids))
    assert {"registerUser", "loginUser", "getHealth", "createAccessToken"} <= set(operation_ids)
    login = document["paths"]["/api/auth/login"]["post"]
    assert login["security"] == []
    assert "RegisterRequest" in document["components"]["schemas"]
    me = document["paths"]["/api/auth/me"]["get"]
    assert {"bearerAuth": []} in me["security"]
    assert any(p["in"] == "cookie" and p["name"] == "session_token" for p in me["parameters"])
    health = document["paths"]["/health"]["get"]
    assert "503" in health["responses"] and "422" in health["responses"]
    # Every reference resolves (a dangling one makes clients and fuzzers skip that answer).
    schemas = document["components"]["schemas"]
    dangling = {
        ref for ref in _refs(document) if ref.removeprefix("#/components/schemas/") not in schemas
    }
    assert dangling == set()


def _refs(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        if isinstance(node.get("$ref"), str):
            yield node["$ref"]
        for value in node.values():
            yield from _refs(value)
    elif isinstance(node, list):
        for value in node:
            yield from _refs(value)


async def test_mcp_transport_refusals_match_their_documented_schema(
    service: RunningService,
) -> None:
    async with service.client() as client:
        document = (await client.get("/openapi.json")).json()
        refused = await client.post(
            "/mcp",
            content=b"[]",
            headers={"Content-Type": "text/plain", "Accept": "application/json"},
        )
    assert refused.status_code == 415, refused.text
    documented = document["paths"]["/mcp"]["post"]["responses"]["415"]["content"]
    schema = documented["application/json"]["schema"]
    assert schema == {"$ref": "#/components/schemas/JsonRpcError"}
    jsonschema.validate(refused.json(), document["components"]["schemas"]["JsonRpcError"])


async def test_security_headers(service: RunningService) -> None:
    async with service.client() as client:
        response = await client.get("/api/status")
    assert response.headers["x-content-type-options"] == "nosniff"
    assert response.headers["x-frame-options"] == "DENY"
    assert response.headers["cache-control"] == "no-store"

"""Validation failures answer the error envelope like every other error (issue #32, item 9):
422 `application/problem+json`, code `invalid_request`, a message naming the offending fields
and each of them in `errors`, as the OpenAPI document declares."""

from __future__ import annotations

from typing import Any

import httpx
import jsonschema

from tests.api.helpers import PASSWORD, assert_envelope, assert_invalid, signed_in
from tests.conftest import RunningService

REGISTER = "/api/auth/register"


def _conforms(response: httpx.Response, document: dict[str, Any], path: str, method: str) -> None:
    """`response` matches the 422 its operation documents (refs resolved in `document`)."""
    content = document["paths"][path][method]["responses"]["422"]["content"]
    schema = content["application/problem+json"]["schema"]
    assert schema == {"$ref": "#/components/schemas/HTTPValidationError"}
    jsonschema.validate(response.json(), {**schema, "components": document["components"]})


async def test_a_bad_body_is_a_problem_naming_its_fields(service: RunningService) -> None:
    async with service.client() as client:
        document = (await client.get("/openapi.json")).json()
        answer = await client.post(
            REGISTER, json={"email": "not-an-email", "password": "short", "is_admin": True}
        )
    errors = assert_invalid(answer, ["body", "email"], ["body", "password"], ["body", "is_admin"])
    body = answer.json()
    assert body["status"] == 422 and body["error_count"] == 3
    assert {(e["field"], e["type"]) for e in errors} >= {
        ("password", "string_too_short"),
        ("is_admin", "extra_forbidden"),
    }
    message = body["error"]["message"]
    for field in ("email", "password", "is_admin"):
        assert f"body field `{field}`" in message, message
    assert "not-an-email" not in answer.text  # the input itself is not echoed
    _conforms(answer, document, REGISTER, "post")


async def test_a_bad_query_is_a_problem_naming_its_parameters(service: RunningService) -> None:
    async with service.client() as client:
        await signed_in(client)
        document = (await client.get("/openapi.json")).json()
        answer = await client.get("/api/runs", params={"page": 0, "page_size": "many"})
    errors = assert_invalid(answer, ["query", "page"], ["query", "page_size"])
    assert {e["field"] for e in errors} == {"page", "page_size"}
    message = answer.json()["error"]["message"]
    assert "query parameter `page`" in message and "query parameter `page_size`" in message
    _conforms(answer, document, "/api/runs", "get")


async def test_a_body_that_is_not_a_json_object(service: RunningService) -> None:
    async with service.client() as client:
        broken = await client.post(
            REGISTER, content=b'{"email": ', headers={"Content-Type": "application/json"}
        )
        not_json = await client.post(REGISTER, content=b"email=a@b.co")
        a_list = await client.post(REGISTER, json=["a@b.co", PASSWORD])
    assert_envelope(broken, 400, "invalid_json")
    assert_envelope(not_json, 415, "unsupported_media_type")
    (whole,) = assert_invalid(a_list, ["body"])
    assert whole["field"] is None and whole["type"] == "model_type"
    assert "the request body" in a_list.json()["error"]["message"]


async def test_many_or_huge_offending_fields_are_listed_short(service: RunningService) -> None:
    """Unknown fields are named by the client: neither their number nor their length makes
    the answer grow without bound."""
    huge_key = "k" * 100_000
    extras = {f"extra_{i}": i for i in range(50)}
    async with service.client() as client:
        many = await client.post(REGISTER, json={"email": "a@b.co", "password": PASSWORD, **extras})
        huge = await client.post(
            REGISTER, json={"email": "a@b.co", "password": PASSWORD, huge_key: 1}
        )
    listed = assert_invalid(many)
    assert len(listed) == 20 and many.json()["error_count"] == 50
    assert many.json()["error"]["message"].endswith("(and 47 more)")
    (quoted,) = assert_invalid(huge)
    assert len(quoted["field"]) <= 80 and quoted["field"].endswith("...")
    assert len(huge.content) < 2_000


async def test_billing_sync_checkout_refuses_with_the_same_problem(
    service: RunningService,
) -> None:
    # The one body a view validates itself (it is optional) answers as the others do.
    async with service.client() as client:
        await signed_in(client)
        answer = await client.post("/api/billing/sync-checkout", json={"session_id": 7})
    (error,) = assert_invalid(answer, ["body", "session_id"])
    assert error["field"] == "session_id"

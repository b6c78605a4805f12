"""The OpenAPI links of `/openapi.json`: the ids an answer gives feed the operations that
take them (what Schemathesis' stateful phase follows), and every link resolves."""

from __future__ import annotations

import copy
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
import schemathesis

from api.analyses.actions import GRAPH_NAMES
from tests.conftest import RunningService

Document = dict[str, Any]
RESPONSE_FIELD = re.compile(r"\$response\.body#/([^/]+)(?:/.*)?")
REQUEST_PATH = re.compile(r"\$request\.path\.(\w+)")


@pytest.fixture
def database_url(tmp_path: Path, sqlite_template: Path) -> str:
    """SQLite only: the document does not depend on the database."""
    path = tmp_path / "test.db"
    shutil.copy(sqlite_template, path)
    return f"sqlite+aiosqlite:///{path}"


async def test_links_feed_ids_to_the_operations_that_take_them(service: RunningService) -> None:
    async with service.client() as client:
        document = (await client.get("/openapi.json")).json()
    assert link_problems(document) == []
    monitor_ops = {
        "getMonitor",
        "pauseMonitor",
        "resumeMonitor",
        "deleteMonitor",
        "listMonitorListings",
        "exportMonitor",
    }
    run_ops = {"getRun", "cancelRun", "replayRun", "deleteRun", "getRunLog", "downloadRunAlerts"}
    graph_ops = {"getAnalysis", "getAnalysisGraphSpec", "getAnalysisGraphSvg"}
    started = links_of(document, "startMonitor", "202")
    for target in monitor_ops:
        assert started[target]["parameters"] == {"monitor_id": "$response.body#/id"}, target
    assert started["createRun"]["requestBody"] == {"monitor_id": "$response.body#/id"}
    created = links_of(document, "createRun", "201")
    for target in run_ops:
        assert created[target]["parameters"] == {"run_id": "$response.body#/id"}, target
    run = links_of(document, "getRun", "200")
    for target in graph_ops:
        assert run[target]["parameters"] == {"analysis_id": "$response.body#/analysis_id"}
    imported = links_of(document, "importMonitoringExport", "201")
    for target in graph_ops:
        assert imported[target]["parameters"] == {"analysis_id": "$response.body#/id"}
    key = links_of(document, "createAccessToken", "201")
    assert key["revokeAccessToken"]["parameters"] == {"key_id": "$response.body#/id"}
    # The graph links reach real graphs: the document names the four.
    graph = document["paths"]["/api/analyses/{analysis_id}/graphs/{name}.svg"]["get"]
    (name,) = [p for p in graph["parameters"] if p["name"] == "name"]
    assert name["schema"] == {"type": "string", "enum": sorted(GRAPH_NAMES)}
    # And the stateful phase's own reader takes every link (it refuses the document otherwise).
    schemathesis.openapi.from_dict(document).as_state_machine()


def test_the_link_check_finds_broken_links() -> None:
    """`link_problems` is no rubber stamp: a wrong target, parameter, body field or
    response field is each reported."""
    ok: Document = {
        "paths": {
            "/things": {
                "post": {
                    "operationId": "createThing",
                    "responses": {
                        "201": {
                            "content": {"application/json": {"schema": {"$ref": "#/x/Thing"}}},
                            "links": {
                                "getThing": {
                                    "operationId": "getThing",
                                    "parameters": {"thing_id": "$response.body#/id"},
                                },
                                "createThing": {
                                    "operationId": "createThing",
                                    "requestBody": {"parent_id": "$response.body#/id"},
                                },
                            },
                        }
                    },
                    "requestBody": {
                        "content": {
                            "application/json": {
                                "schema": {"properties": {"parent_id": {"type": "string"}}}
                            }
                        }
                    },
                }
            },
            "/things/{thing_id}": {
                "get": {
                    "operationId": "getThing",
                    "parameters": [{"name": "thing_id", "in": "path"}],
                    "responses": {"200": {}},
                }
            },
        },
        "x": {"Thing": {"properties": {"id": {"type": "string"}}}},
    }
    assert link_problems(ok) == []
    broken = copy.deepcopy(ok)
    links = broken["paths"]["/things"]["post"]["responses"]["201"]["links"]
    links["getThing"]["parameters"] = {"id": "$response.body#/id"}
    links["createThing"]["requestBody"] = {"parent": "$response.body#/identifier"}
    links["deleteThing"] = {"operationId": "deleteThing"}
    assert len(link_problems(broken)) == 4


def links_of(document: Document, operation_id: str, status: str) -> dict[str, Any]:
    _, operation = operations(document)[operation_id]
    links: dict[str, Any] = operation["responses"][status]["links"]
    return links


def operations(document: Document) -> dict[str, tuple[str, Document]]:
    """Every operation by its id, with its path."""
    return {
        op["operationId"]: (path, op)
        for path, item in document["paths"].items()
        for op in item.values()
    }


def link_problems(document: Document) -> list[str]:
    """What is wrong with the document's links: a target that is no operation, a parameter
    the target does not take, a body field its JSON body does not have, an expression that
    names no field of the answer (or parameter of the request) it reads."""
    problems = []
    by_id = operations(document)
    for source_id, (_, source) in by_id.items():
        for status, response in source["responses"].items():
            for name, link in response.get("links", {}).items():
                where = f"{source_id} {status} -> {name}"
                target_id = link.get("operationId")
                if target_id not in by_id:
                    problems.append(f"{where}: no operation {target_id!r}")
                    continue
                _, target = by_id[target_id]
                taken = {p["name"] for p in target.get("parameters", [])}
                for parameter, expression in link.get("parameters", {}).items():
                    if parameter.split(".")[-1] not in taken:
                        problems.append(f"{where}: {target_id} takes no {parameter!r}")
                    problems += expression_problems(document, where, source, status, expression)
                fields = body_fields(document, target)
                for field, expression in link.get("requestBody", {}).items():
                    if field not in fields:
                        problems.append(f"{where}: {target_id}'s body has no {field!r}")
                    problems += expression_problems(document, where, source, status, expression)
    return problems


def expression_problems(
    document: Document, where: str, source: Document, status: str, expression: str
) -> list[str]:
    if match := RESPONSE_FIELD.fullmatch(expression):
        media = source["responses"][status].get("content", {}).get("application/json")
        schema = resolve(document, media["schema"]) if media else {}
        if match[1] not in schema.get("properties", {}):
            return [f"{where}: the answer has no field {match[1]!r}"]
        return []
    if match := REQUEST_PATH.fullmatch(expression):
        if match[1] not in {p["name"] for p in source.get("parameters", [])}:
            return [f"{where}: the request has no parameter {match[1]!r}"]
        return []
    return [f"{where}: unsupported expression {expression!r}"]


def body_fields(document: Document, operation: Document) -> set[str]:
    content = operation.get("requestBody", {}).get("content", {})
    if "application/json" not in content:
        return set()
    return set(resolve(document, content["application/json"]["schema"]).get("properties", {}))


def resolve(document: Document, schema: Document) -> Document:
    """A local `$ref` followed (one level, as the components here are)."""
    if "$ref" not in schema:
        return schema
    node: Any = document
    for part in schema["$ref"].removeprefix("#/").split("/"):
        node = node[part]
    resolved: Document = node
    return resolved

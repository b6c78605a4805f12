"""Every operation of `/openapi.json` is listed under one resource (issue #32, item 10): the
docs page groups by tag, and an untagged operation lands under "default"."""

from __future__ import annotations

from typing import Any, cast

import pytest

from api.app import create_app
from api.http.openapi_tags import TAG_NAMES, tag_of
from api.settings import Settings

METHODS = {"get", "put", "post", "delete", "options", "head", "patch", "trace"}


async def _document() -> dict[str, Any]:
    # The document needs neither a database nor an engine: no service is started for it.
    app = create_app(store=cast(Any, None), engine=cast(Any, None), settings=Settings())
    response = await app.test_client().get("/openapi.json")
    assert response.status_code == 200
    return cast(dict[str, Any], await response.get_json())


async def test_every_operation_has_exactly_one_declared_tag() -> None:
    document = await _document()
    declared = [tag["name"] for tag in document["tags"]]
    assert len(declared) == len(set(declared)) and set(declared) == TAG_NAMES
    assert all(tag["description"] for tag in document["tags"])
    assert "default" not in declared
    used: set[str] = set()
    for section in ("paths", "webhooks"):
        for path, item in document[section].items():
            for method, operation in item.items():
                if method not in METHODS:
                    continue
                tags = operation.get("tags")
                assert isinstance(tags, list) and len(tags) == 1, (method, path, tags)
                assert tags[0] in declared, (method, path, tags)
                used.add(tags[0])
    assert used == set(declared)  # no declared tag is left empty


async def test_tags_follow_the_resource() -> None:
    paths = (await _document())["paths"]
    expected = {
        ("/api/auth/register", "post"): "Accounts",
        ("/api/account/keys/{key_id}", "delete"): "Access tokens",
        ("/api/monitoring/{monitor_id}", "get"): "Monitors",
        ("/api/monitoring/{monitor_id}/listings", "get"): "Listings",
        ("/api/monitoring/{monitor_id}/export", "get"): "Imports and exports",
        ("/api/analysis/import-monitoring", "post"): "Imports and exports",
        ("/api/runs/{run_id}/cancel", "post"): "Runs",
        ("/api/analyses/{analysis_id}", "get"): "Analyses",
        ("/api/analyses/{analysis_id}/price-book", "get"): "Market",
        ("/api/market/buying-costs", "put"): "Market",
        ("/api/dashboard/pin", "put"): "Dashboard",
        ("/api/notifications/rules", "post"): "Notifications",
        ("/api/billing/checkout", "post"): "Billing",
        ("/api/ops/nodes", "get"): "Operators",
        ("/mcp", "post"): "MCP",
        ("/.well-known/mcp.json", "get"): "MCP",
        ("/health", "get"): "System",
    }
    assert {key: paths[key[0]][key[1]]["tags"][0] for key in expected} == expected


def test_a_path_no_resource_covers_is_refused() -> None:
    # A new route gets a resource instead of falling back to "default".
    with pytest.raises(ValueError, match="PATH_TAGS"):
        tag_of("/api/somewhere-new")
    with pytest.raises(ValueError):
        tag_of("/api/monitoringx")  # a prefix covers whole segments only

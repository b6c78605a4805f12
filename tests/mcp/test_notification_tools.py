"""`list_notification_rules` and `set_notification_rules` through the official `mcp` client:
scopes, validation, workspace scoping, and that a set replaces the monitor's own rules."""

from __future__ import annotations

from typing import Any

import pytest
from mcp import ClientSession
from mcp.shared.exceptions import MCPError

from tests.api.helpers import bearer, create_token, signed_in
from tests.conftest import RunningService
from tests.mcp.test_sdk_client import with_session

URL = "https://www.vinted.fr/catalog?catalog[]=1904"


async def test_rules_tools_with_the_sdk(service: RunningService) -> None:
    async with service.client() as owner, service.client() as stranger:
        await signed_in(owner)
        await signed_in(stranger)
        monitor = (await owner.post("/api/monitoring/start", json={"url": URL})).json()["id"]
        other = (await stranger.post("/api/monitoring/start", json={"url": URL})).json()["id"]
        default = await owner.post(
            "/api/notifications/rules", json={"name": "All", "kinds": ["monitor_error"]}
        )
        assert default.status_code == 201, default.text
        writer = await create_token(owner, ["read", "write"])
        reader = await create_token(owner, ["read"], "reader")

    rules = [
        {"name": "Deals", "kinds": ["deal"], "deal_ratio": 0.5, "filters": {"brands": ["Nike"]}},
        {"name": "Drops", "kinds": ["price_drop"], "mode": "digest", "timezone": "Europe/Paris"},
    ]

    async def work(session: ClientSession) -> dict[str, Any]:
        out: dict[str, Any] = {"listed": await session.list_tools()}
        out["before"] = await session.call_tool("list_notification_rules", {"monitor_id": monitor})
        out["set"] = await session.call_tool(
            "set_notification_rules", {"monitor_id": monitor, "rules": rules}
        )
        out["again"] = await session.call_tool(
            "set_notification_rules", {"monitor_id": monitor, "rules": rules[:1]}
        )
        out["other"] = await session.call_tool("list_notification_rules", {"monitor_id": other})
        for wrong in (
            {"monitor_id": monitor, "rules": [{"name": "x", "kinds": ["deal"], "deal_ratio": 2}]},
            {"monitor_id": monitor, "rules": [{"name": "x", "kinds": ["deal"], "colour": 1}]},
            {"monitor_id": "not an id", "rules": []},
        ):
            with pytest.raises(MCPError) as invalid:  # refused before the tool runs
                await session.call_tool("set_notification_rules", wrong)
            assert "Invalid arguments" in str(invalid.value)
        out["cleared"] = await session.call_tool(
            "set_notification_rules", {"monitor_id": monitor, "rules": []}
        )
        return out

    out = await with_session(service, bearer(writer), work)
    tools = {t.name: t for t in out["listed"].tools}
    assert tools["list_notification_rules"].annotations.read_only_hint is True
    assert tools["set_notification_rules"].annotations.destructive_hint is True
    before = out["before"].structured_content
    assert before["rules"] == [] and [r["name"] for r in before["defaults"]] == ["All"]
    assert "default" in before["effective"]
    made = out["set"].structured_content
    assert [r["name"] for r in made["rules"]] == ["Deals", "Drops"]
    assert made["rules"][0]["filters"]["brands"] == ["Nike"]
    assert all(r["monitor_id"] == monitor for r in made["rules"])
    assert [r["name"] for r in out["again"].structured_content["rules"]] == ["Deals"]
    assert out["other"].is_error is True and "not_found" in out["other"].content[0].text
    assert out["cleared"].structured_content["rules"] == []

    async def write_with_reader(session: ClientSession) -> MCPError:
        with pytest.raises(MCPError) as refused:
            await session.call_tool(
                "set_notification_rules", {"monitor_id": monitor, "rules": rules}
            )
        return refused.value

    async def read_with_reader(session: ClientSession) -> Any:
        return await session.call_tool("list_notification_rules", {"monitor_id": monitor})

    assert isinstance(await with_session(service, bearer(reader), write_with_reader), MCPError)
    read = await with_session(service, bearer(reader), read_with_reader)
    assert read.is_error is False and read.structured_content["rules"] == []

"""A refusal that a setting of the service would lift names that setting (#32): a webhook or
Discord destination the outbound guard refuses for its address names
`NICHESCOPE_OUTBOUND_ALLOW` (without saying what the host resolves to), a catalogue URL of
a site the service does not follow names `NICHESCOPE_MARKET_SITES`, and one on no
marketplace site `NICHESCOPE_MARKET_ORIGINS`; in the REST answer, the page's form error and
the MCP tool's error alike. A refusal no setting lifts (a URL of the wrong shape, a name that
does not resolve) names none."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from api.catalogue_urls import catalogue_url_refused, refuse_unaccepted_site
from api.http.errors import BadRequest
from api.notifications._channels import refused
from api.settings import Settings
from engine.notifications import DestinationRefused, check_destination
from tests.api.helpers import bearer, create_token, signed_in
from tests.conftest import RunningService
from tests.mcp.helpers import call_tool
from tests.web.test_pages import csrf_of

OUTBOUND = "NICHESCOPE_OUTBOUND_ALLOW"
TOKEN = "t" * 40


async def _resolving_private(host: str, port: int) -> list[str]:
    return ["10.20.30.40"]


async def _resolving_nothing(host: str, port: int) -> list[str]:
    raise OSError("no such name")


@pytest.mark.parametrize(
    ("kind", "url", "named"),
    [
        ("webhook", "https://hooks.example.com/in", True),  # resolves to a private address
        ("webhook", "https://127.0.0.1/hook", True),
        ("webhook", "https://2130706433/hook", True),
        ("webhook", "https://localhost/hook", True),
        ("webhook", "http://hooks.example.com/hook", True),  # plain http
        ("discord", f"https://127.0.0.1/api/webhooks/1/{TOKEN}", True),
        ("webhook", "https://user@hooks.example.com/hook", False),  # no setting admits these
        ("webhook", "https://hooks.example.com/hook#part", False),
        ("discord", f"https://evil.example/api/webhooks/1/{TOKEN}", False),  # not Discord's
    ],
)
async def test_a_destination_refusal_names_the_allowlist_when_it_would_help(
    kind: str, url: str, named: bool
) -> None:
    with pytest.raises(DestinationRefused) as made:
        await check_destination(kind, {"url": url}, resolver=_resolving_private)
    answer = refused(made.value)
    assert (OUTBOUND in answer.message) is named, answer.message
    assert "10.20.30.40" not in answer.message


async def test_a_name_that_does_not_resolve_names_no_setting() -> None:
    with pytest.raises(DestinationRefused) as made:
        await check_destination(
            "webhook", {"url": "https://hooks.invalid/in"}, resolver=_resolving_nothing
        )
    assert OUTBOUND not in refused(made.value).message


def test_a_catalogue_refusal_names_the_setting_of_its_sites() -> None:
    settings = Settings(market_sites=("www.vinted.fr",))
    with pytest.raises(BadRequest) as made:
        refuse_unaccepted_site("https://www.vinted.it/catalog", settings, doing="monitored")
    assert "NICHESCOPE_MARKET_SITES" in made.value.message
    for url, named in (
        ("https://evil.example/catalog", True),
        ("http://127.0.0.1:8100/catalog", True),
        ("http://localhost/catalog", True),
        ("https://user@evil.example/catalog", False),
        ("http://www.vinted.fr/catalog", False),  # a marketplace site: https is the rule
        ("https://www.vinted.fr/catalog?brand_ids[]=x", False),
    ):
        message = catalogue_url_refused(url, "refused", doing="analysed").message
        assert ("NICHESCOPE_MARKET_ORIGINS" in message) is named, (url, message)


async def test_rest_page_and_mcp_say_the_same(service: RunningService) -> None:
    hook = {"kind": "webhook", "name": "x", "url": "https://127.0.0.1/hook"}
    catalogue = "https://evil.example/catalog"
    async with service.client() as client:
        await signed_in(client)
        writer = await create_token(client, ["read", "write"])
        rest = await client.post("/api/notifications/channels", json=hook)
        assert rest.status_code == 422 and OUTBOUND in rest.json()["error"]["message"]
        token = csrf_of((await client.get("/notifications")).text)
        form = await client.post("/notifications/channels", data={**hook, "csrf_token": token})
        assert form.status_code == 422 and OUTBOUND in form.text
        started = await client.post("/api/monitoring/start", json={"url": catalogue})
        assert started.status_code == 400, started.text
        assert "NICHESCOPE_MARKET_ORIGINS" in started.json()["error"]["message"]
        answer = await call_tool(client, "create_monitor", {"url": catalogue}, bearer(writer))
        result: dict[str, Any] = answer.json()["result"]
        error = json.loads(result["content"][0]["text"])["error"]
        assert error["code"] == "url_refused" and "NICHESCOPE_MARKET_ORIGINS" in error["message"]
        page = await client.post(
            "/monitors", data={"csrf_token": token, "source": "url", "url": catalogue}
        )
        assert page.status_code == 400 and "NICHESCOPE_MARKET_ORIGINS" in page.text
        assert not re.search(r"10\.\d+\.\d+\.\d+", form.text)

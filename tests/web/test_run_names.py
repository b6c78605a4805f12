"""Run and analysis pages are named after their monitor's label (an import: the exported
monitor's), as the dashboard names them (`api/naming.py`); the catalogue's address is only a
link behind words ("catalogue search"), never the heading or the line under it."""

from __future__ import annotations

import html as markup
import re

import trio

from tests.api.helpers import start_trial
from tests.conftest import ServiceClient
from tests.engine.fake_market import FakeMarket
from tests.web.conftest import TRIAL, StartWeb
from tests.web.test_pages import csrf_of, sign_in

URL = "https://www.vinted.fr/catalog?catalog[]=1904&search_text=levis"
TAG = re.compile(r"<[^>]+>")


def head_of(page: str) -> tuple[str, str, list[str]]:
    """The page's heading and the line under it, as text, and that line's link targets."""
    found = re.search(r"<h1>(.*?)</h1>\s*<p class=\"lede\">(.*?)</p>", page, re.S)
    assert found, page[:2000]
    heading, lede = (markup.unescape(TAG.sub("", part)).strip() for part in found.groups())
    return heading, lede, [markup.unescape(h) for h in re.findall(r'href="([^"]+)"', found[2])]


async def analysed(client: ServiceClient, body: dict[str, object]) -> dict[str, str]:
    made = await client.post("/api/runs", json=body)
    assert made.status_code == 201, made.text
    with trio.fail_after(60):
        while (run := (await client.get(f"/api/runs/{made.json()['id']}")).json())["state"] in (
            "queued",
            "running",
        ):
            await trio.sleep(0.05)
    assert run["state"] == "succeeded", run
    return {"run": run["id"], "analysis": run["analysis_id"]}


async def test_runs_and_analyses_are_named_after_their_monitor(
    start_web: StartWeb, market: FakeMarket
) -> None:
    for item in range(1, 21):
        market.list(item, f"{10 + item % 7}.00")
    service = await start_web(plan_quotas=TRIAL, min_poll_seconds=1)
    async with service.client() as client:
        await start_trial(client, await sign_in(client))
        started = await client.post(
            "/api/monitoring/start", json={"url": URL, "label": "Levi's jeans"}
        )
        monitor = started.json()["id"]
        with trio.fail_after(60):
            while (await client.get(f"/api/monitoring/{monitor}")).json()["status"] != "active":
                await trio.sleep(0.05)
        of_monitor = await analysed(client, {"monitor_id": monitor})
        of_page = await analysed(client, {"url": URL})
        for path in (f"/runs/{of_monitor['run']}", f"/analyses/{of_monitor['analysis']}"):
            heading, lede, links = head_of((await client.get(path)).text)
            assert heading.startswith("Levi's jeans"), (path, heading)
            assert "the monitor Levi's jeans" in lede and "https://" not in lede, lede
            assert f"/monitors/{monitor}" in links and any(h.startswith(URL[:30]) for h in links)
        for path in (f"/runs/{of_page['run']}", f"/analyses/{of_page['analysis']}"):
            heading, lede, links = head_of((await client.get(path)).text)
            assert heading.startswith("Catalogue of vinted.fr: “levis”, 1 category"), heading
            assert "catalogue search" in lede and "https://" not in lede, (path, lede)
            assert links[-1].startswith("https://www.vinted.fr/catalog?"), links
        export = await client.get(f"/api/monitoring/{monitor}/export")
        imported = await client.post(
            "/analyses/import",
            data={"csrf_token": csrf_of((await client.get("/analyses")).text)},
            files={"file": ("export.json", export.content, "application/json")},
        )
        assert imported.status_code == 303, imported.text
        heading, lede, _ = head_of((await client.get(imported.headers["location"])).text)
        assert heading == "Levi's jeans" and "https://" not in lede, (heading, lede)

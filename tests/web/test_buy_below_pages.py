"""What to pay, on the pages: the settings page sets the workspace's buying costs (defaults
until then, refused when not numbers), and the dashboard's and an analysis' niches show the
buy-below price those costs give, explained in one line."""

from __future__ import annotations

import re

import trio
import trio_asyncio

from store import ConfirmedState, open_store
from tests.api.helpers import start_trial
from tests.api.test_monitor_evidence import _poll
from tests.conftest import RunningService, ServiceClient
from tests.engine.fake_market import FakeMarket
from tests.store.notify_helpers import listing
from tests.web.conftest import TRIAL, StartWeb
from tests.web.test_pages import csrf_of, sign_in

URL = "https://www.vinted.fr/catalog?catalog[]=1904"


async def _monitor_with_sales(service: RunningService, client: ServiceClient) -> str:
    """A paused monitor whose jeans sold at 20, 24 and 30 (a fourth still open)."""
    token = csrf_of((await client.get("/monitors")).text)
    started = await client.post(
        "/monitors", data={"csrf_token": token, "source": "url", "url": URL, "interval": "60"}
    )
    assert started.status_code == 303, started.text
    monitor_id = started.headers["location"].split("/")[2].split("?")[0]
    with trio.fail_after(30):
        while (await client.get(f"/api/monitoring/{monitor_id}")).json()["status"] != "active":
            await trio.sleep(0.05)
    await client.post(f"/api/monitoring/{monitor_id}/pause")
    async with trio_asyncio.open_loop(), open_store(service.settings.database_url) as store:
        seen = tuple(listing(i, p) for i, p in ((1, "20"), (2, "24"), (3, "30"), (4, "35")))
        await _poll(store, monitor_id, 1, seen=seen)
        sold = tuple(ConfirmedState(i, "sold", "item_page") for i in (1, 2, 3))
        await _poll(store, monitor_id, 2, seen=seen[3:], confirmed=sold)
    return monitor_id


async def _analysed(client: ServiceClient, monitor_id: str) -> str:
    created = await client.post("/api/runs", json={"monitor_id": monitor_id})
    assert created.status_code == 201, created.text
    with trio.fail_after(30):
        while (run := (await client.get(f"/api/runs/{created.json()['id']}")).json())["state"] in (
            "queued",
            "running",
        ):
            await trio.sleep(0.05)
    assert run["state"] == "succeeded", run
    return str(run["analysis_id"])


def _buy_below_cells(html: str) -> list[str]:
    return re.findall(r'<td data-label="Buy below" data-buy-below>([^<]*)</td>', html)


async def test_settings_set_the_buy_below_shown_on_niches(
    start_web: StartWeb, market: FakeMarket
) -> None:
    service = await start_web(plan_quotas=TRIAL, min_poll_seconds=1)
    async with service.client() as client:
        email = await sign_in(client)
        await start_trial(client, email)
        settings = await client.get("/account/settings")
        assert settings.status_code == 200
        assert 'value="4.00"' in settings.text and 'value="30"' in settings.text
        assert (
            "buy below = typical sold price x (1 - margin) - shipping - packaging" in settings.text
        )

        monitor_id = await _monitor_with_sales(service, client)
        analysis_id = await _analysed(client, monitor_id)
        for page in ("/dashboard", f"/analyses/{analysis_id}"):
            html = (await client.get(page)).text
            assert "€12.30" in _buy_below_cells(html), page  # 24 - 30% - 4.00 - 0.50
            assert "What to pay: buy below €12.30: the €24.00 it sells for" in html, page
            assert 'href="/account/settings"' in html

        token = csrf_of(settings.text)
        wrong = await client.post(
            "/account/settings",
            data={"csrf_token": token, "shipping": "two", "packaging": "0", "margin": "50"},
        )
        assert wrong.status_code == 422 and "field-error" in wrong.text
        saved = await client.post(
            "/account/settings",
            data={"csrf_token": token, "shipping": "2", "packaging": "0", "margin": "50"},
        )
        assert saved.status_code == 303 and saved.headers["location"].endswith("notice=saved")
        again = (await client.get("/account/settings")).text
        assert 'value="2.00"' in again and 'value="50"' in again
        assert "€10.00" in _buy_below_cells((await client.get("/dashboard")).text)
        no_token = await client.post(
            "/account/settings", data={"shipping": "1", "packaging": "0", "margin": "10"}
        )
        assert no_token.status_code in (400, 403)

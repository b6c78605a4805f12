"""The dashboard, an analysis and a monitor page over plain HTTP (#32 items 1, 3, 6): the
pin button and the unpin, which analysis is shown and why, the sell-through definition in the
niche table's headers, and the monitor page's two clocks, each labelled."""

from __future__ import annotations

import html
import re
import uuid
from datetime import timedelta

import trio_asyncio

from engine import decide_poll
from engine.analysis import SELL_THROUGH_DEFINITION
from store import ObservedListing, PollOutcome, open_store
from tests.api.dashboard_helpers import monitor_analysis, workspace_of
from tests.conftest import new_monitor
from tests.web.conftest import StartWeb
from tests.web.test_pages import csrf_of, sign_in

FLOOR = "≥ 7 days of history and ≥ 30 sales"


async def test_pin_from_the_analysis_page_and_unpin_on_the_dashboard(start_web: StartWeb) -> None:
    service = await start_web()
    async with service.client() as client:
        await sign_in(client)
        workspace_id = await workspace_of(client)
        async with trio_asyncio.open_loop(), open_store(service.settings.database_url) as store:
            month, _ = await monitor_analysis(store, workspace_id, days=30, sales=400, label="M")
            hours, _ = await monitor_analysis(store, workspace_id, days=0.2, sales=3, label="H")

        page = (await client.get(f"/analyses/{hours}")).text
        words = page.replace("\N{NO-BREAK SPACE}", " ")  # "≥" is kept with its number
        assert 'data-trust="below"' in page and f"below the trust floor ({FLOOR})" in words
        assert f'action="/analyses/{hours}/pin"' in page and "Pin to the dashboard" in page
        assert 'data-trust="cleared"' in (await client.get(f"/analyses/{month}")).text

        pinned = await client.post(f"/analyses/{hours}/pin", data={"csrf_token": csrf_of(page)})
        assert pinned.status_code == 303
        assert pinned.headers["location"] == "/dashboard?notice=pinned"
        board = (await client.get(pinned.headers["location"])).text
        assert 'data-dashboard-choice="pinned"' in board and "data-pinned" in board
        assert "Pinned: shown here whatever you analyse later" in board
        assert 'action="/dashboard/unpin"' in board and "data-trust-caveat" in board
        assert f'href="/analyses/{hours}"' in board
        # The analysis page says it is the pinned one, and offers to unpin it there too.
        again = (await client.get(f"/analyses/{hours}")).text
        assert "Unpin from the dashboard" in again and "Pin to the dashboard" not in again

        refused = await client.post("/dashboard/unpin", data={})
        assert refused.status_code == 403  # no CSRF token, nothing changes
        unpinned = await client.post("/dashboard/unpin", data={"csrf_token": csrf_of(board)})
        assert unpinned.headers["location"] == "/dashboard?notice=unpinned"
        board = (await client.get("/dashboard")).text
        assert 'data-dashboard-choice="trusted"' in board and "data-pinned" not in board
        assert "data-newer-analysis" in board  # the few hours' one, named with its depth

        # Another workspace's analysis is a 404 page, and pins nothing.
        async with service.client() as stranger:
            await sign_in(stranger)
            form = (await stranger.get("/dashboard")).text
            foreign = await stranger.post(
                f"/analyses/{month}/pin", data={"csrf_token": csrf_of(form)}
            )
            assert foreign.status_code == 404
            assert "data-pinned" not in (await stranger.get("/dashboard")).text


async def test_the_niche_table_says_what_sell_through_divides(start_web: StartWeb) -> None:
    service = await start_web()
    async with service.client() as client:
        await sign_in(client)
        workspace_id = await workspace_of(client)
        async with trio_asyncio.open_loop(), open_store(service.settings.database_url) as store:
            month, _ = await monitor_analysis(store, workspace_id, days=30, sales=400, label="M")
        for path in ("/dashboard", f"/analyses/{month}"):
            page = html.unescape((await client.get(path)).text)
            assert f'title="{SELL_THROUGH_DEFINITION}"' in page, path
            assert f'title="The two counts sell-through divides: {SELL_THROUGH_DEFINITION}"' in page
            assert "Sold / sold + open" in page and "Sold / listed" not in page
            # Zara: 7 sold, 2 deleted, none open: 7 / 7 beside its 100%, the 2 shown apart.
            row = page[page.index("Zara") : page.index("</tr>", page.index("Zara"))]
            assert ">100%<" in row and 'data-sold-of="7/7"' in row, row
            assert "2 deleted left out" in row
            assert SELL_THROUGH_DEFINITION in page[page.index("data-sell-through-definition") :]


async def test_the_monitor_page_names_each_clock(start_web: StartWeb) -> None:
    service = await start_web()
    async with service.client() as client:
        await sign_in(client)
        workspace_id = await workspace_of(client)
        async with trio_asyncio.open_loop(), open_store(service.settings.database_url) as store:
            monitor = await new_monitor(store, workspace_id, label="Coats", interval_seconds=60)
            service_time = store.clock()
            market_time = service_time + timedelta(hours=3, minutes=10)  # far ahead, as the demo's
            outcome = PollOutcome(
                poll_id=f"poll_{uuid.uuid4().hex}",
                started_at=service_time,
                finished_at=service_time,
                pages=1,
                seen=(ObservedListing(1, brand="Zara"),),
                confirmed=(),
                next_poll_at=service_time + timedelta(seconds=60),
                observed_at=market_time,
                clock="market",
            )
            await store.monitors.record_poll(monitor.id, outcome, decide=decide_poll)
        page = html.unescape((await client.get(f"/monitors/{monitor.id}")).text)
        checks = page[page.index('id="checks"') : page.index('id="alerts"')]
        ours = service_time.strftime("%H:%M:%S UTC")
        assert f"{ours}, our clock" in checks  # the last check, on the service's clock
        assert re.search(r"data-monitor-last [^>]*>(just now|\d+ s ago)<", checks), checks
        assert re.search(r"data-monitor-next [^>]*>in \d+ s<", checks), checks
        assert "Marketplace's clock" in checks
        assert market_time.strftime("%H:%M:%S UTC") in checks
        assert "at the last check: 3 h ahead of ours" in checks
        assert "Checks are timed on this service's clock, shown in UTC" in checks
        # Listings' times are the market's, and their column says so.
        listings = page[page.index('id="listings"') :]
        assert "Since (marketplace's clock)" in listings
        assert market_time.strftime("%d %b %Y, %H:%M UTC") in listings
        # A monitor without a label is called by what its catalogue asks for, not its URL.
        async with trio_asyncio.open_loop(), open_store(service.settings.database_url) as store:
            unnamed = await new_monitor(store, workspace_id)
        listed = (await client.get("/monitors")).text
        assert f'href="/monitors/{unnamed.id}">Catalogue of vinted.fr</a>' in listed
        own = (await client.get(f"/monitors/{unnamed.id}")).text
        assert "<title>Catalogue of vinted.fr" in own and ">https://" not in own
        # The API says the same, for the live updates (live.js) and for clients.
        one = (await client.get(f"/api/monitoring/{monitor.id}")).json()
        assert one["clock"] == "market"
        assert one["last_check_market_at"].startswith(market_time.strftime("%Y-%m-%dT%H:%M:%S"))

"""Draft ids end to end: the simulator publishes 8% of its new listings under ids allotted days
earlier with their drafts (`draft_share=0.08`), and a monitor of two categories, one page each
(so the page cap cuts both feeds), is polled over real sockets with the real client, adapter,
engine poll and database, for four simulated days. Whether item pages answer or every lookup
is refused (absence is then the only signal: `absence_polls` polls out of the window make a
likely sale), no listing is recorded sold or deleted while the simulator's truth says it was
for sale. A window bounded by ids made likely sales of listings that only slid out of sight.

SQLite only: what is judged is what the monitor decides; tests/store covers both backends.
"""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
import trio

from engine import (
    ConfirmPolicy,
    Feed,
    MarketplaceSettings,
    OriginReport,
    ScrapersMarketplace,
    open_marketplace,
)
from engine.market import PastedSession
from engine.monitors._poll import poll_once
from scrapers.simulator import (
    SimListing,
    SimulatorApp,
    SimulatorConfig,
    World,
    create_simulator_app,
    serve_app,
)
from store import ConfirmedState, Store
from tests.conftest import new_monitor

DAY = 86_400.0
SPEED = DAY / 4  # six simulated hours per second: polls about half a simulated hour apart
URL = "/catalog?catalog[]=1904&catalog[]=257&order=newest_first"


@pytest.fixture
def database_url(tmp_path: Path, sqlite_template: Path) -> str:
    path = tmp_path / "drafts.db"
    shutil.copy(sqlite_template, path)
    return f"sqlite+aiosqlite:///{path}"


class Unreadable(Exception):
    """A lookup answered with nothing that says the listing's state."""


class RefusedLookups:
    """The real marketplace for feeds; every state lookup answered without a state, as when
    item pages and the detail API are refused for good (`failure_kind` "invalid": such a
    lookup makes an absence)."""

    def __init__(self, market: ScrapersMarketplace) -> None:
        self.market = market

    async def check_url(self, url: str) -> str:
        return await self.market.check_url(url)

    async def fetch_feed(
        self, url: str, page_cap: int, *, fresh_within: float = 0.0, subscriber: str | None = None
    ) -> Feed:
        return await self.market.fetch_feed(url, page_cap)

    async def fetch_state(
        self, url: str, item_id: int, *, fresh_within: float = 0.0
    ) -> ConfirmedState:
        await trio.lowlevel.checkpoint()
        raise Unreadable(item_id)

    def failure_kind(self, error: Exception) -> str | None:
        return "invalid" if isinstance(error, Unreadable) else self.market.failure_kind(error)

    def note_suspicious(self, url: str, kind: str) -> None:
        self.market.note_suspicious(url, kind)

    def origin_reports(self) -> list[OriginReport]:
        return self.market.origin_reports()

    async def take_operator_session(
        self, site: str, cookie_text: str, user_agent: str | None
    ) -> PastedSession:
        return await self.market.take_operator_session(site, cookie_text, user_agent)


@asynccontextmanager
async def drafted() -> AsyncIterator[tuple[SimulatorApp, str, ScrapersMarketplace]]:
    config = SimulatorConfig(
        seed=8, speed=SPEED, n_listings=1200, arrivals_per_day=360, horizon_days=12,
        profile="2026-09", promoted_share=0.1, draft_share=0.08,
    )  # fmt: skip
    app = create_simulator_app(World(config))
    async with trio.open_nursery() as nursery:
        origin: str = await nursery.start(serve_app, app)
        settings = MarketplaceSettings(extra_origins=(origin,), rate=0, concurrency=8)
        async with open_marketplace(settings) as market:
            yield app, origin, market
        nursery.cancel_scope.cancel()


def open_throughout(item: SimListing, start: float, end: float) -> bool:
    """Whether the listing was open (for sale, in the feed) from `start` to `end`."""
    return item.state_at(start) == "open" and not any(start < t <= end for t, _ in item.events)


@pytest.mark.parametrize("lookups", ["answered", "refused"])
async def test_draft_ids_never_make_a_listing_for_sale_sold_or_deleted(
    store: Store, lookups: str
) -> None:
    async with drafted() as (app, origin, real):
        market = real if lookups == "answered" else RefusedLookups(real)
        monitor = await new_monitor(store, url=origin + URL, page_cap=1)
        policy = ConfirmPolicy(per_poll=40, absence_polls=2)
        spans: dict[str, tuple[float, float]] = {}  # poll id -> simulated time it spanned
        # Four simulated days and forty polls, whichever comes last: a busy machine polls
        # less often in the same simulated time, and the test needs both.
        with trio.fail_after(300):
            first = app.sim_now()
            while app.sim_now() - first < 4 * DAY or len(spans) < 40:
                start = app.sim_now()
                poll = await poll_once(store, market, monitor, now=store.clock(), policy=policy)
                spans[poll.id] = (start, app.sim_now())
                await trio.sleep(0.05)
        events = [e async for e in store.monitors.iter_events(monitor.id)]
        world = app.world

    gone = [e for e in events if e.kind == "state" and e.to_state in ("sold", "deleted")]
    wrong = [
        (e.item_id, e.to_state, e.evidence)
        for e in gone
        if open_throughout(world.by_id[e.item_id], *spans[e.poll_id])
    ]
    assert wrong == [], f"recorded gone while for sale: {wrong}"
    # The run was one where ids mislead: listings published under draft ids were watched...
    seen = {e.item_id for e in events if e.kind == "new"}
    drafts = {i for i in seen if world.by_id[i].drafted_at is not None}
    assert len(spans) >= 40 and len(drafts) >= 10, (len(spans), len(drafts))
    # ... and what left the market was still found.
    sold = {e.item_id for e in gone if e.to_state == "sold"}
    assert len(sold) >= 20, len(sold)
    if lookups == "refused":
        assert {e.evidence for e in gone} == {"absence"}

"""Scrapers benchmarks: HTML parse (selectolax vs BeautifulSoup+lxml), JSON parse, end to end.

Run: `python -m bench.bench_scrapers` (about a minute). Every figure is measured in this run.
"""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx
import trio

from scrapers import (
    ClientSettings,
    MarketClient,
    MarketplaceAdapter,
    parse_catalogue_html,
    parse_catalogue_json,
    parse_price,
)
from scrapers._prices import MONEY
from scrapers.simulator import FeedFilter, SimulatorConfig, World
from scrapers.simulator import _render as render

SECONDS = 3.0


def rate(fn: Callable[[], object], seconds: float = SECONDS) -> float:
    """Calls per second of `fn` over about `seconds`."""
    fn()  # warm-up
    n, start = 0, time.perf_counter()
    while (elapsed := time.perf_counter() - start) < seconds:
        fn()
        n += 1
    return n / elapsed


def bs4_extract(text: str) -> list[dict[str, Any]]:
    """The same extraction as `parse_catalogue_html`, with BeautifulSoup on lxml."""
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(text, "lxml")
    out = []
    for link in soup.select('a[data-testid$="--overlay-link"]'):
        match = re.search(r"product-item-id-(\d+)--overlay-link", link.get("data-testid", ""))
        href = link.get("href", "")
        id_match = re.search(r"/items/(\d+)", href)
        item_id = int(match.group(1)) if match else int(id_match.group(1)) if id_match else None
        if item_id is None:
            continue
        card = link.find_parent(attrs={"data-testid": "grid-item"}) or link.parent

        def text(suffix: str, card: Any = card) -> str | None:
            node = card.select_one(f'[data-testid$="{suffix}"]')
            return node.get_text(strip=True) if node is not None else None

        label = link.get("title", "")
        subtitle = (text("--description-subtitle") or "").split("·")
        price_text = text("--price-text")
        amounts = MONEY.findall(label.split("includes", 1)[0])
        img = card.select_one('img[data-testid$="--image--img"]')
        out.append({
            "id": item_id,
            "title": label.split(", brand:", 1)[0],
            "brand": text("--description-title"),
            "size": subtitle[0].strip(), "condition": subtitle[-1].strip(),
            "price": parse_price(price_text)[0] if price_text else None,
            "total": parse_price(amounts[-1])[0] if amounts else None,
            "favourites": int(text("favourite-count-text") or 0),
            "url": href, "photo": img.get("src") if img is not None else None,
        })  # fmt: skip
    return out


def bench_html() -> None:
    world = World(SimulatorConfig(seed=1, n_listings=2000, arrivals_per_day=0))
    items = world.live(world.config.start, FeedFilter())[:96]
    page = render.catalogue_html(world, items, world.config.start, "B")
    ours = parse_catalogue_html(page)
    theirs = bs4_extract(page)
    assert len(ours.listings) == len(theirs) == 96
    assert [x.id for x in ours.listings] == [x["id"] for x in theirs]
    assert [x.price for x in ours.listings] == [x["price"] for x in theirs]
    fast = rate(lambda: parse_catalogue_html(page))
    slow = rate(lambda: bs4_extract(page))
    print(
        f"HTML 96-card page ({len(page) // 1024} KiB): selectolax {fast:,.0f} pages/s, "
        f"BeautifulSoup+lxml {slow:,.0f} pages/s, ratio {fast / slow:.1f}x (target >= 10x)"
    )


def bench_json() -> None:
    world = World(SimulatorConfig(seed=1, n_listings=2000, arrivals_per_day=0))
    t = world.config.start
    items = world.live(t, FeedFilter())[:96]
    doc = {"items": [render.catalogue_item(world, i, t, "https://o") for i in items],
           "pagination": {"current_page": 1, "total_pages": 5, "total_entries": 480}}  # fmt: skip
    body = json.dumps(doc).encode()
    pages = rate(lambda: parse_catalogue_json(body))
    print(
        f"JSON catalogue page ({len(body) // 1024} KiB, 96 items): {pages:,.0f} pages/s = "
        f"{pages * 96:,.0f} listings/s"
    )


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def _end_to_end(origin: str, n: int = 300, concurrency: int = 8) -> tuple[float, float]:
    settings = ClientSettings.unthrottled(extra_origins=(origin,), max_retries=0)
    async with MarketClient(settings) as client:
        adapter = MarketplaceAdapter(client)
        query = await adapter.query_for(f"{origin}/catalog?order=newest_first")
        await adapter.fetch_catalogue_page(query, 1)  # warm-up + session
        url = query.api_url(1, 96)
        state = client._origin(query.origin)
        headers = {"Authorization": f"Bearer {state.token}", "X-Anon-Id": state.anon_id or ""}
        http = client._http
        assert http is not None

        async def run(job: Callable[[], Any]) -> float:
            remaining = n
            start = time.perf_counter()

            async def worker() -> None:
                nonlocal remaining
                while remaining > 0:
                    remaining -= 1
                    await job()

            async with trio.open_nursery() as nursery:
                for _ in range(concurrency):
                    nursery.start_soon(worker)
            return n / (time.perf_counter() - start)

        async def raw() -> None:
            response = await http.get(url, headers=headers)
            assert response.status_code == 200

        async def full() -> None:
            page = await adapter.fetch_catalogue_page(query, 1)
            assert len(page.listings) == 96

        raw_rate = await run(raw)
        full_rate = await run(full)
        return raw_rate, full_rate


def bench_end_to_end() -> None:
    port = _free_port()
    server = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; from scrapers.simulator import simulator_main; "
            f"sys.exit(simulator_main(['--port', '{port}', '--listings', '3000']))",
        ],
        cwd=Path(__file__).resolve().parents[1],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    origin = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                httpx.get(f"{origin}/robots.txt", timeout=1)
                break
            except httpx.HTTPError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        raw_rate, full_rate = trio.run(_end_to_end, origin)
        print(f"End to end on loopback (simulator in another process, 8 concurrent): raw httpx "
              f"{raw_rate:,.0f} req/s, fetched+parsed {full_rate:,.0f} pages/s "
              f"({full_rate / raw_rate:.0%} of raw; {full_rate * 96:,.0f} listings/s)")  # fmt: skip
    finally:
        server.terminate()
        server.wait(10)


def main() -> int:
    bench_html()
    bench_json()
    bench_end_to_end()
    return 0


if __name__ == "__main__":
    _ = Decimal  # keep the import used for readers comparing prices
    sys.exit(main())

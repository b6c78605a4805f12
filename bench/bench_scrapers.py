"""Scrapers benchmarks: HTML parse (selectolax vs BeautifulSoup+lxml), JSON parse, end to end.

Run: `python -m bench.bench_scrapers [--rounds N] [--smoke]` (about a minute; `--smoke`: a
few seconds, figures not judged). Every figure is measured in this run.

Each comparison is measured in `--rounds` rounds (3 by default), both sides once per round,
their order alternated (A B, B A, A B, ...), after both have been warmed up for as long as
one measurement lasts (selectolax is slow in its first seconds: timed first and cold, it
would lose). A ratio is the median of the per-round ratios, printed with its range.
- HTML: one 96-card catalogue page (the HTML the simulator serves), parsed into the same
  fields by `parse_catalogue_html` (selectolax) and by BeautifulSoup on lxml.
- JSON: one 96-item page of today's catalogue API (profile 2026-09) and of the legacy one,
  parsed into `Listing`s (no baseline: pages per second).
- End to end: catalogue pages of the simulator (profile 2026-09, another process, loopback,
  politeness lifted), 8 at a time, through `MarketplaceAdapter.fetch_catalogue_page` (the
  client's session, headers, guards and the parse) against raw httpx GETs of the same URL with
  the same headers and session cookies (no parse).
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx
import trio

from bench._common import free_port
from bench._fair import alternated, rate, ratios, spread
from scrapers import (
    ClientSettings,
    MarketClient,
    MarketplaceAdapter,
    parse_catalogue_html,
    parse_catalogue_json,
    parse_price,
    parse_svc_catalogue,
)
from scrapers._prices import MONEY
from scrapers.simulator import FeedFilter, SimulatorConfig, World
from scrapers.simulator import _render as render
from scrapers.simulator import _render_2026 as render_2026


@dataclass(frozen=True)
class Size:
    seconds: float  # each side's measurement in one round
    rounds: int
    pages: int  # end to end: pages per side and round


FULL, SMOKE = Size(2.0, 3, 120), Size(0.2, 1, 16)


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


def bench_html(size: Size) -> None:
    world = World(SimulatorConfig(seed=1, n_listings=2000, arrivals_per_day=0))
    items = world.live(world.config.start, FeedFilter())[:96]
    page = render.catalogue_html(world, items, world.config.start, "B")
    ours = parse_catalogue_html(page)
    theirs = bs4_extract(page)
    assert len(ours.listings) == len(theirs) == 96
    assert [x.id for x in ours.listings] == [x["id"] for x in theirs]
    assert [x.price for x in ours.listings] == [x["price"] for x in theirs]
    for parse in (parse_catalogue_html, bs4_extract):  # both warmed up alike
        rate(lambda parse=parse: parse(page), size.seconds)  # type: ignore[misc]
    fast, slow = alternated(
        lambda: rate(lambda: parse_catalogue_html(page), size.seconds),
        lambda: rate(lambda: bs4_extract(page), size.seconds),
        size.rounds,
    )
    print(
        f"HTML 96-card page ({len(page) // 1024} KiB), {size.rounds} alternated rounds of "
        f"{size.seconds:g} s each: selectolax {spread(fast, 0)} pages/s, BeautifulSoup+lxml "
        f"{spread(slow, 0)} pages/s; ratio {spread(ratios(fast, slow))}x (target >= 10x)"
    )


def bench_json(size: Size) -> None:
    world = World(SimulatorConfig(seed=1, n_listings=2000, arrivals_per_day=0))
    t = world.config.start
    items = world.live(t, FeedFilter())[:96]
    origin = "https://o"
    today = [render_2026.catalogue_item(world, i, t, origin, world.config.locale, False)
             for i in items]  # fmt: skip
    svc = json.dumps(render_2026.catalogue_body(today, 1, 96, 480, 5, t, "bench")).encode()
    legacy = json.dumps({
        "items": [render.catalogue_item(world, i, t, origin) for i in items],
        "pagination": {"current_page": 1, "total_pages": 5, "total_entries": 480},
    }).encode()  # fmt: skip
    assert len(parse_svc_catalogue(svc, origin=origin).listings) == 96
    assert len(parse_catalogue_json(legacy).listings) == 96
    for name, body, parse in (
        ("today's (2026-09)", svc, lambda: parse_svc_catalogue(svc, origin=origin)),
        ("legacy", legacy, lambda: parse_catalogue_json(legacy)),
    ):
        parse()  # warm-up
        pages = [rate(parse, size.seconds) for _ in range(size.rounds)]
        print(
            f"JSON catalogue page, {name} ({len(body) // 1024} KiB, 96 items), "
            f"{size.rounds} runs: {spread(pages, 0)} pages/s = "
            f"{statistics.median(pages) * 96:,.0f} listings/s"
        )


async def _pages_per_second(job: Callable[[], Awaitable[None]], n: int, concurrency: int) -> float:
    """`n` calls of `job`, `concurrency` at a time: calls per second."""
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


async def _end_to_end(
    origin: str, size: Size, concurrency: int = 8
) -> tuple[list[float], list[float]]:
    """(raw, full) pages per second, one figure per round each, alternated."""
    settings = ClientSettings.unthrottled(extra_origins=(origin,), max_retries=0)
    async with MarketClient(settings) as client, httpx.AsyncClient(timeout=30) as http:
        adapter = MarketplaceAdapter(client)
        query = await adapter.query_for(f"{origin}/catalog?order=newest_first")
        site = adapter.site(query.origin)
        call = (await adapter.profile_for(site)).catalogue_call(query, site, 1, adapter.per_page)
        (await http.get(f"{site.origin}/")).raise_for_status()  # the session's cookies

        async def raw() -> None:
            response = await http.get(call.url, headers=dict(call.headers))
            assert response.status_code == 200, response.status_code

        async def full() -> None:
            page = await adapter.fetch_catalogue_page(query, 1)
            assert len(page.listings) >= 96  # plus the promoted ones the feed mixes in

        for job in (raw, full):  # warm-up: connections, the adapter's session
            await _pages_per_second(job, concurrency, concurrency)
        raws: list[float] = []
        fulls: list[float] = []
        for turn in range(size.rounds):
            for job in (raw, full) if turn % 2 == 0 else (full, raw):
                figure = await _pages_per_second(job, size.pages, concurrency)
                (raws if job is raw else fulls).append(figure)
        return raws, fulls


def bench_end_to_end(size: Size) -> None:
    port = free_port()
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
        raws, fulls = trio.run(_end_to_end, origin, size)
        shares = ratios(fulls, raws)
        print(f"End to end on loopback (simulator, profile 2026-09, in another process; 8 "
              f"concurrent; {size.rounds} alternated rounds of {size.pages} pages each): raw "
              f"httpx {spread(raws, 0)} req/s, fetched+parsed {spread(fulls, 0)} pages/s "
              f"({spread([100 * x for x in shares], 0)}% of raw; "
              f"96 listings a page, plus the promoted)")  # fmt: skip
    finally:
        server.terminate()
        server.wait(10)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="bench.bench_scrapers", description=__doc__.split("\n")[0]
    )
    parser.add_argument(
        "--smoke", action="store_true", help="tiny runs, one round: checks that it runs"
    )
    parser.add_argument("--rounds", type=int, default=FULL.rounds, help="alternated rounds")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    size = SMOKE if args.smoke else replace(FULL, rounds=max(1, args.rounds))
    bench_html(size)
    bench_json(size)
    bench_end_to_end(size)
    return 0


if __name__ == "__main__":
    sys.exit(main())

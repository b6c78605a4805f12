"""What the cluster failover test reads the simulator with: a market cut into disjoint slices
(one per monitor), a simulator that notes when each answer went out and can hold one answer
back, and the request log turned into poll spans per monitor and client."""

from __future__ import annotations

import bisect
import dataclasses
import re
from collections import defaultdict
from decimal import Decimal
from typing import Any
from urllib.parse import parse_qsl

import trio

from scrapers.simulator import SimulatorApp, World

FEED_PATH = "/api/v2/catalog/items"
_ITEM_PATH = re.compile(r"^/(?:api/v2/)?items/(\d+)")
_TOP_PRICE = Decimal(100_000)
_CENT = Decimal("0.01")  # below any price step (the simulator quantises prices to 0.1)


@dataclasses.dataclass(frozen=True)
class Slice:
    """One monitor's part of the market: a category and a price range. The slices of a
    category are contiguous and disjoint, so every listing (and every request about one)
    belongs to exactly one monitor."""

    category_id: int
    price_from: Decimal
    price_to: Decimal

    def url(self, origin: str) -> str:
        return (
            f"{origin}/catalog?catalog[]={self.category_id}&price_from={self.price_from}"
            f"&price_to={self.price_to}&order=newest_first"
        )

    def holds(self, category_id: int, price: Decimal) -> bool:
        return category_id == self.category_id and self.price_from <= price <= self.price_to


def slice_market(world: World, count: int, steady_for: float) -> list[Slice]:
    """`count` slices, each holding at least one listing open from the start and untouched for
    `steady_for` simulated seconds (so that every monitor has something to compare with the
    truth), cut at distinct prices of those listings, categories in proportion to them."""
    start = world.config.start
    steady: dict[int, set[Decimal]] = defaultdict(set)
    for item in world.listings:
        if item.state_at(start) == "open" and not any(
            start < when <= start + steady_for for when, _ in item.events
        ):
            steady[item.category_id].add(item.price)
    total = sum(len(prices) for prices in steady.values())
    assert total >= count, f"only {total} steady prices for {count} slices"
    quotas = {c: count * len(p) // total for c, p in steady.items()}
    by_remainder = sorted(steady, key=lambda c: -(count * len(steady[c]) % total))
    for category in by_remainder[: count - sum(quotas.values())]:
        quotas[category] += 1
    slices: list[Slice] = []
    for category, prices in sorted(steady.items()):
        ordered, k = sorted(prices), quotas[category]
        if k == 0:
            continue
        lows = [ordered[i * len(ordered) // k] for i in range(k)]
        for i, low in enumerate(lows):
            high = lows[i + 1] - _CENT if i + 1 < k else _TOP_PRICE
            slices.append(Slice(category, low if i else Decimal(0), high))
    assert len(slices) == count
    return slices


class SliceIndex:
    """Which slice a feed request or a listing belongs to."""

    def __init__(self, slices: list[Slice], world: World) -> None:
        self._world = world
        self._by_query = {(s.category_id, s.price_from, s.price_to): s for s in slices}
        self._lows: dict[int, list[Decimal]] = defaultdict(list)
        self._slices: dict[int, list[Slice]] = defaultdict(list)
        for s in sorted(slices, key=lambda s: (s.category_id, s.price_from)):
            self._lows[s.category_id].append(s.price_from)
            self._slices[s.category_id].append(s)

    def of_listing(self, category_id: int, price: Decimal) -> Slice:
        index = bisect.bisect_right(self._lows[category_id], price) - 1
        found = self._slices[category_id][index]
        assert found.holds(category_id, price), (category_id, price, found)
        return found

    def of_request(self, entry: dict[str, Any]) -> Slice | None:
        """The slice a marketplace request reads (a feed page, or one listing), if any."""
        if entry["path"] == FEED_PATH:
            params = dict(parse_qsl(entry["query"]))
            key = (
                int(params["catalog_ids"]),
                Decimal(params["price_from"]),
                Decimal(params["price_to"]),
            )
            return self._by_query[key]
        match = _ITEM_PATH.match(entry["path"])
        if match is None:
            return None  # the warm-up, robots.txt
        item = self._world.by_id[int(match.group(1))]
        return self.of_listing(item.category_id, item.price)


class RecordingSimulator(SimulatorApp):
    """The simulator, noting in each log entry when its answer went out (`done`), and able to
    hold back the next feed answer to one client (`hold`): that client's poll is then caught
    with a marketplace request unanswered, for as long as the test likes."""

    def __init__(self, world: World) -> None:
        super().__init__(world)
        self._hold_client: str | None = None
        self.held: dict[str, Any] | None = None
        self._held_event = trio.Event()

    async def hold(self, client: str) -> dict[str, Any]:
        """Hold the next feed answer to `client`; returns its log entry once it is held."""
        self._hold_client = client
        await self._held_event.wait()
        assert self.held is not None
        return self.held

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["path"].startswith("/__sim__/"):
            await super().__call__(scope, receive, send)
            return
        # A GET's entry is appended before the app's first await: this is its index.
        index = len(self.log)

        async def noting(message: dict[str, Any]) -> None:
            entry = self.log[index]
            if message["type"] == "http.response.start" and self._holds(entry):
                self.held, self._hold_client = entry, None
                self._held_event.set()
                await trio.sleep(60)  # the client is killed meanwhile
            await send(message)
            if message["type"] == "http.response.body" and not message.get("more_body"):
                entry["done"] = trio.current_time()

        await super().__call__(scope, receive, noting)

    def _holds(self, entry: dict[str, Any]) -> bool:
        return self._hold_client == entry["client"] and entry["path"] == FEED_PATH


@dataclasses.dataclass
class Span:
    """One poll as the marketplace saw it: its feed request, then the listings it asked about,
    from the first arrival to the last answer (or the client's death, if it never came)."""

    client: str
    start: float
    end: float


def poll_spans(
    log: list[dict[str, Any]], index: SliceIndex, died: dict[str, float]
) -> dict[Slice, list[Span]]:
    """Each slice's polls, per client: a feed request opens a client's span, the listing
    requests that follow from the same client extend it. `died` maps a client to the moment
    its node was killed (an unanswered request ends there)."""
    spans: dict[Slice, list[Span]] = defaultdict(list)
    open_spans: dict[tuple[Slice, str], Span] = {}
    for entry in sorted(log, key=lambda e: e["t"]):
        found = index.of_request(entry)
        if found is None:
            continue
        client = entry["client"]
        end = entry.get("done", died.get(client, entry["t"]))
        span = open_spans.get((found, client))
        if entry["path"] == FEED_PATH or span is None:
            span = Span(client, entry["t"], end)
            open_spans[(found, client)] = span
            spans[found].append(span)
        span.end = max(span.end, end)
    return spans


def overlaps(spans: list[Span]) -> list[tuple[Span, Span]]:
    """Pairs of spans of different clients that overlap in time."""
    ordered = sorted(spans, key=lambda s: s.start)
    return [
        (a, b)
        for i, a in enumerate(ordered)
        for b in ordered[i + 1 :]
        if a.client != b.client and b.start < a.end
    ]

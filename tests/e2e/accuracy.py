"""Accuracy of niche detection against the simulator's ground truth (used by the e2e test and
by `bench/bench_accuracy.py`).

`measure` runs the whole product: the simulator with planted hot niches, the real service on a
socket with the real scrapers client, a monitor over the whole catalogue through the REST API,
then analyses over REST, and compares them with `GET /__sim__/truth`.

Clocks. The simulator's dates start at the wall clock and run `speed` times faster; every
answer states the simulated time, and the service stamps what it sees on it (the market's
clock). So the product's own output is judged as it is: the run over the monitor's history
(`POST /api/runs`) for the ranking, the monitor's export imported back with size and condition
blanked for per-(category, brand) figures. No time is mapped in the test.

Definitions (the same on both sides):
- A niche here is (category, brand), what the simulator plants. Precision@10: the ranked
  niches of the analysis (exact, then backed-off (category, brand) residuals) are read in rank
  order and each (category, brand) counts where its best niche ranks; category-only niches
  name no brand and are skipped. Of the first 10 distinct pairs, the share planted hot.
  Brand titles map to brand ids by joining the export's listings (brand title) with the
  truth's listings (brand id) on the item id.
- Per-niche figures come from an analysis of the same export with size and condition blanked,
  so that each (category, brand) pair is one niche computed by the production code.
- Window: from the monitor's first successful poll (t0) to its last (t1), as the polls' market
  stamps say. Truth sell-through = listings sold in [t0, t1] / (those + listings open at
  t1), over listings alive in the window; truth median sold price = median price of those
  sales (simulated prices never change; a relist is a new listing). The simulator's own
  `sell_through` (sold / born since the start of time) is a different quantity and is not used.
- Days to sell: the Kaplan-Meier median (sold = event; deleted, or unsold at t1 = censored;
  delayed entry at t0 for listings born before it) over the true histories, computed here
  independently of the product, of the listings the monitor saw (`seen_km_median_days`) and of
  every listing of the pair alive in the window (`true_km_median_days`).
- Random baseline: the expected precision@10 of ten distinct pairs drawn at random from the
  pairs the monitor saw = hot pairs seen / pairs seen.
"""

from __future__ import annotations

import copy
import dataclasses
import statistics
import time
from collections.abc import Mapping
from datetime import datetime
from typing import Any

import httpx
import trio

from api.settings import Settings
from scrapers.simulator import SimulatorConfig, serve_simulator
from tests.api.helpers import signed_in
from tests.conftest import ServiceClient, start_service

DAY = 86_400.0
# Simulated days the market lives past the watch it is drawn for (see `measure`).
HORIZON_MARGIN_DAYS = 15.0
TOP = 10


@dataclasses.dataclass(frozen=True)
class Scenario:
    """What to simulate: `days` of market at `speed` simulated seconds per real second."""

    seed: int = 3
    speed: float = 86_400.0
    days: float = 30.0
    n_hot: int = 10  # precision@10 needs at least ten planted hot niches to reach 1.0
    n_listings: int = 600
    arrivals_per_day: float = 120.0
    page_cap: int = 20  # the whole catalogue (~1,100 open listings) every poll
    profile: str = "2026-09"  # the marketplace's wire profile (the service detects it)


@dataclasses.dataclass(frozen=True)
class NicheError:
    category_id: int
    brand_id: int
    kind: str
    sell_through: float
    true_sell_through: float  # the market: every listing alive in the window
    seen_sell_through: float | None  # the truth of the listings the monitor saw
    median_sold: float | None
    true_median_sold: float | None
    seen_median_sold: float | None
    km_median_days: float | None = None  # the product's days to sell (None: withheld)
    sales: int = 0  # the product's sales in the niche
    seen_km_median_days: float | None = None
    true_km_median_days: float | None = None


@dataclasses.dataclass(frozen=True)
class Accuracy:
    simulated_days: float
    # The market's days (since the simulator started) of the first and last good poll, and
    # the day its world ends (listings are drawn up to it, none arrives after).
    market_days: tuple[float, float, float]
    polls: int
    listings_seen: int
    precision: float  # at 10, the run over the monitor's history
    random_baseline: float
    top_pairs: tuple[tuple[int, int], ...]
    hot: frozenset[tuple[int, int]]
    flagged: frozenset[tuple[int, int]]  # pairs with a niche the analysis flags `hot`
    niches: tuple[NicheError, ...]
    false_sales: tuple[int, ...]  # recorded sold, not sold in truth
    false_transitions: int  # recorded state changes to a state the listing never had
    sold_recorded: int

    @property
    def mae_sell_through(self) -> float:
        return statistics.fmean(abs(n.sell_through - n.true_sell_through) for n in self.niches)

    @property
    def mae_sell_through_seen(self) -> float:
        return statistics.fmean(
            abs(n.sell_through - n.seen_sell_through)
            for n in self.niches
            if n.seen_sell_through is not None
        )

    def _priced(self, seen: bool = False) -> list[tuple[float, float]]:
        pairs = [
            (n.median_sold, n.seen_median_sold if seen else n.true_median_sold) for n in self.niches
        ]
        return [(ours, true) for ours, true in pairs if ours is not None and true is not None]

    @property
    def mae_median_sold(self) -> float:
        return statistics.fmean(abs(ours - true) for ours, true in self._priced())

    @property
    def mean_relative_median_sold(self) -> float:
        return statistics.fmean(abs(ours - true) / true for ours, true in self._priced())

    @property
    def mae_median_sold_seen(self) -> float:
        return statistics.fmean(abs(ours - true) for ours, true in self._priced(seen=True))

    def timed(self, min_sales: int = 5) -> list[NicheError]:
        """Niches with at least `min_sales` sales whose days to sell both sides give."""
        return [
            n
            for n in self.niches
            if n.sales >= min_sales
            and n.km_median_days is not None
            and n.seen_km_median_days is not None
        ]

    def days_relative_error(self, min_sales: int = 5, seen: bool = True) -> float | None:
        """Median over `timed` niches of |ours - truth| / truth (None: no niche timed)."""
        errors = [
            abs(n.km_median_days - true) / true
            for n in self.timed(min_sales)
            if n.km_median_days is not None
            and (true := n.seen_km_median_days if seen else n.true_km_median_days)
        ]
        return statistics.median(errors) if errors else None

    @property
    def flag_precision(self) -> float:
        """Share of the pairs flagged hot that were planted hot (0 when none is flagged)."""
        return len(self.flagged & self.hot) / len(self.flagged) if self.flagged else 0.0

    @property
    def priced_niches(self) -> int:
        return len(self._priced())

    def lines(self) -> list[str]:
        return [
            f"simulated days watched      {self.simulated_days:.1f} ({self.polls} polls, "
            f"{self.listings_seen} listings seen)",
            "market days watched         {:.1f} to {:.1f} of {:.0f}".format(*self.market_days),
            f"precision@10                {self.precision:.2f}",
            f"baseline: random ranking    {self.random_baseline:.2f} (expected precision@10)",
            f"flagged hot                 {len(self.flagged)} pairs, "
            f"{len(self.flagged & self.hot)} of them planted hot ({len(self.hot)} planted)",
            f"niches compared             {len(self.niches)} (with sales: {self.priced_niches})",
            f"mean |d sell-through|       {self.mae_sell_through:.3f} vs the market, "
            f"{self.mae_sell_through_seen:.3f} vs the truth of the listings seen",
            f"mean |d median sold price|  {self.mae_median_sold:.2f} "
            f"({100 * self.mean_relative_median_sold:.1f}% of the true median) vs the market, "
            f"{self.mae_median_sold_seen:.2f} vs the listings seen",
            f"days to sell                {len(self.timed())} niches with >= 5 sales timed, "
            f"median |error| {_percent(self.days_relative_error())} vs the listings seen, "
            f"{_percent(self.days_relative_error(seen=False))} vs the market",
        ]


def _percent(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}%"


async def _json(client: httpx.AsyncClient, method: str, url: str, **kwargs: Any) -> Any:
    response = await client.request(method, url, **kwargs)
    assert response.is_success, (url, response.status_code, response.text[:500])
    return response.json()


async def _good_span(client: httpx.AsyncClient, monitor_id: str) -> float:
    """Seconds of market time between the monitor's first and last good polls so far."""
    export = await _json(client, "GET", f"/api/monitoring/{monitor_id}/export")
    stamps = [_at(p["market_at"]) for p in export["polls"] if p["error"] is None and p["market_at"]]
    return max(stamps) - min(stamps) if stamps else 0.0


async def _sim_time(sim: httpx.AsyncClient) -> float:
    return float((await _json(sim, "GET", "/__sim__/clock"))["sim_time"])


async def _quiet(sim: httpx.AsyncClient, seconds: float) -> None:
    """Until no marketplace request arrived for `seconds` (a poll in flight has finished)."""
    with trio.fail_after(30):
        while True:
            log = (await _json(sim, "GET", "/__sim__/requests"))["requests"]
            last = max((e["t"] for e in log), default=0.0)
            if trio.current_time() - last >= seconds:
                return
            await trio.sleep(0.2)


async def _analysis_of_run(client: ServiceClient, monitor_id: str) -> dict[str, Any]:
    run = await _json(client, "POST", "/api/runs", json={"monitor_id": monitor_id})
    with trio.fail_after(60):
        while run["state"] in ("queued", "running"):
            await trio.sleep(0.2)
            run = await _json(client, "GET", f"/api/runs/{run['id']}")
    assert run["state"] == "succeeded", run
    analysis: dict[str, Any] = await _json(client, "GET", f"/api/analyses/{run['analysis_id']}")
    return analysis["result"]  # type: ignore[no-any-return]


async def _import(client: ServiceClient, document: Mapping[str, Any]) -> dict[str, Any]:
    analysis = await _json(client, "POST", "/api/analysis/import-monitoring", json=document)
    return analysis["result"]  # type: ignore[no-any-return]


def _blanked(export: Mapping[str, Any]) -> dict[str, Any]:
    """The export with size and condition erased: each (category, brand) one niche."""
    out = copy.deepcopy(dict(export))
    for row in out["listings"]:
        row["size"] = row["condition"] = None
    return out


def km_median_days(lives: list[tuple[float, float, bool]]) -> float | None:
    """Kaplan-Meier median in days of (entry, exit, sold) lives, in days since listing, with
    delayed entry; None when the curve never falls to one half. Independent of the product's
    implementation on purpose."""
    times = sorted({exit for _, exit, sold in lives if sold})
    survival = 1.0
    for t in times:
        at_risk = sum(1 for entry, exit, _ in lives if entry < t <= exit)
        sales = sum(1 for _, exit, sold in lives if sold and exit == t)
        if at_risk:
            survival *= 1.0 - sales / at_risk
        if survival <= 0.5:
            return t
    return None


def true_days_to_sell(
    listings: list[Mapping[str, Any]], t0: float, t1: float, only: set[int] | None = None
) -> dict[tuple[int, int], float | None]:
    """(category, brand id) -> Kaplan-Meier median days to sell over [t0, t1] (module doc)."""
    lives: dict[tuple[int, int], list[tuple[float, float, bool]]] = {}
    for item in listings:
        if only is not None and int(item["id"]) not in only:
            continue
        history = [h for h in item["history"] if h[0] <= t1]
        if not history:
            continue
        born = float(history[0][0])
        last_at, last_state = float(history[-1][0]), history[-1][1]
        ended = last_state in ("sold", "deleted")
        exit = last_at if ended else t1
        if exit < t0:
            continue  # gone before the window
        pair = (int(item["category_id"]), int(item["brand_id"]))
        entry = max(t0, born)
        lives.setdefault(pair, []).append(
            ((entry - born) / DAY, (exit - born) / DAY, last_state == "sold")
        )
    return {pair: km_median_days(rows) for pair, rows in lives.items()}


def top_pairs(result: Mapping[str, Any], brand_ids: Mapping[str, int]) -> list[tuple[int, int]]:
    """The first `TOP` distinct (category, brand id) pairs in rank order (see module doc)."""
    pairs: list[tuple[int, int]] = []
    for niche in result["niches"]:
        key = niche["niche"]
        if key["level"] == "category" or key["brand"] not in brand_ids:
            continue
        pair = (int(key["category_id"]), brand_ids[key["brand"]])
        if pair not in pairs:
            pairs.append(pair)
        if len(pairs) == TOP:
            break
    return pairs


def flagged_pairs(result: Mapping[str, Any], brand_ids: Mapping[str, int]) -> set[tuple[int, int]]:
    """The (category, brand id) pairs with at least one niche flagged `hot`."""
    return {
        (int(n["niche"]["category_id"]), brand_ids[n["niche"]["brand"]])
        for n in result["niches"]
        if n["hot"] and n["niche"]["level"] != "category" and n["niche"]["brand"] in brand_ids
    }


def _state_at(history: list[list[Any]], at: float) -> str | None:
    state = None
    for when, name in history:
        if when <= at:
            state = name
    return state


def true_niches(
    listings: list[Mapping[str, Any]], t0: float, t1: float, only: set[int] | None = None
) -> dict[tuple[int, int], tuple[float | None, float | None]]:
    """(category, brand id) -> (sell-through, median sold price) over [t0, t1] (module doc),
    of every listing, or of the listings in `only`."""
    sold: dict[tuple[int, int], list[float]] = {}
    still_open: dict[tuple[int, int], int] = {}
    for item in listings:
        if only is not None and int(item["id"]) not in only:
            continue
        pair = (int(item["category_id"]), int(item["brand_id"]))
        history = [h for h in item["history"] if h[0] <= t1]
        if not history:
            continue
        sold.setdefault(pair, [])
        still_open.setdefault(pair, 0)
        final = history[-1]
        if final[1] == "sold" and final[0] >= t0:
            sold[pair].append(float(item["price"]))
        elif final[1] == "open":
            still_open[pair] += 1
    out: dict[tuple[int, int], tuple[float | None, float | None]] = {}
    for pair, prices in sold.items():
        denominator = len(prices) + still_open[pair]
        out[pair] = (
            len(prices) / denominator if denominator else None,
            statistics.median(prices) if prices else None,
        )
    return out


def _at(value: str) -> float:
    return datetime.fromisoformat(value).timestamp()


_wall = _at  # an ISO time on the service's clock, in epoch seconds (the hardening tests)


def _is_market(entry: Mapping[str, Any]) -> bool:
    """A request that reads the market (feed or listing), not robots.txt or the warm-up."""
    return str(entry["path"]).startswith(("/api/", "/catalog", "/items/"))


def _precision(pairs: list[tuple[int, int]], hot: frozenset[tuple[int, int]]) -> float:
    return sum(pair in hot for pair in pairs) / TOP


async def measure(nursery: trio.Nursery, settings: Settings, scenario: Scenario) -> Accuracy:
    """Simulate, monitor over REST for `scenario.days` simulated days, analyse, compare.

    Fails (AssertionError, trio.TooSlowError) when any step of the product does.
    """
    config = SimulatorConfig(
        start=time.time(),  # the market's dates agree with ours
        seed=scenario.seed,
        speed=scenario.speed,
        n_listings=scenario.n_listings,
        arrivals_per_day=scenario.arrivals_per_day,
        # The simulator's clock runs from its start, and a busy machine can take seconds
        # (simulated days) to start the service and days more to end the watch: a world that
        # ended during the watch would drain (no arrivals) and skew what is measured.
        horizon_days=scenario.days + HORIZON_MARGIN_DAYS,
        n_hot=scenario.n_hot,
        profile=scenario.profile,
    )
    origin: str = await nursery.start(serve_simulator, config)
    settings = settings.model_copy(
        update={
            "market_origins": (origin,),
            "market_rate": 0,
            "min_poll_seconds": 1,
            "page_cap": scenario.page_cap,
            # Polls days apart see hundreds of drop-outs each: ask about every one of them,
            # as a monitor polling every few minutes does with its few.
            "confirm_per_poll": 100_000,
        }
    )
    service, stop = await start_service(nursery, settings)
    async with httpx.AsyncClient(base_url=origin, timeout=30) as sim, service.client() as client:
        await signed_in(client)
        # Every category named, as a reseller's URL does: today's items carry no category, so
        # the service reads one feed per category and knows each listing's.
        categories = sorted(
            int(c) for c in (await _json(sim, "GET", "/__sim__/truth"))["categories"]
        )
        query = "&".join(f"catalog[]={c}" for c in categories)
        started = await _json(
            client,
            "POST",
            "/api/monitoring/start",
            json={"url": f"{origin}/catalog?{query}&order=newest_first", "interval_seconds": 1},
        )
        monitor_id = started["id"]
        # Watch until the monitor's good polls span `days` of simulated time. Polls are days
        # apart at this speed, and further apart on a busy machine (the simulator's clock runs
        # on whatever the machine does), so the span is read from what was recorded rather
        # than assumed from the time waited.
        with trio.fail_after(60):
            while not (await _json(client, "GET", f"/api/monitoring/{monitor_id}"))["polls"]:
                await trio.sleep(0.1)
        watched_from = await _sim_time(sim)
        with trio.fail_after(scenario.days * DAY / scenario.speed * 3 + 120):
            while await _sim_time(sim) - watched_from < scenario.days * DAY or (
                await _good_span(client, monitor_id) < scenario.days * DAY
            ):
                await trio.sleep(1.0)
        await _json(client, "POST", f"/api/monitoring/{monitor_id}/pause")
        await _quiet(sim, 1.0)
        monitor = await _json(client, "GET", f"/api/monitoring/{monitor_id}")
        export = await _json(client, "GET", f"/api/monitoring/{monitor_id}/export")
        ranked = await _analysis_of_run(client, monitor_id)

        # The window the monitor recorded, on the market's clock its polls were stamped with.
        good = [p for p in export["polls"] if p["error"] is None]
        assert good and all(p["clock"] == "market" for p in good), good[:3]
        t0 = min(_at(p["market_at"]) for p in good)
        t1 = max(_at(p["market_at"]) for p in good)
        per_pair = await _import(client, _blanked(export))
        truth = await _json(sim, "GET", "/__sim__/truth")
    stop.set()

    truth_items = {int(item["id"]): item for item in truth["listings"]}
    brand_ids: dict[str, int] = {}
    for row in export["listings"]:
        if row["brand"] is not None and int(row["item_id"]) in truth_items:
            brand_ids[row["brand"]] = int(truth_items[int(row["item_id"])]["brand_id"])
    hot = frozenset((int(c), int(b)) for c, b in truth["hot"])
    kinds = {(int(n["category_id"]), int(n["brand_id"])): n["kind"] for n in truth["niches"]}

    # Transitions: every recorded sale is a sale in truth, every state change a real state.
    # Confirmed sales only: a likely sale (absent, no source answered) is reported as such.
    false_sales = tuple(
        int(row["item_id"])
        for row in export["listings"]
        if row["state"] == "sold"
        and row.get("state_evidence") != "absence"
        # A sale confirmed by an item page after the poll's last feed page is stamped with
        # that page's time (hours earlier at this speed); a sold listing stays sold, so a
        # recorded sale is checked against the truth when the watch ended.
        and _state_at(truth_items[int(row["item_id"])]["history"], float(truth["sim_time"]))
        != "sold"
    )
    false_transitions = sum(
        1
        for event in export["events"]
        if event["kind"] == "state"
        and event["to_state"]
        not in {state for _, state in truth_items[int(event["item_id"])]["history"]}
    )

    truth_stats = true_niches(truth["listings"], t0, t1)
    seen_ids = {int(row["item_id"]) for row in export["listings"]}
    seen_stats = true_niches(truth["listings"], t0, t1, seen_ids)
    true_days = true_days_to_sell(truth["listings"], t0, t1)
    seen_days = true_days_to_sell(truth["listings"], t0, t1, seen_ids)
    errors: list[NicheError] = []
    for niche in per_pair["niches"]:
        key = niche["niche"]
        if key["brand"] not in brand_ids or niche["sell_through"] is None:
            continue
        pair = (int(key["category_id"]), brand_ids[key["brand"]])
        true_st, true_median = truth_stats.get(pair, (None, None))
        seen_st, seen_median = seen_stats.get(pair, (None, None))
        if true_st is None:
            continue
        errors.append(
            NicheError(
                category_id=pair[0],
                brand_id=pair[1],
                kind=kinds[pair],
                sell_through=float(niche["sell_through"]),
                true_sell_through=true_st,
                seen_sell_through=seen_st,
                median_sold=niche["sold_price"]["median"],
                true_median_sold=true_median,
                seen_median_sold=seen_median,
                km_median_days=niche["km_median_days"],
                sales=int(niche["sold"]),
                seen_km_median_days=seen_days.get(pair),
                true_km_median_days=true_days.get(pair),
            )
        )
    seen_pairs = {
        (int(row["category_id"]), brand_ids[row["brand"]])
        for row in export["listings"]
        if row["brand"] in brand_ids and row["category_id"] is not None
    }
    first_day, last_day = ((t - config.start) / DAY for t in (t0, t1))
    assert last_day <= config.horizon_days, (
        f"the watch ended on day {last_day:.1f} of a {config.horizon_days:.0f}-day market"
    )
    return Accuracy(
        simulated_days=(t1 - t0) / DAY,
        market_days=(first_day, last_day, config.horizon_days),
        polls=int(monitor["polls"]),
        listings_seen=len(export["listings"]),
        precision=_precision(top_pairs(ranked, brand_ids), hot),
        random_baseline=len(hot & seen_pairs) / len(seen_pairs) if seen_pairs else 0.0,
        top_pairs=tuple(top_pairs(ranked, brand_ids)),
        hot=hot,
        flagged=frozenset(flagged_pairs(ranked, brand_ids)),
        niches=tuple(errors),
        false_sales=false_sales,
        false_transitions=false_transitions,
        sold_recorded=sum(1 for row in export["listings"] if row["state"] == "sold"),
    )

"""One request budget per IP address across sites (MARKETPLACE.md: "The request budget is per IP
address, shared across every site"), and the simulator's command line for September 2026."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager

import httpx
import pytest
import trio

from api.process.cli import main as nichescope
from scrapers.simulator import (
    Faults,
    RequestBudget,
    SimulatorApp,
    SimulatorConfig,
    World,
    config_from_args,
    create_simulator_app,
    serve_app,
)

BURST = 6
# One request back every 20 s: nothing refills while a test runs, even on a slow machine.
RATE = 0.05


def _config(seed: int, *, per_ip: bool) -> SimulatorConfig:
    faults = Faults(client_rate=RATE, client_burst=BURST, budget_per_ip=per_ip)
    return SimulatorConfig(seed=seed, n_listings=60, horizon_days=1.0, speed=1.0, faults=faults)


@asynccontextmanager
async def _sites(
    *, per_ip: bool, shared: bool
) -> AsyncIterator[tuple[list[str], list[SimulatorApp]]]:
    """Two simulated sites (two apps, two origins), with one budget between them or one each."""
    budget = RequestBudget() if shared else None
    apps = [create_simulator_app(World(_config(seed, per_ip=per_ip)), budget=budget)
            for seed in (51, 52)]  # fmt: skip
    async with trio.open_nursery() as nursery:
        origins = [await nursery.start(serve_app, app) for app in apps]
        yield origins, apps
        nursery.cancel_scope.cancel()


@asynccontextmanager
async def _sessions(origins: list[str]) -> AsyncIterator[list[tuple[httpx.AsyncClient, str]]]:
    """One warmed-up session (its own anon id and token) per origin: (client, origin)."""
    async with AsyncExitStack() as stack:
        out = []
        for origin in origins:
            http = await stack.enter_async_context(httpx.AsyncClient(timeout=10.0))
            assert (await http.get(f"{origin}/")).status_code == 200  # `/` spends no budget
            out.append((http, origin))
        yield out


async def _poll(session: tuple[httpx.AsyncClient, str]) -> httpx.Response:
    http, origin = session
    token = http.cookies["access_token_web"]
    return await http.get(f"{origin}/api/v2/catalog/items?per_page=5",
                          headers={"Authorization": f"Bearer {token}",
                                   "X-Anon-Id": http.cookies["anon_id"]})  # fmt: skip


async def test_two_sites_polled_from_one_address_share_one_budget() -> None:
    async with _sites(per_ip=True, shared=True) as (origins, apps), _sessions(origins) as both:
        statuses = [(await _poll(both[n % 2])).status_code for n in range(BURST)]
        assert statuses == [200] * BURST  # three on each site: the one budget is spent
        for session in both:
            refused = await _poll(session)
            assert refused.status_code == 429
            assert 1 <= int(refused.headers["retry-after"]) <= round(1 / RATE)
        for app in apps:
            last = app.log[-1]
            assert last["status"] == 429 and last["retry_after"] is not None
            assert last["ip"] == "127.0.0.1" and last["client"] != "ip:127.0.0.1"


async def test_without_a_shared_budget_each_site_has_its_own() -> None:
    async with _sites(per_ip=True, shared=False) as (origins, _), _sessions(origins) as both:
        statuses = [(await _poll(both[n % 2])).status_code for n in range(2 * BURST)]
        assert statuses == [200] * (2 * BURST)
        assert (await _poll(both[0])).status_code == 429


async def test_per_ip_keys_sessions_of_one_address_together_and_per_client_does_not() -> None:
    for per_ip, allowed in ((True, BURST), (False, 2 * BURST)):
        async with (
            _sites(per_ip=per_ip, shared=True) as (origins, _),
            _sessions([origins[0], origins[0]]) as two_sessions,  # two sessions, one site
        ):
            statuses = [(await _poll(two_sessions[n % 2])).status_code for n in range(2 * BURST)]
        assert statuses.count(200) == allowed, (per_ip, statuses)


def test_the_command_line_serves_september_2026(capsys: pytest.CaptureFixture[str]) -> None:
    config = config_from_args([
        "--challenge-www", "--draft-share", "0.08", "--token-ttl", "86400",
        "--clearance-ttl", "900", "--client-rate", "1", "--client-burst", "30",
        "--budget-per-ip",
    ])  # fmt: skip
    assert config.challenge_www and config.draft_share == 0.08 and config.token_ttl == 86400
    assert config.clearance_ttl == 900
    assert (config.faults.client_rate, config.faults.client_burst) == (1.0, 30)
    assert config.faults.budget_per_ip
    plain = config_from_args([])  # the demo's defaults: no challenge, no drafts
    assert not plain.challenge_www and plain.draft_share == 0.0
    assert plain.clearance_ttl == 1800.0 and not plain.faults.budget_per_ip
    for bad in (["--draft-share", "1.5"], ["--clearance-ttl", "0"]):
        with pytest.raises(SystemExit):
            config_from_args(bad)
    capsys.readouterr()
    with pytest.raises(SystemExit) as exited:
        nichescope(["simulator", "--help"])
    assert exited.value.code == 0
    usage = capsys.readouterr().out
    for flag in ("--challenge-www", "--draft-share", "--token-ttl", "--clearance-ttl",
                 "--budget-per-ip", "--client-burst"):  # fmt: skip
        assert flag in usage

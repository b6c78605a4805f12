"""One `SiteState` per marketplace site, owned by the client: its hosts' state (the very
objects requests use) and the adapter's counters, read by operators in one place. Nothing is
sent here: the client is never entered."""

from __future__ import annotations

from scrapers import MarketClient, MarketplaceAdapter, SiteMap

SITE, API = "https://www.vinted.fr", "https://api.vinted.fr"


async def test_a_site_has_one_state_with_its_hosts_and_the_adapters_counters() -> None:
    client = MarketClient()
    adapter = MarketplaceAdapter(client, profile="legacy")
    state = client.site_state(SITE + "/")
    assert state is client.site_state(SITE)
    assert (state.origin, state.site.api_origin) == (SITE, API)

    adapter.note_suspicious(SITE, "filters_ignored")
    adapter.note_suspicious(SITE, "suspected_block")
    adapter.note_suspicious(SITE, "something_else")  # not a counter of ours
    assert (state.filters_ignored, state.suspected_blocks) == (1, 1)

    # The hosts are the client's own: a window on the API host pauses it, not the `www` one.
    state.api.hold_off(30)
    # 30 s less the time since hold_off (on the real clock: a busy machine took 33 µs here).
    assert 25 < client.origin_status(API).blocked_for <= 30
    assert client.origin_status(SITE).blocked_for == 0
    state.www.note_challenge()
    state.api.note_challenge()
    assert state.challenges == 2
    assert client.known_sites() == ()  # the operators' view lists sites a request went to


async def test_a_site_whose_api_is_its_own_origin_counts_its_host_once() -> None:
    origin = "http://127.0.0.1:8000"  # not a marketplace host, and no pair names its API
    client = MarketClient(sites=SiteMap())
    state = client.site_state(origin)
    assert state.api is state.www
    state.www.note_challenge()
    assert state.challenges == 1

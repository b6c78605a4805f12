"""Asking a listing's state of the wire profile's sources (their health and the refusals are
counted in the site's `SiteState`, where operators read them).

Policy: the profile's sources are asked best first. A source that refuses (today's detail
API, a challenged item page, a block page) or answers something unreadable passes the question
to the next; after `_REFUSALS_BEFORE_REST` refusals in a row the detail API rests for
`_SOURCE_REST` seconds. A "gone" answer (the item page's 404, the legacy detail API's 404/410)
means `deleted`. Each source's health (`_source_health`) follows its answers and refusals;
once every source is unavailable, `SourcesUnavailable` is raised at once, with no request.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import replace

import trio

from ._site_state import SiteState
from ._sites import Site
from .errors import (
    Blocked,
    ChallengeRequired,
    EndpointRefused,
    HttpStatusError,
    MarketplaceError,
    NoSession,
    ParseError,
    SourcesUnavailable,
)
from .http import MarketClient
from .models import ItemDetail, ItemState, Listing
from .profiles import WireProfile

# After this many refusals in a row, a refusing source is not asked for `_SOURCE_REST` seconds.
_REFUSALS_BEFORE_REST = 3
_SOURCE_REST = 600.0
# Refusals of a source: the site wants a browser (and none could be had), or refuses us.
_REFUSALS = (EndpointRefused, ChallengeRequired, NoSession, Blocked)

ReadItemPage = Callable[[str, int], Awaitable[ItemDetail]]


async def ask_sources(
    client: MarketClient,
    profile: WireProfile,
    site_state: SiteState,
    item_id: int,
    read_item_page: ReadItemPage,
) -> ItemDetail:
    """The listing's state from the profile's sources, with its evidence (see the module
    doc), counting what they do in `site_state`. When no source answers, the last error
    propagates (the listing is asked about again later); `SourcesUnavailable` once every
    source is unavailable."""
    site = site_state.site
    failure: MarketplaceError | None = None
    asked = [s for s in profile.state_sources if site_state.source(s).may_ask()]
    if not asked:
        raise _unavailable(site_state, site, profile)
    for source in asked:
        health = site_state.source(source)
        try:
            if source == "detail_api":
                if site_state.detail_rest_until > trio.current_time():
                    continue
                return await _ask_detail_api(client, profile, site, site_state, item_id)
            detail = await read_item_page(site.origin, item_id)
        except _REFUSALS as err:
            health.refused(for_good=isinstance(err, NoSession))
            failure = err
            continue
        except HttpStatusError as err:
            health.answered()
            if source == "item_page" and err.status in (404, 410):
                return _deleted(item_id, "item_page")
            failure = err
            continue
        except ParseError as err:
            failure = err
            continue
        health.answered()
        return detail
    if all(site_state.source(s).unavailable for s in profile.state_sources):
        raise _unavailable(site_state, site, profile) from failure
    raise failure or ParseError("listing state", "every source is resting")


async def _ask_detail_api(
    client: MarketClient, profile: WireProfile, site: Site, site_state: SiteState, item_id: int
) -> ItemDetail:
    call = profile.detail_call(site, item_id)
    try:
        response = await client.get(
            call.url, api=True, site=site.origin, headers=call.headers,
            refusal=profile.detail_refused,
        )  # fmt: skip
    except _REFUSALS:
        _note_refusal(site_state)
        raise
    except HttpStatusError as err:
        if profile.detail_gone(err.status):
            site_state.source("detail_api").answered()
            return _deleted(item_id, "detail_api")
        raise
    detail = profile.parse_detail(response.content, site)
    site_state.refusals_in_a_row = 0
    site_state.source("detail_api").answered()
    return replace(detail, evidence="detail_api")


def _unavailable(site_state: SiteState, site: Site, profile: WireProfile) -> MarketplaceError:
    """`SourcesUnavailable` when every source is, else "resting" (proves nothing)."""
    if not all(site_state.source(s).unavailable for s in profile.state_sources):
        return ParseError("listing state", "every source is resting")
    names = " and ".join(s.replace("_", " ") + "s" for s in profile.state_sources)
    return SourcesUnavailable(site.origin, f"the marketplace refuses {names}")


def _note_refusal(site_state: SiteState) -> None:
    site_state.detail_refusals += 1
    site_state.refusals_in_a_row += 1
    if site_state.refusals_in_a_row >= _REFUSALS_BEFORE_REST:
        site_state.detail_rest_until = trio.current_time() + _SOURCE_REST
        site_state.refusals_in_a_row = 0


def _deleted(item_id: int, evidence: str) -> ItemDetail:
    listing = Listing(id=int(item_id), missing=("all",))
    return ItemDetail(int(item_id), ItemState.DELETED, listing, evidence=evidence)

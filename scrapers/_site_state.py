"""`SiteState`: everything this node knows of one marketplace site, in one place.

A site (`https://www.vinted.fr`) is reached through two hosts, its `www` origin and its API
origin, each with its own breaker and windows (`_origin_state`: one host's outage or block
never pauses the other). What belongs to the site as a whole lives here beside them: the wire
profile in use, the state sources' health, and the counters operators read (refusals of the
detail API, polls refused as data, profile moves).

`MarketClient` owns one per site (`MarketClient.site_state`) and the adapter writes into it, so
a new counter is one field here and the line that counts it. The session of a site is
`_site_sessions`'.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ._origin_state import OriginState
from ._sites import Site
from ._source_health import SourceHealth


@dataclass
class SiteState:
    """One marketplace site: its hosts' state and the adapter's counters (see the module doc).

    `www` and `api` are the very objects the client's requests use; when the site's API lives
    on its own origin they are one object.
    """

    site: Site
    www: OriginState
    api: OriginState
    requested: bool = False  # a request went out for this site (the operators' view lists it)
    profile: str | None = None  # the wire profile in use; None: auto has not decided yet
    profile_stored: bool = False  # the profile memory holds `profile` (auto remembers it)
    profile_moves: int = 0
    detail_refusals: int = 0
    refusals_in_a_row: int = 0
    detail_rest_until: float = 0.0  # trio time until which the detail API is not asked
    suspected_blocks: int = 0
    filters_ignored: int = 0
    sources: dict[str, SourceHealth] = field(default_factory=dict)  # state source -> health

    @property
    def origin(self) -> str:
        return self.site.origin

    @property
    def challenges(self) -> int:
        """Browser challenges answered to this node's plain requests, on either host."""
        return self.www.challenges + (self.api.challenges if self.api is not self.www else 0)

    def source(self, name: str) -> SourceHealth:
        return self.sources.setdefault(name, SourceHealth())

    def note_suspicious(self, kind: str) -> None:
        """Count a poll refused as data (`suspected_block`, `filters_ignored`); other kinds
        are not counted."""
        if kind == "suspected_block":
            self.suspected_blocks += 1
        elif kind == "filters_ignored":
            self.filters_ignored += 1

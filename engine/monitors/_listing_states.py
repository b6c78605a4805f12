"""The listing state machine, pure: a listing's stored state and what one poll observed of
it -> its new state and the events to record. No I/O, no clock, no database.

How a listing's state moves, and the evidence each move records (`listing_events.evidence`
and `listings.state_evidence`, which always describes the current state):

- first seen in the feed: `open`, no evidence (the feed itself), a `new` event;
- seen in the feed again while `reserved`, `deleted` or sold *by absence*: back to `open`, no
  evidence (a reservation fell through, a relisting, or a likely sale that was not one). A
  new price is a `price` event (a drop also an alert), new favourites a `counts` event;
- confirmed by a source (`ConfirmedState`: the detail API or the item page): its state and
  evidence. A listing confirmed sold by a source stays sold whatever comes later. A source
  confirming the state a listing already holds changes no state and writes no event: it
  updates the evidence; when that upgrades a likely sale (sold by absence) to a confirmed one,
  the event that recorded the sale takes the source's evidence, in place, so the history holds
  one sale, at the time it was detected, established by the source;
- absent (`PollOutcome.absent`) `likely_after` polls in a row, open or reserved, last seen
  organically (not promoted): `sold` with evidence `absence`, a *likely* sale;
- unknown (`PollOutcome.unknown`): out of the feed, but the marketplace was not asked or did
  not answer. Nothing is learnt: the absence count neither advances nor restarts.

Which drop-outs are absent and which unknown is decided here too (`drop_out_verdicts`): only a
listing missing from a believable feed's window whose lookup was asked this poll and answered
without a state (an unreadable answer: no source could tell) is absent. A lookup refused (a
429, a block page, an outage, the breaker open, a failure the marketplace cannot classify) or
never sent (over the poll's confirmation budget) proves nothing: counting it as an absence is
how a listing the market only ever called reserved was once recorded sold.

A successful poll also moves the monitor: out of `error` (the marketplace answers again), and
on the first one (the bootstrap: no alerts, everything is new) from `paused` to `active`.

Why a callable and not a two-step read-decide-write: the store cannot import the engine (the
engine imports the store), and a poll must be one transaction. So `decide_poll` is handed to
`record_poll` (`decide=`), which reads the listings the poll mentions, calls it inside the same
transaction (in the store's worker thread: it must stay pure and quick) and persists exactly
what it returns. Reading the states in one unit and writing in another would lean on the
single-writer-per-monitor rule holding across two transactions, and cost a second round trip,
for nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Literal, TypeVar

from engine.pricing import decide_alerts
from store import (
    ConfirmedState,
    EventDraft,
    ListingSnapshot,
    ListingStep,
    MonitorSnapshot,
    MonitorStep,
    ObservedListing,
    PollDecision,
    PollOutcome,
)

LIVE = ("open", "reserved")
T = TypeVar("T")

# What asking the marketplace about one listing came to.
Lookup = Literal["answered", "stateless", "refused"]
# The `PollFailureKind`s of a lookup that failed although the marketplace answered: a page or
# document that says nothing readable about the state; and "sources_unavailable", every
# source refused for good (MARKETPLACE.md: absence is then the only signal of a sale, as the
# public sell-through tools use it). Every other kind (blocked, rate limited, unavailable...)
# and an unclassified failure are refusals, which prove nothing.
STATELESS_KINDS = frozenset({"invalid", "sources_unavailable"})


def failed_lookup(kind: str | None) -> Lookup:
    """A failed lookup, by the marketplace's `failure_kind` of its error."""
    return "stateless" if kind in STATELESS_KINDS else "refused"


def drop_out_verdicts(
    left: Sequence[int], lookups: Mapping[int, Lookup]
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(absent, unknown) of the listings that `left` the feed's window, by their lookups this
    poll (a listing missing from `lookups` was not asked). Answered ones are neither: the
    answer is a confirmation."""
    absent = tuple(i for i in left if lookups.get(i) == "stateless")
    unknown = tuple(i for i in left if lookups.get(i, "refused") == "refused")
    return absent, unknown


def is_likely(listing: ListingSnapshot) -> bool:
    """Sold by absence from the feed: a likely sale, which the feed or a source can undo."""
    return listing.state == "sold" and listing.evidence == "absence"


def on_sighting(before: ListingSnapshot | None, seen: ObservedListing) -> ListingStep:
    """The listing in the feed: new, or back on sale, with its price and counts moves."""
    if before is None:
        after = ListingSnapshot(
            seen.item_id, "open", None, promoted=seen.promoted, price=seen.price,
            favourites=seen.favourites, category_id=seen.category_id,
            category_name=seen.category_name,
        )  # fmt: skip
        new = EventDraft(
            "new", to_state="open", price=seen.price, favourites=seen.favourites, views=seen.views
        )
        return ListingStep(seen.item_id, None, after, sighting=seen, events=(new,))
    events: list[EventDraft] = []
    dropped_from = None
    if seen.price is not None and before.price is not None and seen.price != before.price:
        events.append(EventDraft("price", price=seen.price))
        if seen.price < before.price:
            dropped_from = before.price
    if seen.favourites is not None and seen.favourites != before.favourites:
        events.append(EventDraft("counts", favourites=seen.favourites, views=seen.views))
    state, evidence = before.state, before.evidence
    if before.state in ("reserved", "deleted") or is_likely(before):
        events.append(EventDraft("state", from_state=before.state, to_state="open"))
        state, evidence = "open", None
    # A category name once stored stays, unless the feed now files the listing elsewhere.
    keeps_name = before.category_name and seen.category_id in (None, before.category_id)
    after = replace(
        before, state=state, evidence=evidence, absent_polls=0, in_feed=True,
        promoted=seen.promoted, price=_known(seen.price, before.price),
        favourites=_known(seen.favourites, before.favourites),
        category_id=_known(seen.category_id, before.category_id),
        category_name=before.category_name if keeps_name
        else _known(seen.category_name, before.category_name),
    )  # fmt: skip
    return ListingStep(
        before.item_id, before, after, sighting=seen, events=tuple(events),
        changed=bool(events), dropped_from=dropped_from,
    )  # fmt: skip


def _known(seen: T | None, stored: T | None) -> T | None:
    """A field the sighting lacks keeps what was known."""
    return stored if seen is None else seen


def on_confirmation(before: ListingSnapshot, answer: ConfirmedState) -> ListingStep:
    """A source's answer about a listing out of the feed."""
    after = replace(
        before,
        in_feed=False,
        absent_polls=0,
        # The item page names the category of a listing that has none.
        category_name=answer.category_name
        if answer.category_name and not before.category_name
        else before.category_name,
    )
    if before.state == "sold" and not is_likely(before):
        return ListingStep(before.item_id, before, after)  # a confirmed sale is final
    if answer.state != before.state:
        move = EventDraft(
            "state", from_state=before.state, to_state=answer.state, evidence=answer.evidence
        )
        after = replace(after, state=answer.state, evidence=answer.evidence)
        return ListingStep(before.item_id, before, after, events=(move,), changed=True)
    if answer.evidence in (before.evidence, "absence"):
        return ListingStep(before.item_id, before, after)
    # The state held is now established by a source: no state change, no new event.
    after = replace(after, evidence=answer.evidence)
    upgraded = is_likely(before)
    return ListingStep(
        before.item_id, before, after, changed=upgraded,
        confirmed_by=answer.evidence if upgraded else None,
    )  # fmt: skip


def on_absence(before: ListingSnapshot, likely_after: int) -> ListingStep | None:
    """Missing from the feed's window, the marketplace answering about it without a state.
    None: nothing to record (not live, or last seen as a paid placement, which follows no
    filter and no date order, so missing from an answer says nothing about it)."""
    if before.state not in LIVE or before.promoted:
        return None
    after = replace(before, absent_polls=before.absent_polls + 1, in_feed=False)
    if after.absent_polls < max(1, likely_after):
        return ListingStep(before.item_id, before, after)
    move = EventDraft("state", from_state=before.state, to_state="sold", evidence="absence")
    after = replace(after, state="sold", evidence="absence")
    return ListingStep(before.item_id, before, after, events=(move,), changed=True)


def on_unknown(before: ListingSnapshot) -> ListingStep | None:
    """Missing from the feed's window, the marketplace not asked or not answering: out of
    the feed, and nothing else (the absence count neither advances nor restarts)."""
    if before.state not in LIVE or before.promoted or not before.in_feed:
        return None
    return ListingStep(before.item_id, before, replace(before, in_feed=False))


def on_success(monitor: MonitorSnapshot) -> MonitorStep:
    """A successful poll: out of `error`; the bootstrap also ends a pause that only waited
    for it (a pause by the user after the bootstrap stays)."""
    status = monitor.status
    if status == "error" or (status == "paused" and not monitor.bootstrapped):
        status = "active"
    return MonitorStep(status=status, bootstrap=not monitor.bootstrapped)


def decide_poll(
    outcome: PollOutcome,
    stored: Mapping[int, ListingSnapshot],
    monitor: MonitorSnapshot | None,
) -> PollDecision:
    """Every step of one poll, in order: sightings, then confirmations, absences, unknowns.

    `stored` holds the listings the outcome mentions that the monitor already has. Each step
    starts from the one before it for the same listing, so the same observation twice makes
    no second event. A confirmation or absence of a listing the monitor never saw is ignored,
    and a listing seen or confirmed in this poll is neither absent nor unknown.
    """
    current = dict(stored)
    steps: list[ListingStep] = []

    def take(step: ListingStep | None) -> None:
        if step is not None:
            steps.append(step)
            current[step.item_id] = step.after

    for seen in outcome.seen:
        take(on_sighting(current.get(seen.item_id), seen))
    for answer in outcome.confirmed:
        if answer.item_id in current:
            take(on_confirmation(current[answer.item_id], answer))
    accounted = {s.item_id for s in outcome.seen} | {c.item_id for c in outcome.confirmed}
    absent = _others(outcome.absent, accounted)
    for item_id in absent:
        if item_id in current:
            take(on_absence(current[item_id], outcome.likely_after))
    for item_id in _others(outcome.unknown, accounted | set(absent)):
        if item_id in current:
            take(on_unknown(current[item_id]))
    # The alerts those steps cause are judged by the price book's rules, in the same unit.
    return PollDecision(
        tuple(steps), None if monitor is None else on_success(monitor), alerts=decide_alerts
    )


def _others(ids: Iterable[int], taken: set[int]) -> list[int]:
    return [i for i in dict.fromkeys(ids) if i not in taken]

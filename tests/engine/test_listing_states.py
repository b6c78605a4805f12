"""The listing state machine on its own: each rule of `engine.monitors._listing_states`, table
by table, with no database."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest

from engine.monitors._listing_states import (
    decide_poll,
    drop_out_verdicts,
    failed_lookup,
    on_absence,
    on_confirmation,
    on_sighting,
    on_success,
    on_unknown,
)
from store import (
    ConfirmedState,
    EventDraft,
    ListingSnapshot,
    MonitorSnapshot,
    MonitorStatus,
    MonitorStep,
    ObservedListing,
    PollOutcome,
)

T0 = datetime(2026, 11, 25, tzinfo=UTC)
OPEN = ListingSnapshot(7, "open", None, price=Decimal("10"), favourites=1, category_id=4)
RESERVED = replace(OPEN, state="reserved", evidence="item_page", in_feed=False)
DELETED = replace(OPEN, state="deleted", evidence="item_page", in_feed=False)
LIKELY = replace(OPEN, state="sold", evidence="absence", absent_polls=3, in_feed=False)
SOLD = replace(OPEN, state="sold", evidence="item_page", in_feed=False)
NAMED = replace(OPEN, category_name="Jeans")


def named(cases: Iterable[tuple[Any, ...]]) -> list[Any]:
    """A table's rows (why, *values) as parameters: the values, under the why as the id."""
    return [pytest.param(*values, id=why) for why, *values in cases]


def _seen(**fields: Any) -> ObservedListing:
    defaults: dict[str, Any] = {"item_id": 7, "price": Decimal("10"), "favourites": 1}
    return ObservedListing(**defaults | fields)


def _state(a: str, b: str, evidence: str | None = None) -> EventDraft:
    return EventDraft("state", from_state=a, to_state=b, evidence=evidence)  # type: ignore[arg-type]


# --- sightings ---------------------------------------------------------------------------

SIGHTINGS = [
    # (why, before, seen, after: fields changed from before, events, changed, dropped_from)
    ("the same again: nothing", OPEN, _seen(), {}, (), False, None),
    (
        "a dearer price: an event, no drop",
        OPEN, _seen(price=Decimal("12")), {"price": Decimal("12")},
        (EventDraft("price", price=Decimal("12")),), True, None,
    ),
    (
        "a cheaper price: an event and a drop from the old price",
        OPEN, _seen(price=Decimal("8")), {"price": Decimal("8")},
        (EventDraft("price", price=Decimal("8")),), True, Decimal("10"),
    ),
    (
        "new favourites: a counts event, with the views",
        OPEN, _seen(favourites=5, views=40), {"favourites": 5},
        (EventDraft("counts", favourites=5, views=40),), True, None,
    ),
    (
        "a field the sighting lacks keeps what was known",
        OPEN, _seen(price=None, favourites=None, category_id=None), {}, (), False, None,
    ),
    (
        "reserved, back in the feed: open again",
        RESERVED, _seen(), {"state": "open", "evidence": None, "in_feed": True},
        (_state("reserved", "open"),), True, None,
    ),
    (
        "deleted, back in the feed: a relisting",
        DELETED, _seen(), {"state": "open", "evidence": None, "in_feed": True},
        (_state("deleted", "open"),), True, None,
    ),
    (
        "a likely sale back in the feed was not one",
        LIKELY, _seen(), {"state": "open", "evidence": None, "in_feed": True, "absent_polls": 0},
        (_state("sold", "open"),), True, None,
    ),
    (
        "a confirmed sale stays sold, in the feed or not",
        SOLD, _seen(), {"in_feed": True}, (), False, None,
    ),
    (
        "absences restart when seen",
        replace(OPEN, absent_polls=2, in_feed=False), _seen(),
        {"absent_polls": 0, "in_feed": True}, (), False, None,
    ),
    (
        "promoted is as observed",
        OPEN, _seen(promoted=True), {"promoted": True}, (), False, None,
    ),
    (
        "a stored category name stays",
        NAMED, _seen(category_name="Denim"), {}, (), False, None,
    ),
    (
        "a name arrives where there was none",
        OPEN, _seen(category_name="Denim"), {"category_name": "Denim"}, (), False, None,
    ),
    (
        "filed in another category: its name follows",
        NAMED, _seen(category_id=5, category_name="Skirts"),
        {"category_id": 5, "category_name": "Skirts"}, (), False, None,
    ),
]  # fmt: skip


@pytest.mark.parametrize(
    ("before", "seen", "changes", "events", "changed", "dropped_from"),
    named(SIGHTINGS),
)
def test_sightings(
    before: ListingSnapshot,
    seen: ObservedListing,
    changes: dict[str, Any],
    events: tuple[EventDraft, ...],
    changed: bool,
    dropped_from: Decimal | None,
) -> None:
    step = on_sighting(before, seen)
    assert step.before == before and step.sighting == seen
    assert step.after == replace(before, **changes)
    assert (step.events, step.changed, step.dropped_from) == (events, changed, dropped_from)
    assert step.moved == any(e.kind == "state" for e in events)
    assert step.confirmed_by is None


def test_a_first_sighting_is_a_new_open_listing() -> None:
    seen = _seen(views=3, category_name="Jeans", category_id=4, promoted=True)
    step = on_sighting(None, seen)
    assert step.before is None and step.sighting == seen and not step.changed
    assert step.after == replace(OPEN, promoted=True, category_name="Jeans")
    assert step.events == (
        EventDraft("new", to_state="open", price=Decimal("10"), favourites=1, views=3),
    )


# --- confirmations -----------------------------------------------------------------------

OUT = {"in_feed": False, "absent_polls": 0}
CONFIRMATIONS = [
    # (why, before, answer, after: fields changed from before, events, changed, confirmed_by)
    (
        "sold on its page",
        OPEN, ConfirmedState(7, "sold", "item_page"),
        OUT | {"state": "sold", "evidence": "item_page"},
        (_state("open", "sold", "item_page"),), True, None,
    ),
    (
        "reserved by the detail API",
        OPEN, ConfirmedState(7, "reserved", "detail_api"),
        OUT | {"state": "reserved", "evidence": "detail_api"},
        (_state("open", "reserved", "detail_api"),), True, None,
    ),
    (
        "a reservation that fell through",
        RESERVED, ConfirmedState(7, "open", "item_page"), OUT | {"state": "open"},
        (_state("reserved", "open", "item_page"),), True, None,
    ),
    (
        "open out of the feed: no event, its evidence",
        OPEN, ConfirmedState(7, "open", "item_page"), OUT | {"evidence": "item_page"},
        (), False, None,
    ),
    (
        "absences restart on an answer",
        replace(OPEN, absent_polls=2), ConfirmedState(7, "open", "item_page"),
        OUT | {"evidence": "item_page"}, (), False, None,
    ),
    (
        "a confirmed sale is final",
        SOLD, ConfirmedState(7, "open", "detail_api"), OUT, (), False, None,
    ),
    (
        "a confirmed sale confirmed again by another source keeps its evidence",
        SOLD, ConfirmedState(7, "sold", "detail_api"), OUT, (), False, None,
    ),
    (
        "a likely sale confirmed: upgraded in place, no second sale",
        LIKELY, ConfirmedState(7, "sold", "item_page"), OUT | {"evidence": "item_page"},
        (), True, "item_page",
    ),
    (
        "a source outranks absence",
        LIKELY, ConfirmedState(7, "deleted", "item_page"),
        OUT | {"state": "deleted", "evidence": "item_page"},
        (_state("sold", "deleted", "item_page"),), True, None,
    ),
    (
        "the same state and evidence: nothing new",
        RESERVED, ConfirmedState(7, "reserved", "item_page"), OUT, (), False, None,
    ),
    (
        "another source for the state held: the evidence, no event",
        RESERVED, ConfirmedState(7, "reserved", "detail_api"),
        OUT | {"evidence": "detail_api"}, (), False, None,
    ),
    (
        "absence is never a source's evidence",
        RESERVED, ConfirmedState(7, "reserved", "absence"), OUT, (), False, None,
    ),
    (
        "the item page names a category that had no name",
        OPEN, ConfirmedState(7, "sold", "item_page", category_name="Jeans"),
        OUT | {"state": "sold", "evidence": "item_page", "category_name": "Jeans"},
        (_state("open", "sold", "item_page"),), True, None,
    ),
    (
        "a stored category name stays",
        NAMED, ConfirmedState(7, "open", "item_page", category_name="Denim"),
        OUT | {"evidence": "item_page"}, (), False, None,
    ),
]  # fmt: skip


@pytest.mark.parametrize(
    ("before", "answer", "changes", "events", "changed", "confirmed_by"),
    named(CONFIRMATIONS),
)
def test_confirmations(
    before: ListingSnapshot,
    answer: ConfirmedState,
    changes: dict[str, Any],
    events: tuple[EventDraft, ...],
    changed: bool,
    confirmed_by: str | None,
) -> None:
    step = on_confirmation(before, answer)
    assert step.before == before and step.sighting is None
    assert step.after == replace(before, **changes)
    assert (step.events, step.changed, step.confirmed_by) == (events, changed, confirmed_by)
    assert step.dropped_from is None


# --- absences and unknowns ---------------------------------------------------------------

LIKELY_SALE = (_state("open", "sold", "absence"),)
ABSENCES = [
    # (why, before, likely_after, after: fields changed, or None for no step, events)
    ("a first absence", OPEN, 3, {"absent_polls": 1, "in_feed": False}, ()),
    (
        "absent again", replace(OPEN, absent_polls=1, in_feed=False), 3,
        {"absent_polls": 2}, (),
    ),
    (
        "the third in a row: a likely sale", replace(OPEN, absent_polls=2, in_feed=False), 3,
        {"absent_polls": 3, "state": "sold", "evidence": "absence"}, LIKELY_SALE,
    ),
    (
        "reserved, absent long enough: a likely sale too",
        replace(RESERVED, absent_polls=2), 3,
        {"absent_polls": 3, "state": "sold", "evidence": "absence"},
        (_state("reserved", "sold", "absence"),),
    ),
    (
        "a threshold below one means one",
        OPEN, 0, {"absent_polls": 1, "in_feed": False, "state": "sold", "evidence": "absence"},
        LIKELY_SALE,
    ),
    ("promoted: its absence says nothing", replace(OPEN, promoted=True), 3, None, ()),
    ("sold already", SOLD, 3, None, ()),
    ("a likely sale is not absent again", LIKELY, 3, None, ()),
    ("deleted", DELETED, 3, None, ()),
]  # fmt: skip


@pytest.mark.parametrize(
    ("before", "likely_after", "changes", "events"),
    named(ABSENCES),
)
def test_absences(
    before: ListingSnapshot,
    likely_after: int,
    changes: dict[str, Any] | None,
    events: tuple[EventDraft, ...],
) -> None:
    step = on_absence(before, likely_after)
    if changes is None:
        assert step is None
        return
    assert step is not None and step.after == replace(before, **changes)
    assert (step.events, step.changed) == (events, bool(events))


UNKNOWNS = [
    # (why, before, after: fields changed, or None for no step)
    ("out of the feed, the count held", replace(OPEN, absent_polls=2), {"in_feed": False}),
    ("reserved, the count held", replace(RESERVED, absent_polls=1, in_feed=True),
     {"in_feed": False}),
    ("already out of the feed: nothing", replace(OPEN, absent_polls=2, in_feed=False), None),
    ("promoted: nothing", replace(OPEN, promoted=True), None),
    ("sold: nothing", SOLD, None),
    ("a likely sale stays one", LIKELY, None),
]  # fmt: skip


@pytest.mark.parametrize(("before", "changes"), named(UNKNOWNS))
def test_unknowns_neither_advance_nor_restart_absences(
    before: ListingSnapshot, changes: dict[str, Any] | None
) -> None:
    step = on_unknown(before)
    if changes is None:
        assert step is None
        return
    assert step is not None and step.after == replace(before, **changes)
    assert step.after.absent_polls == before.absent_polls
    assert (step.events, step.changed) == ((), False)


# --- which drop-outs are absent (the bug: refused and unasked lookups counted) -------------


@pytest.mark.parametrize(
    ("kind", "lookup"),
    [
        ("invalid", "stateless"),  # answered, nothing readable about the state
        ("rate_limited", "refused"),  # a 429 past the retries
        ("blocked", "refused"),  # a 403 block page
        ("unavailable", "refused"),  # 5xx, timeouts, the breaker open
        ("suspected_block", "refused"),
        ("filters_ignored", "refused"),
        ("profile_moved", "refused"),
        (None, "refused"),  # a failure nobody classified proves nothing either
    ],
)
def test_failed_lookups(kind: str | None, lookup: str) -> None:
    assert failed_lookup(kind) == lookup


VERDICTS = [
    # (why, left, lookups, absent, unknown)
    ("answered: a confirmation, neither", [1], {1: "answered"}, (), ()),
    ("answered without a state: absent", [1], {1: "stateless"}, (1,), ()),
    ("refused: unknown", [1], {1: "refused"}, (), (1,)),
    ("over the budget, never asked: unknown", [1], {}, (), (1,)),
    (
        "a mix, in the order they left",
        [4, 1, 3, 2], {1: "stateless", 2: "refused", 3: "answered", 5: "stateless"},
        (1,), (4, 2),
    ),
    ("only listings that left the window", [], {9: "stateless"}, (), ()),
]  # fmt: skip


@pytest.mark.parametrize(
    ("left", "lookups", "absent", "unknown"),
    named(VERDICTS),
)
def test_drop_out_verdicts(
    left: list[int], lookups: dict[int, Any], absent: tuple[int, ...], unknown: tuple[int, ...]
) -> None:
    assert drop_out_verdicts(left, lookups) == (absent, unknown)


# --- the monitor -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "bootstrapped", "after", "bootstrap"),
    [
        ("paused", False, "active", True),  # the bootstrap ends the pause that waited for it
        ("active", False, "active", True),
        ("error", False, "active", True),
        ("paused", True, "paused", False),  # a pause by the user stays
        ("active", True, "active", False),
        ("error", True, "active", False),  # the marketplace answers again
    ],
)
def test_a_successful_poll_moves_the_monitor(
    status: MonitorStatus, bootstrapped: bool, after: MonitorStatus, bootstrap: bool
) -> None:
    assert on_success(MonitorSnapshot(status, bootstrapped)) == MonitorStep(after, bootstrap)


# --- a whole poll ------------------------------------------------------------------------


def _outcome(**fields: Any) -> PollOutcome:
    defaults: dict[str, Any] = {
        "poll_id": "poll_x", "started_at": T0, "finished_at": T0, "pages": 1, "seen": (),
        "confirmed": (), "next_poll_at": T0, "likely_after": 3,
    }  # fmt: skip
    return PollOutcome(**defaults | fields)


def _stored(*listings: ListingSnapshot) -> dict[int, ListingSnapshot]:
    return {listing.item_id: listing for listing in listings}


def test_a_poll_applies_sightings_confirmations_absences_then_unknowns() -> None:
    stored = _stored(
        replace(OPEN, item_id=1), replace(OPEN, item_id=2, absent_polls=2),
        replace(OPEN, item_id=3), replace(OPEN, item_id=4),
    )  # fmt: skip
    outcome = _outcome(
        seen=(ObservedListing(5), ObservedListing(1)),
        confirmed=(ConfirmedState(3, "reserved", "item_page"), ConfirmedState(99, "sold")),
        absent=(2, 1, 2, 98),  # 1 was seen; 2 only once; 98 was never seen here
        unknown=(4, 2, 3),  # 2 is absent, 3 answered
    )
    decision = decide_poll(outcome, stored, MonitorSnapshot("active", True))
    assert [(s.item_id, s.before is None) for s in decision.steps] == [
        (5, True), (1, False), (3, False), (2, False), (4, False),
    ]  # fmt: skip
    after = {s.item_id: s.after for s in decision.steps}
    assert (after[2].state, after[2].evidence, after[2].absent_polls) == ("sold", "absence", 3)
    assert (after[3].state, after[4].in_feed, after[4].absent_polls) == ("reserved", False, 0)
    assert decision.monitor == MonitorStep("active", False)


def test_steps_of_one_listing_chain_within_a_poll() -> None:
    outcome = _outcome(
        seen=(ObservedListing(1, price=Decimal("5")), ObservedListing(1, price=Decimal("4"))),
        confirmed=(ConfirmedState(1, "reserved", "detail_api"),),
    )
    steps = decide_poll(outcome, {}, None).steps
    assert [s.before is None for s in steps] == [True, False, False]
    assert steps[1].before == steps[0].after and steps[2].before == steps[1].after
    assert steps[1].dropped_from == Decimal("5")
    assert steps[2].after.state == "reserved"
    # The same observation twice makes no second event.
    again = decide_poll(_outcome(seen=(ObservedListing(1),) * 2), {}, None).steps
    assert [len(s.events) for s in again] == [1, 0]


def test_a_poll_of_a_deleted_monitor_decides_no_monitor_step() -> None:
    assert decide_poll(_outcome(), {}, None).monitor is None

"""The feed's window by publication order, not by id (`_feed_window`, `_poll.drop_outs`): pure,
poll after poll, with listings published under draft ids (allotted days before publication,
so lower than their neighbours'). Where the old rule by ids went wrong, the case says how."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from engine.market import Feed, FeedWindow
from engine.monitors._feed_window import GAP, WindowEnd, has_left, place, windows_of
from engine.monitors._poll import DropOuts, drop_outs
from store import FeedOrder, LiveListing, ObservedListing

T0 = datetime(2026, 11, 27, 9, 0, tzinfo=UTC)


class Watch:
    """What a monitor remembers between polls, as the store keeps it: the live listings, when
    each was last seen, and the places in publication order the polls gave."""

    def __init__(self) -> None:
        self.live: dict[int, LiveListing] = {}
        self.ranks: dict[int, int] = {}
        self.polls = 0

    def poll(self, *windows: FeedWindow, promoted: tuple[int, ...] = ()) -> DropOuts:
        """One poll whose feed is `windows` (organic ids, newest first), with `promoted`
        listings mixed in (they are never in a window's organic order)."""
        at = T0 + timedelta(minutes=self.polls)
        self.polls += 1
        category = {i: w.category_id for w in windows for i in w.organic}
        seen = [ObservedListing(i, category_id=c) for i, c in category.items()]
        seen += [ObservedListing(i, promoted=True) for i in promoted if i not in category]
        ranks = self.ranks
        order = FeedOrder(
            dict(self.live), dict(ranks), min(ranks.values(), default=None),
            max(ranks.values(), default=None),
        )  # fmt: skip
        result = drop_outs(order, Feed(listings=tuple(seen), pages=1, windows=windows))
        self.ranks |= result.ranks
        for x in seen:
            rank = self.ranks.get(x.item_id)
            self.live[x.item_id] = LiveListing(x.item_id, at, rank, x.category_id)
        return result

    def gone(self, *item_ids: int) -> None:
        """Confirmed sold or deleted: no longer live."""
        for item_id in item_ids:
            del self.live[item_id]


def cut(*organic: int, category: int | None = None) -> FeedWindow:
    return FeedWindow(organic, cut=True, category_id=category)


def test_the_first_poll_places_its_feed_in_the_feed_s_order_whatever_the_ids() -> None:
    assert Watch().poll(cut(30, 3, 29)).ranks == {30: 3 * GAP, 3: 2 * GAP, 29: GAP}


def test_a_late_draft_at_the_bottom_of_a_cut_feed_invents_no_drop_out() -> None:
    watch = Watch()
    watch.poll(cut(30, 29, 28, 27))
    # 3 is published now under its draft's old id; 27 and 28 slide out of sight.
    assert watch.poll(cut(31, 3, 30, 29)) == DropOuts([], [27, 28], {31: 6 * GAP, 3: 5 * GAP})
    # Two more are published: the draft is now the last listing of the window. By ids the
    # window ended at id 3, so 27 to 30 (all still for sale) were drop-outs; by the feed's
    # order they were published before the draft and are only out of sight.
    dropped = watch.poll(cut(33, 32, 31, 3))
    assert (dropped.left, dropped.out_of_sight) == ([], [27, 28, 29, 30])


def test_a_draft_near_the_top_that_disappears_has_left_the_window() -> None:
    watch = Watch()
    watch.poll(cut(30, 29, 28, 27))
    assert watch.poll(cut(3, 30, 29, 28)).out_of_sight == [27]
    # The draft sells and 31 is published. By ids, 3 was below the window's lowest id (28)
    # and only "out of sight": its sale was never looked for.
    dropped = watch.poll(cut(31, 30, 29, 28))
    assert (dropped.left, dropped.out_of_sight) == ([3], [27])


def test_listings_sliding_in_from_below_are_older_than_everything_seen() -> None:
    watch = Watch()
    watch.poll(cut(30, 29, 28, 27))
    # 29 and 28 sell and nothing is published: the window reaches further back, to 26 and
    # 25, which were on sale below it all along (one of them a draft id, 40).
    dropped = watch.poll(cut(30, 27, 40, 25))
    assert (dropped.left, dropped.out_of_sight) == ([28, 29], [])
    assert max(dropped.ranks.values()) < min(watch.ranks[i] for i in (30, 29, 28, 27))
    watch.gone(28, 29)
    # Published again: 40 and 25 slide back out of sight, below the window.
    dropped = watch.poll(cut(42, 41, 30, 27))
    assert (dropped.left, dropped.out_of_sight) == ([], [25, 40])


def test_promoted_listings_neither_end_nor_move_the_window() -> None:
    watch = Watch()
    # 1 is an old listing paid to the bottom of the answer, 50 one paid to the top.
    watch.poll(cut(30, 29, 28, 27), promoted=(50, 1))
    assert set(watch.ranks) == {30, 29, 28, 27}  # a paid place is no place in the order
    dropped = watch.poll(cut(31, 30, 29, 28), promoted=(29, 2))
    # 27 slid out of sight; 50 and 1, last seen promoted, missing from this answer: nothing
    # says where they stand (and the state machine ignores them: never a drop-out).
    assert (dropped.left, dropped.out_of_sight) == ([], [1, 27, 50])
    # 29, shown both organically and promoted, keeps its organic place: 28 ends the window.
    assert 29 not in dropped.ranks


def test_a_feed_read_to_its_end_has_lost_every_missing_listing() -> None:
    watch = Watch()
    watch.poll(FeedWindow((30, 3, 29, 28), cut=False), promoted=(7,))
    dropped = watch.poll(FeedWindow((31, 30), cut=False))
    assert (dropped.left, dropped.out_of_sight) == ([3, 7, 28, 29], [])


def test_a_feed_that_states_no_window_is_one_read_to_its_end() -> None:
    listings = (ObservedListing(9), ObservedListing(4, promoted=True), ObservedListing(2))
    assert windows_of(Feed(listings=listings, pages=1)) == (FeedWindow((9, 2), cut=False),)


def test_each_category_is_judged_against_its_own_window() -> None:
    watch = Watch()
    watch.poll(cut(40, 39, 38, category=4), cut(80, 79, 78, category=8))
    # Category 4 is busy (two new listings push 39 and 38 out of sight); in category 8, 79
    # sells and 77 slides into view.
    dropped = watch.poll(cut(42, 41, 40, category=4), cut(80, 78, 77, category=8))
    assert (dropped.left, dropped.out_of_sight) == ([79], [38, 39])


def test_a_listing_of_no_window_s_category_has_left_only_if_it_left_every_window() -> None:
    ends = [WindowEnd(4, True, 10), WindowEnd(8, True, 20)]
    assert has_left(15, 4, ends) and not has_left(15, 8, ends)
    assert not has_left(15, None, ends) and not has_left(15, 99, ends)
    assert has_left(25, None, ends)
    assert not has_left(None, 4, ends)  # never seen organically: nothing says where it stands
    assert has_left(None, 4, [WindowEnd(4, False, 10)])  # ...unless the feed was read whole


def test_ranks_the_feed_contradicts_are_placed_again() -> None:
    order = FeedOrder({}, {1: 100, 2: 300, 3: 200}, 100, 300)
    # The feed shows 1 above 2 above 3: 2 and 3 agree with it, 1 is placed above them.
    assert place([cut(1, 2, 3)], order) == {1: 300 + GAP}


def test_listings_between_two_placed_ones_go_between_them() -> None:
    order = FeedOrder({}, {1: 10 * GAP, 2: 2 * GAP}, 2 * GAP, 10 * GAP)
    placed = place([cut(1, 5, 6, 2)], order)
    assert 10 * GAP > placed[5] > placed[6] > 2 * GAP
    # A gap with no room left gives ties, which never count as newer.
    assert place([cut(1, 7, 2)], FeedOrder({}, {1: 5, 2: 4}, 4, 5)) == {7: 4}

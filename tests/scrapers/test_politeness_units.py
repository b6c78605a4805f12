from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest
import trio

from scrapers import BreakerState, CircuitOpen, RobotsRules
from scrapers._breaker import CircuitBreaker
from scrapers._ratelimit import TokenBucket
from scrapers._retry import full_jitter, http_date, parse_retry_after
from scrapers._robots import PARSE_LIMIT


async def test_token_bucket_rate_and_burst(autojump_clock: trio.abc.Clock) -> None:
    bucket = TokenBucket(rate=2.0, burst=3)
    start = trio.current_time()
    stamps = []
    for _ in range(7):
        await bucket.take()
        stamps.append(trio.current_time() - start)
    assert stamps[:3] == [0, 0, 0]  # the burst goes at once
    assert stamps[3:] == pytest.approx([0.5, 1.0, 1.5, 2.0])  # then 2 per second


async def test_a_waiter_whose_pace_is_lifted_goes_when_its_sleep_ends(
    autojump_clock: trio.abc.Clock,
) -> None:
    """An unlimited configured pace, slowed by a 429, won back while a request waits: the
    waiter goes once its sleep ends, where it divided by the rate, now 0 (ZeroDivisionError,
    seen under faults)."""
    bucket = TokenBucket(rate=0.0, burst=1)
    bucket.slow_down()  # 10/s, the burst dropped
    bucket.slow_down(floor=0.2)
    bucket.slow_down(floor=0.2)  # 2.5/s: the next token is 0.4 s away
    waited: list[float] = []

    async def wait() -> None:
        start = trio.current_time()
        await bucket.take()
        waited.append(trio.current_time() - start)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(wait)
        await trio.testing.wait_all_tasks_blocked()
        bucket.reconfigure(0.0)  # the pace lifted (an unlimited budget again)
    assert bucket.unlimited and len(waited) == 1 and waited[0] <= 0.4 + 1e-6


async def test_token_bucket_is_fair_across_tasks(autojump_clock: trio.abc.Clock) -> None:
    bucket = TokenBucket(rate=10.0, burst=1)
    stamps: list[float] = []

    async def worker() -> None:
        for _ in range(5):
            await bucket.take()
            stamps.append(trio.current_time())

    async with trio.open_nursery() as nursery:
        for _ in range(4):
            nursery.start_soon(worker)
    gaps = [b - a for a, b in zip(sorted(stamps), sorted(stamps)[1:], strict=False)]
    assert len(stamps) == 20 and min(gaps) >= 0.1 - 1e-9


async def test_breaker_opens_half_opens_and_closes(autojump_clock: trio.abc.Clock) -> None:
    breaker = CircuitBreaker("o", threshold=3, reset_after=10)
    for _ in range(3):
        assert breaker.before_request() is False
        breaker.record_failure()
    assert breaker.state is BreakerState.OPEN
    with pytest.raises(CircuitOpen) as info:
        breaker.before_request()
    assert info.value.retry_in == pytest.approx(10)
    await trio.sleep(10)
    assert breaker.state is BreakerState.HALF_OPEN
    assert breaker.before_request() is True  # the one probe
    with pytest.raises(CircuitOpen):
        breaker.before_request()  # nobody else while it runs
    breaker.record_failure()
    assert breaker.state is BreakerState.OPEN  # a failed probe re-opens at once
    await trio.sleep(10)
    assert breaker.before_request() is True
    breaker.record_success()
    assert breaker.state is BreakerState.CLOSED and breaker.failures == 0


def test_retry_after_both_forms() -> None:
    now = datetime(2025, 1, 1, tzinfo=UTC)
    assert parse_retry_after("120") == 120
    assert parse_retry_after(format_datetime(now + timedelta(seconds=90), usegmt=True), now) == 90
    assert parse_retry_after("Wed, 01 Jan 2020 00:00:00 GMT", now) == 0
    assert parse_retry_after("soon") is None
    assert parse_retry_after(None) is None
    assert parse_retry_after("-5") is None


def test_full_jitter_is_capped_and_grows() -> None:
    rng = random.Random(1)
    samples = [full_jitter(10, 0.5, 30.0, rng) for _ in range(500)]
    assert max(samples) <= 30 and min(samples) >= 0 and max(samples) > 20
    assert all(full_jitter(0, 0.5, 30.0, rng) <= 0.5 for _ in range(100))


ROBOTS = """
User-agent: otherbot
Disallow: /

User-agent: *
Disallow: /member/
Disallow: /*.json$
Allow: /member/public

User-agent: Nichescope
Disallow: /catalog/private
Allow: /catalog/private/ok
"""


def test_robots_groups_and_longest_match() -> None:
    ours = RobotsRules.parse(ROBOTS, "nichescope")
    assert not ours.can_fetch("/catalog/private/x")
    assert ours.can_fetch("/catalog/private/ok/1")
    assert ours.can_fetch("/member/1")  # our own group replaces the * group
    anyone = RobotsRules.parse(ROBOTS, "somebot")
    assert not anyone.can_fetch("/member/1")
    assert anyone.can_fetch("/member/public")
    assert not anyone.can_fetch("/a/b.json") and anyone.can_fetch("/a/b.json?x")
    assert anyone.can_fetch("/catalog")


def test_robots_product_case_percent_encoding_and_robots_txt_itself() -> None:
    rules = RobotsRules.parse(
        "User-agent: NICHESCOPE\nDisallow: /\nAllow: /caf%C3%A9\n", "nichescope"
    )
    assert not rules.can_fetch("/catalog")
    assert rules.can_fetch("/café/1") and rules.can_fetch("/caf%c3%a9/1")
    assert rules.can_fetch("/robots.txt")  # always readable (RFC 9309 section 2.2.2)
    assert RobotsRules.parse("User-agent: otherbot\nDisallow: /\n", "nichescope").can_fetch("/")


def test_robots_past_the_parse_limit_are_ignored_and_a_cut_line_dropped() -> None:
    rules = "User-agent: *\nDisallow: /early\n"
    filler = "# padding\n" * ((PARSE_LIMIT - len(rules)) // 10 - 1)
    head = rules + filler
    head += "#" * (PARSE_LIMIT - len(head) - len("Allow: /early/b") - 1) + "\n"
    # The limit falls just after "Allow: /early/b": read as that, it would allow /early/b...
    text = head + "Allow: /early/but-longer\nDisallow: /late\n"
    assert len(head) + len("Allow: /early/b") == PARSE_LIMIT
    parsed = RobotsRules.parse(text, "nichescope")
    assert not parsed.can_fetch("/early/b") and not parsed.can_fetch("/early/but-longer")
    assert parsed.can_fetch("/late")  # past the limit
    whole = RobotsRules.parse(text[PARSE_LIMIT:].join(["User-agent: *\n", ""]), "nichescope")
    assert not whole.can_fetch("/late")  # the same rule within it


def test_robots_status_rules() -> None:
    assert RobotsRules.for_status(404, "", "nichescope").can_fetch("/anything")
    assert not RobotsRules.for_status(503, "", "nichescope").can_fetch("/catalog")
    assert RobotsRules.for_status(200, "", "nichescope").can_fetch("/catalog")


def test_http_dates_are_read_and_garbage_is_no_date() -> None:
    assert http_date("Wed, 25 Nov 2026 22:00:00 GMT") == datetime(2026, 11, 25, 22, tzinfo=UTC)
    for garbage in (None, "", "yesterday", "Wed, 99 Nov 2026 25:61:00 GMT", "9" * 400):
        assert http_date(garbage) is None


def test_a_retry_after_of_non_ascii_digits_is_garbage_not_a_crash() -> None:
    # "²".isdigit() holds and float("²") raises: a marketplace header must never crash a poll.
    assert parse_retry_after("²") is None
    assert parse_retry_after("٣") is None
    assert parse_retry_after("3") == 3.0

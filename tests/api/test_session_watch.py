"""Operators hear once when a site has had no working session for 30 minutes."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta

from api.process.session_watch import SILENCE_SECONDS, message, sites_to_report
from engine import OriginReport

NOW = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)
BASE = OriginReport(
    origin="https://www.vinted.fr", api_origin="https://api.vinted.fr", profile="2026-09",
    profile_mode="auto", breaker="closed", blocked_for_seconds=0.0, last_success_at=None,
    last_block_at=None, last_block_kind=None, requests_last_hour=0, detail_refusals=0,
    detail_api_resting=False, suspected_blocks=0, filters_ignored=0, profile_moves=0,
    api_breaker="closed", api_blocked_for_seconds=0.0, challenge="challenged, no session",
    challenges=3, session_source=None, session_expires_at=None,
    session_error="the marketplace asks for a browser and none is configured: set "
    "NICHESCOPE_MARKET_BROWSER or paste a session",
    without_session_since=None, browser="off", sources={}, egress="direct", egress_rate=1.0,
    egress_requests_last_hour=0,
)  # fmt: skip


def without_session(minutes: float) -> OriginReport:
    return dataclasses.replace(BASE, without_session_since=NOW - timedelta(minutes=minutes))


def test_one_mail_per_site_and_outage() -> None:
    reported: dict[str, datetime] = {}
    assert sites_to_report([without_session(29)], reported, NOW) == []
    silent = without_session(SILENCE_SECONDS / 60)
    assert sites_to_report([silent], reported, NOW) == [silent]
    assert sites_to_report([silent], reported, NOW + timedelta(hours=3)) == []  # once
    # A session again ends the outage; the next one is news again.
    assert sites_to_report([BASE], reported, NOW) == [] and reported == {}
    later = dataclasses.replace(BASE, without_session_since=NOW)
    assert sites_to_report([later], reported, NOW + timedelta(minutes=31)) == [later]


def test_the_mail_says_why_and_what_to_do() -> None:
    subject, body = message(without_session(45))
    assert subject == "Nichescope: no marketplace session for https://www.vinted.fr"
    assert "none is configured" in body and "nichescope market session set" in body
    assert "NICHESCOPE_MARKET_BROWSER" in body

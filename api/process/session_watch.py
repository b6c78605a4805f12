"""Tells operators, once, when a marketplace site has had no working session for too long.

A site that challenges plain clients, with no browser configured (or one that keeps failing)
and no pasted session, polls nothing: monitors stay active and say why, but nobody may be
looking. After `SILENCE_SECONDS` without a session the operators (`NICHESCOPE_OPERATORS`) get
one e-mail per site and outage; a session found again ends the outage, and the next one is
mailed again. The watch reads the marketplace client's own reports (no request of its own).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable
from datetime import UTC, datetime
from typing import NoReturn

import trio

from engine import Marketplace, OriginReport

log = logging.getLogger(__name__)

SILENCE_SECONDS = 1800.0
CHECK_EVERY_SECONDS = 60.0

SendMail = Callable[[str, str, str], Awaitable[object]]


def sites_to_report(
    reports: Iterable[OriginReport], reported: dict[str, datetime], now: datetime
) -> list[OriginReport]:
    """The sites without a session for `SILENCE_SECONDS` not yet reported for this outage.
    `reported` (site -> the outage's start) is updated: outages that ended are forgotten."""
    due: list[OriginReport] = []
    current = {r.origin: r for r in reports}
    for site in [s for s in reported if current.get(s) is None or not _silent(current[s])]:
        del reported[site]  # a session again: the next outage is news
    for report in current.values():
        since = report.without_session_since
        if since is None or reported.get(report.origin) == since:
            continue
        if (now - since).total_seconds() >= SILENCE_SECONDS:
            reported[report.origin] = since
            due.append(report)
    return due


def _silent(report: OriginReport) -> bool:
    return report.without_session_since is not None


def message(report: OriginReport) -> tuple[str, str]:
    assert report.without_session_since is not None
    since = report.without_session_since.strftime("%Y-%m-%d %H:%M UTC")
    subject = f"Nichescope: no marketplace session for {report.origin}"
    body = (
        f"The marketplace site {report.origin} has had no working session since {since}: "
        "monitors of it are active but poll nothing.\n\n"
        f"Why: {report.session_error or 'unknown'}\n\n"
        "What to do: set NICHESCOPE_MARKET_BROWSER to a Chromium executable (or install one "
        "and leave it on auto), or paste a session copied from a browser:\n"
        f"  nichescope market session set {report.origin} --cookie 'access_token_web=...'\n"
        "or PUT /api/ops/origins/<site>/session.\n"
    )
    return subject, body


async def watch_sessions(
    market: Marketplace, operators: tuple[str, ...], send: SendMail
) -> NoReturn:
    """Check every `CHECK_EVERY_SECONDS` and mail the operators (see the module doc). A mail
    that fails is logged and not retried for that outage. Runs until cancelled."""
    reported: dict[str, datetime] = {}
    while True:
        await trio.sleep(CHECK_EVERY_SECONDS)
        for report in sites_to_report(market.origin_reports(), reported, datetime.now(UTC)):
            subject, body = message(report)
            log.warning("%s: %s", subject, report.session_error)
            for operator in operators:
                try:
                    await send(operator, subject, body)
                except Exception as err:  # a mail outage must not stop the watch
                    log.warning("could not mail %s about %s: %s", operator, report.origin, err)

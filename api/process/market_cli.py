"""Operator command: `nichescope market session set SITE --cookie '...' [--user-agent '...']`.

For deployments without a browser: a session copied from a browser of the operator's own,
checked (a marketplace site, a JWT token that has not expired), sealed and stored for every
node. A node takes it at its next session check, which a site with no working session makes
at every poll. The cookies are never printed back.
"""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime
from typing import Any

import trio

from api.process.node import migrates_itself
from api.settings import Settings
from engine import StoreSessionVault
from scrapers import SessionRefused, operator_session
from store import open_store


def add_market_commands(subparsers: Any) -> None:
    """Add `market session set` to the `nichescope` parser's subcommands."""
    market = subparsers.add_parser("market", help="marketplace sessions (operators)")
    market.add_argument("--database-url", help="overrides NICHESCOPE_DATABASE_URL")
    what = market.add_subparsers(dest="market_command", required=True)
    session = what.add_parser("session", help="a site's session")
    action = session.add_subparsers(dest="session_command", required=True)
    set_cmd = action.add_parser("set", help="paste a session copied from a browser")
    set_cmd.add_argument("site", help="www.vinted.fr, or an allowlisted origin")
    set_cmd.add_argument(
        "--cookie", required=True, help="the site's cookies: 'access_token_web=...; ...'"
    )
    set_cmd.add_argument("--user-agent", help="the browser's User-Agent (clearance cookies)")


def run_market_command(args: argparse.Namespace, settings: Settings) -> int:
    """Run `market session set`; 0 when stored, 1 when the session is refused."""
    try:
        session = operator_session(
            args.site, args.cookie, args.user_agent, allowed_origins=settings.market_origins
        )
    except SessionRefused as err:
        print(f"session refused: {err.reason}", file=sys.stderr)
        return 1
    trio.run(_store_session, settings, session)
    until = (
        datetime.fromtimestamp(session.expires_at, UTC).isoformat()
        if session.expires_at
        else "its token expires"
    )
    print(f"{session.site}: operator session until {until}; every node uses it from its next check")
    return 0


async def _store_session(settings: Settings, session: Any) -> None:
    run_migrations = migrates_itself(settings.database_url)
    async with open_store(settings.database_url, run_migrations=run_migrations) as store:
        await StoreSessionVault(store, settings.secret_key).save(session)

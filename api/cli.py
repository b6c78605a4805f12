"""The `nichescope` command: serve, migrate, plans."""

from __future__ import annotations

import argparse
import dataclasses
import logging
import sys
from collections.abc import Sequence

import trio

from store import migrate

from .billing.cli import add_plan_commands, run_plan_command
from .runtime import ServeOptions, serve
from .settings import ConfigError, Settings


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="nichescope", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)

    serve_cmd = commands.add_parser("serve", help="run the HTTP service")
    serve_cmd.add_argument("--host", default="127.0.0.1")
    serve_cmd.add_argument("--port", type=int, default=8000)
    serve_cmd.add_argument("--database-url", help="overrides NICHESCOPE_DATABASE_URL")
    serve_cmd.add_argument(
        "--demo",
        action="store_true",
        help="also run the marketplace simulator, allowlisted, with a demo account",
    )
    serve_cmd.add_argument(
        "--simulator-port", type=int, default=8100, help="the demo simulator's port"
    )

    commands.add_parser(
        "simulator",
        help="serve the marketplace simulator (see `nichescope simulator --help`)",
        add_help=False,
    )

    migrate_cmd = commands.add_parser("migrate", help="apply database migrations")
    migrate_cmd.add_argument("--database-url", help="overrides NICHESCOPE_DATABASE_URL")
    add_plan_commands(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["simulator"]:
        from scrapers.simulator import simulator_main

        return simulator_main(argv[1:])
    args = _parser().parse_args(argv)
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    try:
        settings = Settings.from_env()
    except ConfigError as err:
        print(f"configuration error: {err}", file=sys.stderr)
        return 2
    if args.database_url:
        settings = dataclasses.replace(settings, database_url=args.database_url)

    if args.command == "plans":
        return run_plan_command(args, settings)
    if args.command == "migrate":
        trio.run(migrate, settings.database_url)
        print(f"migrated {settings.database_url}")
        return 0
    trio.run(
        serve,
        settings,
        ServeOptions(
            host=args.host,
            port=args.port,
            demo=args.demo,
            demo_simulator_port=args.simulator_port,
        ),
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

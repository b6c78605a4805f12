"""The `nichescope` command: serve, worker, migrate, plans, market."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from functools import partial

import trio

from api.billing.cli import add_plan_commands, run_plan_command
from api.process.collector import tune_collector
from api.process.market_cli import add_market_commands, run_market_command
from api.process.node import SecondNodeOnSqlite
from api.process.serve import ServeOptions, serve, served_url
from api.process.worker import work
from api.settings import ConfigError, Settings
from store import migrate


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
        "--simulator-port",
        type=int,
        default=None,
        help="the demo simulator's port, its API on the next one (default: --port + 100)",
    )

    worker_cmd = commands.add_parser(
        "worker", help="run the engine without HTTP (a cluster node; PostgreSQL only)"
    )
    worker_cmd.add_argument("--database-url", help="overrides NICHESCOPE_DATABASE_URL")

    commands.add_parser(
        "simulator",
        help="serve the marketplace simulator (see `nichescope simulator --help`)",
        add_help=False,
    )

    migrate_cmd = commands.add_parser("migrate", help="apply database migrations")
    migrate_cmd.add_argument("--database-url", help="overrides NICHESCOPE_DATABASE_URL")
    add_plan_commands(commands)
    add_market_commands(commands)
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
    # httpx logs every marketplace request at INFO: thousands a minute on a busy node.
    logging.getLogger("httpx").setLevel(logging.WARNING)
    try:
        settings = Settings.from_env()
    except ConfigError as err:
        print(f"configuration error: {err}", file=sys.stderr)
        return 2
    if args.database_url:
        settings = settings.model_copy(update={"database_url": args.database_url})

    if args.command == "plans":
        return run_plan_command(args, settings)
    if args.command == "market":
        return run_market_command(args, settings)
    if args.command == "migrate":
        trio.run(migrate, settings.database_url)
        print(f"migrated {settings.database_url}")
        return 0
    tune_collector()
    try:
        if args.command == "worker":
            trio.run(partial(work, settings))
            return 0
        if args.port and "public_url" not in settings.model_fields_set:  # not configured
            # Links in e-mails, the banner and the MCP server card follow the port served.
            settings = settings.model_copy(update={"public_url": served_url(args.host, args.port)})
        trio.run(
            serve,
            settings,
            ServeOptions(
                host=args.host,
                port=args.port,
                demo=args.demo,
                demo_simulator_port=simulator_port(args.port, args.simulator_port),
            ),
        )
    except BaseException as err:  # re-raised unless it is the one refusal we explain
        refusal = _second_node(err)
        if refusal is None:
            raise
        print(f"error: {refusal}", file=sys.stderr)
        return 2
    return 0


def simulator_port(port: int, asked: int | None) -> int:
    """The demo simulator's port: as asked, else 100 above the service's (8000 -> 8100), so
    that two demos on two ports do not fight over one simulator; 0 (any) with a service on
    any port."""
    if asked is not None:
        return asked
    return port + 100 if port else 0


def _second_node(err: BaseException) -> SecondNodeOnSqlite | None:
    """The refusal, also when Trio's nurseries have wrapped it in exception groups."""
    if isinstance(err, SecondNodeOnSqlite):
        return err
    if isinstance(err, BaseExceptionGroup):
        for inner in err.exceptions:
            found = _second_node(inner)
            if found is not None:
                return found
    return None


if __name__ == "__main__":
    raise SystemExit(main())

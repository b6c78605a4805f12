"""Serving the simulator with Hypercorn on Trio, from Python and from the command line."""

from __future__ import annotations

import argparse
import logging
import sys
from functools import partial

import trio
from hypercorn.config import Config as HyperConfig
from hypercorn.trio import serve

from ._app import SimulatorApp, create_simulator_app
from ._config import Faults, SimulatorConfig
from ._world import World


def _hyper_config(host: str, port: int) -> HyperConfig:
    config = HyperConfig()
    config.bind = [f"[{host}]:{port}" if ":" in host else f"{host}:{port}"]
    config.accesslog = None
    config.errorlog = logging.getLogger("scrapers.simulator")
    config.graceful_timeout = 1.0
    config.keep_alive_timeout = 30.0
    return config


async def serve_simulator(
    config: SimulatorConfig,
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    task_status: trio.TaskStatus[str] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Build the world, bind, then report the real origin (e.g. `http://127.0.0.1:54321`)
    through `task_status.started` once the socket listens; serve until cancelled.

    Use `origin = await nursery.start(serve_simulator, config)`. Bind errors reach the caller
    of `nursery.start`. Cancellation closes the listener and open connections.
    """
    await serve_app(create_simulator_app(World(config)), host, port, task_status=task_status)


async def serve_app(
    app: SimulatorApp,
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    task_status: trio.TaskStatus[str] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Like `serve_simulator` for an app the caller built (and may inspect directly)."""
    async with trio.open_nursery() as nursery:
        server = partial(serve, app, _hyper_config(host, port))  # type: ignore[arg-type]
        binds: list[str] = await nursery.start(server)
        app.start_clock()
        task_status.started(binds[0])


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="nichescope simulator",
                                     description="Serve the marketplace simulator.")  # fmt: skip
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8100)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--speed", type=float, default=60.0,
                        help="simulated seconds per real second")  # fmt: skip
    parser.add_argument("--listings", type=int, default=600)
    parser.add_argument("--token-ttl", type=float, default=600.0)
    parser.add_argument("--layout", choices=("A", "B", "alternate"), default="alternate")
    for name in ("rate-429", "rate-403", "rate-5xx", "rate-slow", "rate-truncated",
                 "ids-as-strings", "rate-missing-fields", "client-rate"):  # fmt: skip
        parser.add_argument(f"--{name}", type=float, default=0.0)
    parser.add_argument("--retry-after", type=int, default=2)
    parser.add_argument("--slow-seconds", type=float, default=3.0)
    return parser


def config_from_args(argv: list[str] | None = None) -> SimulatorConfig:
    args = _parser().parse_args(argv)
    faults = Faults(
        rate_429=args.rate_429, rate_403=args.rate_403, rate_5xx=args.rate_5xx,
        rate_slow=args.rate_slow, rate_truncated=args.rate_truncated,
        ids_as_strings=args.ids_as_strings, rate_missing_fields=args.rate_missing_fields,
        client_rate=args.client_rate, retry_after=args.retry_after,
        slow_seconds=args.slow_seconds,
    )  # fmt: skip
    return SimulatorConfig(
        seed=args.seed, speed=args.speed, n_listings=args.listings, token_ttl=args.token_ttl,
        html_layout=args.layout, faults=faults,
    )  # fmt: skip


def simulator_main(argv: list[str] | None = None) -> int:
    """CLI entry point: serve until Ctrl+C. Returns the process exit code."""
    parser_args = _parser().parse_args(argv)
    config = config_from_args(argv)

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            origin = await nursery.start(
                serve_simulator, config, parser_args.host, parser_args.port
            )
            print(f"marketplace simulator on {origin} (seed {config.seed}, speed {config.speed}x)")
            print(f"allowlist it with NICHESCOPE_MARKET_ORIGINS={origin}", flush=True)

    try:
        trio.run(main)
    except KeyboardInterrupt:
        return 0
    except OSError as err:
        print(f"cannot serve the simulator: {err}", file=sys.stderr)
        return 1
    return 0

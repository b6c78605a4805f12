"""Serving the simulator with Hypercorn on Trio, from Python and from the command line.

One origin or two: without an API port the site and the API share one origin (what the existing
callers and the legacy profile expect); with one (`api_port`, 0 picks a free port) Hypercorn
binds a second socket standing for `api.<site>`, served by the same app (one token table).
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from dataclasses import dataclass
from functools import partial
from typing import Any

import trio
from hypercorn.config import Config as HyperConfig
from hypercorn.trio import serve

from ._app import SimulatorApp, create_simulator_app
from ._config import LOCALES, PROFILE_2026_09, PROFILES, Faults, SimulatorConfig
from ._world import World


@dataclass(frozen=True, slots=True)
class SimOrigins:
    """The two real origins of a simulator served with an API port, e.g.
    `SimOrigins(site="http://127.0.0.1:54321", api="http://127.0.0.1:54322")`."""

    site: str
    api: str

    def env_lines(self) -> tuple[str, str]:
        """The service's configuration that allowlists both origins and maps the site to its
        API origin."""
        return (
            f"NICHESCOPE_MARKET_ORIGINS={self.site},{self.api}",
            f"NICHESCOPE_MARKET_API_ORIGINS={self.site}={self.api}",
        )


def _bind(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _hyper_config(host: str, *ports: int) -> HyperConfig:
    config = HyperConfig()
    config.bind = [_bind(host, port) for port in ports]  # one socket per bind, in this order
    config.accesslog = None
    config.errorlog = logging.getLogger("scrapers.simulator")
    config.graceful_timeout = 1.0
    config.keep_alive_timeout = 30.0
    # The app writes the market's Date (simulated time); Hypercorn's would be a second one.
    config.include_date_header = False
    # Likewise `Server`: the challenge answers `server: cloudflare`, and only that.
    config.include_server_header = False
    return config


def _port(origin: str) -> int:
    return int(origin.rsplit(":", 1)[1])


async def serve_simulator(
    config: SimulatorConfig,
    host: str = "127.0.0.1",
    port: int = 0,
    api_port: int | None = None,
    *,
    task_status: trio.TaskStatus[Any] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Build the world, bind, then report the real origin(s) through `task_status.started`
    once the sockets listen; serve until cancelled.

    Without `api_port`: `origin: str = await nursery.start(serve_simulator, config)`, e.g.
    `http://127.0.0.1:54321`. With one (0 picks a free port):
    `origins: SimOrigins = await nursery.start(serve_simulator, config, "127.0.0.1", 0, 0)`.
    Bind errors reach the caller of `nursery.start`. Cancellation closes the listeners and
    open connections.
    """
    app = create_simulator_app(World(config))
    await serve_app(app, host, port, api_port, task_status=task_status)


async def serve_app(
    app: SimulatorApp,
    host: str = "127.0.0.1",
    port: int = 0,
    api_port: int | None = None,
    *,
    task_status: trio.TaskStatus[Any] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Like `serve_simulator` for an app the caller built (and may inspect directly).

    Reports a `str` (the one origin) when `api_port` is None, as existing callers expect, and a
    `SimOrigins` when it is given: the app learns the API socket's real port before anything
    is reported, so no request can reach it unrecognised.
    """
    ports = (port,) if api_port is None else (port, api_port)
    async with trio.open_nursery() as nursery:
        server = partial(serve, app, _hyper_config(host, *ports))  # type: ignore[arg-type]
        binds: list[str] = await nursery.start(server)
        app.set_api_port(None if api_port is None else _port(binds[1]), _port(binds[0]))
        app.start_clock()
        task_status.started(binds[0] if api_port is None else SimOrigins(binds[0], binds[1]))


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="nichescope simulator",
                                     description="Serve the marketplace simulator.")  # fmt: skip
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8100)
    parser.add_argument("--api-port", type=int, default=None,
                        help="a second port for the API origin (default: one origin)")  # fmt: skip
    parser.add_argument("--profile", choices=PROFILES, default=PROFILE_2026_09,
                        help="the wire profile served (default: today's, 2026-09)")  # fmt: skip
    parser.add_argument("--locale", choices=LOCALES, default="en",
                        help="language of the 2026-09 condition labels")  # fmt: skip
    parser.add_argument("--promoted-share", type=float, default=0.1,
                        help="share of 2026-09 feed positions that are promoted")  # fmt: skip
    parser.add_argument("--item-page-padding", type=int, default=0,
                        help="bytes of script after a 2026-09 item page's JSON-LD")  # fmt: skip
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--speed", type=float, default=60.0,
                        help="simulated seconds per real second")  # fmt: skip
    parser.add_argument("--start", type=float, default=None,
                        help="Unix time the simulated clock starts at (default: now, so the "
                             "market's dates agree with the wall clock)")  # fmt: skip
    parser.add_argument("--listings", type=int, default=600)
    parser.add_argument("--token-ttl", type=float, default=600.0,
                        help="seconds (real time) an access_token_web lives; its JWT exp "
                             "says so (default: 600)")  # fmt: skip
    parser.add_argument("--challenge-www", action="store_true",
                        help="put the site origin behind a browser challenge (never the API "
                             "origin): only a real browser gets the session")  # fmt: skip
    parser.add_argument("--clearance-ttl", type=float, default=1800.0,
                        help="seconds (real time) a passed challenge's cf_clearance stays "
                             "valid (default: 1800)")  # fmt: skip
    parser.add_argument("--draft-share", type=float, default=0.0,
                        help="share of new listings whose id was allotted days before "
                             "publication, with their draft (default: 0)")  # fmt: skip
    parser.add_argument("--price-drop-share", type=float, default=0.0,
                        help="share of listings whose seller cuts the price after a few "
                             "days unsold (default: 0)")  # fmt: skip
    parser.add_argument("--layout", choices=("A", "B", "alternate"), default="alternate")
    for name in ("rate-429", "rate-403", "rate-5xx", "rate-slow", "rate-truncated",
                 "ids-as-strings", "rate-missing-fields", "client-rate", "detail-refusal",
                 "rate-empty", "rate-ignore-filters"):  # fmt: skip
        parser.add_argument(f"--{name}", type=float, default=0.0)
    parser.add_argument("--client-burst", type=int, default=10,
                        help="requests a client may send at once before --client-rate "
                             "applies (default: 10)")  # fmt: skip
    parser.add_argument("--budget-per-ip", action="store_true",
                        help="key the --client-rate budget by IP address alone, as the real "
                             "site does, not by anon id")  # fmt: skip
    parser.add_argument("--retry-after", type=int, default=2)
    parser.add_argument("--slow-seconds", type=float, default=3.0)
    return parser


def config_from_args(argv: list[str] | None = None) -> SimulatorConfig:
    """The CLI's configuration. `SystemExit` (argparse) on bad arguments, including values
    `SimulatorConfig` refuses (an out-of-range promoted or draft share, a negative padding,
    a clearance ttl that is not positive)."""
    parser = _parser()
    args = parser.parse_args(argv)
    faults = Faults(
        rate_429=args.rate_429, rate_403=args.rate_403, rate_5xx=args.rate_5xx,
        rate_slow=args.rate_slow, rate_truncated=args.rate_truncated,
        ids_as_strings=args.ids_as_strings, rate_missing_fields=args.rate_missing_fields,
        client_rate=args.client_rate, client_burst=args.client_burst,
        budget_per_ip=args.budget_per_ip, retry_after=args.retry_after,
        slow_seconds=args.slow_seconds, detail_refusal=args.detail_refusal,
        rate_empty=args.rate_empty, rate_ignore_filters=args.rate_ignore_filters,
    )  # fmt: skip
    try:
        return SimulatorConfig(
            seed=args.seed, speed=args.speed, n_listings=args.listings,
            token_ttl=args.token_ttl, html_layout=args.layout, faults=faults,
            profile=args.profile, locale=args.locale, promoted_share=args.promoted_share,
            item_page_padding=args.item_page_padding, challenge_www=args.challenge_www,
            clearance_ttl=args.clearance_ttl, draft_share=args.draft_share,
            price_drop_share=args.price_drop_share,
            start=time.time() if args.start is None else args.start,
        )  # fmt: skip
    except ValueError as err:
        parser.error(str(err))


def simulator_main(argv: list[str] | None = None) -> int:
    """CLI entry point: serve until Ctrl+C. Returns the process exit code."""
    parser_args = _parser().parse_args(argv)
    config = config_from_args(argv)
    host, port, api_port = parser_args.host, parser_args.port, parser_args.api_port

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            where = await nursery.start(serve_simulator, config, host, port, api_port)
            about = f"seed {config.seed}, speed {config.speed}x, profile {config.profile}"
            if config.challenge_www:
                about += ", site behind a browser challenge"
            if isinstance(where, SimOrigins):
                print(f"marketplace simulator on {where.site}, API on {where.api} ({about})")
                print("allowlist and map them with:")
                for line in where.env_lines():
                    print(f"  {line}")
            else:
                print(f"marketplace simulator on {where} ({about})")
                print(f"allowlist it with NICHESCOPE_MARKET_ORIGINS={where}")
            sys.stdout.flush()

    # Trio wraps what escapes a nursery in exception groups (Ctrl+C, a port already taken):
    # match inside them, or Ctrl+C prints a traceback and a taken port is not reported.
    code = 0
    try:
        trio.run(main)
    except* KeyboardInterrupt:
        pass
    except* OSError as group:
        print(f"cannot serve the simulator: {_leaf(group)}", file=sys.stderr)
        code = 1
    return code


def _leaf(error: BaseException) -> BaseException:
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    return error

"""Per-request-kind CPU figures of `bench_api_load`: the kinds, their targets, and the tables.

Each kind is measured alone (`KIND_CLIENTS` closed-loop clients on one path family) and its
server CPU per 2xx response is compared with the bare Quart-Trio hello world's, measured in
the same run with the same number of clients. The phases themselves run in `bench_api_load`;
this module holds only what they are judged by, so that it imports nothing of it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from bench._common import percentile, verdict

KIND_CLIENTS = 20
BEARER_TOLERANCE = 0.10  # |bearer / cookie - 1| of the listings page's CPU per request
MIX_TARGET = 0.5  # the 100-client mix's throughput, as a share of the hello world's


@dataclass(frozen=True)
class Kind:
    name: str
    paths: str  # key of the path families the bench builds from its prepared data
    credential: Literal["none", "cookie", "bearer"]
    # Most CPU per request allowed, as a multiple of the hello world's; None: judged against
    # the same request with a cookie instead (BEARER_TOLERANCE).
    target: float | None


KINDS = (
    Kind("health", "health", "none", 2.0),
    Kind("run", "run", "cookie", 3.0),
    Kind("analysis", "analysis", "cookie", 3.0),
    Kind("listings (cookie)", "listings", "cookie", 3.0),
    Kind("listings (bearer)", "listings", "bearer", None),
    Kind("listings (again)", "listings again", "cookie", 3.0),
    Kind("dashboard", "dashboard", "cookie", 4.0),
)
COOKIE_KIND, BEARER_KIND = "listings (cookie)", "listings (bearer)"
# The order of the phases. The two kinds compared with each other run in two halves each,
# cookie-bearer-bearer-cookie, so that a drift (the machine's other work, caches warming)
# weighs on both alike.
SCHEDULE = ("health", "run", "analysis", COOKIE_KIND, BEARER_KIND, BEARER_KIND, COOKIE_KIND,
            "listings (again)", "dashboard")  # fmt: skip


Mix = Sequence[tuple[str, float, list[str]]]  # (kind, share, paths)


class Load(Protocol):
    """`bench_api_load.LoadClient`: one closed-loop phase against its server."""

    def run(
        self, headers: dict[str, str], clients: int, duration: float, mix: Mix
    ) -> dict[str, Any]: ...


@dataclass(frozen=True)
class CpuPhase:
    """One kind's phase: 2xx responses, the timed window, the server's CPU seconds in it."""

    kind: str
    ok: int
    elapsed: float
    server_cpu: float
    bad: int  # 5xx and dropped responses

    @classmethod
    def measured(cls, kind: str, results: Sequence[dict[str, Any]]) -> CpuPhase:
        """The figures of `Load.run` results (of one kind) together, printed on one line (and
        the first failures)."""
        samples = [sample for result in results for sample in result["samples"]]
        elapsed = sum(result["elapsed"] for result in results)
        server_cpu = sum(result["server_cpu"] for result in results)
        client_cpu = sum(result["cpu"] for result in results)
        ok = [seconds for _, status, seconds in samples if 200 <= status < 300]
        bad = sum(1 for _, status, _ in samples if status >= 500 or status == 0)
        phase = cls(kind, len(ok), elapsed, server_cpu, bad)
        print(f"    {kind:<18} {phase.rate:>7,.0f} req/s, p50 {percentile(ok, 50) * 1000:.0f} "
              f"ms, p99 {percentile(ok, 99) * 1000:.0f} ms, {len(samples) - len(ok)} non-2xx "
              f"({bad} 5xx or dropped {verdict(not bad, 'FAIL')}); CPU: server "
              f"{phase.core_share:.0%} of a core, client {client_cpu / elapsed:.0%}; "
              f"{phase.cpu_ms:.3f} ms server CPU/request", flush=True)  # fmt: skip
        for path, failure in [f for result in results for f in result["failures"]][:5]:
            print(f"      failed: GET {path} -> {failure}")
        return phase

    @property
    def rate(self) -> float:
        return self.ok / self.elapsed

    @property
    def core_share(self) -> float:
        return self.server_cpu / self.elapsed

    @property
    def cpu_ms(self) -> float:
        """Server CPU milliseconds per 2xx response (NaN when there were none)."""
        return self.server_cpu / self.ok * 1000 if self.ok else float("nan")


def measure_kinds(
    load: Load, paths: dict[str, list[str]], credentials: dict[str, dict[str, str]],
    seconds: float,
) -> list[CpuPhase]:  # fmt: skip
    """`seconds` of load per kind of KINDS, in the order of SCHEDULE: `paths` by `Kind.paths`,
    `credentials` (request headers) by `Kind.credential`."""
    print(f"  per kind, {KIND_CLIENTS} clients, closed loop, {seconds:.0f} s each:", flush=True)
    kinds = {kind.name: kind for kind in KINDS}
    results: dict[str, list[dict[str, Any]]] = {kind.name: [] for kind in KINDS}
    for name in SCHEDULE:
        kind = kinds[name]
        mix = [(kind.paths, 1.0, paths[kind.paths])]
        span = seconds / SCHEDULE.count(name)
        results[name].append(load.run(credentials[kind.credential], KIND_CLIENTS, span, mix))
    return [CpuPhase.measured(kind.name, results[kind.name]) for kind in KINDS]


def print_table(database: str, phases: Sequence[CpuPhase], hello: CpuPhase) -> None:
    """The per-kind table of one database, then the bearer-vs-cookie line."""
    print(f"{database}: server CPU per request by kind, {KIND_CLIENTS} clients each, against "
          f"the hello world's {hello.cpu_ms:.3f} ms ({hello.rate:,.0f} req/s, server "
          f"{hello.core_share:.0%} of a core)")  # fmt: skip
    print(f"  {'kind':<18} {'req/s':>7} {'server':>7} {'CPU ms/req':>10} {'ratio':>7} "
          f"{'target':>13}  verdict")  # fmt: skip
    by_kind = {phase.kind: phase for phase in phases}
    for kind in KINDS:
        phase = by_kind[kind.name]
        ratio = phase.cpu_ms / hello.cpu_ms
        if kind.target is None:
            target, mark = f"cookie +/-{BEARER_TOLERANCE:.0%}", "(below)"
        else:
            target, mark = f"<= {kind.target:.0f}x", verdict(ratio <= kind.target)
        print(f"  {kind.name:<18} {phase.rate:>7,.0f} {phase.core_share:>7.0%} "
              f"{phase.cpu_ms:>10.3f} {ratio:>6.2f}x {target:>13}  {mark}")  # fmt: skip
    cookie, bearer = by_kind[COOKIE_KIND], by_kind[BEARER_KIND]
    difference = bearer.cpu_ms / cookie.cpu_ms - 1
    print(f"  bearer token vs cookie, same listings pages: {difference:+.1%} CPU per request "
          f"({bearer.cpu_ms:.3f} vs {cookie.cpu_ms:.3f} ms; target within "
          f"+/-{BEARER_TOLERANCE:.0%}) {verdict(abs(difference) <= BEARER_TOLERANCE)}")  # fmt: skip


def print_mix(
    database: str, rate: float, p99_ms: float, hello_rate: float, hello_p99_ms: float, bad: int
) -> None:
    """The 100-client mix against the hello world's 100 clients; `bad`: 5xx and dropped."""
    ratio = rate / hello_rate
    print(f"  {database} mix throughput {ratio:.2f}x the hello world's ({rate:,.0f} vs "
          f"{hello_rate:,.0f} req/s; p99 {p99_ms / hello_p99_ms:.1f}x), {bad} 5xx or dropped "
          f"(target >= {MIX_TARGET}x with none) {verdict(ratio >= MIX_TARGET and not bad)}",
          flush=True)  # fmt: skip

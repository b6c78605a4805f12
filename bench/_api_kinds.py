"""Per-request-kind CPU figures of `bench_api_load`: the kinds, their targets, and the tables.

Each kind is measured alone (`KIND_CLIENTS` closed-loop clients on one path family) and its
server CPU per 2xx response is compared with the bare Quart-Trio hello world's, measured next
to it, as long, with the same number of clients, in alternated order, round by round; a
ratio is the median of the per-round ratios, printed with its range. The load itself runs in
`bench_api_load`; this module holds the kinds, their schedule and what they are judged by, so
that it imports nothing of it.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from bench._common import percentile, verdict
from bench._fair import spread

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
HELLO_MIX: Mix = [("hello", 1.0, ["/hello"])]


class MixFigures(Protocol):
    """What `print_mix` reads of a phase's figures (`bench_api_load.Figures`)."""

    @property
    def rate(self) -> float: ...

    @property
    def p99_ms(self) -> float: ...


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
    def of(cls, kind: str, results: Sequence[dict[str, Any]]) -> CpuPhase:
        """The figures of `Load.run` results (of one kind) together."""
        samples = [sample for result in results for sample in result["samples"]]
        ok = sum(1 for _, status, _ in samples if 200 <= status < 300)
        bad = sum(1 for _, status, _ in samples if status >= 500 or status == 0)
        elapsed = sum(result["elapsed"] for result in results)
        return cls(kind, ok, elapsed, sum(result["server_cpu"] for result in results), bad)

    @classmethod
    def measured(cls, kind: str, results: Sequence[dict[str, Any]]) -> CpuPhase:
        """`of`, printed on one line (and the first failures)."""
        phase = cls.of(kind, results)
        samples = [sample for result in results for sample in result["samples"]]
        ok = [seconds for _, status, seconds in samples if 200 <= status < 300]
        client_cpu = sum(result["cpu"] for result in results)
        print(f"    {kind:<18} {phase.rate:>7,.0f} req/s, p50 {percentile(ok, 50) * 1000:.0f} "
              f"ms, p99 {percentile(ok, 99) * 1000:.0f} ms, {len(samples) - len(ok)} non-2xx "
              f"({phase.bad} 5xx or dropped {verdict(not phase.bad, 'FAIL')}); CPU: server "
              f"{phase.core_share:.0%} of a core, client {client_cpu / phase.elapsed:.0%}; "
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


@dataclass(frozen=True)
class Paired:
    """One kind and the hello world measured beside it: `phase` and `hello` over every round,
    `rounds` the (kind, hello) figures of each round."""

    phase: CpuPhase
    hello: CpuPhase
    rounds: list[tuple[CpuPhase, CpuPhase]]

    @property
    def ratios(self) -> list[float]:
        """CPU per request against the hello world's, one per round."""
        return [ours.cpu_ms / hello.cpu_ms for ours, hello in self.rounds]


def measure_kinds(
    load: Load, hello: Load, paths: dict[str, list[str]],
    credentials: dict[str, dict[str, str]], seconds: float, rounds: int,
) -> list[Paired]:  # fmt: skip
    """`seconds` of load per kind of KINDS and round, in the order of SCHEDULE, each phase
    next to a phase of the hello world as long, the two in alternated order (hello first in
    every other pair); `paths` by `Kind.paths`, `credentials` (request headers) by
    `Kind.credential`."""
    print(f"  per kind, {KIND_CLIENTS} clients, closed loop, {rounds} rounds of {seconds:g} s "
          f"each, each next to the hello world as long (alternated):", flush=True)  # fmt: skip
    kinds = {kind.name: kind for kind in KINDS}
    Results = dict[str, list[list[dict[str, Any]]]]  # kind -> round -> Load.run results
    ours: Results = {k.name: [[] for _ in range(rounds)] for k in KINDS}
    base: Results = {k.name: [[] for _ in range(rounds)] for k in KINDS}
    for turn, (round_, name) in enumerate((r, n) for r in range(rounds) for n in SCHEDULE):
        kind = kinds[name]
        mix = [(kind.paths, 1.0, paths[kind.paths])]
        span = seconds / SCHEDULE.count(name)
        headers = credentials[kind.credential]
        if turn % 2 == 0:  # the kind first, then the hello world; the other way round next
            mine = load.run(headers, KIND_CLIENTS, span, mix)
            other = hello.run({}, KIND_CLIENTS, span, HELLO_MIX)
        else:
            other = hello.run({}, KIND_CLIENTS, span, HELLO_MIX)
            mine = load.run(headers, KIND_CLIENTS, span, mix)
        ours[name][round_].append(mine)
        base[name][round_].append(other)
    paired = []
    for kind in KINDS:
        everything = [r for one in ours[kind.name] for r in one]
        hellos = [r for one in base[kind.name] for r in one]
        paired.append(Paired(
            CpuPhase.measured(kind.name, everything), CpuPhase.of("hello", hellos),
            [(CpuPhase.of(kind.name, a), CpuPhase.of("hello", b))
             for a, b in zip(ours[kind.name], base[kind.name], strict=True)],
        ))  # fmt: skip
    return paired


def print_table(database: str, paired: Sequence[Paired]) -> None:
    """The per-kind table of one database, then the bearer-vs-cookie line. A ratio is the
    median of the per-round ratios, with its range."""
    hellos = [p.hello for p in paired]
    ok = sum(h.ok for h in hellos)
    cpu = sum(h.server_cpu for h in hellos)
    elapsed = sum(h.elapsed for h in hellos)
    hello = CpuPhase("hello", ok, elapsed, cpu, 0)
    print(f"{database}: server CPU per request by kind, {KIND_CLIENTS} clients each, against "
          f"the hello world measured beside each kind ({hello.cpu_ms:.3f} ms over all, "
          f"{hello.rate:,.0f} req/s, server {hello.core_share:.0%} of a core)")  # fmt: skip
    print(f"  {'kind':<18} {'req/s':>7} {'server':>7} {'CPU ms/req':>10} {'hello':>7} "
          f"{'ratio (range)':>20} {'target':>13}  verdict")  # fmt: skip
    by_kind = {p.phase.kind: p for p in paired}
    for kind in KINDS:
        p = by_kind[kind.name]
        ratio = statistics.median(p.ratios)
        if kind.target is None:
            target, mark = f"cookie +/-{BEARER_TOLERANCE:.0%}", "(below)"
        else:
            target, mark = f"<= {kind.target:.0f}x", verdict(ratio <= kind.target)
        print(f"  {kind.name:<18} {p.phase.rate:>7,.0f} {p.phase.core_share:>7.0%} "
              f"{p.phase.cpu_ms:>10.3f} {p.hello.cpu_ms:>7.3f} {spread(p.ratios, 2) + 'x':>20} "
              f"{target:>13}  {mark}")  # fmt: skip
    cookie, bearer = by_kind[COOKIE_KIND], by_kind[BEARER_KIND]
    differences = [b.cpu_ms / c.cpu_ms - 1 for (b, _), (c, _) in
                   zip(bearer.rounds, cookie.rounds, strict=True)]  # fmt: skip
    difference = statistics.median(differences)
    print(f"  bearer token vs cookie, same listings pages: {difference:+.1%} CPU per request "
          f"(per round: {', '.join(f'{d:+.1%}' for d in differences)}; {bearer.phase.cpu_ms:.3f} "
          f"vs {cookie.phase.cpu_ms:.3f} ms over all; target within +/-{BEARER_TOLERANCE:.0%}) "
          f"{verdict(abs(difference) <= BEARER_TOLERANCE)}")  # fmt: skip


def print_mix(database: str, rounds: Sequence[tuple[MixFigures, MixFigures]], bad: int) -> None:
    """The 100-client mix against the hello world's 100 clients, round by round (alternated);
    `bad`: 5xx and dropped."""
    shares = [mix.rate / hello.rate for mix, hello in rounds]
    p99s = [mix.p99_ms / hello.p99_ms for mix, hello in rounds]
    ratio = statistics.median(shares)
    rate = statistics.median([mix.rate for mix, _ in rounds])
    hello_rate = statistics.median([hello.rate for _, hello in rounds])
    print(f"  {database} mix throughput {spread(shares, 2)}x the hello world's (medians "
          f"{rate:,.0f} vs {hello_rate:,.0f} req/s over {len(rounds)} alternated rounds; p99 "
          f"{spread(p99s)}x), {bad} 5xx or dropped (target >= {MIX_TARGET}x with none) "
          f"{verdict(ratio >= MIX_TARGET and not bad)}", flush=True)  # fmt: skip

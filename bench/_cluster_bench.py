"""Helpers of `bench_cluster`: the bench's PostgreSQL database, worker nodes as child
processes, what they log, and CPU use by process and for the whole machine."""

from __future__ import annotations

import os
import re
import secrets
import subprocess
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy.engine import URL, make_url

from bench._common import cpu_seconds, machine_cpu_seconds, process_cpu_seconds, spawn

DEFAULT_SERVER = "postgresql+asyncpg://postgres@127.0.0.1:5432"


# -- PostgreSQL --------------------------------------------------------------------------------


def server_url() -> URL:
    return make_url(os.environ.get("NICHESCOPE_BENCH_PG_URL") or DEFAULT_SERVER)


def psql(server: URL, sql: str) -> None:
    """Run one statement on the server's `postgres` database; CalledProcessError on failure."""
    env = {**os.environ, "PGPASSWORD": server.password} if server.password else None
    where = ["-h", server.host or "127.0.0.1", "-p", str(server.port or 5432)]
    who = ["-U", server.username or "postgres", "-d", "postgres"]
    command = ["psql", *where, *who, "-q", "-v", "ON_ERROR_STOP=1", "-c", sql]
    subprocess.run(command, check=True, timeout=120, env=env, capture_output=True)


def pg_pids(server: URL, database: str) -> list[int]:
    """The server's processes working for `database`: the postmaster, its auxiliary processes
    (WAL writer, checkpointer, ...) and that database's backends; other databases' backends
    (other people's tests) are left out. Empty for a server on another host."""
    if server.host not in (None, "127.0.0.1", "localhost", "::1"):
        return []
    backend = re.compile(r"(\d+\.\d+\.\d+\.\d+|\[local\]|[0-9a-f:]+)\(\d+\)")
    pids = []
    for entry in Path("/proc").iterdir():
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:  # not a process, or gone meanwhile
            continue
        if not (cmdline.startswith("postgres") or "/bin/postgres " in cmdline):
            continue
        if f" {database} " in cmdline or not backend.search(cmdline):
            pids.append(int(entry.name))
    return pids


# -- nodes and what they log -------------------------------------------------------------------


@dataclass
class Node:
    name: str
    process: subprocess.Popen[bytes]
    log: Path


class NodeCrashed(Exception):
    def __init__(self, node: Node) -> None:
        lines = node.log.read_text(errors="replace").splitlines()
        tail = "\n".join(f"    {line[:300]}" for line in lines[-12:])
        super().__init__(f"node {node.name} exited (status {node.process.returncode}):\n{tail}")


def check_alive(nodes: Sequence[Node]) -> None:
    for node in nodes:
        if node.process.poll() is not None:
            raise NodeCrashed(node)


def kill(node: Node) -> None:
    if node.process.poll() is None:
        node.process.kill()
        node.process.wait(10)


NOTABLE = (
    ("lease on monitor", "leases lost"),
    ("could not renew", "self-fenced (could not renew in time)"),
    ("heartbeat failed", "heartbeat rounds failed"),
    ("poll failed", "polls failed"),
    ("Traceback", "tracebacks"),
)


class LogWatch:
    """What the nodes logged (their stderr, `bench-*.log` in `folder`) since the last look."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._offsets: dict[Path, int] = {}
        self.errors: list[str] = []  # the first few ERROR lines, shown at the end

    def since_last(self) -> str:
        counts: Counter[str] = Counter()
        for log in sorted(self.folder.glob("bench-*.log")):
            with log.open("rb") as handle:
                handle.seek(self._offsets.get(log, 0))
                data = handle.read()
                self._offsets[log] = handle.tell()
            for line in data.decode(errors="replace").splitlines():
                counts.update(kind for needle, kind in NOTABLE if needle in line)
                if " ERROR " in line and len(self.errors) < 4:
                    self.errors.append(f"    {log.stem}: {line[:300]}")
        found = ", ".join(f"{kind} {counts[kind]}" for _, kind in NOTABLE if counts[kind])
        return f"node logs: {found or 'nothing notable'}"


@dataclass
class Cluster:
    """Starts nodes on the bench database; remembers them all, to kill what is left."""

    url: str
    origin: str
    simulator: int  # pid
    folder: Path
    key: str = field(default_factory=lambda: secrets.token_urlsafe(32))
    nodes: list[Node] = field(default_factory=list)

    def start(self, name: str, lease: float) -> Node:
        env = {
            "NICHESCOPE_NODE_ID": name,
            "NICHESCOPE_LEASE_SECONDS": str(lease),
            "NICHESCOPE_MARKET_RATE": "0",
            "NICHESCOPE_MARKET_ORIGINS": self.origin,
            "NICHESCOPE_SECRET_KEY": self.key,
        }
        log = self.folder / f"{name}.log"
        with log.open("wb") as stderr:
            args = ["-m", "api.process.cli", "worker", "--database-url", self.url]
            process = spawn(args, env, stderr)
        self.nodes.append(Node(name, process, log))
        return self.nodes[-1]


# -- CPU ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CpuSample:
    wall: float
    nodes: dict[str, float]
    simulator: float
    postgres: dict[int, float]
    bench: float  # this process
    machine: tuple[float, float]  # busy, total seconds of every core

    @classmethod
    def take(cls, nodes: Sequence[Node], simulator: int, server: URL, database: str) -> CpuSample:
        postgres = {}
        for pid in pg_pids(server, database):
            try:
                postgres[pid] = process_cpu_seconds(pid)
            except OSError:  # a backend that ended meanwhile
                continue
        return cls(
            wall=time.monotonic(),
            nodes={n.name: process_cpu_seconds(n.process.pid) for n in nodes},
            simulator=process_cpu_seconds(simulator),
            postgres=postgres,
            bench=cpu_seconds(),
            machine=machine_cpu_seconds(),
        )

    def _postgres(self, before: CpuSample) -> float:
        # Backends started within the window count from zero; ones that ended are lost.
        return sum(cpu - before.postgres.get(pid, 0.0) for pid, cpu in self.postgres.items())

    def spent(self, before: CpuSample) -> tuple[float, float]:
        """CPU seconds since `before` of the nodes, and of the nodes with PostgreSQL and the
        simulator: the work the polls cost, whatever else the machine was doing."""
        nodes = sum(cpu - before.nodes.get(name, 0.0) for name, cpu in self.nodes.items())
        return nodes, nodes + self._postgres(before) + self.simulator - before.simulator

    def since(self, before: CpuSample) -> str:
        wall = self.wall - before.wall
        nodes = {name: cpu - before.nodes.get(name, 0.0) for name, cpu in self.nodes.items()}
        postgres = self._postgres(before)
        pg = f"{postgres / wall:.0%}" if self.postgres else "n/a (not on this host)"
        simulator, bench = self.simulator - before.simulator, self.bench - before.bench
        cores = os.cpu_count() or 1
        busy = (self.machine[0] - before.machine[0]) / (self.machine[1] - before.machine[1])
        # Everything else on the machine, in the same unit (a share of one core).
        others = busy * cores - (sum(nodes.values()) + postgres + simulator + bench) / wall
        return (
            "CPU (100% = one core): nodes "
            + ", ".join(f"{name} {cpu / wall:.0%}" for name, cpu in nodes.items())
            + f"; PostgreSQL {pg}; simulator {simulator / wall:.0%}; this bench "
            f"{bench / wall:.0%}; anything else {max(0.0, others):.0%}; whole machine "
            f"{busy:.0%} busy of {cores} cores"
        )

"""The notification benchmark's figures: what one run measured, and how it is printed."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from bench._common import cpu_seconds, machine_cpu_seconds, percentile, verdict
from engine import next_poll_tick

TARGET_P99 = 2.0  # seconds, poll commit -> receiver


def micros(at: datetime) -> int:
    return round(at.timestamp() * 1_000_000)


@dataclass(frozen=True)
class Usage:
    """Over a window: the node's CPU share of one core, and how busy the whole machine was
    (every core, every process: others' tests included)."""

    node: float
    machine: float


class Meter:
    def __init__(self) -> None:
        self.cpu, self.wall, self.busy = cpu_seconds(), time.monotonic(), machine_cpu_seconds()

    def usage(self) -> tuple[Usage, Meter]:
        now = Meter()
        node = (now.cpu - self.cpu) / max(1e-9, now.wall - self.wall)
        machine = (now.busy[0] - self.busy[0]) / max(1e-9, now.busy[1] - self.busy[1])
        return Usage(node, machine), now


@dataclass
class Run:
    backend: str
    monitors: int
    interval: int  # the monitors' poll interval, seconds
    duration: float
    rule_at: datetime
    arrivals: float
    commits: dict[tuple[str, int], float]
    cutoff: datetime
    drained_in: float
    usage_before: Usage  # lead, bootstrap round and re-polls without the rule
    usage_with: Usage  # from the rule to the cut-off
    outbox_writes: list[tuple[float, float, int]]  # (when, seconds, rows) per poll
    delivered_by_dispatcher: int
    failed_sends: int
    started: datetime
    first: dict[str, datetime]


@dataclass
class Window:
    """Re-polls (after a successful poll) started in one window of the run."""

    lags: list[float]  # schedule lag, as bench_engine measures it
    commits: list[float]  # the poll's finished_at -> its transaction committed
    polls: int = 0
    errors: int = 0

    def line(self) -> str:
        lag_max = max(self.lags, default=float("nan"))
        return (
            f"schedule lag p50 {_ms(percentile(self.lags, 50))}, p99 "
            f"{_ms(percentile(self.lags, 99))}, max {_ms(lag_max)} over {len(self.lags)} "
            f"re-polls ({self.errors} of {self.polls} polls failed); poll transaction "
            f"(finished_at -> commit) p50 {_ms(percentile(self.commits, 50))}, p99 "
            f"{_ms(percentile(self.commits, 99))}"
        )


def windows(run: Run, polls: list[Any]) -> tuple[Window, Window]:
    """Before and with the rule. A poll's lag is its start minus the `next_poll_at` the
    previous poll promised (the first tick of its search's grid a quarter of an interval or
    more after its finish, `engine.next_poll_tick`); a re-poll after a failed one is backed
    off on purpose and not counted."""
    before, with_rule = Window([], []), Window([], [])
    promised, previous = dict(run.first), dict[str, bool]()
    for monitor_id, started, finished, error, url in polls:
        if started > run.cutoff:
            continue
        window = before if started < run.rule_at else with_rule
        window.polls += 1
        window.errors += error is not None
        if previous.get(monitor_id):
            window.lags.append((started - promised[monitor_id]).total_seconds())
            committed = run.commits.get((monitor_id, micros(finished)))
            if committed is not None:
                window.commits.append(committed - finished.timestamp())
        previous[monitor_id] = error is None
        promised[monitor_id] = next_poll_tick(finished, run.interval, url, monitor_id)
    return before, with_rule


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms" if seconds < 10 else f"{seconds:.1f} s"


def report(run: Run, rows: tuple[list[Any], list[Any], list[Any]], seen: dict[str, Any],
            peers_cpu: str) -> bool:  # fmt: skip
    """Print the figures; False on a hard failure (duplicates, or nothing delivered), which
    fails the run. A missed latency target is printed MISS and does not."""
    notes, polls, deliveries = rows
    arrivals: dict[str, float] = seen["arrivals"]
    items: dict[str, Any] = seen["items"]
    from_commit, from_created, commit_gap, unstamped = [], [], [], 0
    for note_id, monitor_id, created_at, _, _ in notes:
        arrived = arrivals.get(note_id)
        committed = run.commits.get((monitor_id, micros(created_at)))
        if committed is not None:
            commit_gap.append(committed - created_at.timestamp())
        if arrived is None:
            continue
        from_created.append(arrived - created_at.timestamp())
        if committed is None:
            unstamped += 1
        else:
            from_commit.append(arrived - committed)
    ours = {n[0] for n in notes}
    undelivered = [n for n in notes if n[0] not in arrivals]
    retried = sum(1 for n in notes if n[4] > 1)
    redelivered = seen["rejected"].get("replayed", 0)
    forged = sum(v for k, v in seen["rejected"].items() if k != "replayed")
    listed = [items[i] for i in arrivals]
    same_listing_twice = len(listed) - len(set(listed))
    duplicates = redelivered + same_listing_twice
    before, with_rule = windows(run, polls)
    p = {q: percentile(from_commit, q) for q in (50, 90, 99)}
    worst = max(from_commit, default=float("nan"))
    lag_p99 = percentile(with_rule.lags, 99)
    batches = [len(ids) for good, ids in deliveries if good]
    db = "SQLite" if run.backend == "sqlite" else "PostgreSQL"
    print(f"{run.monitors:,} monitors x {run.interval} s on {db} (one node, dispatcher wired by "
          f"open_node), simulator "
          f"({run.arrivals:g} new listings/s) and webhook receiver in separate processes; "
          f"{run.duration:.0f} s run (the rule added after "
          f"{(run.rule_at - run.started).total_seconds():.0f} s) + drain")  # fmt: skip
    print(f"  notifications: {len(notes)} written by polls up to the cut-off, "
          f"{len(ours & arrivals.keys())} delivered to the receiver (signatures verified), "
          f"{len(undelivered)} undelivered after {run.drained_in:.1f} s of drain; "
          f"duplicates {duplicates} (ids redelivered {redelivered}, same listing twice "
          f"{same_listing_twice}) {verdict(duplicates == 0, 'FAIL')}; refused by the receiver "
          f"(signature/timestamp) {forged}; retried {retried}")  # fmt: skip
    print(f"  latency poll commit -> receiver: p50 {_ms(p[50])}, p90 {_ms(p[90])}, "
          f"p99 {_ms(p[99])}, max {_ms(worst)} over {len(from_commit)} notifications "
          f"(target p99 < {TARGET_P99:.0f} s) {verdict(bool(from_commit) and p[99] < TARGET_P99)}"
          + (f"; {unstamped} without a commit stamp" if unstamped else ""))  # fmt: skip
    print(f"  from the outbox row's created_at (the poll's finished_at, before its transaction): "
          f"p50 {_ms(percentile(from_created, 50))}, p99 {_ms(percentile(from_created, 99))}, "
          f"max {_ms(max(from_created, default=float('nan')))}; created_at -> commit p50 "
          f"{_ms(percentile(commit_gap, 50))}, p99 {_ms(percentile(commit_gap, 99))}")  # fmt: skip
    mean_batch = sum(batches) / max(1, len(batches))
    print(f"  dispatcher: {len(batches)} successful sends logged ({mean_batch:.1f} alerts per "
          f"claimed batch on average), {run.failed_sends} failed sends; it counted "
          f"{run.delivered_by_dispatcher} delivered")  # fmt: skip
    print(f"  engine with the rule: {with_rule.line()} (target p99 < 2 s) "
          f"{verdict(lag_p99 < 2.0)}")  # fmt: skip
    print(f"  engine before the rule, same run (baseline): {before.line()}")
    start, end = run.rule_at.timestamp(), run.cutoff.timestamp()
    writes = [(spent, rows) for at, spent, rows in run.outbox_writes if start <= at <= end]
    spent = [w[0] for w in writes]
    print(f"  outbox write in the poll's transaction (write_poll_alerts) with the rule: p50 "
          f"{_ms(percentile(spent, 50))}, p99 {_ms(percentile(spent, 99))} over {len(writes)} "
          f"polls, {sum(spent) / max(1e-9, end - start):.2f} s per second of run in all "
          f"(polls overlap); "
          f"{sum(w[1] for w in writes)} rows written by them")  # fmt: skip
    one, five, _ = os.getloadavg()
    ub, uw = run.usage_before, run.usage_with
    print(f"  node CPU {uw.node:.0%} of one core with the rule, {ub.node:.0%} before; machine "
          f"busy {uw.machine:.0%} with, {ub.machine:.0%} before ({os.cpu_count()} cores, all "
          f"processes); {peers_cpu}; load average {one:.2f} / {five:.2f} at the end")  # fmt: skip
    return duplicates == 0 and bool(from_commit)

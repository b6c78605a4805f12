"""Import memory: peak RSS growth of `nichescope serve` per imported MB (#21, item 6).

A synthetic monitor export with as many events as the one in the issue (700,000; about 100 MiB
as written here, so the server's import limit is raised to fit) is imported over HTTP into a
fresh server, once alone and then three at once from three
workspaces. The server's peak RSS (VmHWM) growth is divided by the file's size; the target is
under 2x for one import and bounded for concurrent ones (two run at once per node, the third
is refused with 429 before its body is read).

Baseline, in the same run, in a child process: the first two steps of the previous import
path on the same file, the body read whole and `json.loads` of it (a lower bound of what it
cost: it then also built Python lists of every row).

    python -m bench.bench_import_memory [--quick]
"""

from __future__ import annotations

import argparse
import json
import random
import secrets
import sys
import tempfile
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx
import trio
import trio_asyncio

from api.billing.plans import configured_plans
from api.settings import Settings
from bench._common import (
    free_port,
    load_note,
    peak_rss_kib,
    seed_account,
    spawn,
    stop,
    verdict,
    wait_http,
)
from store import Entitlement, open_store

EVENT_KINDS = ("new", "state", "price", "counts")


def _stamp(seconds: float) -> str:
    moment = datetime(2026, 10, 1, tzinfo=UTC) + timedelta(seconds=seconds)
    return moment.isoformat().replace("+00:00", "Z")


def _rows(n_listings: int, n_events: int, n_polls: int) -> Iterator[tuple[str, object]]:
    rng = random.Random(7)
    for i in range(n_listings):
        yield "listings", {
            "item_id": 5_000_000 + i, "title": f"Levi's 501 W{i % 40} L{i % 36}",
            "brand": rng.choice(["Levi's", "Zara", "Nike", "Mango"]), "size": rng.choice("SML"),
            "condition": "Very good", "category_id": rng.choice([1904, 257]),
            "category_name": "Jeans", "price": f"{rng.randint(3, 90)}.00", "currency": "EUR",
            "favourites": rng.randint(0, 30), "views": rng.randint(0, 300),
            "listed_at": _stamp(i), "first_seen_at": _stamp(i + 60),
            "last_seen_at": _stamp(i + 9e5),
            "state": rng.choice(["open", "sold", "deleted"]), "state_changed_at": _stamp(i + 8e5),
            "state_evidence": "detail_api",
        }  # fmt: skip
    for j in range(n_events):
        yield "events", {
            "id": j + 1, "item_id": 5_000_000 + j % n_listings, "kind": rng.choice(EVENT_KINDS),
            "from_state": None, "to_state": None, "price": "12.00", "at": _stamp(j),
        }  # fmt: skip
    for k in range(n_polls):
        yield "polls", {
            "id": f"poll_{k}", "started_at": _stamp(k * 60), "finished_at": _stamp(k * 60 + 5),
            "items": 96, "new": 1, "changed": 2, "error": None, "market_at": _stamp(k * 60),
            "clock": "market",
        }  # fmt: skip


def write_export(path: Path, n_listings: int, n_events: int, n_polls: int) -> int:
    """Write the export row by row (the bench's own memory stays small); its size."""
    with path.open("w") as out:
        out.write(json.dumps({
            "format": "nichescope.monitor-export", "version": 2, "exported_at": _stamp(1e6),
            "monitor": {"id": "mon_bench", "label": None, "status": "paused",
                        "url": "https://www.vinted.fr/catalog?catalog[]=1904",
                        "interval_seconds": 60, "created_at": _stamp(0)},
            "counts": {"open": 1},
        })[:-1])  # fmt: skip
        current = None
        for key, row in _rows(n_listings, n_events, n_polls):
            if key != current:
                out.write(("]" if current else "") + f', "{key}": [')
                current, first = key, True
            out.write(("" if first else ",") + json.dumps(row))
            first = False
        out.write("]}")
    return path.stat().st_size


def reset_hwm(pid: int) -> None:
    """Reset the peak RSS to the current RSS (Linux: write 5 to clear_refs)."""
    Path(f"/proc/{pid}/clear_refs").write_text("5")


async def _seed(url: str, key: str, n: int) -> list[str]:
    cookies = []
    async with trio_asyncio.open_loop(), open_store(url, run_migrations=True) as store:
        await store.billing.seed_plans(configured_plans(Settings()))
        for i in range(n):
            workspace, cookie = await seed_account(store, key, suffix=str(i))
            grant = Entitlement(plan="trial", status="active", source="grant")
            await store.billing.apply(workspace, grant, cause="bench")
            cookies.append(cookie)
    return cookies


def _post(base: str, cookie: str, path: Path) -> httpx.Response:
    with path.open("rb") as body:
        return httpx.post(
            f"{base}/api/analysis/import-monitoring", content=body, timeout=600,
            cookies={"session_token": cookie}, headers={"Content-Type": "application/json"},
        )  # fmt: skip


def baseline_growth_kib(path: Path) -> tuple[int, float]:
    """The previous path's first steps on the same file, in a child process: peak RSS
    growth and seconds."""
    # VmHWM, not ru_maxrss: a child inherits its parent's ru_maxrss, and under `python -m
    # bench` that was gigabytes, which hid the baseline's growth entirely (+0 MiB).
    code = (
        "import json, sys, time\n"
        "from bench._common import peak_rss_kib\n"
        "base = peak_rss_kib()\n"
        "t = time.monotonic()\n"
        "raw = open(sys.argv[1], 'rb').read()\n"
        "document = json.loads(raw)\n"
        "print(peak_rss_kib() - base, time.monotonic() - t)\n"
    )
    import subprocess

    done = subprocess.run(
        [sys.executable, "-c", code, str(path)], capture_output=True, text=True, check=True,
        cwd=Path(__file__).resolve().parents[1],
    )  # fmt: skip
    growth, seconds = done.stdout.split()
    return int(growth), float(seconds)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a 10x smaller export")
    parser.add_argument("--smoke", action="store_true", help="a 100x smaller export, not judged")
    args = parser.parse_args(argv)
    scale = 100 if args.smoke else 10 if args.quick else 1
    print(load_note())
    with tempfile.TemporaryDirectory() as folder:
        export = Path(folder) / "export.json"
        size = write_export(export, 30_000 // scale, 700_000 // scale, 3_000 // scale)
        mib = size / 2**20
        print(f"export: {mib:.1f} MiB, {700_000 // scale:,} events, {30_000 // scale:,} listings")
        base_growth, base_seconds = baseline_growth_kib(export)
        key = secrets.token_urlsafe(32)
        url = f"sqlite+aiosqlite:///{folder}/bench.db"
        cookies = trio.run(_seed, url, key, 3)
        port = free_port()
        server = spawn(
            ["-m", "api.process.cli", "serve", "--port", str(port), "--database-url", url],
            env={
                "NICHESCOPE_SECRET_KEY": key,
                "NICHESCOPE_OUTBOX_DIR": f"{folder}/outbox",
                "NICHESCOPE_IMPORT_MAX_BYTES": str(size + 1024),
            },
        )
        base = f"http://127.0.0.1:{port}"
        try:
            wait_http(f"{base}/health")
            time.sleep(1)
            reset_hwm(server.pid)
            before = peak_rss_kib(server.pid)
            started = time.monotonic()
            one = _post(base, cookies[0], export)
            one_seconds = time.monotonic() - started
            one_growth = peak_rss_kib(server.pid) - before
            assert one.status_code == 201, one.text[:300]

            reset_hwm(server.pid)
            before = peak_rss_kib(server.pid)
            statuses: list[int] = []

            async def three() -> None:
                async with trio.open_nursery() as nursery:
                    for cookie in cookies:
                        nursery.start_soon(
                            lambda c=cookie: trio.to_thread.run_sync(
                                lambda: statuses.append(_post(base, c, export).status_code)
                            )
                        )

            trio.run(three)
            three_growth = peak_rss_kib(server.pid) - before
        finally:
            stop(server)
    per_mb = one_growth / 1024 / mib
    print(f"baseline (the previous path's first steps: body read whole, json.loads): "
          f"peak RSS +{base_growth / 1024:.0f} MiB = {base_growth / 1024 / mib:.1f}x the file, "
          f"{base_seconds:.1f} s")  # fmt: skip
    print(f"one import over HTTP: 201 in {one_seconds:.1f} s, server peak RSS "
          f"+{one_growth / 1024:.0f} MiB = {per_mb:.2f}x the file "
          f"(baseline / this: {base_growth / max(one_growth, 1):.1f}x) (target < 2x) "
          f"{verdict(per_mb < 2)}")  # fmt: skip
    print(f"three at once (answers {sorted(statuses)}): server peak RSS "
          f"+{three_growth / 1024:.0f} MiB = {three_growth / 1024 / mib:.2f}x the file "
          f"(target: bounded, < 2 imports' worth = 4x) "
          f"{verdict(three_growth / 1024 / mib < 4 and statuses.count(201) <= 2)}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""`python -m bench`: run every benchmark module in this folder, one after another."""

from __future__ import annotations

import importlib
import pkgutil
import sys
import traceback
from pathlib import Path


def main() -> int:
    """Every benchmark, to the end: one that fails (an exception, or a hard failure it reports
    with its exit status) is named, and the next one runs; the exit status says whether any
    failed."""
    folder = Path(__file__).parent
    names = sorted(
        m.name for m in pkgutil.iter_modules([str(folder)]) if m.name.startswith("bench_")
    )
    if not names:
        print("no benchmarks yet")
        return 0
    failed = []
    for name in names:
        print(f"== {name}", flush=True)
        try:
            module = importlib.import_module(f"bench.{name}")
            result = module.main()
        except Exception:
            traceback.print_exc()
            result = 1
        if result:
            failed.append(name)
            print(f"== {name} FAILED (exit status {result})", flush=True)
    if failed:
        print(f"failed: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

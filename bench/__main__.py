"""`python -m bench`: run every benchmark module in this folder, one after another."""

from __future__ import annotations

import importlib
import pkgutil
import sys
from pathlib import Path


def main() -> int:
    folder = Path(__file__).parent
    names = sorted(
        m.name for m in pkgutil.iter_modules([str(folder)]) if m.name.startswith("bench_")
    )
    if not names:
        print("no benchmarks yet")
        return 0
    for name in names:
        print(f"== {name}")
        module = importlib.import_module(f"bench.{name}")
        result = module.main()
        if result:
            return int(result)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Run benchmarks: `python -m benchmarks [name ...]` (default: every benchmarks/bench_*.py).

Each bench module exposes `main() -> None` and prints its own table. A failing bench is reported and the rest
still run; the exit status is 1 when any failed.
"""

from __future__ import annotations

import importlib
import sys
import time
import traceback
from pathlib import Path


def available() -> list[str]:
    """Names of the bench modules present, e.g. ["filter", "sandbox"]."""
    return sorted(p.stem.removeprefix("bench_") for p in Path(__file__).parent.glob("bench_*.py"))


def main(argv: list[str]) -> int:
    """Run the named benches (all when none are named); return the number of failures as the exit status."""
    names = argv or available()
    unknown = [n for n in names if n not in available()]
    if unknown:
        print(f"unknown bench(es): {', '.join(unknown)}; available: {', '.join(available())}", file=sys.stderr)
        return 2
    failed = []
    for name in names:
        print(f"== bench {name}", flush=True)
        start = time.perf_counter()
        try:
            importlib.import_module(f"benchmarks.bench_{name}").main()
        except Exception:  # one bench failing must not hide the others' numbers
            traceback.print_exc()
            failed.append(name)
        print(
            f"== bench {name}: {'FAILED' if name in failed else 'ok'} in {time.perf_counter() - start:.1f} s\n",
            flush=True,
        )
    if failed:
        print(f"failed benches: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

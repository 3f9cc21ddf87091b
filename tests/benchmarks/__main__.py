"""Run every benchmark module (`python -m tests.benchmarks [topic ...]`)."""

from __future__ import annotations

import importlib
import pkgutil
import sys
import time
from pathlib import Path

HERE = Path(__file__).parent


def main(selected: list[str]) -> None:
    names = sorted(
        info.name
        for info in pkgutil.iter_modules([str(HERE)])
        if info.name.startswith("bench_") and (not selected or info.name[6:] in selected)
    )
    if not names:
        raise SystemExit(f"no benchmark matches {selected}")
    for name in names:
        started = time.perf_counter()
        print(f"== {name}", flush=True)
        importlib.import_module(f"tests.benchmarks.{name}").main()
        print(f"== {name} done in {time.perf_counter() - started:.1f} s", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])

"""One way to time both sides of a ratio: the same warm-up, runs and statistic, and a smoke scale.

Every benchmark times its two sides with `measure` (median of N with min and max, after the same
warm-up), so no ratio compares a best-of-5 with a single cold run. `GROUNDWIRE_BENCH_SMOKE=1`
(`make bench-smoke`) shrinks every input with `scaled` so CI runs each benchmark in seconds: the
figures then mean nothing, but the code, the comparison and the results schema are exercised.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")

SMOKE_VARIABLE = "GROUNDWIRE_BENCH_SMOKE"
RESULTS = Path(__file__).parent / "results"


def smoke() -> bool:
    """True for a smoke run (tiny inputs, one run): results are for checking, not quoting."""
    return os.environ.get(SMOKE_VARIABLE, "").strip().lower() in {"1", "true", "yes"}


def scaled(full: int, small: int) -> int:
    """`full` normally, `small` in a smoke run."""
    return small if smoke() else full


def results_dir() -> Path:
    """Where results go: results/ (quoted by the README), or results/smoke/ (ignored) in smoke."""
    return RESULTS / "smoke" if smoke() else RESULTS


@dataclass(frozen=True)
class Timing:
    """Wall-clock seconds of repeated runs: the median is the figure, min and max its spread."""

    median_s: float
    min_s: float
    max_s: float
    runs: int
    warmup: int

    def as_dict(self) -> dict[str, Any]:
        """For the results JSON."""
        return asdict(self)

    def cell(self) -> str:
        """`median (min–max)` in seconds, for a Markdown table."""
        return f"{self.median_s:.3f} ({self.min_s:.3f}–{self.max_s:.3f})"


def measure(run: Callable[[], T], *, runs: int, warmup: int = 1) -> tuple[Timing, T]:
    """Call `run` `warmup` times untimed, then `runs` times timed; the timing and last result."""
    if runs < 1 or warmup < 0:
        raise ValueError(f"runs must be >= 1 and warmup >= 0, got runs={runs}, warmup={warmup}")
    result: T
    for _ in range(warmup):
        result = run()
    seconds = []
    for _ in range(runs):
        started = time.perf_counter()
        result = run()
        seconds.append(time.perf_counter() - started)
    timing = Timing(statistics.median(seconds), min(seconds), max(seconds), runs, warmup)
    return timing, result


def machine(load_at_start: float) -> dict[str, Any]:
    """The machine section of a results file whose run saw the 1-minute load average
    `load_at_start` when it began (and now, at its end)."""
    import platform

    return {
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "load_average_1m_at_start": load_at_start,
        "load_average_1m_at_end": os.getloadavg()[0],
    }


def environment() -> dict[str, Any]:
    """What the figures were measured on, for every results file."""
    import platform

    return {
        "python": platform.python_version(),
        "machine": f"{platform.machine()}, {platform.system()}",
        "cpus": os.cpu_count(),
        "load_average_1m": round(os.getloadavg()[0], 2),
        "smoke": smoke(),
    }

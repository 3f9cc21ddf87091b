"""What this machine's two cores give two CPU-bound processes: the ceiling for any two workers.

A VM's two vCPUs need not be two whole cores (they may be hyperthreads of one, or share a
host's caches and memory bandwidth with other guests). A two-worker speedup is only meaningful
next to what the machine gives the same work run twice at once, so the benchmarks that report
one measure this too, in the same run: `command` alone, then two copies started together,
`runs` rounds in turn after one warm-up. The figure is the throughput of two over one,
2 x (one's wall) / (the pair's wall), and how much more CPU a copy spends when both run
(`os.wait4`'s rusage of each child: the same work, so more CPU means slower cores, not more
work).
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Sequence
from typing import Any


def _run(commands: Sequence[Sequence[str]]) -> tuple[float, list[float]]:
    """Start every command at once; the wall time until the last ends and each one's CPU."""
    started = time.monotonic()
    children = [subprocess.Popen(list(command)) for command in commands]
    cpu: list[float] = []
    for child in children:
        _, status, usage = os.wait4(child.pid, 0)
        child.returncode = os.waitstatus_to_exitcode(status)
        if child.returncode != 0:
            raise RuntimeError(f"{' '.join(commands[0])} failed ({child.returncode})")
        cpu.append(usage.ru_utime + usage.ru_stime)
    return time.monotonic() - started, cpu


def two_cores(command: Sequence[str], runs: int) -> dict[str, Any]:
    """`command` alone and two copies at once, `runs` rounds after a warm-up of each."""
    _run([command])
    _run([command, command])
    rounds = []
    for _ in range(runs):
        one_wall, one_cpu = _run([command])
        two_wall, two_cpu = _run([command, command])
        rounds.append(
            {
                "one_wall_s": one_wall,
                "two_wall_s": two_wall,
                "one_cpu_s": one_cpu[0],
                "two_cpu_s": two_cpu,
                "two_over_one": 2 * one_wall / two_wall,
                "cpu_inflation": (sum(two_cpu) / 2) / one_cpu[0],
            }
        )
        print(f"two cores: {rounds[-1]}", flush=True)
    ordered = sorted(r["two_over_one"] for r in rounds)
    inflation = sorted(r["cpu_inflation"] for r in rounds)
    middle = (len(rounds) - 1) // 2
    return {"rounds": rounds, "two_over_one": ordered[middle], "cpu_inflation": inflation[middle]}

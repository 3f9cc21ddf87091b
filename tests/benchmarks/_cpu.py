"""CPU spent by a process tree: this process and every process below it, sampled from /proc.

The offline benchmark's engines start worker processes (the local engine's pool, Ray's raylet,
workers and tasks); on a machine shared with other jobs the machine-wide busy time counts their
work too, while this counts only ours.
"""

from __future__ import annotations

import os
import threading
import time

_TICKS = os.sysconf("SC_CLK_TCK")


def process_table() -> tuple[dict[int, tuple[int, int, float]], dict[int, list[int]]]:
    """Every process now: pid -> (parent pid, start time in ticks, utime + stime in seconds),
    and parent pid -> child pids."""
    rows: dict[int, tuple[int, int, float]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", encoding="ascii", errors="replace") as file:
                fields = file.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        cpu = (int(fields[11]) + int(fields[12])) / _TICKS
        rows[int(name)] = (int(fields[1]), int(fields[19]), cpu)
    children: dict[int, list[int]] = {}
    for pid, (parent, _, _) in rows.items():
        children.setdefault(parent, []).append(pid)
    return rows, children


def descendants(children: dict[int, list[int]], root: int) -> list[int]:
    """`root` and every process below it, from `process_table`'s children map."""
    out: list[int] = []
    stack = [root]
    while stack:
        pid = stack.pop()
        out.append(pid)
        stack.extend(children.get(pid, ()))
    return out


class TreeCpu:
    """CPU seconds spent by this process and every process below it (Ray's raylet, workers and
    actors; the local engine's worker processes), whatever else runs on the machine.

    A thread samples `/proc` every `interval` s and keeps each process's last total, so a worker
    that exits (Ray reaps its actors without adding their time to the raylet's) loses at most
    one interval of its CPU. The sampling thread's own CPU is taken off. Unlike the machine-wide
    busy time, other jobs on a shared machine are not counted (contention still slows every
    process down a little, so the figures are somewhat higher than on an idle machine).
    """

    def __init__(self, interval: float = 0.1) -> None:
        self.interval = interval
        self._seen: dict[tuple[int, int], float] = {}
        self._start: dict[tuple[int, int], float] = {}
        self._own = 0.0
        """CPU seconds of the sampling thread itself (taken off the result)."""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _sample(self) -> dict[tuple[int, int], float]:
        """(pid, start time) -> utime + stime in seconds, for this process and its descendants."""
        rows, children = process_table()
        return {
            (pid, rows[pid][1]): rows[pid][2]
            for pid in descendants(children, os.getpid())
            if pid in rows
        }

    def _run(self) -> None:
        started = time.thread_time()
        while not self._stop.wait(self.interval):
            self._seen.update(self._sample())
        self._own = time.thread_time() - started

    def __enter__(self) -> TreeCpu:
        self._start = self._sample()
        self._seen = dict(self._start)
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()
        self._seen.update(self._sample())

    @property
    def seconds(self) -> float:
        """CPU seconds spent by the tree between enter and exit."""
        spent = sum(cpu - self._start.get(key, 0.0) for key, cpu in self._seen.items())
        return spent - self._own

"""Where a Ray run's wall time and CPU go, phase by phase, on the two-node loopback cluster.

`bench_ray`'s scaling part runs the driver in its own process; while it runs, `ProcessCpu`
samples /proc (every 0.1 s) for the driver and every process below each node's `ray start`
(raylet, GCS, Ray's daemons, the worker processes) and files each CPU increment under the node
and the kind of process at that moment (a worker's title names the task it runs:
`ray::read_ranges`, `ray::score_batches`, `ray::IDLE`; a range's first task,
`ray::assemble_and_score_batches`, assembles the range and scores: it counts as scoring). The
driver records each run's window and, at the end, Ray's task timeline (`ray.timeline()`);
`phases` cuts a run into its phases from that timeline (start to the first read task, reading,
the shuffle when there is one, assemble tasks of their own when there are, scoring, the
driver's tail) and sums the CPU of each kind of process over the run; `bound` applies Amdahl's
law to those figures.

A worker's title is read at the sample, so the CPU of a task that ended between two samples is
filed under `IDLE` (counted with scoring: scoring tasks are most of the tasks).
"""

from __future__ import annotations

import itertools
import threading
import time
from typing import Any

from tests.benchmarks._cpu import descendants, process_table

_READ = ("ReadFile", "FlatMap", "read_ranges", "map", "reduce", "sample")
"""Task names of reading and of the shuffle (Ray Data's, before the reads cut key ranges)."""


def _kind(command: bytes) -> str:
    """The kind of a cluster process, from its command line (a worker's title names its task)."""
    first = command.split(b"\0")[0].decode(errors="replace")
    if first.startswith("ray::"):
        task = first[5:]
        if "score_batch" in task or task.startswith("IDLE"):
            return "scoring tasks (and idle workers)"
        if "assemble_" in task or "MapBatches" in task:  # assemble tasks of their own
            return "assemble tasks"
        if any(name in task for name in _READ):
            return "read and shuffle tasks"
        return "Ray's actors (Ray Data's stats, autoscaling)"
    if first.endswith(("raylet", "gcs_server")):
        return "raylets and GCS"
    return "Ray's other daemons"


class ProcessCpu:
    """Samples the CPU of the cluster's processes and the driver's, by node and kind."""

    def __init__(self, nodes: dict[str, int], interval: float = 0.1) -> None:
        self.nodes = nodes
        """Node name -> the pid of its `ray start` process (every cluster process is below)."""
        self.driver = -1
        self.interval = interval
        self.samples: list[tuple[float, str, str, float]] = []
        """(time.monotonic(), node, kind, CPU seconds since the process's previous sample)."""
        self._last: dict[tuple[int, int], float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> ProcessCpu:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.is_set():
            self._sample()
            self._stop.wait(self.interval)

    def _sample(self) -> None:
        now = time.monotonic()
        rows, children = process_table()
        for node, root in [("driver", self.driver), *self.nodes.items()]:
            for pid in descendants(children, root):
                if pid in rows:
                    self._count(now, node, pid, rows[pid])

    def _count(self, now: float, node: str, pid: int, row: tuple[int, int, float]) -> None:
        key = (pid, row[1])
        before = self._last.get(key)
        self._last[key] = row[2]
        if before is None or row[2] <= before:
            return
        if node == "driver":
            kind = "driver"
        else:
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as file:
                    kind = _kind(file.read())
            except OSError:
                return
        self.samples.append((now, node, kind, row[2] - before))


def _span(events: list[dict[str, Any]], start: float, empty: float = 0.0) -> tuple[float, float]:
    """First start and last end of `events` (Ray timeline events), seconds after `start`;
    (`empty`, `empty`) when there is none (a phase the engine no longer has)."""
    if not events:
        return empty, empty
    first = min(e["ts"] for e in events) / 1e6 - start
    last = max(e["ts"] + e["dur"] for e in events) / 1e6 - start
    return first, last


def phases(run: dict[str, Any], timeline: list[dict[str, Any]], cpu: ProcessCpu) -> dict[str, Any]:
    """One run's phases (wall seconds from its start) and CPU seconds by kind of process.

    `run` holds `start_unix`, `start_mono` and `wall` (the driver's `rescore` call).
    """
    start, wall = run["start_unix"], run["wall"]
    tasks = [
        e
        for e in timeline
        if e.get("ph") == "X"
        and str(e.get("cat", "")).startswith("task::")
        and start * 1e6 <= e["ts"] <= (start + wall) * 1e6
    ]

    def named(*parts: str) -> list[dict[str, Any]]:
        return [e for e in tasks if any(p in e["cat"] + e["name"] for p in parts)]

    read = _span(named("ReadFile", "read_ranges"), start)
    shuffle = _span(named("sort_task_spec"), start, empty=read[1])
    assemble = _span(named("assemble_blocks", "assemble_sorted", "assemble_range"), start)
    assemble = assemble if assemble != (0.0, 0.0) else (shuffle[1], shuffle[1])
    scoring = named("score_batches")  # with the ranges' first tasks, which assemble
    firsts = named("assemble_and_score_batches")
    score = _span(scoring, start)
    points = sorted(
        [(e["ts"] / 1e6, 1) for e in scoring] + [((e["ts"] + e["dur"]) / 1e6, -1) for e in scoring]
    )
    two, running, last = 0.0, 0, points[0][0]
    for moment, step in points:
        two += (moment - last) if running >= 2 else 0.0
        running, last = running + step, moment
    slots = _worker_slots(tasks, score[0] + start)
    by_kind: dict[str, float] = {}
    end = run["start_mono"] + wall
    for moment, _, kind, seconds in cpu.samples:
        if run["start_mono"] <= moment <= end + cpu.interval:
            by_kind[kind] = by_kind.get(kind, 0.0) + seconds
    return {
        "wall_s": wall,
        "plan_s": read[0],
        "read_s": read[1] - read[0],
        "shuffle_s": shuffle[1] - read[1],
        "assemble_s": assemble[1] - shuffle[1],
        "before_scoring_s": score[0],
        "assembling_while_scoring_s": max(0.0, assemble[1] - score[0]),
        "scoring_s": score[1] - score[0],
        "two_scoring_tasks_s": two,
        "assembling_on_scoring_workers_s": slots["assembling"],
        "first_tasks_s": sum(e["dur"] for e in firsts) / 1e6,
        "scoring_workers_idle_s": slots["idle"],
        "tail_s": wall - score[1],
        "cpu_s": by_kind,
    }


def _assembles_only(name: str) -> bool:
    """True for an assemble task of its own (not a range's first scoring task, which assembles
    the range and scores a slice)."""
    return "assemble_" in name and "score_batches" not in name


def _worker_slots(tasks: list[dict[str, Any]], first: float) -> dict[str, float]:
    """From the first scoring task's start (`first`, Unix seconds) to each Ray worker's last
    task: the seconds its assemble tasks took (in a CPU slot scoring could have used) and the
    seconds it waited between tasks (the driver's round trip from a task's end to the next
    task's submission, or no assembled range to score), summed over the workers. With one
    scoring worker its tasks still move between the nodes' Ray workers, each idle while the
    other runs: the sum says where time goes for two workers, not for one."""
    assembling = idle = 0.0
    for worker in {e.get("tid") for e in tasks}:
        mine = sorted(
            (e for e in tasks if e.get("tid") == worker and e["ts"] >= first * 1e6),
            key=lambda e: e["ts"],
        )
        if not any("score_batches" in e["cat"] + e["name"] for e in mine):
            continue
        assembling += sum(e["dur"] for e in mine if _assembles_only(e["cat"] + e["name"])) / 1e6
        idle += sum(b["ts"] - a["ts"] - a["dur"] for a, b in itertools.pairwise(mine)) / 1e6
    return {"assembling": assembling, "idle": idle}


def bound(one: dict[str, Any], two: dict[str, Any], cores: int = 2) -> dict[str, float]:
    """Amdahl on `cores` cores from a 1-worker run's phases (`one`) and a 2-worker run's:
    the phase before scoring runs on both nodes either way (its wall time stays), the scoring
    CPU spreads over the workers, and what the rest of Ray spends meanwhile (driver, raylets,
    GCS, daemons, actors) takes its share of the cores from them. Assembling, when it overlaps
    scoring, hides on the second core with one worker and shares the cores with two (its CPU
    is counted with the scoring's for two: a bound on the safe side)."""
    overlaps = one.get("assembling_while_scoring_s", 0.0) > 0
    assembling = one["cpu_s"].get("assemble tasks", 0.0) if overlaps else 0.0
    scoring_cpu = one["cpu_s"].get("scoring tasks (and idle workers)", 0.0)
    rest = sum(
        seconds
        for kind, seconds in one["cpu_s"].items()
        if kind not in ("scoring tasks (and idle workers)", "assemble tasks")
        and kind != "read and shuffle tasks"
    )
    overhead = rest / one["wall_s"]  # cores taken by the rest of Ray while a run goes
    serial = one["before_scoring_s"] + one["tail_s"]
    t1 = serial + scoring_cpu / 1.0
    effective = min(2.0, cores - overhead)
    t2 = serial + (scoring_cpu + assembling) / effective
    return {
        "serial_s": serial,
        "scoring_cpu_s": scoring_cpu,
        "overhead_cores": overhead,
        "effective_cores": effective,
        "best_1_s": t1,
        "best_2_s": t2,
        "best_speedup": t1 / t2,
        "measured_speedup": one["wall_s"] / two["wall_s"],
        # (s + C) / (s + (C + A) / e) >= 1.5  <=>  s <= 2C - 3(C + A) / e
        "serial_for_1_5x_s": max(0.0, 2 * scoring_cpu - 3 * (scoring_cpu + assembling) / effective),
    }


_PHASES = (
    ("plan_s", "start to the first read task (plan)"),
    ("read_s", "read (8 `read_ranges` tasks: parse, fragments cut into key ranges)"),
    ("shuffle_s", "shuffle (a sort; none since the reads cut the key ranges)"),
    ("assemble_s", "assemble tasks of their own after the last read (`assemble_range`)"),
    ("assembling_while_scoring_s", "... of which while scoring ran"),
    ("scoring_s", "score and write the parts (`*score_batches` tasks)"),
    ("two_scoring_tasks_s", "... of which two scoring tasks ran at once"),
    ("first_tasks_s", "... ranges' first tasks: assemble, score the range or a slice (sum)"),
    (
        "assembling_on_scoring_workers_s",
        "... assemble tasks of their own on the scoring workers (sum)",
    ),
    ("scoring_workers_idle_s", "... scoring workers idle between tasks (sum)"),
    ("tail_s", "driver's tail (the last task's end to the summary)"),
    ("wall_s", "**the run**"),
)


def _median(values: list[float]) -> float:
    """The median (the lower middle of an even count)."""
    ordered = sorted(values)
    return ordered[(len(ordered) - 1) // 2]


def markdown(scaling: dict[str, Any]) -> list[str]:
    """The results page's lines on where the time goes and the bound on two cores."""
    runs = {n: scaling[f"ray_{n}"]["phases"] for n in (1, 2)}
    lines = [
        "### Where the wall time goes (`ray.timeline()` and /proc, median of the rounds)",
        "",
        "| phase | 1 worker, s | 2 workers, s |",
        "|---|---|---|",
    ]
    for key, label in _PHASES:
        cells = [f"{_median([r.get(key, 0.0) for r in runs[n]]):.2f}" for n in (1, 2)]
        lines.append(f"| {label} | {cells[0]} | {cells[1]} |")
    kinds = sorted({k for n in (1, 2) for r in runs[n] for k in r["cpu_s"]})
    lines += ["", "| CPU-seconds of the run, by process | 1 worker | 2 workers |", "|---|---|---|"]
    for kind in kinds:
        cells = [f"{_median([r['cpu_s'].get(kind, 0.0) for r in runs[n]]):.2f}" for n in (1, 2)]
        lines.append(f"| {kind} | {cells[0]} | {cells[1]} |")
    rounds = scaling["rounds"]
    b = {key: _median([r[key] for r in rounds]) for key in rounds[0]}
    lines += [
        "",
        "Reading is a barrier: no scoring task starts before every read has ended (a range's "
        "first scoring task assembles it: `assemble_and_score_batches`), and that phase runs on "
        "both nodes whatever the number of scoring workers. Amdahl on 2 cores from the 1-worker "
        f"runs (medians of {len(rounds)} rounds): a serial part of {b['serial_s']:.2f} s "
        "(everything before scoring, plus the tail; assembling counts with the scoring: in its "
        "tasks, or overlapping them for two workers), "
        f"{b['scoring_cpu_s']:.2f} CPU-seconds of scoring, and {b['overhead_cores']:.2f} of a "
        "core taken meanwhile by the rest of Ray (driver, raylets, GCS, daemons, actors), "
        f"which leaves the two workers {b['effective_cores']:.2f} cores: at best "
        f"{b['best_1_s']:.1f} s with one worker, {b['best_2_s']:.1f} s with two, "
        f"**{b['best_speedup']:.2f}x** (measured in the same rounds: "
        f"{b['measured_speedup']:.2f}x). 1.5x needs the serial part under "
        f"{b['serial_for_1_5x_s']:.2f} s at this scoring and assembling CPU "
        "(s + C <= 1.5 (s + (C + A) / e): s <= 2C - 3 (C + A) / e).",
        "",
    ]
    return lines

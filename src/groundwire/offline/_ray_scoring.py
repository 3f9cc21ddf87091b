"""The Ray engine's assemble and score stages as plain Ray tasks submitted by the driver: a
key range's first task assembles its traces and scores them (the whole range when there are 4
ranges a worker or more, else its first slice of at most 4 chunks, tasks on the other slices
scoring the rest), at most `workers` at a time, the results handed back in key order.

```python
reads = ReadRanges(ray, paths, fmt=None, strict=False)   # `_ray_reads`
...                                                      # its counters, then:
for rows in score_blocks(ray, reads.take(), context=(expected, skip), run=run, spec=spec,
                         concurrency=8, parts=None, chunk_size=64, workers=2,
                         range_count=reads.ranges):
    ...  # the rows of one slice, in `order_key` order: {"kind", "payload", "turns", "scores"}
```

Why not Ray Data's `map_batches` (what these stages were): on the two-node loopback cluster of
the tests (one CPU a node), Ray Data ran the scoring tasks of `TaskPoolStrategy(size=2)` one at
a time for about three quarters of the stage (its timeline: two tasks overlapped 2.8-3.1 s of
10-11 s; a toy map over 40 materialized blocks ran at a concurrency of 0.93-0.99), and its
assemble tasks likewise (1.2 CPU-seconds took 2 s on two free cores), while plain Ray tasks over
the same blocks ran two at a time (1.56-1.58). Every read has ended before a range can be
assembled (a trace's last span may be in the last file), so the driver submits the tasks
itself, a range at a time in key order.

Why a range is assembled in a scoring task, not in a task of its own (what it was): an assemble
task needs a CPU, so while every scoring slot was busy no range could be assembled, and a slot
that came free waited for the next range's assembly (two workers on the two-node cluster: two
scoring tasks at once for 2.97 of 5.82 s, the workers idle between tasks 1.95 s summed; an
assemble task with `num_cpus=0` made Ray start more worker processes, 2-4x the CPU). Now a free
slot always has work (`_Scoring.submit`): the next slice of a range already cut (preferred: the
ranges in flight stay few), else the next range's first task. A task per whole range
(`slicing`) when the ranges are plenty: nothing to pass on, one task and one result a range. A
range cut into slices hands back its assembled table from its first task (kept in Ray's object
store; the driver never fetches it) with the slices (`cut`); the driver then submits a task per
other slice on that table. Results wait (as refs) until the slices before theirs are handed on,
at most `_AHEAD` a worker. No spare task is kept submitted beyond `workers` (measured: with a
task per range it saved nothing, 0.59 against 0.71 s idle summed over two workers; and waiting
tasks would make an autoscaling cluster add nodes beyond `--workers`). Each scoring task
scores its rows in chunks of `chunk_size` traces (with `parts`: 4 chunks at a time, one part
file each), as the `map_batches` calls did; the driver hands a task's rows on 4 chunks at a
time.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from groundwire.offline import writers
from groundwire.offline._ray_lines import LinesPlace
from groundwire.offline._ray_parts import PartsPlace
from groundwire.offline._ray_stages import assemble_blocks, score_batch

__all__ = ["score_blocks"]

_BLOCK_CHUNKS = 4
"""Chunks of traces a scoring task takes at most when the ranges are too few to spread the work
over the workers by themselves (`slicing`)."""

_RANGES_A_WORKER = 4
"""Ranges a worker at least for a task per whole range (`slicing`): with fewer, a worker that
ends its last range early would wait for the others' (the run's tail)."""

_AHEAD = 4
"""Finished tasks' results kept at most per worker while an earlier task still runs (bounds
the object store's share of results when one task is slow: the others then wait instead of
running ahead; the driver fetches one result at a time)."""

_SETTLE_S = 30.0
"""How long a stopped run waits for its cancelled scoring tasks to end (they end at once unless
stuck in native code: a Parquet write)."""

COLUMNS = ("kind", "payload", "turns")
"""The columns of an assembled block a scoring task reads."""


def assemble_range(context: Any, *pieces: list[tuple[str, bytes]]) -> tuple[Any, int]:
    """In a range's first scoring task (`assemble_and_score_batches`): one key range's
    fragments (its piece from every read task, `_ray_reads`) -> an Arrow table of its traces
    (`assemble_blocks`, in `order_key` order) and its row count (to `cut` it into slices).

    The sort is stable: a trace's fragments keep the files' order and each file's (a span read
    twice: the last read wins, as in the local engine).
    """
    pa = writers.load_pyarrow()
    expected, skip = context
    rows = [row for piece in pieces for row in piece]
    rows.sort(key=lambda row: row[0])
    if not rows:  # no key fell in this range
        return pa.table({name: pa.array([], pa.string()) for name in COLUMNS}), 0
    batch = {"key": [key for key, _ in rows], "data": [data for _, data in rows]}
    out = assemble_blocks(batch, expected, skip)
    return pa.table(out), len(out["kind"])


def score_batches(
    block: Any,
    run: str,
    spec: Any,
    concurrency: int,
    parts: PartsPlace | LinesPlace | None,
    batch_size: int,
    rows: tuple[int, int] = (0, 2**62),
) -> dict[str, list[Any]]:
    """In a Ray task: score the `rows` slice of one block (an Arrow table of assembled traces)
    in batches of `batch_size` rows with `score_batch`; the batches' rows, concatenated."""
    block = block.slice(rows[0], rows[1] - rows[0])
    columns = {name: block.column(name).to_pylist() for name in COLUMNS}
    out: dict[str, list[Any]] = {"kind": [], "payload": [], "turns": [], "scores": []}
    for start in range(0, block.num_rows, batch_size):
        batch = {name: values[start : start + batch_size] for name, values in columns.items()}
        done = score_batch(batch, run, spec, concurrency, parts)
        for name, values in out.items():
            values.extend(done[name])
    return out


def slicing(ranges: int, workers: int, rows: int) -> tuple[int, int]:
    """How a run's key ranges are cut into scoring tasks (`cut`'s `rows` and `workers`): a task
    per whole range when there are `_RANGES_A_WORKER` ranges a worker or more (each range is
    assembled once, in the task that scores it: no table passed on, no slice waiting for its
    range's first task), else slices of at most `rows` traces, at least `workers` a range (a
    small input is one range: its traces still spread over the workers)."""
    if ranges >= _RANGES_A_WORKER * max(1, workers):
        return 2**62, 1
    return rows, workers


def cut(total: int, rows: int, workers: int) -> list[tuple[int, int]]:
    """A range of `total` assembled traces -> its scoring slices (row ranges): at most `rows`
    traces each, one trace apart in size at most, and at least `workers` of them (a small input
    is one range: its traces still spread over the workers); none for an empty range."""
    if total <= 0:
        return []
    count = max(-(-total // max(1, rows)), min(max(1, workers), total))
    size, longer = divmod(total, count)  # the first `longer` slices take one trace more
    ends = [(index + 1) * size + min(index + 1, longer) for index in range(count)]
    return list(zip([0, *ends[:-1]], ends, strict=True))


def assemble_and_score_batches(
    context: Any,
    plan: tuple[int, int],
    run: str,
    spec: Any,
    concurrency: int,
    parts: PartsPlace | LinesPlace | None,
    batch_size: int,
    *pieces: list[tuple[str, bytes]],
) -> tuple[Any, list[tuple[int, int]], dict[str, list[Any]]]:
    """In a Ray task: assemble one key range (`assemble_range`), cut it into scoring slices
    (`cut`, `plan` = (rows a slice at most, workers)) and score the first (`score_batches`).

    Returns the table (None when the first slice is the whole range: nothing left to pass on),
    the slices, and the first slice's rows: the driver submits the other slices on the table
    without fetching it. Assembling where the scoring runs means a scoring slot never waits
    for an assemble task (see the module's docstring).
    """
    table, total = assemble_range(context, *pieces)
    slices = cut(total, *plan)
    first = slices[0] if slices else (0, 0)
    out = score_batches(table, run, spec, concurrency, parts, batch_size, first)
    return (table if len(slices) > 1 else None), slices, out


@dataclass(slots=True)
class _Range:
    """One key range on its way through the scoring: its first task, then its other slices."""

    table: Any
    """The ref of its assembled table (from its first task) while slices are left to submit."""
    slices: Any
    """The ref of its slices (from its first task)."""
    results: deque[Any] = field(default_factory=deque)
    """The rows' refs of its slices submitted and not yet handed on, in slice order."""
    rest: deque[tuple[int, int]] | None = None
    """Its slices still to submit (None until its first task has ended and cut it)."""


class _Scoring:
    """The driver's side of `score_blocks`: what is submitted, running and not yet handed on."""

    def __init__(
        self, ray: Any, ranges: Iterator[list[Any]], workers: int, plan: tuple[Any, Any, Any]
    ) -> None:
        """`plan`: the context of `assemble_range`, how to cut a range (`slicing`) and the
        scoring tasks' arguments after the table (`score_batches`: run ... batch_size)."""
        self.ray = ray
        self.ranges = ranges
        self.workers = max(1, workers)
        self.shared = ray.put(plan[0])
        self.plan: tuple[int, int] = plan[1]
        self.args: tuple[Any, ...] = plan[2]
        self.first_task = ray.remote(num_cpus=1, num_returns=3)(assemble_and_score_batches)
        self.task = ray.remote(num_cpus=1)(score_batches)
        self.open: deque[_Range] = deque()
        """The ranges started and not yet handed on, in key order."""
        self.running: dict[Any, _Range | None] = {}
        """Running tasks' rows refs -> their range when it is its first task."""
        self.held = 0
        """Slices submitted and not yet handed on (their rows kept in Ray's object store)."""

    def submit(self) -> None:
        """Fill the free scoring slots: the earliest cut range's next slice, else the next
        range's first task; past `workers * _AHEAD` slices held, only the oldest range's."""
        while len(self.running) < self.workers:
            pending = next((r for r in self.open if r.rest), None)
            oldest = pending is not None and pending is self.open[0] and not pending.results
            if self.held >= self.workers * _AHEAD and not oldest:
                return
            if pending is not None and pending.rest:
                ref = self.task.remote(pending.table, *self.args, pending.rest.popleft())
                if not pending.rest:
                    pending.table = None  # its tasks hold it now; freed when they are done
                pending.results.append(ref)
                self.running[ref] = None
            elif (pieces := next(self.ranges, None)) is not None:
                table, slices, ref = self.first_task.remote(
                    self.shared, self.plan, *self.args, *pieces
                )
                del pieces  # the task holds the range's objects now; freed when it is done
                started = _Range(table, slices, deque([ref]))
                self.open.append(started)
                self.running[ref] = started
            else:
                return
            self.held += 1

    def step(self) -> dict[str, list[Any]] | None:
        """The oldest range's next slice's rows when its task has ended, else wait for a
        running task to end (None); raise StopIteration when every range is handed on."""
        while self.open and not self.open[0].results and not self.open[0].rest:
            self.open.popleft()  # every slice of it handed on
        if not self.open:
            raise StopIteration
        head = self.open[0]
        if head.results and head.results[0] not in self.running:
            self.held -= 1
            rows: dict[str, list[Any]] = self.ray.get(head.results.popleft())
            return rows
        ready, _ = self.ray.wait(list(self.running), num_returns=1)
        for ref in ready:
            first = self.running.pop(ref)
            if first is not None:  # its range is cut: the slices after its first are known
                first.rest = deque(self.ray.get(first.slices)[1:])
                if not first.rest:
                    first.table = None
        return None

    def unfinished(self) -> list[Any]:
        """The rows refs of every slice submitted and not handed on (to cancel)."""
        return [ref for each in self.open for ref in each.results]


def score_blocks(
    ray: Any,
    ranges: Iterator[list[Any]],
    *,
    context: Any,
    run: str,
    spec: Any,
    concurrency: int,
    parts: PartsPlace | LinesPlace | None,
    chunk_size: int,
    workers: int,
    range_count: int,
) -> Iterator[dict[str, list[Any]]]:
    """Assemble and score the key `ranges` (`range_count` of them, each the object refs of its
    pieces, in key order; `context` is (expected answers, turns to skip)) on at most `workers`
    tasks at a time; yield each slice's rows in order. Unfinished scoring tasks are cancelled
    when the caller stops early (a stop request, an error)."""
    # A part per 4 chunks when the workers write: a Parquet file per chunk costs more than the
    # chunk's scoring (the file's fixed cost); the rows travel nowhere either way.
    rows_at_most = chunk_size * _BLOCK_CHUNKS
    size = chunk_size if parts is None else rows_at_most
    cuts = slicing(range_count, workers, rows_at_most)
    scoring = _Scoring(ray, ranges, workers, (context, cuts, (run, spec, concurrency, parts, size)))
    try:
        while True:
            scoring.submit()
            try:
                rows = scoring.step()
            except StopIteration:
                return
            if rows is None:  # a task ended; its rows may not be the next ones
                continue
            # A whole range's rows in pieces of 4 chunks: the driver decodes a piece at a time.
            for start in range(0, len(rows["kind"]), rows_at_most):
                yield {name: values[start : start + rows_at_most] for name, values in rows.items()}
    finally:
        _cancel(ray, scoring.unfinished())


def _cancel(ray: Any, refs: list[Any]) -> None:
    """Cancel the scoring tasks of `refs` and wait (at most `_SETTLE_S`) until each has ended:
    a task that was running when the run stopped could otherwise write its part file after the
    run's notice, or after a `--resume` run started on the same Ray had listed the parts (its
    rows then written twice)."""
    for ref in refs:
        ray.cancel(ref)
    if refs:
        ray.wait(refs, num_returns=len(refs), timeout=_SETTLE_S)

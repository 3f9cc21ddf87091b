"""The Ray engine's assemble and score stages as plain Ray tasks submitted by the driver: a task
per key range assembles its traces, then tasks on slices of 4 chunks of them score, at most
`workers` at a time, the results handed back in key order.

```python
reads = ReadRanges(ray, paths, fmt=None, strict=False)   # `_ray_reads`
...                                                      # its counters, then:
for rows in score_blocks(ray, reads.take(), context=(expected, skip), run=run, spec=spec,
                         concurrency=8, parts=None, chunk_size=64, workers=2):
    ...  # the rows of one slice, in `order_key` order: {"kind", "payload", "turns", "scores"}
```

Why not Ray Data's `map_batches` (what these stages were): on the two-node loopback cluster of
the tests (one CPU a node), Ray Data ran the scoring tasks of `TaskPoolStrategy(size=2)` one at
a time for about three quarters of the stage (its timeline: two tasks overlapped 2.8-3.1 s of
10-11 s; a toy map over 40 materialized blocks ran at a concurrency of 0.93-0.99), and its
assemble tasks likewise (1.2 CPU-seconds took 2 s on two free cores), while plain Ray tasks over
the same blocks ran two at a time (1.56-1.58). Every read has ended before a range can be
assembled (a trace's last span may be in the last file), so the driver submits the tasks
itself: the ranges' assembly a few ranges ahead of the scoring (Ray runs them on the CPUs the
scoring tasks leave free; the table comes back with its row count, so the driver slices it
without fetching it), then a scoring task per slice as soon as its range is assembled and a
scoring slot is free (`ray.wait`), the results kept until the slices before theirs are handed
on. Each scoring task scores its slice in chunks of `chunk_size` traces (with `parts`: the
whole slice at once, one part file), as the `map_batches` calls did.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from typing import Any

from groundwire.offline import writers
from groundwire.offline._ray_lines import LinesPlace
from groundwire.offline._ray_parts import PartsPlace
from groundwire.offline._ray_stages import assemble_blocks, score_batch

__all__ = ["score_blocks"]

_BLOCK_CHUNKS = 4
"""Chunks of traces a scoring task takes: small blocks spread the work over all workers."""

_AHEAD = 4
"""Finished blocks kept at most per worker while an earlier block still runs (bounds the
driver's memory when one task is slow: the others then wait instead of running ahead)."""

_ASSEMBLE_AHEAD = 4
"""Blocks assembled ahead of the one being scored: enough to keep the CPUs the scoring leaves
free busy (assembling costs a tenth of scoring), few enough that the assembled tables of an
archive never pile up in the object store all at once (memory stays bounded, as with the
streaming executor these stages ran on before)."""

_SETTLE_S = 30.0
"""How long a stopped run waits for its cancelled scoring tasks to end (they end at once unless
stuck in native code: a Parquet write)."""

COLUMNS = ("kind", "payload", "turns")
"""The columns of an assembled block a scoring task reads."""


def assemble_range(context: Any, *pieces: list[tuple[str, bytes]]) -> tuple[Any, int]:
    """In a Ray task: one key range's fragments (its piece from every read task, `_ray_reads`)
    -> an Arrow table of its traces (`assemble_blocks`, in `order_key` order) and its row count
    (a second return, so the driver can cut the table into scoring slices without fetching it).

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
) -> Iterator[dict[str, list[Any]]]:
    """Assemble the key `ranges` (each the object refs of its pieces, in key order; `context`
    is (expected answers, turns to skip)) and score them slice by slice on at most `workers`
    tasks at a time; yield each slice's rows in order. Unfinished scoring tasks are cancelled
    when the caller stops early (a stop request, an error); assemble tasks already started
    finish on their own, their tables dropped."""
    task = ray.remote(num_cpus=1)(score_batches)
    # A part per block when the workers write: a Parquet file per chunk costs more than the
    # chunk's scoring (the file's fixed cost); the rows travel nowhere either way.
    size = chunk_size if parts is None else 2**62
    workers = max(1, workers)
    blocks = _slices(ray, ranges, context, chunk_size * _BLOCK_CHUNKS, workers)
    queue: deque[Any] = deque()  # submitted, in block order
    running: set[Any] = set()
    try:
        while True:
            while len(running) < workers and len(queue) < workers * _AHEAD:
                piece = next(blocks, None)
                if piece is None:
                    break
                ref = task.remote(piece[0], run, spec, concurrency, parts, size, piece[1])
                queue.append(ref)
                running.add(ref)
            if not queue:
                return
            if queue[0] not in running:
                yield ray.get(queue.popleft())
                continue
            ready, _ = ray.wait(list(running), num_returns=1)
            running.difference_update(ready)
    finally:
        _cancel(ray, list(queue))


def _cancel(ray: Any, refs: list[Any]) -> None:
    """Cancel the scoring tasks of `refs` and wait (at most `_SETTLE_S`) until each has ended:
    a task that was running when the run stopped could otherwise write its part file after the
    run's notice, or after a `--resume` run started on the same Ray had listed the parts (its
    rows then written twice)."""
    for ref in refs:
        ray.cancel(ref)
    if refs:
        ray.wait(refs, num_returns=len(refs), timeout=_SETTLE_S)


def _slices(
    ray: Any, ranges: Iterator[list[Any]], context: Any, rows: int, workers: int
) -> Iterator[tuple[Any, tuple[int, int]]]:
    """Assemble the key `ranges` (_ASSEMBLE_AHEAD at a time ahead of the one being scored: Ray
    runs them on the CPUs the scoring tasks leave free) and yield, in key order, (table, row
    range) slices of at most `rows` traces as each range's assembly ends; a range too small to
    give every one of the `workers` a full slice is cut into `workers` slices (a small input is
    one range: its traces still spread over the workers)."""
    assemble = ray.remote(num_cpus=1, num_returns=2)(assemble_range)
    shared = ray.put(context)
    started: deque[Any] = deque()
    while True:
        while len(started) <= _ASSEMBLE_AHEAD and (pieces := next(ranges, None)) is not None:
            started.append(assemble.remote(shared, *pieces))
            del pieces  # the task holds the range's objects now; freed when it is done
        if not started:
            return
        table, count = started.popleft()
        total = ray.get(count)
        size = min(rows, max(1, -(-total // workers)))
        for start in range(0, total, size):
            yield table, (start, min(total, start + size))

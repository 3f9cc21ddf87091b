"""The Ray engine's assemble and score stages as plain Ray tasks submitted by the driver: a task
per key-sorted block assembles its traces, then tasks on slices of 4 chunks of them score, at
most `workers` at a time, the results handed back in block order.

```python
for rows in score_blocks(ray, sorted_fragments, context=(expected, skip), run=run, spec=spec,
                         concurrency=8, parts=None, chunk_size=64, workers=2):
    ...  # the rows of one slice, in `order_key` order: {"kind", "payload", "turns", "scores"}
```

Why not Ray Data's `map_batches` (what these stages were): on the two-node loopback cluster of
the tests (one CPU a node), Ray Data ran the scoring tasks of `TaskPoolStrategy(size=2)` one at
a time for about three quarters of the stage (its timeline: two tasks overlapped 2.8-3.1 s of
10-11 s; a toy map over 40 materialized blocks ran at a concurrency of 0.93-0.99), and its
assemble tasks likewise (1.2 CPU-seconds took 2 s on two free cores), while plain Ray tasks over
the same blocks ran two at a time (1.56-1.58). The sorted blocks are materialized (the shuffle is
a barrier), so the driver submits the tasks itself: the blocks' assembly a few blocks ahead of
the scoring (Ray runs them on the CPUs the scoring tasks leave free; the table comes back with
its row count, so the driver slices it without fetching it), then a scoring task per slice as
soon as its block is assembled and a scoring slot is free (`ray.wait`), the results kept until
the slices before theirs are handed on. Each scoring task scores its slice in chunks of
`chunk_size` traces (with `parts`: the whole slice at once, one part file), as the
`map_batches` calls did.
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

COLUMNS = ("kind", "payload", "turns")
"""The columns of an assembled block a scoring task reads."""


def assemble_sorted(block: Any, context: Any) -> tuple[Any, int]:
    """In a Ray task: one block of the key-sorted fragments -> an Arrow table of its traces
    (`assemble_blocks`) and its row count (a second return, so the driver can cut the table
    into scoring slices without fetching it)."""
    from ray.data.block import BlockAccessor

    pa = writers.load_pyarrow()
    expected, skip = context
    table = BlockAccessor.for_block(block).to_arrow()
    if table.num_rows == 0:  # the sort leaves a range no key fell in empty, without columns
        return pa.table({name: [] for name in COLUMNS}), 0
    batch = {"key": table.column("key").to_pylist(), "data": table.column("data").to_pylist()}
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
    traces: Any,
    *,
    context: Any,
    run: str,
    spec: Any,
    concurrency: int,
    parts: PartsPlace | LinesPlace | None,
    chunk_size: int,
    workers: int,
) -> Iterator[dict[str, list[Any]]]:
    """Assemble the blocks of `traces` (the materialized, key-sorted fragments; `context` is
    (expected answers, turns to skip)) and score them slice by slice on at most `workers` tasks
    at a time; yield each slice's rows in order. Unfinished scoring tasks are cancelled when
    the caller stops early (a stop request, an error); assemble tasks already started finish on
    their own, their tables dropped."""
    task = ray.remote(num_cpus=1)(score_batches)
    # A part per block when the workers write: a Parquet file per chunk costs more than the
    # chunk's scoring (the file's fixed cost); the rows travel nowhere either way.
    size = chunk_size if parts is None else 2**62
    blocks = _slices(ray, traces, context, chunk_size * _BLOCK_CHUNKS)
    workers = max(1, workers)
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
        for ref in queue:
            ray.cancel(ref)


def _slices(
    ray: Any, ordered: Any, context: Any, rows: int
) -> Iterator[tuple[Any, tuple[int, int]]]:
    """Assemble the key-sorted blocks of `ordered` (_ASSEMBLE_AHEAD at a time ahead of the one
    being scored: Ray runs them on the CPUs the scoring tasks leave free) and yield, in block
    order, (table, row range) slices of at most `rows` traces as each block's assembly ends."""
    assemble = ray.remote(num_cpus=1, num_returns=2)(assemble_sorted)
    shared = ray.put(context)
    blocks = iter(ordered.to_arrow_refs())
    started: deque[Any] = deque()
    while True:
        while len(started) <= _ASSEMBLE_AHEAD and (block := next(blocks, None)) is not None:
            started.append(assemble.remote(block, shared))
        if not started:
            return
        table, count = started.popleft()
        total = ray.get(count)
        for start in range(0, total, rows):
            yield table, (start, min(total, start + rows))

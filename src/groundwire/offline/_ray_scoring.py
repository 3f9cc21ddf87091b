"""The Ray engine's scoring stage: one plain Ray task per block of assembled traces, at most
`workers` running at a time, the results handed back in block order.

```python
for rows in score_blocks(ray, traces, run=run, spec=spec, concurrency=8, parts=None,
                         chunk_size=64, workers=2):
    ...  # the rows of one block, in `order_key` order: {"kind", "payload", "turns", "scores"}
```

Why not Ray Data's `map_batches` (what this stage was): on the two-node loopback cluster of the
tests (one CPU a node), Ray Data ran the scoring tasks of `TaskPoolStrategy(size=2)` one at a
time for about three quarters of the stage (its timeline: two tasks overlapped 2.8-3.1 s of
10-11 s; a toy map over 40 materialized blocks ran at a concurrency of 0.99), while plain Ray
tasks over the same blocks ran two at a time (1.56-1.58). The blocks are materialized before
scoring anyway (the shuffle is a barrier), so the driver submits the tasks itself: a task per
block, a new one as soon as one ends (`ray.wait`), the results kept until the blocks before
theirs are handed on. Each task scores its block in chunks of `chunk_size` traces (with
`parts`: the whole block at once, one part file), exactly as the `map_batches` calls did.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from typing import Any

from groundwire.offline._ray_lines import LinesPlace
from groundwire.offline._ray_parts import PartsPlace
from groundwire.offline._ray_stages import score_batch

__all__ = ["score_blocks"]

_AHEAD = 4
"""Finished blocks kept at most per worker while an earlier block still runs (bounds the
driver's memory when one task is slow: the others then wait instead of running ahead)."""

COLUMNS = ("kind", "payload", "turns")
"""The columns of an assembled block a scoring task reads."""


def score_batches(
    block: Any,
    run: str,
    spec: Any,
    concurrency: int,
    parts: PartsPlace | LinesPlace | None,
    batch_size: int,
) -> dict[str, list[Any]]:
    """In a Ray task: score one block (an Arrow table of assembled traces) in batches of
    `batch_size` rows with `score_batch`; the batches' rows, concatenated, in order."""
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
    run: str,
    spec: Any,
    concurrency: int,
    parts: PartsPlace | LinesPlace | None,
    chunk_size: int,
    workers: int,
) -> Iterator[dict[str, list[Any]]]:
    """Score the materialized dataset `traces` block by block on at most `workers` tasks at a
    time; yield each block's rows in block order. Unfinished tasks are cancelled when the
    caller stops early (a stop request, an error)."""
    task = ray.remote(num_cpus=1)(score_batches)
    # A part per block when the workers write: a Parquet file per chunk costs more than the
    # chunk's scoring (the file's fixed cost); the rows travel nowhere either way.
    size = chunk_size if parts is None else 2**62
    blocks = iter(traces.to_arrow_refs())
    workers = max(1, workers)
    queue: deque[Any] = deque()  # submitted, in block order
    running: set[Any] = set()
    try:
        while True:
            while len(running) < workers and len(queue) < workers * _AHEAD:
                block = next(blocks, None)
                if block is None:
                    break
                ref = task.remote(block, run, spec, concurrency, parts, size)
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

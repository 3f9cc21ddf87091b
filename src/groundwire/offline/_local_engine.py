"""The local engine of `rescore`: turns scored in chunks here (`workers=1`) or in a process pool.

Results come back in input order; with a pool, at most two chunks per worker are in flight, so
memory does not grow with the input.
"""

from __future__ import annotations

import os
import pickle
from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from multiprocessing import get_all_start_methods, get_context
from multiprocessing.context import BaseContext
from typing import Any, Final

from groundwire._registry import resolve_evaluators
from groundwire._types import RagTurn
from groundwire.offline._results import TurnResult
from groundwire.offline._scoring import (
    WorkerScores,
    init_worker,
    join_scores,
    score_chunk,
    score_in_worker,
)
from groundwire.offline._stopping import StopFlag

__all__ = ["check_workers", "score_local"]


def check_workers(workers: int, spec: Any) -> None:
    """Validate `workers`; with several, the evaluator spec must pickle (each process gets it)."""
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ValueError(f"workers must be an int of at least 1, got {workers!r}")
    if workers > 1:
        try:
            pickle.dumps(spec)
        except Exception as error:
            raise ValueError(
                "workers > 1 builds the evaluators in each worker process, so they must be given "
                f"by name (or name -> options) or as picklable objects: {error}"
            ) from error


_PRELOAD: Final = ("groundwire.offline._scoring", "groundwire.evaluators.quoted_spans")
"""Imported once by the fork server, so each worker starts without importing them again. Nothing
that loads numpy: each worker sizes numpy's thread pool first (`init_worker`)."""


def _pool_context() -> BaseContext:
    """`forkserver` where the platform has it, else `spawn`: never a plain fork of this process.

    Workers fork from a small server process that has imported `_PRELOAD` (fast starts, and no
    copy of this process's threads: progress bar, exporters); spawn on Windows.
    """
    if "forkserver" in get_all_start_methods():
        context = get_context("forkserver")
        context.set_forkserver_preload(list(_PRELOAD))
        return context
    return get_context("spawn")


def score_local(
    chunks: Iterator[list[RagTurn]],
    spec: Any,
    workers: int,
    concurrency: int,
    stop: StopFlag,
) -> Iterator[list[TurnResult]]:
    """Score chunks here (workers=1) or in a process pool, yielding results in input order."""
    if workers == 1:
        evaluators = resolve_evaluators(spec)
        for chunk in chunks:
            yield score_chunk(chunk, evaluators, concurrency)
            if stop.is_set():
                return
        return
    pool = ProcessPoolExecutor(
        max_workers=workers,
        mp_context=_pool_context(),
        initializer=init_worker,
        initargs=(spec, concurrency, max(1, (os.cpu_count() or 1) // workers)),
    )
    pending: deque[tuple[list[RagTurn], Future[WorkerScores]]] = deque()
    try:
        for chunk in chunks:
            pending.append((chunk, pool.submit(score_in_worker, chunk)))
            while len(pending) >= 2 * workers or (pending and pending[0][1].done()):
                turns, future = pending.popleft()
                yield join_scores(turns, future.result())
            if stop.is_set():
                break
        if stop.is_set() and not stop.input_exhausted:
            for _, future in pending:
                future.cancel()
        while pending:
            turns, future = pending.popleft()
            if not future.cancelled():
                yield join_scores(turns, future.result())
    finally:
        pool.shutdown(wait=True, cancel_futures=True)

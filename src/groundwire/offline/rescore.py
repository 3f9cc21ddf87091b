"""`rescore`: score recorded traces offline and write the results (what `groundwire rescore` runs).

```python
from groundwire.offline import rescore

summary = rescore(["traces.jsonl.gz"], ["quoted_spans", "quote_verification"], "report.html")
print(summary.turns_scored, summary.means())
```

Files stream through the readers, a bounded trace window and the shared assembler; turns are
scored in chunks, here (`workers=1`), in worker processes (`workers=N`) or on Ray
(`engine="ray"`); results are written in input order as they come, so an interrupted run leaves a
valid OUT that `resume=True` continues. See docs/offline.md.
"""

from __future__ import annotations

import math
import os
import pickle
import signal
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass, field
from multiprocessing import get_all_start_methods, get_context
from multiprocessing.context import BaseContext
from pathlib import Path
from types import FrameType
from typing import Any, Final, Literal

from groundwire._evaluate import EvaluatorSpec
from groundwire._registry import resolve_evaluators
from groundwire._types import RagTurn
from groundwire.offline._export import OtlpExport
from groundwire.offline._inputs import expand_inputs
from groundwire.offline._pipeline import DEFAULT_WINDOW, TurnCounts, WindowOptions, iter_turns
from groundwire.offline._results import TurnResult
from groundwire.offline._resume import done_keys
from groundwire.offline._scoring import (
    WorkerScores,
    init_worker,
    join_scores,
    score_chunk,
    score_in_worker,
)
from groundwire.offline.expected import ExpectedAnswers
from groundwire.offline.readers import Problems, ReadStats, TraceFormat
from groundwire.offline.writers import ResultWriter, open_writer, output_suffix

__all__ = ["EvaluatorTally", "ProgressHook", "RescoreSummary", "StopFlag", "rescore"]

Engine = Literal["local", "ray"]
ProgressHook = Callable[["RescoreSummary"], None]
"""Called with the running summary after each chunk of turns is written."""


@dataclass(slots=True)
class EvaluatorTally:
    """How one evaluator fared over the run."""

    scored: int = 0
    not_applicable: int = 0
    failed: int = 0
    total: float = 0.0

    @property
    def mean(self) -> float | None:
        """Mean of the computed values, None when there were none."""
        return self.total / self.scored if self.scored else None


@dataclass(slots=True)
class RescoreSummary:
    """What a run read, scored and skipped; filled in while it runs."""

    evaluators: list[str]
    out: Path | None
    engine: str = "local"
    workers: int = 1
    total_bytes: int = 0
    """Size on disk of the input files (for progress)."""
    read: ReadStats = field(default_factory=ReadStats)
    counts: TurnCounts = field(default_factory=TurnCounts)
    turns_scored: int = 0
    tallies: dict[str, EvaluatorTally] = field(default_factory=dict)
    expected_matched: int = 0
    """Turns given gold answers from the `expected` file."""
    exported_spans: int = 0
    interrupted: bool = False
    elapsed_s: float = 0.0
    results: list[TurnResult] | None = None
    """The results themselves, when no `out` file was given."""

    @property
    def turns_read(self) -> int:
        """Turns assembled from the files (resumed ones included)."""
        return self.counts.turns

    @property
    def turns_skipped(self) -> int:
        """Turns read but not scored: already in OUT, or left when the run was interrupted."""
        return self.counts.turns - self.turns_scored

    def means(self) -> dict[str, float | None]:
        """Evaluator name -> mean computed value."""
        return {name: tally.mean for name, tally in self.tallies.items()}

    def lines(self) -> list[str]:
        """A short human-readable summary."""
        r, c = self.read, self.counts
        rate = self.turns_scored / self.elapsed_s if self.elapsed_s > 0 else 0.0
        out = [
            f"read {r.files} file(s): {r.records} records ({r.bad_records} bad, "
            f"{r.other_records} metrics/logs), {r.spans} spans, {c.traces} traces, {c.turns} turns",
            f"scored {self.turns_scored} turns in {self.elapsed_s:.1f} s ({rate:.1f} turns/s); "
            f"skipped {self.turns_skipped} ({c.resumed} already in the output)",
        ]
        if c.late_spans or c.forced_traces:
            out.append(
                f"reassembly: {c.forced_traces} traces released early to bound memory, "
                f"{c.late_spans} late spans ignored"
            )
        if c.evaluation_spans:
            out.append(f"left out {c.evaluation_spans} evaluation spans of earlier scoring")
        if c.incomplete:
            reasons = ", ".join(f"{n} {why}" for why, n in sorted(c.incomplete.items()))
            out.append(
                f"{c.incomplete_traces} traces incomplete, not scored ({reasons}): "
                "some of their spans never arrived (give every file of the time window)"
            )
        if self.expected_matched:
            out.append(f"gold answers attached to {self.expected_matched} turns")
        if self.exported_spans:
            out.append(f"exported {self.exported_spans} evaluation spans over OTLP")
        if self.interrupted:
            out.append("interrupted: the output holds every turn scored before the stop")
        return out


class StopFlag:
    """Set by the first Ctrl-C (SIGINT): the run stops after the chunks in flight."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self.input_exhausted = False
        """Set once every turn has been read: a stop after that changes nothing."""

    def set(self) -> None:
        """Ask the run to stop."""
        self._event.set()

    def is_set(self) -> bool:
        """True once a stop was asked for."""
        return self._event.is_set()


class _SigintHandler:
    """First SIGINT sets the stop flag; the second one aborts (default behaviour)."""

    def __init__(self, stop: StopFlag) -> None:
        self._stop = stop
        self._previous: Any = None
        self._installed = False

    def __enter__(self) -> _SigintHandler:
        if threading.current_thread() is threading.main_thread():
            self._previous = signal.signal(signal.SIGINT, self._handle)
            self._installed = True
        return self

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        """First Ctrl-C: ask the run to stop; the next one raises KeyboardInterrupt."""
        self._stop.set()
        signal.signal(signal.SIGINT, signal.default_int_handler)

    def __exit__(self, *exc: object) -> None:
        if self._installed:
            signal.signal(signal.SIGINT, self._previous)


def _check_workers(workers: int, spec: Any) -> None:
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


def _chunks(turns: Iterator[RagTurn], size: int, stop: StopFlag) -> Iterator[list[RagTurn]]:
    """Group turns into lists of `size`; stop early (dropping the partial chunk) once asked to."""
    chunk: list[RagTurn] = []
    for turn in turns:
        chunk.append(turn)
        if len(chunk) >= size:
            yield chunk
            chunk = []
        if stop.is_set():
            return
    stop.input_exhausted = True
    if chunk:
        yield chunk


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


def _score_local(
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


def rescore(
    paths: Sequence[str | os.PathLike[str]] | str | os.PathLike[str],
    evaluators: EvaluatorSpec,
    out: str | os.PathLike[str] | None = None,
    *,
    expected: str | os.PathLike[str] | ExpectedAnswers | None = None,
    fmt: TraceFormat | None = None,
    strict: bool = False,
    resume: bool = False,
    workers: int = 1,
    engine: Engine = "local",
    export_otlp: bool | str = False,
    concurrency: int = 8,
    chunk_size: int = 32,
    window: WindowOptions = DEFAULT_WINDOW,
    progress: ProgressHook | None = None,
    on_problem: Callable[[str], None] | None = None,
    stop: StopFlag | None = None,
    ray_address: str | None = None,
    glob: str | None = None,
) -> RescoreSummary:
    """Re-score the RAG turns recorded in `paths` and write them to `out` (by its extension).

    `evaluators` are names, instances, or name -> options. `expected` joins gold answers (eRAG).
    Bad records are reported (to `on_problem`, else stderr) and skipped, or raise
    `BadRecordError` when `strict`. `export_otlp` is True (standard OTLP variables) or an
    endpoint. A first Ctrl-C stops after the chunks in flight, leaving `out` valid.
    A folder in `paths` gives its trace files (recursively, sorted by name; `glob` narrows).
    With several files, or on Ray, traces are grouped whole by trace id before scoring and
    results come in `order_key` order; one file on the local engine streams in input order.
    """
    started = time.perf_counter()
    path_list = [paths] if isinstance(paths, str | os.PathLike) else list(paths)
    if not path_list:
        raise ValueError("rescore needs at least one trace file")
    path_list = list(expand_inputs(path_list, glob=glob, on_problem=on_problem or _print_notice))
    if engine not in ("local", "ray"):
        raise ValueError(f"engine must be 'local' or 'ray', got {engine!r}")
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, int) or chunk_size < 1:
        raise ValueError(f"chunk_size must be an int of at least 1, got {chunk_size!r}")
    _check_workers(workers, evaluators)
    resolved = resolve_evaluators(evaluators)
    names = [evaluator.name for evaluator in resolved]
    out_path = Path(out) if out is not None else None
    if out_path is not None:
        output_suffix(out_path)
    gold = ExpectedAnswers.load(expected) if isinstance(expected, str | os.PathLike) else expected
    skip = done_keys(out_path) if resume and out_path is not None else set()
    stop = stop or StopFlag()
    summary = RescoreSummary(
        evaluators=names,
        out=out_path,
        engine=engine,
        workers=workers,
        total_bytes=sum(Path(p).stat().st_size for p in path_list),
        tallies={name: EvaluatorTally() for name in names},
        results=None if out_path is not None else [],
    )
    problems = Problems(strict=strict, stats=summary.read, on_report=on_problem)
    export = None
    if export_otlp:
        export = OtlpExport(export_otlp if isinstance(export_otlp, str) else None)
    writer: ResultWriter | None = None
    failed = True
    read_stopped = [False]  # a stop came while whole-trace grouping was still reading
    try:
        if out_path is not None:
            writer = open_writer(out_path, names, append=resume)
        spec: Any = evaluators if workers > 1 or engine == "ray" else resolved
        last_report = [0.0]

        def on_read() -> bool:
            """Report progress while whole-trace grouping reads (at most 5 times a second);
            True (stop reading) once a stop was asked for."""
            now = time.perf_counter()
            if progress is not None and now - last_report[0] >= 0.2:
                last_report[0] = now
                summary.elapsed_s = now - started
                progress(summary)
            read_stopped[0] = stop.is_set()
            return read_stopped[0]

        with _SigintHandler(stop):
            if engine == "ray":
                from groundwire.offline.ray_engine import score_with_ray

                batches = score_with_ray(
                    path_list,
                    spec,
                    summary,
                    fmt=fmt,
                    strict=strict,
                    expected=gold,
                    skip=skip,
                    concurrency=concurrency,
                    chunk_size=chunk_size,
                    workers=workers,
                    address=ray_address,
                    stop=stop,
                )
            else:
                turns = iter_turns(
                    path_list,
                    problems,
                    summary.counts,
                    fmt=fmt,
                    window=window,
                    expected=gold,
                    skip=skip,
                    whole=len(path_list) > 1,
                    on_read=on_read,
                )
                batches = _score_local(
                    _chunks(turns, chunk_size, stop), spec, workers, concurrency, stop
                )
            for results in batches:
                _sink(results, summary, writer, export)
                if progress is not None:
                    summary.elapsed_s = time.perf_counter() - started
                    progress(summary)
        failed = False
    finally:
        summary.interrupted = stop.is_set() and (not stop.input_exhausted or read_stopped[0])
        if gold is not None and engine == "local":
            summary.expected_matched = gold.matched
        try:
            if writer is not None:
                writer.close(interrupted=failed or summary.interrupted)
        finally:
            if export is not None:
                export.close()
                summary.exported_spans = export.spans
        summary.elapsed_s = time.perf_counter() - started
    return summary


def _print_notice(text: str) -> None:
    """Default destination of input notices (files passed over in a folder): stderr."""
    print(f"groundwire: {text}", file=sys.stderr)


def _sink(
    results: list[TurnResult],
    summary: RescoreSummary,
    writer: ResultWriter | None,
    export: OtlpExport | None,
) -> None:
    """Write, export and count one chunk of results."""
    for result in results:
        if writer is not None:
            writer.write(result)
        else:
            assert summary.results is not None
            summary.results.append(result)
        if export is not None:
            export.send(result)
        summary.turns_scored += 1
        for name, score in result.scores.items():
            tally = summary.tallies.setdefault(name, EvaluatorTally())
            if score.value is None:
                tally.not_applicable += 1
            elif math.isnan(score.value):
                tally.failed += 1
            else:
                tally.scored += 1
                tally.total += score.value
    flush = getattr(writer, "flush", None)
    if flush is not None:
        flush()

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
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass, field
from multiprocessing import get_all_start_methods, get_context
from multiprocessing.context import BaseContext
from pathlib import Path
from types import FrameType
from typing import Any, Final, Literal

from groundwire import semconv
from groundwire._evaluate import EvaluatorSpec
from groundwire._evaluator import JUDGE_UNREACHABLE
from groundwire._registry import resolve_evaluators
from groundwire._types import RagTurn
from groundwire.offline._export import ExportReport, OtlpExport
from groundwire.offline._inputs import expand_inputs
from groundwire.offline._pipeline import DEFAULT_WINDOW, TurnCounts, WindowOptions, iter_turns
from groundwire.offline._results import TurnResult
from groundwire.offline._resume import resume_state
from groundwire.offline._scoring import (
    WorkerScores,
    init_worker,
    join_scores,
    score_chunk,
    score_in_worker,
)
from groundwire.offline.expected import ExpectedAnswers
from groundwire.offline.readers import Problems, ReadStats, TraceFormat
from groundwire.offline.readers._common import SpanBatch
from groundwire.offline.writers import (
    OutputLock,
    OutputPathError,
    OutputTarget,
    ResultWriter,
    check_output_paths,
    open_writer,
    output_suffix,
)

__all__ = [
    "EvaluatorTally",
    "ProgressHook",
    "RescoreSummary",
    "ResultsHook",
    "SpanSource",
    "StopFlag",
    "rescore",
]

Engine = Literal["local", "ray"]
ProgressHook = Callable[["RescoreSummary"], None]
"""Called with the running summary after each chunk of turns is written."""
SpanSource = Callable[[Problems], Iterable[SpanBatch]]
"""Span batches read from somewhere other than files (e.g. `groundwire.phoenix`); it reports
unreadable spans to the `Problems` it is given, like a file reader."""
ResultsHook = Callable[[list[TurnResult]], None]
"""Called with each chunk of results after it is written (e.g. to annotate the spans)."""


@dataclass(slots=True)
class EvaluatorTally:
    """How one evaluator fared over the run."""

    scored: int = 0
    not_applicable: int = 0
    failed: int = 0
    skipped: int = 0
    """Not run: no judge configured, or the judge unreachable (label `skipped`, value None)."""
    skip_reasons: dict[str, int] = field(default_factory=dict)
    """`skipped` by reason (`details["skip_reason"]`, e.g. `judge_unreachable`)."""
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
    """Carrier spans handed to the OTLP exporter (see `export` for what the endpoint accepted)."""
    exported_log_records: int = 0
    """`gen_ai.evaluation.result` log records sent with `export_otlp`."""
    export: ExportReport | None = None
    """What `--export-otlp` delivered, when it was asked for."""
    resume_notes: list[str] = field(default_factory=list)
    """What `--resume` found in OUT (a torn last record dropped, a leftover partial file)."""
    kept_partial: Path | None = None
    """Where a failed run kept the results it wrote (OUT itself left as it was)."""
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

    @property
    def evaluations(self) -> int:
        """Evaluations this run made (turns scored x evaluators), whatever their outcome."""
        return sum(
            t.scored + t.not_applicable + t.failed + t.skipped for t in self.tallies.values()
        )

    @property
    def evaluations_failed(self) -> int:
        """Evaluations that failed (NaN) or were skipped (no judge, judge unreachable)."""
        return sum(t.failed + t.skipped for t in self.tallies.values())

    @property
    def damaged_inputs(self) -> int:
        """Bad records skipped plus compressed streams cut short (what makes input partial)."""
        return self.read.bad_records + self.read.damaged_files

    @property
    def no_turn_reasons(self) -> list[str]:
        """Why traces gave no turn, one line per trace family (docs/assembly.md, "Diagnosis")."""
        return self.counts.no_turn.lines()

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
        if r.damaged_files:
            out.append(
                f"{r.damaged_files} file(s) damaged or cut short: every record before the damage "
                "was read (see the messages above)"
            )
        if c.duplicate_spans or c.duplicate_turns:
            out.append(
                f"left out {c.duplicate_spans} duplicate spans and {c.duplicate_turns} duplicate "
                "turns (the same spans exported twice)"
            )
        if c.late_spans or c.forced_traces:
            out.append(
                f"reassembly: {c.forced_traces} traces released early to bound memory, "
                f"{c.late_spans} late spans ignored"
            )
        if c.evaluation_spans or c.evaluation_logs:
            out.append(
                f"left out {c.evaluation_spans} evaluation spans and {c.evaluation_logs} "
                "evaluation result log records of earlier scoring"
            )
        if c.incomplete:
            reasons = ", ".join(f"{n} {why}" for why, n in sorted(c.incomplete.items()))
            out.append(
                f"{c.incomplete_traces} traces incomplete, not scored ({reasons}): "
                "some of their spans never arrived (give every file of the time window)"
            )
        if c.parent_missing:
            out.append(
                f"{c.parent_missing} traces scored without a parent span that never arrived "
                "(their turns are whole; `groundwire inspect` names the missing span)"
            )
        if self.expected_matched:
            out.append(f"gold answers attached to {self.expected_matched} turns")
        unreachable = sum(t.skip_reasons.get(JUDGE_UNREACHABLE, 0) for t in self.tallies.values())
        if unreachable:
            out.append(
                f"{unreachable} evaluations skipped (judge_unreachable): the judge could not be "
                "reached (refused, DNS, TLS or timeout), so the client stopped calling it for a "
                "cool-down instead of retrying every turn; once it is back, run again with "
                "--resume to score just those turns"
            )
        if self.export is not None:
            out.extend(self.export.lines())
            if self.exported_log_records:
                out.append(
                    f"{self.exported_log_records} evaluation result log records handed to the "
                    "OTLP log exporter"
                )
        if self.interrupted:
            out.append("interrupted: the output holds every turn scored before the stop")
        return out


class StopFlag:
    """Set by the first Ctrl-C (SIGINT) or SIGTERM: the run stops after the chunks in flight."""

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


_STOP_SIGNALS: Final = (signal.SIGINT, signal.SIGTERM)
"""Signals that stop a run gracefully (Ctrl-C; what `kill`, systemd and Kubernetes send)."""


class _SigintHandler:
    """First SIGINT or SIGTERM sets the stop flag; a second stops at once (KeyboardInterrupt)."""

    def __init__(self, stop: StopFlag) -> None:
        self._stop = stop
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> _SigintHandler:
        if threading.current_thread() is threading.main_thread():
            for signum in _STOP_SIGNALS:
                self._previous[signum] = signal.signal(signum, self._handle)
        return self

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        """First signal: ask the run to stop; the next one raises KeyboardInterrupt."""
        self._stop.set()
        for stop_signal in _STOP_SIGNALS:
            signal.signal(stop_signal, _interrupt)

    def __exit__(self, *exc: object) -> None:
        for signum, previous in self._previous.items():
            signal.signal(signum, previous)


def _interrupt(signum: int, frame: FrameType | None) -> None:
    """A second stop signal: raise KeyboardInterrupt (the CLI exits 130)."""
    raise KeyboardInterrupt


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
    source: SpanSource | None = None,
    on_results: ResultsHook | None = None,
    glob: str | None = None,
) -> RescoreSummary:
    """Re-score the RAG turns recorded in `paths` and write them to `out` (by its extension).

    `evaluators` are names, instances, or name -> options. `expected` joins gold answers (eRAG).
    Bad records are reported (to `on_problem`, else stderr) and skipped, or raise
    `BadRecordError` when `strict`. `export_otlp` is True (standard OTLP variables) or an
    endpoint. A first Ctrl-C stops after the chunks in flight, leaving `out` valid. `source`
    gives the span batches instead of `paths` (local engine); `on_results` sees every chunk.
    A folder in `paths` gives its trace files (recursively, sorted by name; `glob` narrows).
    With several files, or on Ray, traces are grouped whole by trace id before scoring and
    results come in `order_key` order; one file on the local engine streams in input order.
    """
    started = time.perf_counter()
    path_list = [paths] if isinstance(paths, str | os.PathLike) else list(paths)
    if source is not None and (path_list or engine != "local"):
        raise ValueError("a span source is read instead of files, on the local engine only")
    if not path_list and source is None:
        raise ValueError("rescore needs at least one trace file")
    if source is None:  # a span source (e.g. Phoenix) reads no files
        path_list = list(
            expand_inputs(path_list, glob=glob, on_problem=on_problem or _print_notice)
        )
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
        inputs = [("trace file", path) for path in path_list]
        if isinstance(expected, str | os.PathLike):
            inputs.append(("--expected file", expected))
        check_output_paths([("output", out_path)], inputs)
    gold = ExpectedAnswers.load(expected) if isinstance(expected, str | os.PathLike) else expected
    notice = on_problem or _print_notice
    lock = OutputLock(out_path) if out_path is not None else None
    if lock is not None:
        lock.acquire()  # held until OUT is finished: no other run writes it meanwhile
    skip: set[tuple[str, str]] = set()
    resume_notes: list[str] = []
    if resume and out_path is not None:
        try:
            state = resume_state(out_path, names)
        except BaseException:
            assert lock is not None
            lock.release()
            raise
        skip, resume_notes = state.keys, state.notes
        for note in state.notes:
            notice(note)
    stop = stop or StopFlag()
    summary = RescoreSummary(
        evaluators=names,
        out=out_path,
        engine=engine,
        workers=workers,
        total_bytes=sum(Path(p).stat().st_size for p in path_list),
        tallies={name: EvaluatorTally() for name in names},
        results=None if out_path is not None else [],
        resume_notes=resume_notes,
    )
    problems = Problems(strict=strict, stats=summary.read, on_report=on_problem)
    export = None
    if export_otlp:
        endpoint = export_otlp if isinstance(export_otlp, str) else None
        try:
            export = OtlpExport(endpoint, evaluators=resolved)
        except BaseException:
            if lock is not None:
                lock.release()
            raise
    writer: ResultWriter | None = None
    target = OutputTarget(out_path, append=resume) if out_path is not None else None
    failed = True
    read_stopped = [False]  # a stop came while whole-trace grouping was still reading
    try:
        if target is not None:
            try:
                target.prepare()
                writer = open_writer(target.write_path, names, append=resume)
            except OSError as error:
                raise OutputPathError(
                    f"cannot write {target.write_path}: {error.strerror or error}"
                ) from error
            if target.replaced_leftover:
                notice(f"replaced {target.partial}, left by an earlier run that did not finish")
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
                    batches=None if source is None else source(problems),
                    whole=len(path_list) > 1,
                    on_read=on_read,
                )
                batches = _score_local(
                    _chunks(turns, chunk_size, stop), spec, workers, concurrency, stop
                )
            for results in batches:
                _sink(results, summary, writer, export)
                if on_results is not None:
                    on_results(results)
                if progress is not None:
                    summary.elapsed_s = time.perf_counter() - started
                    progress(summary)
        failed = False
    except KeyboardInterrupt:
        stop.set()  # a second Ctrl-C: an interruption, not a failure; keep what was written
        failed = False
        raise
    finally:
        summary.interrupted = stop.is_set() and (not stop.input_exhausted or read_stopped[0])
        if gold is not None and engine == "local":
            summary.expected_matched = gold.matched
        try:
            if writer is not None:
                _finish_output(writer, target, summary, failed=failed, notice=notice)
        finally:
            if lock is not None:
                lock.release()
            if export is not None:
                export.close()
                summary.exported_spans = export.spans
                summary.exported_log_records = export.log_records
                summary.export = export.report
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
            if score.value is None and score.label == semconv.LABEL_SKIPPED:
                tally.skipped += 1
                reason = str((score.details or {}).get("skip_reason") or "unspecified")
                tally.skip_reasons[reason] = tally.skip_reasons.get(reason, 0) + 1
            elif score.value is None:
                tally.not_applicable += 1
            elif math.isnan(score.value):
                tally.failed += 1
            else:
                tally.scored += 1
                tally.total += score.value
    flush = getattr(writer, "flush", None)
    if flush is not None:
        flush()


def _finish_output(
    writer: ResultWriter,
    target: OutputTarget | None,
    summary: RescoreSummary,
    *,
    failed: bool,
    notice: Callable[[str], None],
) -> None:
    """Close the writer and move the output into place; or leave an existing OUT as it was when
    the run failed (what it wrote is kept aside) or wrote no result at all."""
    rows = summary.turns_scored
    keep_old = (
        not failed
        and rows == 0
        and target is not None
        and not target.append
        and target.path.exists()
    )
    abandon = getattr(writer, "abandon", None)
    if (failed or keep_old) and abandon is not None:
        abandon()
    else:
        writer.close(interrupted=failed or summary.interrupted)
    if target is None:
        return
    if not failed and not keep_old:
        target.commit()
        return
    kept = target.abandon(rows)
    if keep_old:
        notice(f"no result written: {target.path} is left as it was")
        return
    where = f"the {rows} results written are kept in {kept}" if kept else "no result written"
    left = f"; {target.path} is left as it was" if target.path.exists() else ""
    notice(f"the run failed: {where}{left}")
    summary.kept_partial = kept

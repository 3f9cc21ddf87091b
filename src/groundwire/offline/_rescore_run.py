"""The `rescore` pipeline: one options object through a few named steps.

`run_rescore(options)` goes:
1. `check_inputs`: validate the options, expand folders, resolve the evaluators, check OUT;
2. `hold_output`: lock OUT until it is finished (no other run writes it meanwhile);
3. `start`: read what `resume` keeps, set up the summary, the problem reporter and the export
   (`open_export`, one call);
4. `Run.execute`: open the output, then read, score (`score_batches`: the local engine or Ray)
   and write chunk by chunk under the stop signals;
5. `Run.finish`: close or set aside the output, release the lock, close the export, count.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from groundwire._evaluate import EvaluatorSpec
from groundwire._evaluator import AnyEvaluator
from groundwire._registry import resolve_evaluators
from groundwire.offline._export import OtlpExport
from groundwire.offline._inputs import expand_inputs, input_size
from groundwire.offline._local_engine import check_workers, score_local
from groundwire.offline._pipeline import DEFAULT_WINDOW, WindowOptions, iter_turns
from groundwire.offline._ray_parts import PartsOutput
from groundwire.offline._remote_output import StagedOutput, check_remote_output
from groundwire.offline._results import TurnResult
from groundwire.offline._resume import resume_state
from groundwire.offline._stopping import StopFlag, StopSignals, chunks
from groundwire.offline._summary import EvaluatorTally, RescoreSummary, tally
from groundwire.offline.expected import ExpectedAnswers
from groundwire.offline.ray_engine import score_with_ray
from groundwire.offline.readers import Problems, SpanBatch, TraceFormat
from groundwire.offline.storage import object_url
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
    "Engine",
    "ProgressHook",
    "RescoreOptions",
    "ResultsHook",
    "SpanSource",
    "run_rescore",
]

Engine = Literal["local", "ray"]
ProgressHook = Callable[[RescoreSummary], None]
"""Called with the running summary after each chunk of turns is written."""
SpanSource = Callable[[Problems], Iterable[SpanBatch]]
"""Span batches read from somewhere other than files (e.g. `groundwire.phoenix`); it reports
unreadable spans to the `Problems` it is given, like a file reader."""
ResultsHook = Callable[[list[TurnResult]], None]
"""Called with each chunk of results after it is written (e.g. to annotate the spans)."""


@dataclass(frozen=True, kw_only=True)
class RescoreOptions:
    """Everything `rescore()` was asked for (its arguments; see its docstring)."""

    paths: Sequence[str | os.PathLike[str]] | str | os.PathLike[str]
    evaluators: EvaluatorSpec
    out: str | os.PathLike[str] | None = None
    expected: str | os.PathLike[str] | ExpectedAnswers | None = None
    fmt: TraceFormat | None = None
    strict: bool = False
    resume: bool = False
    workers: int = 1
    engine: Engine = "local"
    export_otlp: bool | str = False
    concurrency: int = 8
    chunk_size: int = 32
    window: WindowOptions = DEFAULT_WINDOW
    progress: ProgressHook | None = None
    on_problem: Callable[[str], None] | None = None
    stop: StopFlag | None = None
    ray_address: str | None = None
    source: SpanSource | None = None
    on_results: ResultsHook | None = None
    glob: str | None = None


@dataclass(frozen=True, slots=True)
class Inputs:
    """The checked inputs of a run (what `check_inputs` found)."""

    paths: list[str | os.PathLike[str]]
    resolved: list[AnyEvaluator]
    out: Path | None
    gold: ExpectedAnswers | None
    notice: Callable[[str], None]
    remote: StagedOutput | None = None
    """OUT in object storage (`out` is then its local stage)."""

    @property
    def names(self) -> list[str]:
        """The evaluators' names, in order."""
        return [evaluator.name for evaluator in self.resolved]


def print_notice(text: str) -> None:
    """Default destination of input notices (files passed over in a folder): stderr."""
    print(f"groundwire: {text}", file=sys.stderr)


def check_inputs(options: RescoreOptions) -> Inputs:
    """Step 1: validate the options (a clear ValueError or OutputPathError naming what is
    wrong), expand folders into trace files, resolve the evaluators and load gold answers."""
    paths, source = options.paths, options.source
    path_list = [paths] if isinstance(paths, str | os.PathLike) else list(paths)
    if source is not None and (path_list or options.engine != "local"):
        raise ValueError("a span source is read instead of files, on the local engine only")
    if not path_list and source is None:
        raise ValueError("rescore needs at least one trace file")
    if source is None:  # a span source (e.g. Phoenix) reads no files
        notice = options.on_problem or print_notice
        path_list = list(expand_inputs(path_list, glob=options.glob, on_problem=notice))
    if options.engine not in ("local", "ray"):
        raise ValueError(f"engine must be 'local' or 'ray', got {options.engine!r}")
    chunk_size = options.chunk_size
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, int) or chunk_size < 1:
        raise ValueError(f"chunk_size must be an int of at least 1, got {chunk_size!r}")
    check_workers(options.workers, options.evaluators)
    resolved = resolve_evaluators(options.evaluators)
    out_url = object_url(options.out) if options.out is not None else None
    out_path = Path(options.out) if options.out is not None and out_url is None else None
    expected = options.expected
    if out_url is not None:
        check_remote_output(out_url, path_list)
    if out_path is not None:
        output_suffix(out_path)
        inputs: list[tuple[str, str | os.PathLike[str]]] = [
            ("trace file", path) for path in path_list
        ]
        if isinstance(expected, str | os.PathLike):
            inputs.append(("--expected file", expected))
        check_output_paths([("output", out_path)], inputs)
    gold = ExpectedAnswers.load(expected) if isinstance(expected, str | os.PathLike) else expected
    remote = StagedOutput(out_url, append=options.resume) if out_url is not None else None
    out = remote.local if remote is not None else out_path
    return Inputs(path_list, resolved, out, gold, options.on_problem or print_notice, remote)


def hold_output(out: Path | None) -> OutputLock | None:
    """Step 2: lock OUT, held until it is finished (no other run writes it meanwhile)."""
    if out is None:
        return None
    lock = OutputLock(out)
    lock.acquire()
    return lock


def open_export(options: RescoreOptions, resolved: list[AnyEvaluator]) -> OtlpExport | None:
    """The OTLP export of results `export_otlp` asks for (its endpoint, or the standard
    variables when True), or None."""
    if not options.export_otlp:
        return None
    endpoint = options.export_otlp if isinstance(options.export_otlp, str) else None
    return OtlpExport(endpoint, evaluators=resolved)


def start(options: RescoreOptions, inputs: Inputs, lock: OutputLock | None) -> Run:
    """Step 3: what `resume` keeps, the summary, the problem reporter and the export; the lock
    is released if any of them fails."""
    try:
        skip: set[tuple[str, str]] = set()
        resume_notes: list[str] = []
        if inputs.remote is not None:
            inputs.remote.fetch()
        if options.resume and inputs.out is not None:
            state = resume_state(inputs.out, inputs.names)
            skip, resume_notes = state.keys, state.notes
            if inputs.remote is not None:
                inputs.remote.send_repairs(state.changed)
            for note in state.notes:
                inputs.notice(note)
        summary = RescoreSummary(
            evaluators=inputs.names,
            out=inputs.out if inputs.remote is None else inputs.remote.path,
            engine=options.engine,
            workers=options.workers,
            total_bytes=sum(input_size(p) for p in inputs.paths),
            tallies={name: EvaluatorTally() for name in inputs.names},
            results=None if inputs.out is not None else [],
            resume_notes=resume_notes,
        )
        problems = Problems(strict=options.strict, stats=summary.read, on_report=options.on_problem)
        export = open_export(options, inputs.resolved)
    except BaseException:
        if lock is not None:
            lock.release()
        if inputs.remote is not None:
            inputs.remote.close()
        raise
    return Run(options, inputs, summary, problems, skip, lock, export)


@dataclass(eq=False)
class Run:
    """One run after its set-up: scores, writes and finishes (steps 4 and 5)."""

    options: RescoreOptions
    inputs: Inputs
    summary: RescoreSummary
    problems: Problems
    skip: set[tuple[str, str]]
    lock: OutputLock | None
    export: OtlpExport | None
    stop: StopFlag = field(init=False)
    target: OutputTarget | None = field(init=False)
    writer: ResultWriter | None = None
    started: float = field(default_factory=time.perf_counter)
    read_stopped: bool = False
    """A stop came while whole-trace grouping was still reading."""
    last_report: float = 0.0

    def __post_init__(self) -> None:
        self.stop = self.options.stop or StopFlag()
        out = self.inputs.out
        self.target = OutputTarget(out, append=self.options.resume) if out is not None else None

    def execute(self) -> RescoreSummary:
        """Step 4: open the output, then score and write chunk by chunk until the input ends
        or a stop is asked for; the output is finished (or set aside) whatever happens."""
        failed = True
        try:
            self.open_output()
            with StopSignals(self.stop):
                for results in self.score_batches():
                    self.write(results)
            failed = False
        except KeyboardInterrupt:
            self.stop.set()  # a second Ctrl-C: an interruption, not a failure; keep the output
            failed = False
            raise
        finally:
            self.finish(failed=failed)
        return self.summary

    def open_output(self) -> None:
        """Prepare OUT's folder and open the writer (an OSError becomes OutputPathError)."""
        target = self.target
        if target is None:
            return
        try:
            target.prepare()
            self.writer = self.worker_parts() or open_writer(
                target.write_path, self.inputs.names, append=self.options.resume
            )
        except OSError as error:
            raise OutputPathError(
                f"cannot write {target.write_path}: {error.strerror or error}"
            ) from error
        if target.replaced_leftover:
            self.inputs.notice(
                f"replaced {target.partial}, left by an earlier run that did not finish"
            )

    def worker_parts(self) -> PartsOutput | None:
        """On Ray, a Parquet OUT with nothing else to feed (no export, no hook) is written by
        the workers themselves, part by part (`_ray_parts`); None otherwise."""
        options, remote, target = self.options, self.inputs.remote, self.target
        if options.engine != "ray" or options.export_otlp or options.on_results is not None:
            return None
        if target is None or target.path.suffix.lower() != ".parquet":
            return None
        if remote is not None:
            remote.worker_parts = True
        out = remote.url if remote is not None else os.fspath(target.path)
        return PartsOutput(out, self.inputs.names, append=options.resume, summary=self.summary)

    def score_batches(self) -> Iterator[list[TurnResult]]:
        """The engine choice: chunks of results from Ray, or from the local engine reading
        the files (or the span source) through the trace window and the assembler."""
        options, inputs = self.options, self.inputs
        parallel = options.workers > 1 or options.engine == "ray"
        spec: Any = options.evaluators if parallel else inputs.resolved
        if options.engine == "ray":
            return score_with_ray(
                inputs.paths,
                spec,
                self.summary,
                fmt=options.fmt,
                strict=options.strict,
                expected=inputs.gold,
                skip=self.skip,
                concurrency=options.concurrency,
                chunk_size=options.chunk_size,
                workers=options.workers,
                address=options.ray_address,
                stop=self.stop,
                parts=self.writer if isinstance(self.writer, PartsOutput) else None,
            )
        turns = iter_turns(
            inputs.paths,
            self.problems,
            self.summary.counts,
            fmt=options.fmt,
            window=options.window,
            expected=inputs.gold,
            skip=self.skip,
            batches=None if options.source is None else options.source(self.problems),
            whole=len(inputs.paths) > 1,
            on_read=self.on_read,
        )
        batch = chunks(turns, options.chunk_size, self.stop)
        return score_local(batch, spec, options.workers, options.concurrency, self.stop)

    def on_read(self) -> bool:
        """Report progress while whole-trace grouping reads (at most 5 times a second);
        True (stop reading) once a stop was asked for."""
        now = time.perf_counter()
        if self.options.progress is not None and now - self.last_report >= 0.2:
            self.last_report = now
            self.summary.elapsed_s = now - self.started
            self.options.progress(self.summary)
        self.read_stopped = self.stop.is_set()
        return self.read_stopped

    def write(self, results: list[TurnResult]) -> None:
        """Write, export and count one chunk of results, then tell the hooks."""
        summary, writer = self.summary, self.writer
        for result in results:
            if writer is not None:
                writer.write(result)
            else:
                assert summary.results is not None
                summary.results.append(result)
            if self.export is not None:
                self.export.send(result)
            tally(summary, result)
        flush = getattr(writer, "flush", None)
        if flush is not None:
            flush()
        if self.options.on_results is not None:
            self.options.on_results(results)
        if self.options.progress is not None:
            summary.elapsed_s = time.perf_counter() - self.started
            self.options.progress(summary)

    def finish(self, *, failed: bool) -> None:
        """Step 5: finish or set aside the output, release the lock, close the export and
        count what it delivered."""
        summary, stop = self.summary, self.stop
        summary.interrupted = stop.is_set() and (not stop.input_exhausted or self.read_stopped)
        if self.inputs.gold is not None and self.options.engine == "local":
            summary.expected_matched = self.inputs.gold.matched
        remote, notice = self.inputs.remote, self.inputs.notice
        try:
            if self.writer is not None:
                quiet = remote is not None  # a staged output's notices name its object instead
                finish_output(
                    self.writer,
                    self.target,
                    summary,
                    failed=failed,
                    notice=_ignore if quiet else notice,
                )
            if remote is not None:
                remote.finish(summary, failed=failed, notice=notice)
        finally:
            if self.lock is not None:
                self.lock.release()
            if self.export is not None:
                self.export.close()
                summary.exported_spans = self.export.spans
                summary.exported_log_records = self.export.log_records
                summary.export = self.export.report
        summary.elapsed_s = time.perf_counter() - self.started


def _ignore(text: str) -> None:
    """Drop a notice."""


def run_rescore(options: RescoreOptions) -> RescoreSummary:
    """Run the pipeline (see the module docstring) and return its summary."""
    started = time.perf_counter()
    inputs = check_inputs(options)
    lock = hold_output(inputs.out)
    run = start(options, inputs, lock)
    run.started = started
    return run.execute()


def finish_output(
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

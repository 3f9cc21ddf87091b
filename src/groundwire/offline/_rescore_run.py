"""The `rescore` pipeline: one options object through a few named steps.

`run_rescore(options)` goes:
1. `check_inputs` (`_rescore_inputs`): validate the options, expand folders, resolve the
   evaluators, check OUT;
2. `hold_output`: lock OUT until it is finished (no other run writes it meanwhile);
3. `start`: read what `resume` keeps, set up the summary, the problem reporter and the export
   (`open_export`, one call);
4. `Run.execute`: open the output, then read, score (`score_batches`: the local engine or Ray)
   and write chunk by chunk under the stop signals;
5. `Run.finish`: close or set aside the output, release the lock, close the export, count.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from groundwire._evaluator import AnyEvaluator
from groundwire.offline._export import OtlpExport
from groundwire.offline._inputs import input_size
from groundwire.offline._local_engine import score_local
from groundwire.offline._pipeline import iter_turns
from groundwire.offline._ray_lines import EncodedOutput
from groundwire.offline._ray_parts import PartsOutput
from groundwire.offline._rescore_inputs import Inputs, RescoreOptions, check_inputs
from groundwire.offline._results import TurnResult
from groundwire.offline._resume import resume_state
from groundwire.offline._stopping import StopFlag, StopSignals, chunks
from groundwire.offline._summary import EvaluatorTally, RescoreSummary, tally
from groundwire.offline.ray_engine import score_with_ray
from groundwire.offline.readers import Problems
from groundwire.offline.writers import (
    ENCODED_SUFFIXES,
    OutputLock,
    OutputPathError,
    OutputTarget,
    ResultWriter,
    open_writer,
)

__all__ = ["finish_output", "run_rescore"]


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

    def worker_parts(self) -> PartsOutput | EncodedOutput | None:
        """On Ray, an OUT with nothing else to feed (no export, no hook) is written by the
        workers themselves: Parquet part by part (`_ray_parts`), `.jsonl`/`.csv` encoded by
        them and copied by the driver (`_ray_lines`); None otherwise."""
        options, remote, target = self.options, self.inputs.remote, self.target
        if options.engine != "ray" or options.export_otlp or options.on_results is not None:
            return None
        if target is not None and target.path.suffix.lower() in ENCODED_SUFFIXES:
            names = self.inputs.names
            return EncodedOutput.open(target.write_path, names, append=options.resume)
        if target is None or target.path.suffix.lower() != ".parquet":
            return None
        if remote is not None:
            remote.worker_parts = True
        out = remote.url if remote is not None else os.fspath(target.path)
        return PartsOutput(out, self.inputs.names, append=options.resume, summary=self.summary)

    def score_batches(self) -> Iterator[list[TurnResult]]:
        """Chunks of results from the engine `engine_call` chose."""
        return self.engine_call()()

    def engine_call(self) -> Callable[[], Iterator[list[TurnResult]]]:
        """The engine choice, as the call that starts it: Ray's (`score_with_ray`) with the
        files and every option it takes, or the local engine's, reading the files (or the span
        source) through the trace window and the assembler. Kept apart from the call so what
        each engine is handed can be checked where Ray cannot start (see the Ray tests)."""
        options, inputs = self.options, self.inputs
        parallel = options.workers > 1 or options.engine == "ray"
        spec: Any = options.evaluators if parallel else inputs.resolved
        if options.engine == "ray":
            return partial(
                score_with_ray,
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
                parts=self.writer if isinstance(self.writer, PartsOutput | EncodedOutput) else None,
                problems=self.problems,
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
        return partial(score_local, batch, spec, options.workers, options.concurrency, self.stop)

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

"""Step 1 of the `rescore` pipeline: the options object, and the inputs it names checked.

`RescoreOptions` is everything `rescore()` was asked for; `check_inputs` validates it (a clear
ValueError or OutputPathError naming what is wrong), expands folders into trace files, resolves
the evaluators, loads the gold answers and checks OUT, before anything is opened or locked. The
later steps are in `_rescore_run`.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from groundwire._evaluate import EvaluatorSpec
from groundwire._evaluator import AnyEvaluator
from groundwire._registry import resolve_evaluators
from groundwire.offline._inputs import expand_inputs
from groundwire.offline._local_engine import check_workers
from groundwire.offline._pipeline import DEFAULT_WINDOW, WindowOptions
from groundwire.offline._remote_output import StagedOutput, check_remote_output
from groundwire.offline._results import TurnResult
from groundwire.offline._stopping import StopFlag
from groundwire.offline._summary import RescoreSummary
from groundwire.offline.expected import ExpectedAnswers
from groundwire.offline.readers import Problems, SpanBatch, TraceFormat
from groundwire.offline.storage import object_url
from groundwire.offline.writers import check_output_paths, output_suffix

__all__ = [
    "Engine",
    "Inputs",
    "ProgressHook",
    "RescoreOptions",
    "ResultsHook",
    "SpanSource",
    "check_inputs",
    "print_notice",
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

"""`groundwire rescore`: score recorded traces offline into .jsonl/.csv/.xlsx/.parquet/.html."""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, NoReturn

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table

from groundwire.cli._app import app, console, err_console
from groundwire.cli._console import print_notice
from groundwire.cli._errors import CliError, bad_argument, guarded, nearest
from groundwire.cli._exit import ExitCode, help_epilog
from groundwire.cli._outcome import exit_code, explain
from groundwire.cli._rescore_args import (
    check_paths,
    comparison,
    endpoint,
    evaluator_names,
    evaluator_options,
)
from groundwire.cli._rescore_args import evaluators as build_evaluators
from groundwire.cli._rescore_options import (
    FROM_ENV,
    AllowEmpty,
    AnnotatePhoenix,
    Baseline,
    Concurrency,
    Engine,
    Evaluators,
    Expected,
    ExportOtlp,
    Format,
    Glob,
    Grace,
    OptionalValueCommand,
    Options,
    Out,
    Paths,
    PhoenixEnd,
    PhoenixPageSize,
    PhoenixStart,
    PhoenixTraceId,
    PhoenixWhere,
    Quiet,
    RayAddress,
    RescoreArgs,
    Resume,
    Strict,
    Workers,
)
from groundwire.offline.ray_engine import RayEngineError
from groundwire.offline.readers import FORMATS, BadRecordError
from groundwire.offline.rescore import RescoreSummary, rescore
from groundwire.offline.writers import (
    Comparison,
    comparison_html,
    insert_comparison,
    insert_steps,
)


def _progress(summary: RescoreSummary) -> str:
    """The progress bar's words: turns scored and their rate, unless no evaluation ran at all."""
    tallies = summary.tallies.values()
    ran = sum(t.scored + t.not_applicable + t.failed for t in tallies)
    if summary.turns_scored and not ran and any(t.skipped for t in tallies):
        return f"{summary.turns_scored} turns read, every evaluation skipped"
    rate = summary.turns_scored / summary.elapsed_s if summary.elapsed_s else 0.0
    return f"{summary.turns_scored} turns scored ({rate:.1f}/s)"


def _summary_table(summary: RescoreSummary) -> Table:
    """Scored / mean / n/a / failed per evaluator, as a rich table."""
    table = Table(title="scores", title_justify="left")
    for column in ("evaluator", "scored", "mean", "n/a", "failed", "skipped"):
        table.add_column(column, justify="left" if column == "evaluator" else "right")
    for name, tally in summary.tallies.items():
        mean = "–" if tally.mean is None else f"{tally.mean:.3f}"
        counts = (tally.scored, tally.not_applicable, tally.failed, tally.skipped)
        table.add_row(escape(name), str(counts[0]), mean, *(str(count) for count in counts[1:]))
    return table


@app.command("rescore", cls=OptionalValueCommand, epilog=help_epilog("rescore"))
@guarded
def rescore_command(
    paths: Paths,
    evaluators: Evaluators,
    out: Out,
    options: Options = None,
    fmt: Format = None,
    expected: Expected = None,
    export_otlp: ExportOtlp = None,
    strict: Strict = False,
    resume: Resume = False,
    workers: Workers = 1,
    engine: Engine = "local",
    ray_address: RayAddress = None,
    concurrency: Concurrency = 8,
    grace: Grace = 8,
    quiet: Quiet = False,
    allow_empty: AllowEmpty = False,
    annotate_phoenix: AnnotatePhoenix = False,
    phoenix_start: PhoenixStart = None,
    phoenix_end: PhoenixEnd = None,
    phoenix_where: PhoenixWhere = None,
    phoenix_trace_id: PhoenixTraceId = None,
    phoenix_page_size: PhoenixPageSize = 1000,
    glob: Glob = None,
    baseline: Baseline = None,
) -> None:
    """Re-score RAG turns recorded in trace files and write the results to OUT."""
    args = RescoreArgs(**locals())  # every parameter, by name: nothing else is local yet
    plan = _check(args)
    display = _Display(args)
    phoenix = _phoenix(args)
    compared = comparison(args.baseline, plan.names, phoenix is not None)
    summary = _run(args, plan, display, phoenix, compared)
    code = exit_code(summary, allow_empty=args.allow_empty)
    _report(args, summary, phoenix, compared)
    reason = explain(summary, code)
    if reason is not None:
        print_notice(f"{reason} (exit {int(code)})")
    raise typer.Exit(int(code))


@dataclass(frozen=True, slots=True)
class _Plan:
    """What the checked arguments ask `rescore` for."""

    names: list[str]
    spec: Any
    """The evaluators: built ones for one local process, else names -> options (pickled)."""
    export: bool | str
    """`export_otlp`: False, True (the OTEL_EXPORTER_OTLP_* variables) or the endpoint."""


def _check(args: RescoreArgs) -> _Plan:
    """Check every argument before anything is opened (a bad one exits 2 with one line)."""
    if args.fmt is not None and args.fmt not in FORMATS:
        bad_argument(
            f"--format: {args.fmt!r} is not one of {', '.join(FORMATS)}{nearest(args.fmt, FORMATS)}"
        )
    if args.engine not in ("local", "ray"):
        bad_argument(f"--engine: {args.engine!r} is not local or ray")
    names = evaluator_names(args.evaluators)
    extra = evaluator_options(args.options)
    built = build_evaluators(names, extra)
    check_paths(args.paths, args.expected, args.out, args.baseline)
    spec: Any = {name: extra.get(name, {}) for name in names}
    if args.workers == 1 and args.engine == "local":
        spec = built
    export: bool | str = False
    if args.export_otlp is not None:
        export = True if args.export_otlp in (FROM_ENV, "") else endpoint(args.export_otlp)
    return _Plan(names, spec, export)


class _Display:
    """The progress bar on stderr (notices printed on the same console appear above it)."""

    def __init__(self, args: RescoreArgs) -> None:
        self.local = args.engine == "local"
        self.progress = Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            BarColumn(),
            TextColumn("{task.percentage:>3.0f}%"),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=err_console,
            disable=args.quiet,
            transient=False,
        )
        self.task = self.progress.add_task("reading", total=None)

    def on_progress(self, summary: RescoreSummary) -> None:
        """Move the bar to the bytes read; show turns scored and their rate."""
        total = (summary.total_bytes or None) if self.local else None
        self.progress.update(
            self.task,
            total=total,
            completed=summary.read.bytes_read,
            description=_progress(summary),
        )

    def done(self, summary: RescoreSummary) -> None:
        """Fill the bar once the whole input was read (the local engine knows its size)."""
        if summary.total_bytes and self.local:
            self.progress.update(self.task, completed=summary.total_bytes)


def _phoenix(args: RescoreArgs) -> Any:
    """A phoenix:// input (groundwire.phoenix): the command that runs `rescore` over Phoenix's
    REST API in place of files; None for files."""
    urls = any(":/" in os.fspath(path) for path in args.paths)
    if not (args.phoenix_options or urls):
        return None
    from groundwire.cli._phoenix import PhoenixCommand, looks_like_phoenix

    if not (args.phoenix_options or looks_like_phoenix(args.paths)):
        return None
    try:
        return PhoenixCommand.from_options(
            args.paths, engine=args.engine, fmt=args.fmt, annotate=args.annotate_phoenix,
            start=args.phoenix_start, end=args.phoenix_end, where=args.phoenix_where or [],
            trace_ids=args.phoenix_trace_id or [], page_size=args.phoenix_page_size,
        )  # fmt: skip
    except ValueError as error:
        bad_argument(str(error))


_AS_GIVEN: Final = (
    "expected",
    "fmt",
    "strict",
    "resume",
    "workers",
    "engine",
    "concurrency",
    "ray_address",
    "glob",
)
"""The `RescoreArgs` that go to `rescore()` unchanged, as keywords of the same names; the
command turns the others into what `rescore()` takes (evaluators, export, window) or uses them
itself."""


def _run(
    args: RescoreArgs, plan: _Plan, display: _Display, phoenix: Any, compared: Comparison | None
) -> RescoreSummary:
    """Run `rescore` (or the Phoenix command's) under the progress bar; its errors become
    one-line messages and exit codes."""
    from groundwire.offline import WindowOptions

    run: Any = rescore if phoenix is None else phoenix.rescore
    try:
        with display.progress:
            summary: RescoreSummary = run(
                [os.fspath(path) for path in args.paths],
                plan.spec,
                args.out,
                **{name: getattr(args, name) for name in _AS_GIVEN},
                export_otlp=plan.export,
                window=WindowOptions(grace=args.grace),
                progress=display.on_progress,
                on_problem=print_notice,  # the bar's console: printed above the bar
                **({"on_results": compared.add} if compared is not None else {}),
            )
            display.done(summary)
    except BadRecordError as error:
        raise CliError(f"{error} (--strict)", ExitCode.PARTIAL_INPUT) from None
    except Exception as error:
        _fail(error, phoenix, args.out)
    return summary


def _fail(error: Exception, phoenix: Any, out: Path) -> NoReturn:
    """The exit a failed run ends with: a CliError for what the user can act on, else `error`."""
    if phoenix is not None and phoenix.owns(error):
        raise CliError(phoenix.message(error, out), phoenix.exit_code(error)) from None
    if isinstance(error, RayEngineError):
        raise CliError(str(error), ExitCode.INTERNAL_ERROR) from None
    if isinstance(error, ValueError | ImportError | FileNotFoundError):
        bad_argument(str(error))
    if isinstance(error, OSError):  # mid-run, e.g. a full disk: the run could not finish
        raise CliError(f"{error}", ExitCode.INTERNAL_ERROR) from None
    raise error


def _report(
    args: RescoreArgs, summary: RescoreSummary, phoenix: Any, compared: Comparison | None
) -> None:
    """The summary, the score table and the comparison; the HTML report's extra sections."""
    quiet, out = args.quiet, args.out
    if phoenix is not None and not quiet:
        _lines(err_console, phoenix.lines())
    if not quiet:
        _lines(err_console, summary.lines())
    if summary.read.spans and not summary.turns_read:
        err_console.print("[yellow]no turn found:[/]", highlight=False)
        _lines(err_console, [f"  {line}" for line in summary.no_turn_reasons])
    if not quiet:
        console.print(_summary_table(summary))
        shown = os.fspath(summary.out or out)
        console.print(f"results: {escape(shown)}", highlight=False, soft_wrap=True)
    html = out.suffix.lower() == ".html" and out.is_file()
    if html and phoenix is None and not summary.interrupted:
        insert_steps(out, args.paths, args.fmt)  # agent turns: which step gave which context
    if compared is not None:
        if html:
            insert_comparison(out, comparison_html(compared))
        if not quiet:
            _lines(console, compared.lines())


def _lines(target: Console, lines: Iterable[str]) -> None:
    """Print each line as it is (markup escaped, never wrapped or highlighted)."""
    for line in lines:
        target.print(escape(line), highlight=False, soft_wrap=True)

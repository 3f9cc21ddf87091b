"""`groundwire rescore`: score recorded traces offline into .jsonl/.csv/.xlsx/.parquet/.html."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any, Final

import typer
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
from typer.core import TyperCommand

from groundwire.cli._app import app, console, err_console
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
from groundwire.offline.ray_engine import RayEngineError
from groundwire.offline.readers import FORMATS, BadRecordError
from groundwire.offline.rescore import RescoreSummary, rescore
from groundwire.offline.writers import comparison_html, insert_comparison, insert_steps

_EXPORT_OTLP: Final = "--export-otlp"
_FROM_ENV: Final = "env"
"""The value `--export-otlp` takes when given without an endpoint."""


class _OptionalValueCommand(TyperCommand):
    """Lets `--export-otlp` stand alone: no endpoint means the OTEL_EXPORTER_OTLP_* variables."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        """Give a bare `--export-otlp` the value `env` before Click parses the arguments."""
        fixed: list[str] = []
        for index, arg in enumerate(args):
            fixed.append(arg)
            if arg != _EXPORT_OTLP:
                continue
            following = args[index + 1] if index + 1 < len(args) else None
            if following is None or following.startswith("-") or Path(following).exists():
                fixed.append(_FROM_ENV)
        return super().parse_args(ctx, fixed)


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
        table.add_row(name, str(counts[0]), mean, *(str(count) for count in counts[1:]))
    return table


@app.command("rescore", cls=_OptionalValueCommand, epilog=help_epilog("rescore"))
@guarded
def rescore_command(
    paths: Annotated[
        list[Path],
        typer.Argument(
            help="Trace files or folders (read recursively, sorted by name): OTLP/JSON lines "
            "(.gz/.zst too), OTLP protobuf, Jaeger JSON."
        ),
    ],
    evaluators: Annotated[
        list[str],
        typer.Option("--evaluators", "-e", help="Evaluator names, comma-separated or repeated."),
    ],
    out: Annotated[
        Path,
        typer.Option("--out", "-o", help="Output file: .jsonl, .csv, .xlsx, .parquet or .html."),
    ],
    options: Annotated[
        str | None,
        typer.Option(
            "--options",
            help="Evaluator options as JSON (name -> keyword arguments), or @FILE holding it.",
        ),
    ] = None,
    fmt: Annotated[
        str | None,
        typer.Option(
            "--format", help=f"Input format ({', '.join(FORMATS)}); detected when omitted."
        ),
    ] = None,
    expected: Annotated[
        Path | None,
        typer.Option(
            "--expected", help="Gold answers (JSONL/JSON/CSV) joined by trace id or query."
        ),
    ] = None,
    export_otlp: Annotated[
        str | None,
        typer.Option(
            _EXPORT_OTLP,
            metavar="[ENDPOINT]",
            help="Also send evaluation spans (under the original turns) and metrics over OTLP; "
            "without ENDPOINT the OTEL_EXPORTER_OTLP_* variables are used.",
        ),
    ] = None,
    strict: Annotated[bool, typer.Option("--strict", help="Stop at the first bad record.")] = False,
    resume: Annotated[
        bool,
        typer.Option(
            "--resume", help="Skip turns already in OUT and append (.jsonl, .csv, .parquet)."
        ),
    ] = False,
    workers: Annotated[int, typer.Option("--workers", "-w", min=1, help="Scoring processes.")] = 1,
    engine: Annotated[str, typer.Option("--engine", help="local, or ray (Ray Data).")] = "local",
    ray_address: Annotated[
        str | None,
        typer.Option(
            "--ray-address", help="Ray cluster address (default: RAY_ADDRESS, else local Ray)."
        ),
    ] = None,
    concurrency: Annotated[
        int,
        typer.Option(
            "--concurrency", min=1, help="Async (LLM judge) evaluations in flight per process."
        ),
    ] = 8,
    grace: Annotated[
        int,
        typer.Option(
            "--grace", min=0, help="Records to wait after a trace's root for its late spans."
        ),
    ] = 8,
    quiet: Annotated[
        bool, typer.Option("--quiet", "-q", help="No progress bar or summary.")
    ] = False,
    allow_empty: Annotated[
        bool,
        typer.Option(
            "--allow-empty", help="Exit 0, not 5 (NO_TURNS), when the input holds no RAG turn."
        ),
    ] = False,
    annotate_phoenix: Annotated[
        bool,
        typer.Option(help="phoenix:// input: write each score back as a Phoenix span annotation."),
    ] = False,
    phoenix_start: Annotated[
        str | None, typer.Option(help="phoenix:// input: spans starting at or after (ISO 8601).")
    ] = None,
    phoenix_end: Annotated[
        str | None, typer.Option(help="phoenix:// input: spans starting before (ISO 8601).")
    ] = None,
    phoenix_where: Annotated[
        list[str] | None,
        typer.Option(help="phoenix:// input: only traces whose root span has KEY:VALUE."),
    ] = None,
    phoenix_trace_id: Annotated[
        list[str] | None, typer.Option(help="phoenix:// input: only these trace ids.")
    ] = None,
    phoenix_page_size: Annotated[
        int, typer.Option(min=1, max=1000, help="phoenix:// input: spans per request.")
    ] = 1000,
    glob: Annotated[
        str | None,
        typer.Option(
            "--glob",
            metavar="PATTERN",
            help="Only the files under folders whose relative path matches, e.g. '*.jsonl.gz'.",
        ),
    ] = None,
    baseline: Annotated[
        Path | None,
        typer.Option(
            "--baseline",
            metavar="SCORES",
            help="An earlier scores file (.jsonl or .csv) of the same traces: say what changed "
            "(and add a comparison to an .html OUT).",
        ),
    ] = None,
) -> None:
    """Re-score RAG turns recorded in trace files and write the results to OUT."""
    from groundwire.offline import WindowOptions

    if fmt is not None and fmt not in FORMATS:
        bad_argument(f"--format: {fmt!r} is not one of {', '.join(FORMATS)}{nearest(fmt, FORMATS)}")
    if engine not in ("local", "ray"):
        bad_argument(f"--engine: {engine!r} is not local or ray")
    names = evaluator_names(evaluators)
    extra = evaluator_options(options)
    built = build_evaluators(names, extra)
    check_paths(paths, expected, out, baseline)
    spec: Any = {name: extra.get(name, {}) for name in names}
    if workers == 1 and engine == "local":
        spec = built
    export: bool | str = False
    if export_otlp is not None:
        export = True if export_otlp in (_FROM_ENV, "") else endpoint(export_otlp)
    progress = Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.percentage:>3.0f}%"),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
        console=err_console,
        disable=quiet,
        transient=False,
    )
    task = progress.add_task("reading", total=None)

    def on_progress(summary: RescoreSummary) -> None:
        """Move the bar to the bytes read; show turns scored and their rate."""
        total = (summary.total_bytes or None) if engine == "local" else None
        progress.update(
            task, total=total, completed=summary.read.bytes_read, description=_progress(summary)
        )

    def on_problem(text: str) -> None:
        """Print a bad-record message above the progress bar."""
        progress.console.print(
            f"[yellow]groundwire:[/] {escape(text)}", highlight=False, soft_wrap=True
        )

    # A phoenix:// input (groundwire.phoenix): the same run over Phoenix's REST API.
    run: Any = rescore
    phoenix: Any = None
    phoenix_options = (
        annotate_phoenix,
        phoenix_start,
        phoenix_end,
        phoenix_where,
        phoenix_trace_id,
    )
    if any(phoenix_options) or any(":/" in os.fspath(path) for path in paths):
        from groundwire.cli._phoenix import PhoenixCommand, looks_like_phoenix

        if any(phoenix_options) or looks_like_phoenix(paths):
            try:
                phoenix = PhoenixCommand.from_options(
                    paths, engine=engine, fmt=fmt, annotate=annotate_phoenix,
                    start=phoenix_start, end=phoenix_end, where=phoenix_where or [],
                    trace_ids=phoenix_trace_id or [], page_size=phoenix_page_size,
                )  # fmt: skip
            except ValueError as error:
                bad_argument(str(error))
            run = phoenix.rescore
    compared = comparison(baseline, names, phoenix is not None)
    try:
        with progress:
            summary = run(
                [os.fspath(path) for path in paths],
                spec,
                out,
                expected=expected,
                fmt=fmt,
                strict=strict,
                resume=resume,
                workers=workers,
                engine=engine,  # type: ignore[arg-type,unused-ignore]
                export_otlp=export,
                concurrency=concurrency,
                window=WindowOptions(grace=grace),
                progress=on_progress,
                on_problem=on_problem,
                ray_address=ray_address,
                glob=glob,
                **({"on_results": compared.add} if compared is not None else {}),
            )
            if summary.total_bytes and engine == "local":
                progress.update(task, completed=summary.total_bytes)
    except BadRecordError as error:
        raise CliError(f"{error} (--strict)", ExitCode.PARTIAL_INPUT) from None
    except Exception as error:
        if phoenix is not None and phoenix.owns(error):
            raise CliError(phoenix.message(error, out), phoenix.exit_code(error)) from None
        if isinstance(error, RayEngineError):
            raise CliError(str(error), ExitCode.INTERNAL_ERROR) from None
        if isinstance(error, ValueError | ImportError | FileNotFoundError):
            bad_argument(str(error))
        if isinstance(error, OSError):  # mid-run, e.g. a full disk: the run could not finish
            raise CliError(f"{error}", ExitCode.INTERNAL_ERROR) from None
        raise
    code = exit_code(summary, allow_empty=allow_empty)
    if phoenix is not None and not quiet:
        for line in phoenix.lines():
            err_console.print(escape(line), highlight=False, soft_wrap=True)
    if not quiet:
        for line in summary.lines():
            err_console.print(escape(line), highlight=False, soft_wrap=True)
    if summary.read.spans and not summary.turns_read:
        err_console.print("[yellow]no turn found:[/]", highlight=False)
        for line in summary.no_turn_reasons:
            err_console.print(f"  {escape(line)}", highlight=False, soft_wrap=True)
    if not quiet:
        console.print(_summary_table(summary))
        shown = os.fspath(summary.out or out)
        console.print(f"results: {escape(shown)}", highlight=False, soft_wrap=True)
    html = out.suffix.lower() == ".html" and out.is_file()
    if html and phoenix is None and not summary.interrupted:
        insert_steps(out, paths, fmt)  # agent turns: which step gave which context
    if compared is not None:
        if html:
            insert_comparison(out, comparison_html(compared))
        if not quiet:
            for line in compared.lines():
                console.print(escape(line), highlight=False, soft_wrap=True)
    reason = explain(summary, code)
    if reason is not None:
        err_console.print(
            f"[yellow]groundwire:[/] {escape(reason)} (exit {int(code)})",
            highlight=False,
            soft_wrap=True,
        )
    raise typer.Exit(int(code))

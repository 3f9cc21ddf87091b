"""`groundwire rescore`: score recorded traces offline into .jsonl/.csv/.xlsx/.parquet/.html."""

from __future__ import annotations

import json
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
from groundwire.offline.ray_engine import RayEngineError
from groundwire.offline.readers import FORMATS, BadRecordError
from groundwire.offline.rescore import RescoreSummary, rescore

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


def _names(values: list[str]) -> list[str]:
    """Evaluator names from repeated and comma-separated `--evaluators` values."""
    return [name.strip() for value in values for name in value.split(",") if name.strip()]


def _options(raw: str | None) -> dict[str, dict[str, Any]]:
    """`--options` JSON (inline or @file) as evaluator name -> keyword arguments."""
    if raw is None:
        return {}
    text = Path(raw[1:]).read_text(encoding="utf-8") if raw.startswith("@") else raw
    try:
        options = json.loads(text)
    except json.JSONDecodeError as error:
        raise typer.BadParameter(f"not valid JSON: {error}", param_hint="--options") from None
    if not isinstance(options, dict) or not all(isinstance(v, dict) for v in options.values()):
        raise typer.BadParameter(
            "expected a JSON object of evaluator name -> options, e.g. "
            '\'{"quote_verification": {"embedder": null}}\'',
            param_hint="--options",
        )
    return options


def _summary_table(summary: RescoreSummary) -> Table:
    """Scored / mean / n/a / failed per evaluator, as a rich table."""
    table = Table(title="scores", title_justify="left")
    for column in ("evaluator", "scored", "mean", "n/a", "failed"):
        table.add_column(column, justify="left" if column == "evaluator" else "right")
    for name, tally in summary.tallies.items():
        mean = "–" if tally.mean is None else f"{tally.mean:.3f}"
        table.add_row(name, str(tally.scored), mean, str(tally.not_applicable), str(tally.failed))
    return table


@app.command("rescore", cls=_OptionalValueCommand)
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
        bool, typer.Option("--resume", help="Skip turns already in OUT and append (.jsonl, .csv).")
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
    glob: Annotated[
        str | None,
        typer.Option(
            "--glob",
            metavar="PATTERN",
            help="Only the files under folders whose relative path matches, e.g. '*.jsonl.gz'.",
        ),
    ] = None,
) -> None:
    """Re-score RAG turns recorded in trace files and write the results to OUT."""
    from groundwire.offline._pipeline import WindowOptions

    if fmt is not None and fmt not in FORMATS:
        raise typer.BadParameter(f"expected one of {', '.join(FORMATS)}", param_hint="--format")
    if engine not in ("local", "ray"):
        raise typer.BadParameter("expected local or ray", param_hint="--engine")
    names = _names(evaluators)
    extra = _options(options)
    unknown = sorted(set(extra) - set(names))
    if unknown:
        raise typer.BadParameter(
            f"options given for evaluators not selected: {unknown}", param_hint="--options"
        )
    spec: Any = {name: extra.get(name, {}) for name in names}
    export: bool | str = False
    if export_otlp is not None:
        export = True if export_otlp in (_FROM_ENV, "") else export_otlp
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
        rate = summary.turns_scored / summary.elapsed_s if summary.elapsed_s else 0.0
        total = summary.total_bytes if engine == "local" else None
        progress.update(
            task,
            total=total,
            completed=summary.read.bytes_read,
            description=f"{summary.turns_scored} turns scored ({rate:.1f}/s)",
        )

    def on_problem(text: str) -> None:
        """Print a bad-record message above the progress bar."""
        progress.console.print(
            f"[yellow]groundwire:[/] {escape(text)}", highlight=False, soft_wrap=True
        )

    try:
        with progress:
            summary = rescore(
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
            )
            if summary.total_bytes and engine == "local":
                progress.update(task, completed=summary.total_bytes)
    except BadRecordError as error:
        err_console.print(
            f"[red]error:[/] {escape(str(error))} (--strict)", highlight=False, soft_wrap=True
        )
        raise typer.Exit(1) from None
    except (ValueError, FileNotFoundError, ImportError, RayEngineError) as error:
        err_console.print(f"[red]error:[/] {escape(str(error))}", highlight=False, soft_wrap=True)
        raise typer.Exit(1) from None
    if not quiet:
        for line in summary.lines():
            err_console.print(escape(line), highlight=False, soft_wrap=True)
        console.print(_summary_table(summary))
        console.print(f"results: {escape(os.fspath(out))}", highlight=False, soft_wrap=True)
    if summary.interrupted:
        raise typer.Exit(130)

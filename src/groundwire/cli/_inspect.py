"""`groundwire inspect TRACE_FILE [--trace ID] [--json]`: what the assembler makes of a trace file.

For each trace: its service, the dialects its spans are written in, the retrieval spans, each turn
root with where the query, contexts and answer were read (dialect and attribute), and, for a
trace that gave no turn, why. Exit codes as `rescore`, decided by the same function
(`groundwire.cli._outcome.code_for`): 0 turns found, 3 some records unreadable, 4 nothing
readable, 5 no turn (0 with `--allow-empty`), 2 bad arguments.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Annotated, Final

import typer
from rich.markup import escape
from rich.tree import Tree

from groundwire.assembly import (
    Diagnoses,
    LogRecordData,
    Origin,
    SpanRecord,
    TraceReport,
    explain_traces,
    has_content,
)
from groundwire.cli._app import app, console
from groundwire.cli._console import print_notice
from groundwire.cli._errors import fail
from groundwire.cli._exit import ExitCode, help_epilog
from groundwire.cli._outcome import code_for
from groundwire.offline.readers import FORMATS, Problems, ReadStats, read_spans

__all__ = ["inspect_command"]

_PREVIEW: Final = 80
"""Characters of a query, context or answer shown."""


def _preview(text: str) -> str:
    """One line, at most `_PREVIEW` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= _PREVIEW else flat[: _PREVIEW - 1] + "…"


def _quoted(text: str) -> str:
    """The preview in quotes, as markup that shows it as it is: quoted first, then escaped (an
    escape quoted afterwards has its backslash doubled, and `[b]` would turn bold)."""
    return escape(repr(_preview(text)))


def _where(found: Origin | None) -> str:
    """`origin on span-name` for one part of a turn."""
    if found is None:
        return "[dim]not found[/]"
    return f"[cyan]{escape(found.origin or '?')}[/] on {escape(found.span_name)}"


def _tree(report: TraceReport) -> Tree:
    """One trace as a rich tree."""
    dialects = ", ".join(report.dialects) or "no known dialect"
    service = report.service or "unnamed service"
    tree = Tree(
        f"[bold]trace {report.trace_id}[/] · {escape(service)} · {report.spans} spans · "
        f"{escape(dialects)}"
    )
    if report.retrievals:
        node = tree.add("retrieval spans")
        for span_id, name, dialect in report.retrievals:
            node.add(f"{escape(name)} [dim]{span_id}[/] ({escape(dialect)})")
    else:
        tree.add("retrieval spans: [yellow]none recognised[/]")
    if report.missing_parents:
        tree.add(
            "[yellow]missing parent spans[/] (named by spans, never arrived): "
            + ", ".join(report.missing_parents)
        )
    for turn_report in report.turns:
        turn = turn_report.turn
        label = f"turn root {escape(turn_report.root_name)} [dim]{turn_report.root_id}[/]"
        if turn_report.missing_parent:
            label += " [yellow](stand-in: its children made the turn)[/]"
        if turn is None:
            tree.add(f"{label}: [yellow]no turn[/] ({escape(turn_report.reason or '?')})")
            continue
        node = tree.add(f"[green]{label}[/]")
        node.add(f"query    {_quoted(turn.query)} ← {_where(turn_report.query)}")
        contexts = node.add(f"contexts {len(turn.contexts)}")
        for found in turn_report.contexts:
            contexts.add(f"{found.count} from {_where(found)}")
        for context in turn.contexts:
            contexts.add(f"[dim]{context.rank}[/] {_quoted(context.text)}")
        node.add(f"answer   {_quoted(turn.answer)} ← {_where(turn_report.answer)}")
    if report.reason is not None:
        tree.add(f"[yellow]no turn:[/] {escape(report.reason)}")
    return tree


def _read(
    path: Path, fmt: str | None, trace: str | None
) -> tuple[list[SpanRecord], list[LogRecordData], ReadStats]:
    """The file's spans and content events (of one trace when `trace` is given); bad records
    printed and counted."""
    stats = ReadStats()
    problems = Problems(strict=False, stats=stats, on_report=print_notice)
    spans: list[SpanRecord] = []
    logs: list[LogRecordData] = []
    for batch in read_spans([os.fspath(path)], problems, fmt=fmt):  # type: ignore[arg-type]
        spans.extend(s for s in batch.spans if trace is None or s.trace_id == trace)
        logs.extend(
            log
            for log in batch.logs
            if has_content(log) and (trace is None or log.trace_id == trace)
        )
    return spans, logs, stats


@app.command("inspect", epilog=help_epilog("inspect"))
def inspect_command(
    path: Annotated[
        Path,
        typer.Argument(help="A trace file: OTLP/JSON lines (.gz/.zst too), OTLP protobuf, Jaeger."),
    ],
    trace: Annotated[
        str | None, typer.Option("--trace", help="Only this trace id (32 hex digits).")
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="One JSON document: every trace, turns, diagnoses.")
    ] = False,
    fmt: Annotated[
        str | None,
        typer.Option("--format", help=f"Input format ({', '.join(FORMATS)}); detected if omitted."),
    ] = None,
    allow_empty: Annotated[
        bool,
        typer.Option("--allow-empty", help="Exit 0, not 5, when the file holds no RAG turn."),
    ] = False,
) -> None:
    """Show how each trace in a file assembles into turns, where each part was read, and why a
    trace gave no turn."""
    if not path.is_file():
        fail(f"not a trace file: {os.fspath(path)}", ExitCode.BAD_ARGUMENTS)
    if fmt is not None and fmt not in FORMATS:
        fail(f"--format: expected one of {', '.join(FORMATS)}", ExitCode.BAD_ARGUMENTS)
    wanted = trace.strip().lower() if trace is not None else None
    if wanted is not None and (
        len(wanted) != 32 or any(c not in "0123456789abcdef" for c in wanted)
    ):
        fail(f"--trace: expected 32 hex digits, got {trace!r}", ExitCode.BAD_ARGUMENTS)
    try:
        spans, logs, stats = _read(path, fmt, wanted)
    except ValueError as error:
        fail(str(error), ExitCode.NOTHING_READABLE)
    reports = explain_traces(spans, logs)
    diagnoses = Diagnoses(limit=len(reports) + 1)
    for report in reports:
        diagnoses.count(report)
    turns = sum(report.turn_count for report in reports)
    if as_json:
        payload = {
            "traces": [report.as_dict() for report in reports],
            "spans": len(spans),
            "turns": turns,
            "bad_records": stats.bad_records,
            "no_turn": diagnoses.as_list(),
        }
        typer.echo(json.dumps(payload, ensure_ascii=False))
    else:
        for report in reports:
            console.print(_tree(report), soft_wrap=True)
        console.print(
            f"{len(reports)} traces, {len(spans)} spans, {turns} turns"
            + (f", {stats.bad_records} bad records" if stats.bad_records else ""),
            highlight=False,
        )
        for line in diagnoses.lines():
            console.print(f"[yellow]no turn:[/] {escape(line)}", highlight=False, soft_wrap=True)
    if not spans and wanted is not None and stats.spans:
        fail(f"no span of trace {wanted} in {path}", ExitCode.BAD_ARGUMENTS)
    damaged = stats.bad_records + stats.damaged_files
    code = code_for(spans=len(spans), damaged=damaged, turns=turns, allow_empty=allow_empty)
    raise typer.Exit(int(code))

"""`groundwire demo`: a LangChain RAG app scored online, re-scored offline, summarised here.

No key and no server needed: the app answers with an offline stand-in model unless
`OPENAI_API_KEY` or `GROUNDWIRE_JUDGE_BASE_URL` is set. See docs/demo.md.
"""

from __future__ import annotations

import difflib
import logging
import math
import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Final

import typer
from rich.markup import escape
from rich.table import Table

from groundwire._types import Score
from groundwire.cli._app import app, console, err_console
from groundwire.cli._errors import bad_argument, guarded
from groundwire.cli._exit import help_epilog

if TYPE_CHECKING:
    from groundwire.demo import DemoRun

_DETERMINISTIC: Final = ("quoted_spans", "quote_verification")
"""Evaluators whose online and offline scores must agree exactly."""


def _cell(score: Score | None) -> str:
    """A score for the table: the value (green at 1, yellow, red below 0.5), or a word."""
    if score is None:
        return "[dim]–[/]"
    if score.value is None:
        return "[dim]skipped[/]" if score.label == "skipped" else "[dim]n/a[/]"
    if math.isnan(score.value):
        return "[red]failed[/]"
    colour = "green" if score.value >= 1.0 else "red" if score.value < 0.5 else "yellow"
    return f"[{colour}]{score.value:.2f}[/]"


def _mean_cell(values: list[float]) -> str:
    """The mean of the computed values for the table's last row."""
    return "[dim]–[/]" if not values else f"[bold]{sum(values) / len(values):.2f}[/]"


def _table(run: DemoRun) -> Table:
    """One row per question with each evaluator's offline score, then the means."""
    names = run.offline.evaluators
    table = Table(title="scores (re-scored offline from the trace file)", title_justify="left")
    table.add_column("#", justify="right")
    table.add_column("question", ratio=1)
    for name in names:
        table.add_column(name.replace("_", "\n"), justify="right", no_wrap=True)
    for index, result in enumerate(run.results, 1):
        cells = [_cell(result.scores.get(name)) for name in names]
        table.add_row(str(index), escape(result.turn.query or ""), *cells)
    means = [
        _mean_cell([v for r in run.results if (v := r.values().get(name)) is not None])
        for name in names
    ]
    table.add_section()
    table.add_row("", "[bold]mean[/]", *means)
    return table


def _short(text: str, limit: int = 90) -> str:
    """Whitespace collapsed and cut to `limit` characters with an ellipsis."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


def _difference(quote: str, source: str) -> str:
    """Where a fuzzily found quote differs from its source, one changed stretch of words."""
    said, wrote = quote.split(), source.split()
    opcodes = difflib.SequenceMatcher(a=[w.lower() for w in said], b=[w.lower() for w in wrote])
    for tag, a1, a2, b1, b2 in opcodes.get_opcodes():
        if tag == "equal":
            continue
        a0, b0 = max(a1 - 1, 0), max(b1 - 1, 0)
        ours = " ".join(said[a0 : a2 + 1])
        theirs = " ".join(wrote[b0 : b2 + 1])
        return f"the answer says \u201c{ours}\u201d, the source \u201c{theirs}\u201d"
    return "it differs from the source only in punctuation"


def _flags(run: DemoRun) -> list[str]:
    """One line per quote worth a look: misquoted (what it changed), not found in the sources,
    or found but not verbatim."""
    lines: list[str] = []
    for index, result in enumerate(run.results, 1):
        check = result.scores.get("quote_verification")
        if check is None or check.value is None or not check.details:
            continue
        for row in check.details.get("quotes", ()):
            quote, kind = str(row.get("quote", "")), row.get("match_kind")
            if row.get("meaning_changes"):
                why = escape(str(row.get("low_confidence_reason")))
                lines.append(f"{index}. [red]misquoted[/] (quote_verification refuses it): {why}")
            elif row.get("low_confidence"):
                shown = escape(_short(quote))
                lines.append(f"{index}. [red]not in the sources[/]: \u201c{shown}\u201d")
            elif kind != "exact":
                if kind == "ellipsis":
                    how = "an ellipsis joins two separate parts of the source"
                else:
                    how = _difference(quote, str(row.get("span_text", "")))
                lines.append(
                    f"{index}. [yellow]found, not verbatim[/] (quote_verification finds it, "
                    f"quoted_spans does not): {escape(how)}"
                )
    return lines


def _agreement(run: DemoRun) -> tuple[int, int]:
    """(agreeing, compared) deterministic scores between the online and offline runs."""
    agree = compared = 0
    for result in run.results:
        online = run.online.scores.get(result.turn.trace_id or "", {})
        offline = result.values()
        for name in _DETERMINISTIC:
            if name not in online or name not in offline:
                continue
            compared += 1
            a, b = online[name], offline[name]
            agree += (a is None and b is None) or (
                a is not None and b is not None and math.isclose(a, b, abs_tol=1e-9)
            )
    return agree, compared


def _where(path: Path) -> str:
    """The path relative to the working directory when it lies below it, else absolute."""
    absolute = path.resolve()
    try:
        return str(absolute.relative_to(Path.cwd()))
    except ValueError:
        return str(absolute)


@app.command("demo", epilog=help_epilog("demo"))
@guarded
def demo_command(
    out: Annotated[
        Path, typer.Option("--out", "-o", help="Directory for the trace file and the report.")
    ] = Path("groundwire-out"),
    questions: Annotated[
        int, typer.Option("--questions", "-n", min=1, help="How many questions the app answers.")
    ] = 6,
    stand_in: Annotated[
        bool,
        typer.Option(
            "--stand-in", help="Use the offline stand-in model even when a real one is configured."
        ),
    ] = False,
    verbose: Annotated[
        bool, typer.Option("--verbose", "-v", help="Show groundwire's log messages.")
    ] = False,
) -> None:
    """Run a small LangChain RAG app, score it online and offline, and summarise the scores."""
    from groundwire.demo import QUESTIONS, DemoError, run_demo

    if questions > len(QUESTIONS):
        bad_argument(f"--questions: the demo has {len(QUESTIONS)} questions, got {questions}")
    if out.exists() and not out.is_dir():
        bad_argument(f"--out: {out} is a file; the demo needs a directory for its files")
    existing = next((folder for folder in (out, *out.parents) if folder.exists()), Path("."))
    if not os.access(existing, os.W_OK | os.X_OK):
        bad_argument(f"--out: cannot write in {existing} (permission denied)")
    if not verbose:
        logging.getLogger("groundwire").setLevel(logging.ERROR)
        # The judges' client logs every failed call; a failing model is said once, below.
        logging.getLogger("instructor").setLevel(logging.CRITICAL)

    def step(message: str) -> None:
        """Show a progress line on stderr."""
        err_console.print(f"[dim]{escape(message)}[/]", highlight=False)

    try:
        run = run_demo(out, questions, stand_in=stand_in, on_step=step)
    except DemoError as error:
        err_console.print(f"[red]groundwire demo:[/] {escape(str(error))}", highlight=False)
        raise typer.Exit(1) from None

    console.print("[bold]groundwire demo[/]: a LangChain RAG app over a fictional library handbook")
    console.print(f"model: {escape(run.model)}", highlight=False)
    if not run.judge_configured:
        console.print(
            "judges: none configured, so groundedness and citation_support were [bold]skipped[/] "
            "(set GROUNDWIRE_JUDGE_BASE_URL / GROUNDWIRE_JUDGE_MODEL or OPENAI_API_KEY)",
            highlight=False,
        )
    console.print(_table(run))
    if not run.results:
        console.print(
            "[yellow]the trace file holds no turn that can be re-scored[/]: the spans keep no "
            "text when GROUNDWIRE_HIDE_INPUTS / _OUTPUTS / _DOCUMENT_TEXT is set (online scores "
            "were computed from the live data all the same)",
            highlight=False,
        )
    for line in _flags(run):
        console.print(line, highlight=False)
    stats = run.online_stats
    agree, compared = _agreement(run)
    console.print(
        f"online: {stats.scored} of {stats.submitted} turns scored while the app ran "
        f"({stats.errored} errored, {stats.dropped} dropped); {run.online.results} evaluation "
        f"results in the trace file ({run.online.from_events} as span events, "
        f"{run.online.from_logs} as log records); offline re-scoring agrees on {agree} of "
        f"{compared} deterministic scores",
        highlight=False,
    )
    console.print("files:")
    console.print(f"  traces  {_where(run.trace_path)}  (OTLP/JSON lines)", highlight=False)
    console.print(f"  report  {_where(run.report_path)}  (open in a browser)", highlight=False)
    console.print(f"  scores  {_where(run.scores_path)}", highlight=False)
    console.print(f"done in {run.elapsed_s:.1f} s", highlight=False)

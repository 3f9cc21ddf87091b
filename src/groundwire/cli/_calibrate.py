"""`groundwire calibrate`: how well each evaluator agrees with a team's own human labels.

    groundwire calibrate --labels labels.csv --scores scores.jsonl [--out report.html]
    groundwire calibrate --labels labels.csv --traces traces.jsonl -e groundedness \\
        --judge model=gpt-4o,base_url=... --judge model=gpt-4o-mini,base_url=...

Scores come from a `rescore` output, or from trace files scored here (`--traces`), once per
`--judge` configuration so two judges are compared on the same turns. A bad labels file (wrong
columns, unknown evaluator, a label off the scale, a duplicate, no overlap with the scores) is
one line and exit 2. See docs/calibrate.md.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any, Final

import typer
from rich.markup import escape
from rich.table import Table

from groundwire import semconv
from groundwire.calibrate import (
    REPORT_SUFFIXES,
    CalibrationReport,
    LabelsError,
    ScoredTurn,
    calibrate,
    read_labels,
    read_scores,
    read_turns,
    score_turns,
    series_name,
    show,
    show_threshold,
    write_report,
)
from groundwire.cli._app import app, console
from groundwire.cli._console import print_notice
from groundwire.cli._errors import bad_argument, guarded
from groundwire.cli._exit import ExitCode, help_epilog
from groundwire.cli._outcome import code_for
from groundwire.cli._rescore_args import evaluator_names, evaluator_options
from groundwire.cli._rescore_args import evaluators as build_evaluators

__all__ = ["calibrate_command", "judge_options"]

_JUDGE_KEYS: Final = ("name", "model", "base_url", "api_key_env", "timeout_s", "mode", "cache")
"""What a `--judge` value may set (the API key only by naming a variable that holds it)."""


_NOTHING_TO_CALIBRATE: Final = {
    ExitCode.NOTHING_READABLE: "no span could be read from --traces",
    ExitCode.NO_TURNS: "--traces held no RAG turn",
    ExitCode.ALL_EVALUATIONS_FAILED: "every evaluation failed or was skipped (is the judge "
    "configured and reachable?)",
}
"""What reading and scoring `--traces` ended with when no judge value exists to compare."""


_MADE_BY: Final = {
    semconv.GROUNDWIRE_JUDGE_MODEL: "model",
    semconv.GROUNDWIRE_JUDGE_PROMPT_VERSION: "prompts",
}
"""How the provenance keys read in the terminal."""


def judge_options(value: str) -> tuple[str, dict[str, Any]]:
    """`--judge model=M,base_url=U[,name=N,api_key_env=VAR,...]` as (name, JudgeConfig options)."""
    options: dict[str, Any] = {}
    for part in (p.strip() for p in value.split(",") if p.strip()):
        key, sep, raw = part.partition("=")
        key = key.strip()
        if not sep or key not in _JUDGE_KEYS:
            bad_argument(
                f"--judge: {part!r} is not KEY=VALUE with KEY one of {', '.join(_JUDGE_KEYS)} "
                "(e.g. --judge model=gpt-4o-mini,base_url=http://127.0.0.1:8000/v1)"
            )
        options[key] = raw.strip()
    if "model" not in options:
        bad_argument(f"--judge: {value!r} names no model (model=...)")
    variable = options.pop("api_key_env", None)
    if variable is not None:
        if variable not in os.environ:
            bad_argument(f"--judge: api_key_env={variable}: that variable is not set")
        options["api_key"] = os.environ[variable]
    if "timeout_s" in options:
        try:
            options["timeout_s"] = float(options["timeout_s"])
        except ValueError:
            bad_argument(f"--judge: timeout_s={options['timeout_s']!r} is not a number")
    name = str(options.pop("name", options["model"]))
    return name, options


def _judge_runs(judges: list[str]) -> list[tuple[str | None, dict[str, Any]]]:
    """(judge name, options) per `--judge`, or one unnamed run with the environment's judge."""
    if not judges:
        return [(None, {})]
    runs = [judge_options(value) for value in judges]
    names = [name for name, _ in runs]
    if len(set(names)) != len(names):
        bad_argument("--judge: two judges share a name; give each one name=...")
    return [(name, options) for name, options in runs]


def _score_traces(
    traces: list[Path], names: list[str], extra: dict[str, dict[str, Any]], judges: list[str]
) -> tuple[dict[str | None, Sequence[ScoredTurn]], ExitCode]:
    """Read the traces once and score them per judge; the exit code of what was read and run."""
    for path in traces:
        if not path.exists():
            bad_argument(f"--traces: {path} does not exist")
    runs: dict[str | None, Sequence[ScoredTurn]] = {}
    plans = []
    for judge, options in _judge_runs(judges):
        built = build_evaluators(names, extra)
        if options:
            pairs = zip(names, built, strict=True)
            with_judge = {
                n: {**extra.get(n, {}), **options} for n, ev in pairs if hasattr(ev, "judge")
            }
            if not with_judge:
                bad_argument(f"--judge: none of {', '.join(names)} uses an LLM judge")
            built = build_evaluators(names, {**extra, **with_judge})
        plans.append((judge, built))

    read = read_turns(traces, print_notice)
    evaluations = failed = 0
    for judge, built in plans:
        scored = score_turns(read.turns, built)
        runs[judge] = scored.turns
        evaluations, failed = evaluations + scored.evaluations, failed + scored.failed
    code = code_for(
        spans=read.spans,
        damaged=read.damaged,
        turns=len(read.turns),
        evaluations=evaluations,
        evaluations_failed=failed,
    )
    return runs, code


def _table(report: CalibrationReport) -> Table:
    """One row per series: n, each figure with its interval, the threshold, judge tokens."""
    table = Table(title="judge vs human (95% bootstrap intervals)", title_justify="left")
    columns = ("series", "scale", "n", "accuracy", "kappa", "spearman", "pearson", "threshold")
    for column in (*columns, "tokens"):
        table.add_column(column, justify="left" if column in ("series", "scale") else "right")
    for row in report.agreements:
        kappa = show(row.kappa) + (" (quadratic)" if row.weighting == "quadratic" else "")
        table.add_row(
            escape(series_name(row)),
            row.scale,
            str(row.n) + (f" ({row.unscored} unscored)" if row.unscored else ""),
            show(row.accuracy),
            kappa,
            show(row.spearman),
            show(row.pearson),
            show_threshold(row),
            "" if row.tokens is None else f"{row.tokens:,}",
        )
    return table


def _print(report: CalibrationReport, disagreements: int) -> None:
    """The table, the annotators' ceiling, unmatched labels and the worst disagreements."""
    console.print(_table(report))
    for c in report.ceilings:
        console.print(
            f"ceiling {escape(c.evaluator)}: {escape(' vs '.join(c.annotators))} agree with "
            f"kappa {show(c.kappa)} on {c.n} turns",
            highlight=False,
        )
    for row in report.agreements:
        if row.made_by and row.prompt in (None, "mean"):
            parts = [f"{_MADE_BY.get(k, k)} {', '.join(v)}" for k, v in row.made_by.items()]
            mixed = any(len(values) > 1 for values in row.made_by.values())
            warn = " [yellow](the scores mix configurations)[/]" if mixed else ""
            console.print(
                f"{escape(series_name(row))} scored by judge {escape('; '.join(parts))}{warn}",
                highlight=False,
            )
    if report.unmatched:
        console.print(f"[yellow]{len(report.unmatched)} label(s) match no scored turn:[/]")
        for miss in report.unmatched[:10]:
            console.print(f"  {escape(miss.label.where)}: {escape(miss.reason)}", highlight=False)
    shown = [r for r in report.agreements if r.prompt in (None, "mean")]
    for row in shown:
        for d in row.disagreements[:disagreements]:
            console.print(
                f"[bold]{escape(series_name(row))}[/] human {d.pair.label:g}, judge "
                f"{escape(d.judged)} ({d.pair.value:.2f}) · {escape(d.pair.trace_id)}: "
                f"{escape((d.pair.query or '')[:100])}",
                highlight=False,
                soft_wrap=True,
            )
            if d.pair.explanation:
                console.print(f"  judge: {escape(d.pair.explanation[:200])}", highlight=False)


@app.command("calibrate", epilog=help_epilog("calibrate"))
@guarded
def calibrate_command(
    labels: Annotated[
        str,
        typer.Option(
            "--labels",
            help="Human labels: .csv, .jsonl or .parquet with trace_id/span_id, evaluator, "
            "label (0/1/2, pass/fail, true/false or [0, 1]) and optionally annotator; or "
            "phoenix://HOST:PORT/PROJECT for a Phoenix project's human span annotations.",
        ),
    ],
    scores: Annotated[
        Path | None, typer.Option("--scores", help="A `rescore` output (.jsonl, .csv, .parquet).")
    ] = None,
    traces: Annotated[
        list[Path] | None,
        typer.Option("--traces", help="Trace files to score here instead of --scores."),
    ] = None,
    evaluators: Annotated[
        list[str] | None,
        typer.Option("--evaluators", "-e", help="With --traces: evaluator names."),
    ] = None,
    options: Annotated[
        str | None,
        typer.Option("--options", help="With --traces: evaluator options as JSON, or @FILE."),
    ] = None,
    judge: Annotated[
        list[str] | None,
        typer.Option(
            "--judge",
            help="With --traces, repeatable: a judge configuration to compare, "
            "model=M,base_url=U[,name=N,api_key_env=VAR,timeout_s=S].",
        ),
    ] = None,
    out: Annotated[
        Path | None, typer.Option("--out", "-o", help="Also write the report: .json or .html.")
    ] = None,
    resamples: Annotated[
        int, typer.Option("--resamples", min=1, help="Bootstrap resamples per figure.")
    ] = 2000,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the bootstrap resamples.")] = 0,
    show_disagreements: Annotated[
        int,
        typer.Option("--disagreements", min=0, help="Disagreements shown per evaluator."),
    ] = 5,
) -> None:
    """Measure each evaluator against human labels: kappa, correlation, threshold, disagreements."""
    if (scores is None) == (not traces):
        bad_argument("give either --scores FILE (a rescore output) or --traces FILE -e NAME")
    if out is not None and out.suffix.lower() not in REPORT_SUFFIXES:
        bad_argument(f"--out: {out} must end in .json or .html")
    if scores is not None and (evaluators or judge or options):
        bad_argument("-e, --options and --judge need --traces (a scores file is already scored)")
    code = ExitCode.OK
    try:
        if scores is not None:
            runs: dict[str | None, Sequence[ScoredTurn]] = {None: read_scores(scores)}
        else:
            names = evaluator_names(evaluators or [])
            runs, code = _score_traces(traces or [], names, evaluator_options(options), judge or [])
            if code in _NOTHING_TO_CALIBRATE:
                print_notice(
                    f"nothing to calibrate: {_NOTHING_TO_CALIBRATE[code]} (exit {int(code)})"
                )
                raise typer.Exit(int(code))
        if not any(runs.values()):
            bad_argument(f"--scores: {scores}: no scored turn in the file")
        known = sorted({name for turns in runs.values() for t in turns for name in t.scores})
        label_set = read_labels(labels, evaluators=known)
        report = calibrate(label_set, runs, resamples=resamples, seed=seed)
    except LabelsError as error:
        bad_argument(str(error))
    _print(report, show_disagreements)
    if out is not None:
        write_report(report, out)
        console.print(f"report: {escape(os.fspath(out))}", highlight=False, soft_wrap=True)
    raise typer.Exit(int(code))

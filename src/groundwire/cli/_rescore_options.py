"""`groundwire rescore`'s command-line options: each one's Typer declaration, and all of them as
one `RescoreArgs` object.

The declarations are type aliases so that the command's signature stays one line per option
(Typer reads the `Annotated` metadata through the alias), and the steps of the command take the
one `RescoreArgs` instead of a list of its fields.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Final

import typer
from typer.core import TyperCommand

from groundwire.offline.readers import FORMATS

__all__ = [
    "FROM_ENV",
    "AllowEmpty",
    "AnnotatePhoenix",
    "Baseline",
    "Concurrency",
    "Engine",
    "Evaluators",
    "Expected",
    "ExportOtlp",
    "Format",
    "Glob",
    "Grace",
    "OptionalValueCommand",
    "Options",
    "Out",
    "Paths",
    "PhoenixEnd",
    "PhoenixPageSize",
    "PhoenixStart",
    "PhoenixTraceId",
    "PhoenixWhere",
    "Quiet",
    "RayAddress",
    "RescoreArgs",
    "Resume",
    "Strict",
    "Workers",
]

_EXPORT_OTLP: Final = "--export-otlp"
FROM_ENV: Final = "env"
"""The value `--export-otlp` takes when given without an endpoint."""


class OptionalValueCommand(TyperCommand):
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
                fixed.append(FROM_ENV)
        return super().parse_args(ctx, fixed)


Paths = Annotated[
    list[Path],
    typer.Argument(
        help="Trace files or folders (read recursively, sorted by name): OTLP/JSON lines "
        "(.gz/.zst too), OTLP protobuf, Jaeger JSON."
    ),
]
Evaluators = Annotated[
    list[str],
    typer.Option("--evaluators", "-e", help="Evaluator names, comma-separated or repeated."),
]
Out = Annotated[
    Path,
    typer.Option("--out", "-o", help="Output file: .jsonl, .csv, .xlsx, .parquet or .html."),
]
Options = Annotated[
    str | None,
    typer.Option(
        "--options",
        help="Evaluator options as JSON (name -> keyword arguments), or @FILE holding it.",
    ),
]
Format = Annotated[
    str | None,
    typer.Option("--format", help=f"Input format ({', '.join(FORMATS)}); detected when omitted."),
]
Expected = Annotated[
    Path | None,
    typer.Option("--expected", help="Gold answers (JSONL/JSON/CSV) joined by trace id or query."),
]
ExportOtlp = Annotated[
    str | None,
    typer.Option(
        _EXPORT_OTLP,
        metavar="[ENDPOINT]",
        help="Also send evaluation spans (under the original turns) and metrics over OTLP; "
        "without ENDPOINT the OTEL_EXPORTER_OTLP_* variables are used.",
    ),
]
Strict = Annotated[bool, typer.Option("--strict", help="Stop at the first bad record.")]
Resume = Annotated[
    bool,
    typer.Option("--resume", help="Skip turns already in OUT and append (.jsonl, .csv, .parquet)."),
]
Workers = Annotated[int, typer.Option("--workers", "-w", min=1, help="Scoring processes.")]
Engine = Annotated[
    str, typer.Option("--engine", help="local, or ray (a Ray cluster, or a local Ray).")
]
RayAddress = Annotated[
    str | None,
    typer.Option(
        "--ray-address", help="Ray cluster address (default: RAY_ADDRESS, else local Ray)."
    ),
]
Concurrency = Annotated[
    int,
    typer.Option(
        "--concurrency", min=1, help="Async (LLM judge) evaluations in flight per process."
    ),
]
Grace = Annotated[
    int,
    typer.Option("--grace", min=0, help="Records to wait after a trace's root for its late spans."),
]
Quiet = Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar or summary.")]
AllowEmpty = Annotated[
    bool,
    typer.Option(
        "--allow-empty", help="Exit 0, not 5 (NO_TURNS), when the input holds no RAG turn."
    ),
]
AnnotatePhoenix = Annotated[
    bool,
    typer.Option(help="phoenix:// input: write each score back as a Phoenix span annotation."),
]
PhoenixStart = Annotated[
    str | None, typer.Option(help="phoenix:// input: spans starting at or after (ISO 8601).")
]
PhoenixEnd = Annotated[
    str | None, typer.Option(help="phoenix:// input: spans starting before (ISO 8601).")
]
PhoenixWhere = Annotated[
    list[str] | None,
    typer.Option(help="phoenix:// input: only traces whose root span has KEY:VALUE."),
]
PhoenixTraceId = Annotated[
    list[str] | None, typer.Option(help="phoenix:// input: only these trace ids.")
]
PhoenixPageSize = Annotated[
    int, typer.Option(min=1, max=1000, help="phoenix:// input: spans per request.")
]
Glob = Annotated[
    str | None,
    typer.Option(
        "--glob",
        metavar="PATTERN",
        help="Only the files under folders whose relative path matches, e.g. '*.jsonl.gz'.",
    ),
]
Baseline = Annotated[
    Path | None,
    typer.Option(
        "--baseline",
        metavar="SCORES",
        help="An earlier scores file (.jsonl or .csv) of the same traces: say what changed "
        "(and add a comparison to an .html OUT).",
    ),
]


@dataclass(frozen=True, slots=True)
class RescoreArgs:
    """Every `rescore` option as given on the command line (the command's parameters, by the
    same names: the command builds one from them and its steps read it)."""

    paths: list[Path]
    evaluators: list[str]
    out: Path
    options: str | None
    fmt: str | None
    expected: Path | None
    export_otlp: str | None
    strict: bool
    resume: bool
    workers: int
    engine: str
    ray_address: str | None
    concurrency: int
    grace: int
    quiet: bool
    allow_empty: bool
    annotate_phoenix: bool
    phoenix_start: str | None
    phoenix_end: str | None
    phoenix_where: list[str] | None
    phoenix_trace_id: list[str] | None
    phoenix_page_size: int
    glob: str | None
    baseline: Path | None

    @property
    def phoenix_options(self) -> bool:
        """True when any `--annotate-phoenix` / `--phoenix-*` option was given."""
        return any(
            (
                self.annotate_phoenix,
                self.phoenix_start,
                self.phoenix_end,
                self.phoenix_where,
                self.phoenix_trace_id,
            )
        )

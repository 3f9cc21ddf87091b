"""`rescore`'s option declarations: a bare `--export-otlp`, and `RescoreArgs.phoenix_options`."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from groundwire.cli._rescore_options import (
    FROM_ENV,
    ExportOtlp,
    OptionalValueCommand,
    Paths,
    Quiet,
    RescoreArgs,
)


def _parsed(args: list[str]) -> str:
    """What a command declared like `rescore` receives: its paths and `--export-otlp` value."""
    app = typer.Typer()

    @app.command(cls=OptionalValueCommand)
    def command(paths: Paths, export_otlp: ExportOtlp = None, quiet: Quiet = False) -> None:
        """Echo what was parsed."""
        typer.echo(f"{[p.name for p in paths]} {export_otlp} {quiet}")

    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    return result.stdout.strip()


def test_a_bare_export_otlp_means_the_environment(tmp_path: Path) -> None:
    """Last, before another option, or before an existing path: the value `env`."""
    trace = tmp_path / "t.jsonl"
    trace.write_text("")
    assert FROM_ENV == "env"
    assert _parsed([str(trace), "--export-otlp"]) == "['t.jsonl'] env False"
    assert _parsed(["--export-otlp", "-q", str(trace)]) == "['t.jsonl'] env True"
    assert _parsed(["--export-otlp", str(trace)]) == "['t.jsonl'] env False"


def test_an_export_otlp_endpoint_is_kept(tmp_path: Path) -> None:
    """A value that is not an option nor an existing path is the endpoint."""
    assert (
        _parsed(["x.jsonl", "--export-otlp", "http://c:4318"]) == "['x.jsonl'] http://c:4318 False"
    )
    assert _parsed(["--export-otlp", "c:4317", "x"]) == "['x'] c:4317 False"
    assert _parsed(["x", "--quiet"]) == "['x'] None True"


def test_the_value_after_export_otlp_decides_not_the_one_before() -> None:
    """An option before `--export-otlp` does not make it bare: what follows it counts."""
    assert _parsed(["-q", "--export-otlp", "http://c:4318", "x"]) == "['x'] http://c:4318 True"


def _args(**changes: object) -> RescoreArgs:
    """A `RescoreArgs` with every option at its default but `changes`."""
    defaults = {field.name: None for field in dataclasses.fields(RescoreArgs)}
    defaults.update(annotate_phoenix=False, phoenix_page_size=1000)
    return RescoreArgs(**{**defaults, **changes})  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "given",
    [
        {"annotate_phoenix": True},
        {"phoenix_start": "2026-01-01"},
        {"phoenix_end": "2026-01-02"},
        {"phoenix_where": ["k:v"]},
        {"phoenix_trace_id": ["a" * 32]},
    ],
    ids=lambda given: next(iter(given)),
)
def test_any_phoenix_option_counts(given: dict[str, object]) -> None:
    """Each `--annotate-phoenix` / `--phoenix-*` option alone makes `phoenix_options` true."""
    assert _args(**given).phoenix_options is True


def test_no_phoenix_option_given() -> None:
    """The defaults (the page size is always set) are no Phoenix option."""
    assert _args().phoenix_options is False
    assert _args(phoenix_where=[], phoenix_trace_id=[]).phoenix_options is False

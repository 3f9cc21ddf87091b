"""`groundwire rescore` on the command line: reporting, --strict, --export-otlp, Ctrl-C."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from groundwire import semconv
from groundwire.cli import app
from groundwire.testing import OtlpHttpReceiver
from tests.offline._traces import record_turns, write_groundwire_jsonl

ROOT = Path(__file__).parents[2]
ERAG = ("--options", '{"erag": {}}')


@pytest.fixture(scope="module")
def traces(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Six recorded turns with a broken second line."""
    folder = tmp_path_factory.mktemp("cli")
    good = write_groundwire_jsonl(record_turns(6), folder / "good.jsonl", batch=3)
    lines = good.read_text().splitlines()
    lines.insert(1, '{"resourceSpans": 3}')
    path = folder / "traces.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_bad_line_is_reported_and_the_rest_scored(traces: Path, tmp_path: Path) -> None:
    """A bad line is named by file:line on stderr; the summary counts it; exit 3 (partial)."""
    out = tmp_path / "o.jsonl"
    result = CliRunner().invoke(
        app, ["rescore", str(traces), "-e", "quoted_spans", "-o", str(out), "-q"]
    )
    assert result.exit_code == 3, result.output
    assert f"{traces}:2: skipped: not a valid OTLP/JSON traces request" in result.stderr
    assert len(out.read_text().splitlines()) == 6
    loud = CliRunner().invoke(app, ["rescore", str(traces), "-e", "quoted_spans", "-o", str(out)])
    assert "1 bad" in loud.stderr and "6 turns" in loud.stderr
    assert "quoted_spans" in loud.stdout


def test_strict_stops_with_an_error_naming_the_line(traces: Path, tmp_path: Path) -> None:
    """--strict turns the bad line into exit status 3 (partial input) with its file and line."""
    result = CliRunner().invoke(
        app,
        ["rescore", str(traces), "-e", "quoted_spans", "-o", str(tmp_path / "o.csv"), "--strict"],
    )
    assert result.exit_code == 3
    assert f"{traces}:2" in result.stderr and "--strict" in result.stderr


def test_unknown_output_format_and_options_are_usage_errors(traces: Path, tmp_path: Path) -> None:
    """A bad OUT extension or options for an unselected evaluator are clear errors."""
    bad_out = CliRunner().invoke(
        app, ["rescore", str(traces), "-e", "quoted_spans", "-o", str(tmp_path / "o.txt")]
    )
    assert bad_out.exit_code == 2 and ".jsonl, .csv, .xlsx, .parquet, .html" in bad_out.stderr
    bad_options = CliRunner().invoke(
        app,
        ["rescore", str(traces), "-e", "quoted_spans", "-o", str(tmp_path / "o.jsonl"), *ERAG],
    )
    assert bad_options.exit_code == 2 and "erag" in bad_options.output


@pytest.mark.parametrize("bare", [True, False])
def test_export_otlp_with_or_without_an_endpoint(traces: Path, tmp_path: Path, bare: bool) -> None:
    """Bare --export-otlp (even before a trace file) uses OTEL_EXPORTER_OTLP_ENDPOINT; with a
    value, that endpoint."""
    with OtlpHttpReceiver() as receiver:
        out = tmp_path / "o.jsonl"
        flag = ["--export-otlp"] if bare else ["--export-otlp", receiver.endpoint]
        env = {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint if bare else "http://127.0.0.1:9"}
        result = CliRunner(env=env).invoke(
            app,
            ["rescore", *flag, str(traces), "-e", "quoted_spans", "-o", str(out)],
        )
        assert result.exit_code == 3, result.output  # the fixture's bad line: partial input
        assert receiver.wait_for(lambda r: len(r.spans(semconv.EVALUATION_SPAN_NAME)) >= 6)
        assert f"exported 6 of 6 evaluation spans to {receiver.endpoint}" in result.stderr


_SLOW_RUN = textwrap.dedent(
    """
    import sys, time
    from groundwire import Score
    from groundwire._registry import register_evaluator
    from groundwire.cli import main

    class Slow:
        name = "slow"
        def evaluate(self, turn):
            time.sleep(0.02)
            return Score(name="slow", value=0.5)

    register_evaluator("slow", Slow)
    sys.argv = ["groundwire", "rescore", sys.argv[1], "-e", "slow", "-o", sys.argv[2]]
    main()
    """
)


def test_ctrl_c_leaves_complete_lines_and_exits_130(tmp_path: Path) -> None:
    """SIGINT mid-run: the process stops soon, OUT holds only whole JSON lines, status 130."""
    traces = write_groundwire_jsonl(record_turns(300), tmp_path / "big.jsonl", batch=30)
    out = tmp_path / "o.jsonl"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    process = subprocess.Popen(
        [sys.executable, "-c", _SLOW_RUN, str(traces), str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=ROOT,
    )
    partial = tmp_path / "o.partial.jsonl"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and (not partial.exists() or partial.stat().st_size < 2000):
        time.sleep(0.05)
    process.send_signal(signal.SIGINT)
    try:
        _, stderr = process.communicate(timeout=20)
    finally:
        process.kill()
    assert process.returncode == 130, stderr.decode()
    text = out.read_text(encoding="utf-8")
    assert text.endswith("\n")
    records = [json.loads(line) for line in text.splitlines()]
    assert 0 < len(records) < 300
    assert all(r["scores"] == {"slow": 0.5} for r in records)
    assert b"interrupted" in stderr

"""What the command line prints reads right: nothing cut when piped, hints in its own terms,
defaults shown, and a progress bar that does not call skipped evaluations scored."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from typer.testing import CliRunner

from groundwire.cli import app
from groundwire.cli._hints import install_hints
from groundwire.judges import NOT_CONFIGURED_MESSAGE
from tests.offline._cli_files import write_turns
from tests.offline._traces import record_turns, write_groundwire_jsonl
from tests.offline.test_cli_exit_codes import clean_env

__all__ = ["clean_env"]  # the fixture, used below by name

LONG_SERVICE = "a-retrieval-service-with-a-name-long-enough-to-pass-eighty-columns"


def test_piped_output_is_not_cut_at_80_columns(tmp_path: Path) -> None:
    """`inspect` into a pipe: a trace's header line is whole (it was cut at "openinfere")."""
    path = write_groundwire_jsonl(record_turns(1, LONG_SERVICE), tmp_path / "t.jsonl")
    result = CliRunner().invoke(app, ["inspect", str(path)], env={"COLUMNS": None})
    assert result.exit_code == 0, result.output
    header = next(line for line in result.stdout.splitlines() if line.startswith("trace "))
    assert len(header) > 80
    assert header.endswith(f"· {LONG_SERVICE} · 3 spans · openinference"), header


def test_serve_help_shows_the_listen_default() -> None:
    """`serve --help` names --listen's default (Rich used to swallow "[default: ...]")."""
    result = CliRunner().invoke(app, ["serve", "--help"], env={"COLUMNS": "300"})
    assert "OTLP/HTTP address (default 127.0.0.1:4318)" in result.stdout


def test_the_no_judge_hint_speaks_command_line(caplog: pytest.LogCaptureFixture) -> None:
    """Under a command, the no-judge warning names the variables, not `judge=JudgeConfig`."""
    install_hints()
    with caplog.at_level(logging.WARNING, logger="groundwire.judges"):
        logging.getLogger("groundwire.judges").warning(NOT_CONFIGURED_MESSAGE)
    (record,) = caplog.records
    assert "JudgeConfig" not in record.getMessage()
    assert "GROUNDWIRE_JUDGE_MODEL" in record.getMessage()
    assert record.getMessage().endswith("LLM-judge evaluators are skipped until then")


def test_progress_does_not_call_skipped_turns_scored(tmp_path: Path, clean_env: None) -> None:
    """No judge and only a judge evaluator: the bar says every evaluation was skipped."""
    traces = write_turns(["q1", "q2", "q3"], tmp_path / "t.jsonl")
    result = CliRunner().invoke(
        app, ["rescore", str(traces), "-e", "groundedness", "-o", str(tmp_path / "o.jsonl")]
    )
    assert "3 turns read, every evaluation skipped" in result.stderr, result.stderr
    assert "turns scored" not in result.stderr

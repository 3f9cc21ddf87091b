"""Every exit code of `groundwire rescore`, each reached through the real command line."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from groundwire import Score
from groundwire._registry import register_evaluator
from groundwire.cli import app
from groundwire.cli._exit import ExitCode
from groundwire.testing import OpenAIServer, Reply
from tests.offline._cli_files import write_spans_without_turns, write_turns
from tests.offline._traces import record_turns, write_groundwire_jsonl

ROOT = Path(__file__).parents[2]
_JUDGE_VARIABLES = ("OPENAI_API_KEY", "OPENAI_BASE_URL")


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """No judge configured from the machine's environment."""
    for name in list(os.environ):
        if name.startswith("GROUNDWIRE_JUDGE") or name in _JUDGE_VARIABLES:
            monkeypatch.delenv(name)


def _run(*args: str | Path, env: dict[str, str] | None = None) -> tuple[int, str]:
    """Run `groundwire rescore ARGS` in-process; (exit code, stderr)."""
    result = CliRunner(env=env).invoke(app, ["rescore", *(str(a) for a in args)])
    assert "Traceback" not in result.output
    return result.exit_code, result.stderr


def test_ok(tmp_path: Path) -> None:
    """Every input read, turns found and scored: exit 0."""
    traces = write_turns(["q1", "q2"], tmp_path / "t.jsonl")
    code, _ = _run(traces, "-e", "quoted_spans", "-o", tmp_path / "o.jsonl", "-q")
    assert code == ExitCode.OK == 0


def test_partial_input(tmp_path: Path) -> None:
    """A bad record skipped, the rest scored and written: exit 3, and the summary says so."""
    traces = write_turns(["q1", "q2"], tmp_path / "t.jsonl")
    with traces.open("a") as file:
        file.write('{"resourceSpans": {"not": "a list"}}\n')
    out = tmp_path / "o.jsonl"
    code, stderr = _run(traces, "-e", "quoted_spans", "-o", out)
    assert code == ExitCode.PARTIAL_INPUT == 3
    assert "partial input: 1 damaged record(s)" in stderr and "(exit 3)" in stderr
    assert len(out.read_text().splitlines()) == 2


def test_nothing_readable(tmp_path: Path) -> None:
    """Random bytes only: no span read from any input, exit 4 (was 0)."""
    junk = tmp_path / "junk.bin"
    junk.write_bytes(bytes(range(256)) * 8)
    code, stderr = _run(junk, "-e", "quoted_spans", "-o", tmp_path / "o.jsonl", "-q")
    assert code == ExitCode.NOTHING_READABLE == 4
    assert "nothing readable: no span in 1 file(s)" in stderr


def test_no_turns_unless_allow_empty(tmp_path: Path) -> None:
    """Spans but no RAG turn: exit 5, or 0 with --allow-empty; the output exists either way."""
    traces = write_spans_without_turns(tmp_path / "http.jsonl")
    out = tmp_path / "o.jsonl"
    code, stderr = _run(traces, "-e", "quoted_spans", "-o", out, "-q")
    assert code == ExitCode.NO_TURNS == 5
    assert "no RAG turn found in 4 spans (4 traces)" in stderr
    code, _ = _run(traces, "-e", "quoted_spans", "-o", out, "-q", "--allow-empty")
    assert code == ExitCode.OK
    assert out.exists() and out.read_text() == ""


@pytest.mark.slow
def test_every_judge_call_refused(tmp_path: Path, clean_env: None) -> None:
    """A judge that refuses every call (400): every evaluation failed, exit 6 (was 0)."""
    traces = write_groundwire_jsonl(record_turns(4), tmp_path / "t.jsonl", batch=3)
    with OpenAIServer(default=lambda request: Reply.error(400, "refused")) as server:
        env = {
            "GROUNDWIRE_JUDGE_BASE_URL": server.base_url,
            "GROUNDWIRE_JUDGE_MODEL": "judge",
            "GROUNDWIRE_JUDGE_API_KEY": "test",
            "GROUNDWIRE_JUDGE_MAX_RETRIES": "0",
        }
        code, stderr = _run(traces, "-e", "groundedness", "-o", tmp_path / "o.jsonl", "-q", env=env)
        assert server.request_count >= 4
    assert code == ExitCode.ALL_EVALUATIONS_FAILED == 6, stderr
    assert "every evaluation failed or was skipped: 4 failed, 0 skipped, of 4" in stderr


def test_every_evaluation_skipped(tmp_path: Path, clean_env: None) -> None:
    """No judge configured: the judge evaluator skips every turn, exit 6."""
    traces = write_turns(["q1", "q2", "q3"], tmp_path / "t.jsonl")
    code, stderr = _run(traces, "-e", "groundedness", "-o", tmp_path / "o.jsonl", "-q")
    assert code == ExitCode.ALL_EVALUATIONS_FAILED
    assert "0 failed, 3 skipped, of 3" in stderr


def test_one_evaluator_working_is_not_all_failed(tmp_path: Path, clean_env: None) -> None:
    """A skipped judge beside a working evaluator: exit 0 (some evaluations ran)."""
    traces = write_turns(["q1"], tmp_path / "t.jsonl")
    code, _ = _run(traces, "-e", "groundedness,quoted_spans", "-o", tmp_path / "o.jsonl", "-q")
    assert code == ExitCode.OK


def test_failing_plugin_evaluator(tmp_path: Path) -> None:
    """A plug-in evaluator that raises on every turn: its failures are counted, exit 6."""

    class Broken:
        name = "broken_plugin"

        def evaluate(self, turn: object) -> Score:
            raise RuntimeError("model file missing")

    register_evaluator("broken_plugin", Broken, replace=True)
    traces = write_turns(["q1", "q2"], tmp_path / "t.jsonl")
    code, stderr = _run(traces, "-e", "broken_plugin", "-o", tmp_path / "o.jsonl", "-q")
    assert code == ExitCode.ALL_EVALUATIONS_FAILED
    assert "2 failed, 0 skipped, of 2" in stderr


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
    sys.argv = ["groundwire", "rescore", *sys.argv[1:]]
    main()
    """
)


def slow_run(*args: str | Path) -> subprocess.Popen[bytes]:
    """Start `groundwire rescore ARGS -e slow` (20 ms a turn) in a child process."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    return subprocess.Popen(
        [sys.executable, "-c", _SLOW_RUN, *(str(a) for a in args), "-e", "slow"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=ROOT,
    )


def wait_for_bytes(path: Path, size: int, process: subprocess.Popen[bytes]) -> None:
    """Wait until `path` holds `size` bytes (the child is writing results)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and process.poll() is None:
        if path.exists() and path.stat().st_size >= size:
            return
        time.sleep(0.02)
    raise AssertionError(f"{path} never reached {size} bytes")


@pytest.mark.slow
def test_sigterm_stops_gracefully_with_130(tmp_path: Path) -> None:
    """SIGTERM (what kill, systemd and Kubernetes send) stops like Ctrl-C: whole lines, exit 130."""
    traces = write_groundwire_jsonl(record_turns(300), tmp_path / "big.jsonl", batch=30)
    out = tmp_path / "o.jsonl"
    process = slow_run(traces, "-o", out)
    try:
        wait_for_bytes(tmp_path / "o.partial.jsonl", 2000, process)
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=20)
    finally:
        process.kill()
    assert process.returncode == ExitCode.INTERRUPTED == 130, stderr.decode()
    lines = out.read_text().splitlines()
    assert 0 < len(lines) < 300
    assert b"interrupted after" in stderr and b"--resume" in stderr


def test_cut_gzip_is_partial_input_with_results(tmp_path: Path) -> None:
    """A gzip file cut short: what precedes the cut is scored and written; exit 3, not "Aborted"."""
    import gzip

    plain = write_turns([f"q{i}" for i in range(60)], tmp_path / "t.jsonl")
    packed = gzip.compress(plain.read_bytes())
    cut = tmp_path / "cut.jsonl.gz"
    cut.write_bytes(packed[: len(packed) * 2 // 3])
    out = tmp_path / "o.jsonl"
    for strict in ([], ["--strict"]):
        result = CliRunner().invoke(
            app, ["rescore", str(cut), "-e", "quoted_spans", "-o", str(out), *strict]
        )
        assert result.exit_code == ExitCode.PARTIAL_INPUT, result.output
        assert "Aborted" not in result.output and "Traceback" not in result.output
        assert "gzip stream ends early after line" in result.stderr
    records = out.read_text().splitlines()
    assert 10 < len(records) < 60


@pytest.mark.slow
def test_a_dead_judge_ends_in_seconds_and_is_explained_once(
    tmp_path: Path, clean_env: None
) -> None:
    """Judge on a closed port, 40 turns: the breaker stops the calls, the run ends in seconds
    with exit 6, and the summary says judge_unreachable once with the count."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed = probe.getsockname()[1]
    traces = write_groundwire_jsonl(record_turns(40), tmp_path / "t.jsonl", batch=5)
    env = {
        "GROUNDWIRE_JUDGE_BASE_URL": f"http://127.0.0.1:{closed}/v1",
        "GROUNDWIRE_JUDGE_MODEL": "judge",
        "GROUNDWIRE_JUDGE_API_KEY": "test",
    }
    started = time.monotonic()
    code, stderr = _run(traces, "-e", "groundedness", "-o", tmp_path / "o.jsonl", env=env)
    elapsed = time.monotonic() - started
    assert code == ExitCode.ALL_EVALUATIONS_FAILED, stderr
    assert elapsed < 60, f"a dead judge held the run for {elapsed:.0f} s"
    lines = [line for line in stderr.splitlines() if "judge_unreachable" in line]
    assert len(lines) == 1, stderr
    assert "evaluations skipped (judge_unreachable)" in lines[0]

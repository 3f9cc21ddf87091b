"""The scoring child's life at its edges, with real spawned processes: a shutdown asked while
the child is still starting (its one-request inbox full) still stops it cleanly, and a child
whose gateway process is killed without stopping it notices and exits on its own (with a
persistent queue leaving its open traces to the next start, without one scoring them).

The slow start is a real evaluator plugin (an entry point on `sys.path`, which a spawned child
inherits) whose factory takes seconds; the dead gateway is a real intermediate process, killed
with SIGKILL and joined, whose scoring child is then watched until it is gone."""

from __future__ import annotations

import multiprocessing
import os
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from tests.gateway._child import protobuf_request, scoring_config
from tests.gateway._traces import openinference_rag_trace

from groundwire.gateway import GatewayConfig
from groundwire.gateway._metrics import GatewayMetrics
from groundwire.gateway._worker import ScoringProcess

_START_S = 3.0
"""How long the slow plugin's factory takes (longer than a quarter of the shutdown deadline)."""


def _until(check: Callable[[], object], what: str, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def _slow_plugin(root: Path) -> Path:
    """A directory holding an installed evaluator plugin, `slow_start`: quoted_spans built by a
    factory that first sleeps `_START_S` (an evaluator loading a model, say)."""
    root.mkdir()
    (root / "gw_slow_start.py").write_text(
        "import time\n"
        "from groundwire._registry import get_evaluator\n\n\n"
        "def make(**options):\n"
        f"    time.sleep({_START_S})\n"
        "    return get_evaluator('quoted_spans', **options)\n"
    )
    info = root / "gw_slow_start-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: gw-slow-start\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(
        "[groundwire.evaluators]\nslow_start = gw_slow_start:make\n"
    )
    return root


def test_a_shutdown_while_the_child_starts_still_stops_it_cleanly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The child is still loading its evaluators and a request fills its one-request inbox:
    the stop waits for room instead of being dropped after a quarter of the deadline, so the
    child scores the request, sends its final counts and exits; shutdown says it did, well
    before the deadline."""
    monkeypatch.syspath_prepend(str(_slow_plugin(tmp_path / "plugin")))
    metrics = GatewayMetrics(None)
    config = scoring_config(
        evaluators="slow_start", queue_dir=str(tmp_path / "q"), scoring_queue_requests=1
    )
    process = ScoringProcess(config, metrics)
    assert process.feed(protobuf_request(openinference_rag_trace()), 3) is True
    started = time.monotonic()
    assert process.shutdown(4 * _START_S) is True
    assert time.monotonic() - started < 4 * _START_S - 0.5
    assert not process.alive
    assert process.last["final"] is True and process.last["drained"] is True
    assert process.last["turns"]["scored"] == 1
    assert metrics.count("scored_turns") == 1


def _gateway(config: GatewayConfig, log: str, pid_file: str) -> None:
    """The intermediate process: a stand-in gateway that starts a scoring child (its stderr,
    inherited by the child, into `log`), feeds it one trace it holds open, writes the child's
    pid once it reports, and waits to be killed."""
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    os.dup2(fd, 2)
    process = ScoringProcess(config, GatewayMetrics(None))
    process.feed(protobuf_request(openinference_rag_trace()), 3)
    deadline = time.monotonic() + 60.0
    while process.open_traces != 1 and time.monotonic() < deadline:
        time.sleep(0.05)
    Path(pid_file + ".tmp").write_text(str(process._process.pid))
    os.replace(pid_file + ".tmp", pid_file)
    time.sleep(120.0)


def _gone(pid: int) -> bool:
    """True when `pid` has exited (no such process, or a zombie nobody reaped yet)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return True
    return state in ("Z", "X")


def _orphan(tmp_path: Path, **flags: Any) -> str:
    """Start a stand-in gateway with a scoring child holding one open trace, SIGKILL the
    gateway (joined), wait until the child has exited on its own; the child's log."""
    log, pid_file = tmp_path / "child.log", tmp_path / "child.pid"
    config = scoring_config(quiet_period_s=60.0, max_wait_s=120.0, shutdown_timeout_s=2.0, **flags)
    gateway = multiprocessing.get_context("spawn").Process(
        target=_gateway, args=(config, str(log), str(pid_file))
    )
    gateway.start()
    try:
        _until(pid_file.exists, "the stand-in gateway's child holds the trace", 60.0)
        child = int(pid_file.read_text())
        assert gateway.pid is not None
        os.kill(gateway.pid, signal.SIGKILL)
    finally:
        gateway.kill()
        gateway.join(10.0)
    try:
        _until(lambda: _gone(child), "the orphaned child exits on its own", 20.0)
    finally:
        if not _gone(child):
            os.kill(child, signal.SIGKILL)
    return log.read_text()


def test_a_child_whose_gateway_was_killed_leaves_its_traces_to_the_next_start(
    tmp_path: Path,
) -> None:
    """With a persistent queue, the orphaned child says the gateway is gone and that its open
    traces are left to the next start (the queue holds them), and exits without scoring."""
    text = _orphan(tmp_path, queue_dir=str(tmp_path / "q"))
    assert "the gateway process is gone; the scoring process stops" in text
    assert "the open traces are left to the next start (persistent queue)" in text


def test_a_child_whose_gateway_was_killed_without_a_queue_stops_on_its_own(
    tmp_path: Path,
) -> None:
    """Without a persistent queue, the orphaned child says the gateway is gone, scores what it
    holds (nobody else will) within the config's shutdown timeout and exits cleanly; it does
    not claim to leave traces to a next start."""
    text = _orphan(tmp_path)
    assert "the gateway process is gone; the scoring process stops" in text
    assert "left to the next start" not in text
    assert "Traceback" not in text


def test_the_child_is_a_fresh_interpreter(tmp_path: Path) -> None:
    """The child is spawned, not forked: a clean interpreter started by multiprocessing's
    spawn entry point (no inherited threads or sockets of the gateway)."""
    process = ScoringProcess(scoring_config(queue_dir=str(tmp_path)), GatewayMetrics(None))
    try:
        cmdline = Path(f"/proc/{process._process.pid}/cmdline").read_bytes()
        assert b"from multiprocessing.spawn import spawn_main" in cmdline
    finally:
        assert process.shutdown(10.0) is True

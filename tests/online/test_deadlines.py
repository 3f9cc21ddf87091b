"""Deadlines that hold: shutdown and force_flush return within `timeout_s` + DEADLINE_SLACK_S
whatever the exporters do, and an app that never calls shutdown() exits within the exit deadline.

The in-process tests use the app's own providers with an exporter that hangs; the subprocess
tests let configure() build its providers (global, so one process per app) against a port that
refuses connections or a real OTLP receiver that never answers in time.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

import groundwire
from groundwire._configure import DEADLINE_SLACK_S, DEFAULT_EXIT_TIMEOUT_S
from groundwire.testing import OtlpHttpReceiver

from .conftest import HasContext, Telemetry, record_turn

pytestmark = pytest.mark.usefixtures("online_cleanup")

ROOT = Path(__file__).resolve().parents[2]
PYTHONPATH = os.pathsep.join(
    str(ROOT / part)
    for part in ("", "src", "integrations/langchain/src", "integrations/llamaindex/src")
)
EXIT_SLACK_S = 1.5
"""Interpreter teardown after the exit hook (imports unloaded, threads reaped) on a busy CI box."""


class HangingExporter(SpanExporter):
    """An exporter whose export blocks until released: a collector that never answers."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.calls = 0

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        """Block until released."""
        self.calls += 1
        self.release.wait(120)
        return SpanExportResult.SUCCESS


@pytest.fixture
def hanging(telemetry: Telemetry) -> Iterator[HangingExporter]:
    """A hanging exporter behind a batch processor on the app's tracer provider."""
    exporter = HangingExporter()
    telemetry.tracer_provider.add_span_processor(
        BatchSpanProcessor(exporter, schedule_delay_millis=10)
    )
    yield exporter
    exporter.release.set()


def _configure(telemetry: Telemetry) -> Any:
    """configure() on the test's providers."""
    return groundwire.configure(
        evaluators=[HasContext()],
        instrument=False,
        tracer_provider=telemetry.tracer_provider,
        meter_provider=telemetry.meter_provider,
    )


def _timed(call: Any, *args: Any) -> tuple[Any, float]:
    """(result, seconds) of one call."""
    started = time.monotonic()
    result = call(*args)
    return result, time.monotonic() - started


def test_force_flush_keeps_its_deadline_when_an_exporter_hangs(
    telemetry: Telemetry, hanging: HangingExporter
) -> None:
    """force_flush(1) returns False within 1 s + slack although the app's exporter never
    returns (the SDK's BatchSpanProcessor.force_flush ignores its timeout)."""
    _configure(telemetry)
    for _ in range(5):
        record_turn(telemetry.tracer)
    assert _wait(lambda: hanging.calls > 0)
    flushed, elapsed = _timed(groundwire.force_flush, 1.0)
    assert flushed is False
    assert elapsed < 1.0 + DEADLINE_SLACK_S, elapsed


def test_shutdown_keeps_its_deadline_when_an_exporter_hangs(
    telemetry: Telemetry, hanging: HangingExporter
) -> None:
    """shutdown(1) returns False within 1 s + slack; the turns were still scored."""
    online = _configure(telemetry)
    for _ in range(5):
        record_turn(telemetry.tracer)
    assert _wait(lambda: hanging.calls > 0)
    drained, elapsed = _timed(groundwire.shutdown, 1.0)
    assert drained is False
    assert elapsed < 1.0 + DEADLINE_SLACK_S, elapsed
    stats = online.stats()
    assert stats.scored == 5 and stats.adds_up()


def test_shutdown_counts_evaluations_its_deadline_cut(
    telemetry: Telemetry, caplog: pytest.LogCaptureFixture
) -> None:
    """Evaluations still queued at the deadline are counted as dropped and said once, with
    numbers."""
    groundwire.configure(
        evaluators=[_Slow()],
        workers=1,
        instrument=False,
        tracer_provider=telemetry.tracer_provider,
        meter_provider=telemetry.meter_provider,
    )
    for _ in range(6):
        record_turn(telemetry.tracer)
    _, elapsed = _timed(groundwire.shutdown, 0.5)
    assert elapsed < 0.5 + DEADLINE_SLACK_S
    dropped = telemetry.counts().get(("slow", "dropped"), 0)
    assert dropped >= 4
    lines = [r.getMessage() for r in caplog.records if "shutdown deadline" in r.getMessage()]
    assert len(lines) == 1, lines
    assert f"{dropped} evaluations not exported" in lines[0]


class _Slow:
    """A sync evaluator taking 0.3 s per turn."""

    name = "slow"

    def evaluate(self, turn: groundwire.RagTurn) -> groundwire.Score:
        """Sleep, then score 1."""
        time.sleep(0.3)
        return groundwire.Score(name=self.name, value=1.0)


def _wait(predicate: Any, timeout_s: float = 5.0) -> bool:
    """Poll until `predicate()` is true or the timeout passes."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.01)
    return False


# --- subprocess apps: configure() builds the providers ------------------------------------------

APP = """
import json, sys, time
from opentelemetry import trace
import groundwire
from tests.online.conftest import HasContext, record_turn

online = groundwire.configure(evaluators=[HasContext()], instrument=False)
tracer = trace.get_tracer("app")
for _ in range(int(sys.argv[1])):
    record_turn(tracer)
time.sleep(0.3)  # let the batch processor start exporting
mode = sys.argv[2]
if mode == "exit":
    print(json.dumps({"last_turn": time.time()}), flush=True)
    sys.exit(0)
started = time.monotonic()
drained = groundwire.shutdown(float(mode))
print(json.dumps({
    "elapsed": time.monotonic() - started, "drained": drained,
    "spans_not_exported": online.stats().spans_not_exported,
}), flush=True)
"""


@pytest.fixture
def refusing() -> Iterator[int]:
    """A loopback port bound but not listening: connections to it are refused."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    yield int(sock.getsockname()[1])
    sock.close()


def _app(env: dict[str, str], turns: int, mode: str) -> tuple[dict[str, Any], str, float]:
    """Run the app; (its JSON line, its stderr, the wall time at which it exited)."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "GROUNDWIRE_"))}
    clean.update(env, PYTHONPATH=PYTHONPATH, OTEL_BSP_SCHEDULE_DELAY="50")
    done = subprocess.run(
        [sys.executable, "-c", APP, str(turns), mode],
        env=clean,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=90,
    )
    exited = time.time()
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1]), done.stderr, exited


@pytest.mark.parametrize("protocol", ["http/protobuf", "grpc"])
def test_shutdown_keeps_its_deadline_when_the_collector_is_down(
    refusing: int, protocol: str
) -> None:
    """With the endpoint refusing connections, shutdown(2) returns within 2 s + slack (the bare
    SDK waits through its retry series, 10 s and more), says how many spans were not exported,
    and returns False."""
    env = {
        "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{refusing}",
        "OTEL_EXPORTER_OTLP_PROTOCOL": protocol,
    }
    result, stderr, _ = _app(env, turns=40, mode="2")
    assert result["elapsed"] < 2.0 + DEADLINE_SLACK_S, result
    assert result["drained"] is False
    assert result["spans_not_exported"] >= 80  # 40 turns of 2 spans, plus evaluation spans
    lines = [line for line in stderr.splitlines() if "shutdown deadline 2 s" in line]
    assert len(lines) == 1, stderr
    assert f"{result['spans_not_exported']} spans" in lines[0]


def test_shutdown_keeps_its_deadline_when_the_collector_never_answers() -> None:
    """A real OTLP receiver that holds every request for 30 s: shutdown(1.5) still returns in
    time (the export runs where it can be abandoned, its timeout capped to what is left)."""
    with OtlpHttpReceiver(delay_s=30) as receiver:
        env = {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint}
        result, _, _ = _app(env, turns=10, mode="1.5")
    assert result["elapsed"] < 1.5 + DEADLINE_SLACK_S, result
    assert result["drained"] is False


@pytest.mark.parametrize("exit_timeout", [None, "1"])
def test_an_app_that_never_calls_shutdown_exits_within_the_exit_deadline(
    refusing: int, exit_timeout: str | None
) -> None:
    """No shutdown() call and a dead Collector: the exit hook drains within the exit deadline
    (default 3 s, or GROUNDWIRE_EXIT_TIMEOUT), so the process ends that soon after its last turn
    (the bare SDK's own exit hook would wait 26 s here)."""
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{refusing}"}
    if exit_timeout is not None:
        env["GROUNDWIRE_EXIT_TIMEOUT"] = exit_timeout
    result, stderr, exited = _app(env, turns=40, mode="exit")
    limit = float(exit_timeout) if exit_timeout else DEFAULT_EXIT_TIMEOUT_S
    assert exited - result["last_turn"] < limit + DEADLINE_SLACK_S + EXIT_SLACK_S, stderr
    assert f"shutdown deadline {limit:g} s" in stderr

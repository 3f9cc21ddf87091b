"""configure() says where each signal goes, and its local file holds only the signals that
groundwire's own providers handle (issue 32: an app's own tracer provider meant a file and a log
line claiming "traces, metrics and logs")."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from opentelemetry.sdk._logs import LoggerProvider

import groundwire
from tests.online.conftest import HasContext, Telemetry, record_turn

ROOT = Path(__file__).resolve().parents[2]

APP_WITH_ITS_OWN_TRACER = """
import json
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
import groundwire
from tests.online.conftest import HasContext, record_turn

spans = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(spans))
groundwire.configure(
    evaluators=[HasContext()], tracer_provider=provider, instrument=False, events="logs"
)
record_turn(provider.get_tracer("app"))
drained = groundwire.shutdown(5.0)
print(json.dumps({"drained": drained, "app_spans": len(spans.get_finished_spans())}))
"""


def test_with_the_apps_tracer_the_file_holds_only_metrics_and_logs(tmp_path: Path) -> None:
    """The app's own tracer provider: the warning names metrics and logs (not traces), the INFO
    line sends traces to the app's provider, and the file has no span line."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "GROUNDWIRE_"))}
    env.update(PYTHONPATH=str(ROOT), GROUNDWIRE_LOG_LEVEL="INFO")
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import logging; logging.basicConfig(level=logging.INFO)\n" + APP_WITH_ITS_OWN_TRACER,
        ],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["drained"] and result["app_spans"] == 3  # the turn's two spans and the carrier
    path = tmp_path / "groundwire-telemetry.jsonl"
    warning = [line for line in done.stderr.splitlines() if "OTLP/JSON lines" in line]
    assert len(warning) == 1
    assert f"writing metrics and logs as OTLP/JSON lines to {path}" in warning[0]
    (info,) = [line for line in done.stderr.splitlines() if "telemetry: " in line]
    assert "traces -> the app's tracer provider" in info
    assert f"metrics -> file {path}" in info and f"logs -> file {path}" in info
    kinds = {key for line in path.read_text().splitlines() for key in json.loads(line)}
    assert kinds == {"resourceMetrics", "resourceLogs"}


@pytest.fixture
def app_logger_provider() -> Iterator[LoggerProvider]:
    """The app's own SDK logger provider."""
    provider = LoggerProvider()
    yield provider
    provider.shutdown()


def test_with_all_the_apps_providers_no_file_is_written(
    telemetry: Telemetry,
    app_logger_provider: LoggerProvider,
    online_cleanup: None,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The app's tracer, meter and logger providers: no file, no file warning, and one INFO line
    naming each signal's destination."""
    with caplog.at_level(logging.INFO, logger="groundwire"):
        online = groundwire.configure(
            evaluators=[HasContext()],
            tracer_provider=telemetry.tracer_provider,
            meter_provider=telemetry.meter_provider,
            logger_provider=app_logger_provider,
            instrument=False,
            events="logs",
        )
    record_turn(telemetry.tracer)
    assert groundwire.shutdown(5.0)
    assert online.output_path is None
    assert not (tmp_path / "groundwire-telemetry.jsonl").exists()
    messages = [r.getMessage() for r in caplog.records]
    assert not [m for m in messages if "OTLP/JSON lines" in m]
    (info,) = [m for m in messages if "telemetry: " in m]
    assert (
        "telemetry: traces -> the app's tracer provider; metrics -> the app's meter provider; "
        "logs -> the app's logger provider;" in info
    )


def test_results_on_spans_send_no_logs_anywhere(
    telemetry: Telemetry, online_cleanup: None, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """events='span' and the app's tracer and meter providers: no logger provider, no file."""
    with caplog.at_level(logging.INFO, logger="groundwire"):
        groundwire.configure(
            evaluators=[HasContext()],
            tracer_provider=telemetry.tracer_provider,
            meter_provider=telemetry.meter_provider,
            instrument=False,
            events="span",
        )
    record_turn(telemetry.tracer)
    assert groundwire.shutdown(5.0)
    assert not (tmp_path / "groundwire-telemetry.jsonl").exists()
    (info,) = [r.getMessage() for r in caplog.records if "telemetry: " in r.getMessage()]
    assert "logs -> none (results are span events: events='span')" in info

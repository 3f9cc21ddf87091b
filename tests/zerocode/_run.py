"""Run an app the way the Kubernetes operator does: `opentelemetry-instrument` with the distro,
configured by `OTEL_*` and `GROUNDWIRE_*` variables only, exporting OTLP/HTTP to a receiver."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from groundwire import semconv
from groundwire.testing import OtlpHttpReceiver, ReceivedMetricPoint, ReceivedSpan

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
BIN = Path(sys.executable).parent
THIRD_PARTY = "langchain,llama-index,llama_index,openai"
"""The other instrumentors installed here (OpenInference, OpenLLMetry, openai-v2): off, so the
spans are groundwire's own integrations' (their entry-point names)."""
OFF_LINE = "groundwire: zero-code scoring is off (the app runs unscored): "


def operator_env(endpoint: str, **extra: str) -> dict[str, str]:
    """The environment the operator would give the pod (plus `extra`), and nothing of ours."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "GROUNDWIRE_"))}
    env.update(
        {
            "OTEL_SERVICE_NAME": "zero-code-app",
            "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint,
            "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
            "OTEL_PYTHON_DISABLED_INSTRUMENTATIONS": THIRD_PARTY,
            "OTEL_BSP_SCHEDULE_DELAY": "100",
            "OTEL_METRIC_EXPORT_INTERVAL": "1000",
            "PYTHONPATH": str(ROOT),
        }
    )
    env.update(extra)
    return env


def run_instrumented(
    app: str, env: Mapping[str, str], args: Sequence[str] = ()
) -> subprocess.CompletedProcess[str]:
    """`opentelemetry-instrument python tests/zerocode/<app>`; fails the test on a non-zero exit."""
    done = subprocess.run(
        [str(BIN / "opentelemetry-instrument"), sys.executable, str(HERE / app), *args],
        env=dict(env),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done


def last_json(done: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    """The app's last stdout line, as JSON."""
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def turn_roots(receiver: OtlpHttpReceiver) -> list[ReceivedSpan]:
    """The app's root spans (one per turn here), oldest first; evaluation spans and the
    embedding of the index being built left out."""
    roots = [
        s
        for s in receiver.spans()
        if s.parent_span_id is None
        and s.attributes.get(semconv.OPENINFERENCE_SPAN_KIND) not in ("EMBEDDING", "EVALUATOR")
    ]
    return sorted(roots, key=lambda s: s.start_time_unix_nano)


def last_points(points: Sequence[ReceivedMetricPoint]) -> dict[tuple[Any, ...], Any]:
    """The newest point of each attribute set (the metrics are cumulative), by sorted attributes."""
    newest: dict[tuple[Any, ...], Any] = {}
    for point in points:
        newest[tuple(sorted(point.attributes.items()))] = point
    return newest


def outcomes(receiver: OtlpHttpReceiver, evaluator: str) -> dict[str, float]:
    """`groundwire.evaluations` by outcome for `evaluator`, from the newest cumulative points."""
    counts: dict[str, float] = {}
    for point in last_points(receiver.metric_points(semconv.METRIC_EVALUATIONS)).values():
        if point.attributes.get(semconv.GEN_AI_EVALUATION_NAME) == evaluator:
            counts[point.attributes[semconv.GROUNDWIRE_OUTCOME]] = point.value
    return counts

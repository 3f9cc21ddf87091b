"""The Prometheus option: a scrape endpoint on loopback serving the metrics with our buckets."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

APP = """
import urllib.request
from opentelemetry import trace
import groundwire
from tests.online.conftest import AnswerLength, record_turn

online = groundwire.configure(
    service_name="prom-app", evaluators=[AnswerLength()], exporter="none",
    prometheus_port=0, instrument=False,
)
assert online.prometheus_url.startswith("http://127.0.0.1:")
record_turn(trace.get_tracer("app"))
assert online.force_flush(5)
print(urllib.request.urlopen(online.prometheus_url, timeout=5).read().decode())
groundwire.shutdown(5)
"""


def test_prometheus_endpoint_serves_scores_with_explicit_buckets() -> None:
    """A real HTTP scrape returns the counter, the [0, 1] score buckets and seconds buckets."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "GROUNDWIRE_"))}
    env["PYTHONPATH"] = str(ROOT)
    done = subprocess.run(
        [sys.executable, "-c", APP], env=env, cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stdout.splitlines() if not line.startswith("#")]

    def sample(prefix: str, *labels: str) -> float:
        """The value of the one sample line starting with `prefix` and holding `labels`."""
        (line,) = [
            line for line in lines if line.startswith(prefix) and all(x in line for x in labels)
        ]
        return float(line.rsplit(" ", 1)[1])

    name = 'gen_ai_evaluation_name="answer_length"'
    assert sample("groundwire_evaluations_total{", name, 'groundwire_outcome="ok"') == 1.0
    assert sample("groundwire_evaluation_score_bucket{", name, 'le="0.4"') == 0.0
    assert sample("groundwire_evaluation_score_bucket{", name, 'le="0.5"') == 1.0
    assert sample("groundwire_evaluation_score_sum{", name) == 0.47
    assert sample("groundwire_evaluation_duration_seconds_bucket{", name, 'le="60.0"') == 1.0
    assert sample("groundwire_queue_size{") == 0.0
    assert 'service_name="prom-app"' in done.stdout  # target_info carries the resource

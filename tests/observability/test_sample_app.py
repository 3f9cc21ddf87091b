"""The five-minute guide's path: the sample app sends scored turns over OTLP to a real receiver.

The Collector in the compose stack turns these OTLP metrics into the Prometheus names the
dashboard queries; the names depend only on each metric's name, kind, monotonicity and unit, so
those are pinned here (the mapping is in docs/observability.md).
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from groundwire import semconv
from groundwire.testing import OtlpHttpReceiver
from tests.observability.conftest import EXAMPLE, ROOT

pytestmark = pytest.mark.slow


def test_sample_app_sends_turns_scores_and_metrics_over_otlp() -> None:
    """Turn spans, evaluation spans and groundwire.* metrics arrive with the service's name."""
    with OtlpHttpReceiver() as receiver:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "GROUNDWIRE_"))}
        env.update(
            PYTHONPATH=str(ROOT),
            OTEL_EXPORTER_OTLP_ENDPOINT=receiver.endpoint,
            OTEL_SERVICE_NAME="library-bot",
        )
        done = subprocess.run(
            [sys.executable, str(EXAMPLE / "sample_app.py"), "--turns", "5", "--interval", "0"],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.startswith("recording 5 turns, one every 0 s"), done.stdout
        assert "5 of 5 turns recorded" in done.stdout and "done:" in done.stdout
        assert receiver.wait_for(lambda r: len(r.spans(semconv.EVALUATION_SPAN_NAME)) == 5)
        spans = receiver.spans()
        points = receiver.metric_points()
    assert {s.resource[semconv.SERVICE_NAME] for s in spans} == {"library-bot"}
    roots = {s.span_id for s in spans if s.name == "rag"}
    evaluations = [s for s in spans if s.name == semconv.EVALUATION_SPAN_NAME]
    assert {s.parent_span_id for s in evaluations} == roots
    names = {e.attributes[semconv.GEN_AI_EVALUATION_NAME] for s in evaluations for e in s.events}
    assert names == {"quoted_spans", "quote_verification"}

    kinds = {(p.name, p.kind, p.unit) for p in points}
    assert (semconv.METRIC_EVALUATION_SCORE, "histogram", "1") in kinds
    assert (semconv.METRIC_EVALUATION_DURATION, "histogram", "s") in kinds
    assert (semconv.METRIC_EVALUATIONS, "sum", "{evaluation}") in kinds
    assert (semconv.METRIC_QUEUE_SIZE, "gauge", "{turn}") in kinds
    scores = [p for p in points if p.name == semconv.METRIC_EVALUATION_SCORE]
    assert all(p.explicit_bounds == semconv.SCORE_BUCKETS for p in scores)
    assert sum(p.count or 0 for p in scores) >= 5
    assert {p.resource[semconv.SERVICE_NAME] for p in points} == {"library-bot"}

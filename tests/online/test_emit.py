"""The Emitter and the JSON-lines exporters on their own: conventions, validation, round trips."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from groundwire import Score, semconv
from groundwire.emit import (
    Emitter,
    error_type,
    evaluation_attributes,
    metric_views,
    score_event_attributes,
)
from groundwire.exporters import (
    JsonLinesFile,
    JsonLinesMetricExporter,
    JsonLinesSpanExporter,
    from_otlp_json,
    to_otlp_json,
)

from .conftest import Telemetry


def test_event_attributes_follow_the_genai_convention() -> None:
    """A score maps to name, value, label and explanation; a failure adds error.type, no value."""
    ok = Score(name="g", value=0.5, label="partly", explanation="half of it")
    assert score_event_attributes(ok) == {
        semconv.GEN_AI_EVALUATION_NAME: "g",
        semconv.GEN_AI_EVALUATION_SCORE_VALUE: 0.5,
        semconv.GEN_AI_EVALUATION_SCORE_LABEL: "partly",
        semconv.GEN_AI_EVALUATION_EXPLANATION: "half of it",
    }
    failed = Score.failed("g", ValueError("bad"))
    assert score_event_attributes(failed) == {
        semconv.GEN_AI_EVALUATION_NAME: "g",
        semconv.GEN_AI_EVALUATION_SCORE_LABEL: "error",
        semconv.ERROR_TYPE: "ValueError",
    }
    assert error_type(Score(name="g", value=math.nan, error="no colon here at all")) == "_OTHER"
    skipped = Score.not_applicable("q", "no_quotes")
    assert semconv.GEN_AI_EVALUATION_SCORE_VALUE not in score_event_attributes(skipped)


def test_openinference_attributes_are_indexed_from_the_given_start() -> None:
    """`evaluations.{i}.evaluation.*` numbering starts where asked; errors carry their message."""
    attributes = evaluation_attributes(
        [Score(name="a", value=1.0), Score.failed("b", "TimeoutError: slow")], start_index=2
    )
    assert attributes == {
        "evaluations.2.evaluation.name": "a",
        "evaluations.2.evaluation.score": 1.0,
        "evaluations.3.evaluation.name": "b",
        "evaluations.3.evaluation.label": "error",
        "evaluations.3.evaluation.explanation": "TimeoutError: slow",
    }


def test_carrier_span_targets_a_span_by_hex_ids_alone(
    telemetry: Telemetry, emitter: Emitter
) -> None:
    """A span scored long after (no live object) gets a child EVALUATOR span with one link."""
    target = ("0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331")
    context = emitter.emit_span(target, [Score(name="a", value=0.9)], mode="offline")
    assert context is not None
    (span,) = telemetry.finished()
    assert span.parent is not None
    assert (format(span.context.trace_id, "032x"), format(span.parent.span_id, "016x")) == target
    assert [format(link.context.span_id, "016x") for link in span.links] == [target[1]]
    assert span.attributes is not None
    assert span.attributes[semconv.GROUNDWIRE_EVALUATION_MODE] == "offline"
    assert emitter.emit_span(target, []) is None


@pytest.mark.parametrize(
    ("target", "message"),
    [
        (("XYZ", "b7ad6b7169203331"), "trace_id must be 32"),
        (("0" * 32, "b7ad6b7169203331"), "trace_id must be 32"),
        (("0af7651916cd43dd8448eb211c80319c", "B7AD6B7169203331"), "span_id must be 16"),
    ],
)
def test_carrier_span_rejects_bad_target_ids(
    emitter: Emitter, target: tuple[str, str], message: str
) -> None:
    """A malformed or all-zero target id fails with a message naming which id."""
    with pytest.raises(ValueError, match=message):
        emitter.emit_span(target, [Score(name="a", value=1.0)])


def test_views_pin_explicit_buckets() -> None:
    """The Views give score and duration histograms the bounds from semconv."""
    views = {view._instrument_name: view for view in metric_views()}
    score = views[semconv.METRIC_EVALUATION_SCORE]._aggregation
    duration = views[semconv.METRIC_EVALUATION_DURATION]._aggregation
    assert tuple(score._boundaries) == semconv.SCORE_BUCKETS  # type: ignore[attr-defined]
    assert tuple(duration._boundaries) == semconv.DURATION_BUCKETS_S  # type: ignore[attr-defined]


def test_span_and_metric_exporters_share_one_json_lines_file(tmp_path: Path) -> None:
    """Each export is one OTLP/JSON line; lines parse back into the same protobuf requests."""
    shared = JsonLinesFile(tmp_path / "sub" / "telemetry.jsonl")
    span_exporter = JsonLinesSpanExporter(shared)
    metric_exporter = JsonLinesMetricExporter(shared)
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(span_exporter))
    reader = PeriodicExportingMetricReader(metric_exporter, export_interval_millis=3_600_000)
    meter_provider = MeterProvider(metric_readers=[reader], views=metric_views())
    emitter = Emitter(tracer_provider=tracer_provider, meter_provider=meter_provider)
    score = Score(name="a", value=0.42, label="x")
    emitter.emit_span(("0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"), [score])
    emitter.record(score, 0.003)
    meter_provider.shutdown()
    tracer_provider.shutdown()
    lines = shared.path.read_text().splitlines()
    assert len(lines) == 2
    spans_doc, metrics_doc = (json.loads(line) for line in lines)
    span = spans_doc["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    assert span["traceId"] == "0af7651916cd43dd8448eb211c80319c"
    assert span["parentSpanId"] == "b7ad6b7169203331"
    (link,) = span["links"]
    assert (link["traceId"], link["spanId"]) == (span["traceId"], span["parentSpanId"])
    request = from_otlp_json(lines[0], ExportTraceServiceRequest())
    assert to_otlp_json(request) == lines[0]
    metrics = from_otlp_json(lines[1], ExportMetricsServiceRequest())
    names = {m.name for m in metrics.resource_metrics[0].scope_metrics[0].metrics}
    assert semconv.METRIC_EVALUATION_SCORE in names
    histogram = next(
        m
        for m in metrics.resource_metrics[0].scope_metrics[0].metrics
        if m.name == semconv.METRIC_EVALUATION_SCORE
    )
    assert tuple(histogram.histogram.data_points[0].explicit_bounds) == semconv.SCORE_BUCKETS
    assert metrics_doc["resourceMetrics"]
    assert span_exporter.export([]).name == "FAILURE"  # shut down: refuses, never raises


def test_from_otlp_json_names_what_is_malformed() -> None:
    """Text that is not OTLP/JSON fails with a ValueError naming the message type."""
    with pytest.raises(ValueError, match="ExportTraceServiceRequest"):
        from_otlp_json("{not json", ExportTraceServiceRequest())
    with pytest.raises(ValueError, match="ExportTraceServiceRequest"):
        from_otlp_json('{"resourceSpans": 5}', ExportTraceServiceRequest())


def test_scores_written_to_an_ended_span_take_the_next_free_indexes(
    telemetry: Telemetry,
) -> None:
    """write_scores on an SDK span already ended keeps existing evaluations and appends events."""
    from groundwire.runner import write_scores

    span = telemetry.tracer.start_span("rag", attributes={"evaluations.0.evaluation.name": "old"})
    span.end()
    assert not span.is_recording()
    assert write_scores(span, [Score(name="a", value=0.5), Score(name="b", value=1.0)])  # type: ignore[arg-type]
    attributes = dict(span.attributes or {})  # type: ignore[attr-defined]
    assert attributes["evaluations.0.evaluation.name"] == "old"
    assert attributes["evaluations.1.evaluation.name"] == "a"
    assert attributes["evaluations.2.evaluation.score"] == 1.0
    events = span.events  # type: ignore[attr-defined]
    assert [e.attributes[semconv.GEN_AI_EVALUATION_NAME] for e in events] == ["a", "b"]
    assert all(e.timestamp == span.end_time for e in events)  # type: ignore[attr-defined]

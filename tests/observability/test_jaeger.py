"""Jaeger compatibility: our turn and evaluation spans keep parents, links, tags and events.

The spans come from the real pipeline (SDK spans of a RAG turn -> EvaluationSpanProcessor ->
BackgroundRunner -> Emitter), with one evaluator inline (events on the turn's root span) and the
rest in the background (an evaluation carrier span). They are converted to Jaeger's model by
OpenTelemetry JS's own Jaeger exporter transform (`@opentelemetry/exporter-jaeger`, from npm,
run by node), encoded as a Jaeger Thrift `Batch` with Jaeger's IDL and decoded back. Then the
decoded spans are written as Jaeger's JSON (the query API / UI "Download JSON" shape) and read
back through groundwire's own Jaeger reader, which must rebuild the same turn.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from groundwire import RagTurn, semconv
from groundwire.assembly import turns_from_spans
from groundwire.emit import Emitter
from groundwire.evaluators.quote_verification import QuoteVerification
from groundwire.evaluators.quoted_spans import QuotedSpans
from groundwire.offline.readers import spans_from_jaeger_trace
from groundwire.runner import BackgroundRunner, EvaluationSpanProcessor, RunnerConfig
from tests.observability.conftest import npm_modules
from tests.observability.metrics_app import BAD, DOCUMENTS, GOOD, SERVICE, Flaky, record_turn

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]
"""Slow: the npm install runs in the first test."""

HERE = Path(__file__).parent
NPM_PACKAGES = ("@opentelemetry/exporter-jaeger@2.11.0", "@opentelemetry/api@1")
_TAG_TYPES = {"STRING": "string", "DOUBLE": "float64", "BOOL": "bool", "LONG": "int64"}


@pytest.fixture(scope="session")
def node_modules(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """OpenTelemetry JS's Jaeger exporter installed from npm into a temporary folder."""
    return npm_modules(
        tmp_path_factory, "jaeger-npm", NPM_PACKAGES, "run OpenTelemetry JS's Jaeger transform"
    )


@pytest.fixture(scope="module")
def spans() -> Iterator[list[ReadableSpan]]:
    """Two scored turns as the SDK finished them: app spans plus evaluation carrier spans."""
    exporter = InMemorySpanExporter()
    resource = Resource.create({semconv.SERVICE_NAME: SERVICE})
    tracer_provider = TracerProvider(resource=resource)
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    meter_provider = MeterProvider(metric_readers=[InMemoryMetricReader()])
    emitter = Emitter(tracer_provider=tracer_provider, meter_provider=meter_provider)
    config = RunnerConfig(
        [QuotedSpans(), QuoteVerification(embedder=None), Flaky()],
        inline=frozenset({"quoted_spans"}),
    )
    runner = BackgroundRunner(config, emitter)
    processor = EvaluationSpanProcessor(runner, emitter)
    tracer_provider.add_span_processor(processor)
    tracer = tracer_provider.get_tracer("app")
    record_turn(tracer, GOOD)
    record_turn(tracer, BAD)
    processor.drain()
    assert runner.force_flush(30)
    yield list(exporter.get_finished_spans())
    runner.shutdown(5)
    processor.close()
    tracer_provider.shutdown()
    meter_provider.shutdown()


def _hex(value: int) -> str:
    return format(value, "016x")


def _converter_input(spans: list[ReadableSpan]) -> dict[str, Any]:
    """The SDK spans as plain JSON for the node script (times as decimal nanosecond strings)."""
    rows: list[dict[str, Any]] = []
    for span in spans:
        assert span.context is not None and span.start_time and span.end_time
        rows.append(
            {
                "name": span.name,
                "kind": span.kind.value,
                "traceId": format(span.context.trace_id, "032x"),
                "spanId": _hex(span.context.span_id),
                "parentSpanId": _hex(span.parent.span_id) if span.parent else None,
                "startNs": str(span.start_time),
                "endNs": str(span.end_time),
                "attributes": dict(span.attributes or {}),
                "statusCode": span.status.status_code.value,
                "statusMessage": span.status.description,
                "events": [
                    {
                        "name": e.name,
                        "attributes": dict(e.attributes or {}),
                        "timeNs": str(e.timestamp),
                    }
                    for e in span.events
                ],
                "links": [
                    {
                        "traceId": format(link.context.trace_id, "032x"),
                        "spanId": _hex(link.context.span_id),
                    }
                    for link in span.links
                ],
                "resource": dict(span.resource.attributes),
                "scope": span.instrumentation_scope.name if span.instrumentation_scope else "",
                "scopeVersion": span.instrumentation_scope.version
                if span.instrumentation_scope
                else "",
            }
        )
    return {"serviceName": SERVICE, "spans": rows}


@pytest.fixture(scope="module")
def jaeger_spans(node_modules: Path, spans: list[ReadableSpan]) -> dict[str, dict[str, Any]]:
    """The spans in Jaeger's Thrift model after an encode/decode round trip, by span id."""
    done = subprocess.run(
        ["node", str(HERE / "jaeger_thrift.js"), str(node_modules)],
        input=json.dumps(_converter_input(spans)),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    batch = json.loads(done.stdout)
    assert batch["process"]["serviceName"] == SERVICE
    return {span["spanId"]: span for span in batch["spans"]}


def _value(tag: dict[str, Any]) -> Any:
    kind = tag["vType"]
    return {"STRING": tag["vStr"], "DOUBLE": tag["vDouble"], "BOOL": tag["vBool"]}.get(
        kind, tag.get("vLong")
    )


def _tags(fields: list[dict[str, Any]]) -> dict[str, Any]:
    return {tag["key"]: _value(tag) for tag in fields}


def _by_name(spans: list[ReadableSpan], name: str) -> list[ReadableSpan]:
    return [span for span in spans if span.name == name]


def _id(span: ReadableSpan) -> str:
    assert span.context is not None
    return _hex(span.context.span_id)


def test_every_span_keeps_its_trace_and_parent(
    spans: list[ReadableSpan], jaeger_spans: dict[str, dict[str, Any]]
) -> None:
    """Trace id (high+low) and parent span id survive for turn, retrieval and evaluation spans."""
    assert {span.name for span in spans} == {"rag", "retrieve", semconv.EVALUATION_SPAN_NAME}
    assert len(jaeger_spans) == len(spans) == 6
    for span in spans:
        assert span.context is not None
        converted = jaeger_spans[_id(span)]
        trace_id = converted["traceIdHigh"] + converted["traceIdLow"]
        assert trace_id == format(span.context.trace_id, "032x")
        parent = _hex(span.parent.span_id) if span.parent else "0" * 16
        assert converted["parentSpanId"] == parent, span.name


def test_evaluation_span_is_a_child_of_the_turn_with_one_link(
    spans: list[ReadableSpan], jaeger_spans: dict[str, dict[str, Any]]
) -> None:
    """Each evaluation span hangs under its turn's root span and links to it (FOLLOWS_FROM)."""
    roots = {span.context.trace_id: _id(span) for span in _by_name(spans, "rag") if span.context}
    for span in _by_name(spans, semconv.EVALUATION_SPAN_NAME):
        assert span.context is not None
        converted = jaeger_spans[_id(span)]
        root = roots[span.context.trace_id]
        assert converted["parentSpanId"] == root
        (reference,) = converted["references"]
        assert reference["refType"] == "FOLLOWS_FROM"
        assert reference["spanId"] == root
        assert reference["traceIdHigh"] + reference["traceIdLow"] == format(
            span.context.trace_id, "032x"
        )


def test_evaluation_span_tags_and_result_logs(
    spans: list[ReadableSpan], jaeger_spans: dict[str, dict[str, Any]]
) -> None:
    """Span kind, mode, OpenInference evaluation tags and one result log per background score."""
    for span in _by_name(spans, semconv.EVALUATION_SPAN_NAME):
        converted = jaeger_spans[_id(span)]
        tags = _tags(converted["tags"])
        assert tags[semconv.OPENINFERENCE_SPAN_KIND] == semconv.SPAN_KIND_EVALUATOR
        assert tags[semconv.GROUNDWIRE_EVALUATION_MODE] == "background"
        assert tags[semconv.SERVICE_NAME] == SERVICE
        assert tags["otel.library.name"] == semconv.INSTRUMENTATION_SCOPE
        for key, value in (span.attributes or {}).items():
            assert tags[key] == value, key
        results = [_tags(log["fields"]) for log in converted["logs"]]
        assert all(r["event"] == semconv.GEN_AI_EVALUATION_RESULT_EVENT for r in results)
        by_name = {r[semconv.GEN_AI_EVALUATION_NAME]: r for r in results}
        assert set(by_name) == {"quote_verification", "answer_policy"}
        verification = by_name["quote_verification"]
        assert 0.0 <= verification[semconv.GEN_AI_EVALUATION_SCORE_VALUE] <= 1.0
        assert verification[semconv.GEN_AI_EVALUATION_SCORE_LABEL].endswith("verified")


def test_failed_evaluation_is_an_error_span_in_jaeger(
    spans: list[ReadableSpan], jaeger_spans: dict[str, dict[str, Any]]
) -> None:
    """The turn whose evaluator raised has `error=true`: what the dashboard's error link finds."""
    errors = []
    for span in _by_name(spans, semconv.EVALUATION_SPAN_NAME):
        tags = _tags(jaeger_spans[_id(span)]["tags"])
        logs = [_tags(log["fields"]) for log in jaeger_spans[_id(span)]["logs"]]
        failed = [log for log in logs if semconv.ERROR_TYPE in log]
        assert (tags.get("error") is True) == bool(failed)
        if failed:
            assert tags["otel.status_code"] == "ERROR"
            assert failed[0][semconv.ERROR_TYPE] == "RuntimeError"
            errors.append(span)
    assert len(errors) == 1


def test_inline_score_is_a_log_on_the_turn_root(
    spans: list[ReadableSpan], jaeger_spans: dict[str, dict[str, Any]]
) -> None:
    """The inline evaluator's result is a log (event) and OpenInference tags on the root span."""
    values = []
    for span in _by_name(spans, "rag"):
        converted = jaeger_spans[_id(span)]
        (log,) = [_tags(log["fields"]) for log in converted["logs"]]
        assert log["event"] == semconv.GEN_AI_EVALUATION_RESULT_EVENT
        assert log[semconv.GEN_AI_EVALUATION_NAME] == "quoted_spans"
        tags = _tags(converted["tags"])
        assert tags["evaluations.0.evaluation.name"] == "quoted_spans"
        assert tags["evaluations.0.evaluation.score"] == log[semconv.GEN_AI_EVALUATION_SCORE_VALUE]
        values.append(log[semconv.GEN_AI_EVALUATION_SCORE_VALUE])
    assert sorted(values) == [0.0, 1.0]


def _jaeger_json(trace: list[dict[str, Any]]) -> dict[str, Any]:
    """Jaeger's JSON for one trace (query API / UI download): parent as a CHILD_OF reference."""
    spans = []
    for span in trace:
        trace_id = span["traceIdHigh"] + span["traceIdLow"]
        references = []
        if set(span["parentSpanId"]) != {"0"}:
            references.append(
                {"refType": "CHILD_OF", "traceID": trace_id, "spanID": span["parentSpanId"]}
            )
        references += [
            {
                "refType": r["refType"],
                "traceID": r["traceIdHigh"] + r["traceIdLow"],
                "spanID": r["spanId"],
            }
            for r in span["references"]
        ]
        spans.append(
            {
                "traceID": trace_id,
                "spanID": span["spanId"],
                "operationName": span["operationName"],
                "references": references,
                "startTime": int(span["startTime"], 16),
                "duration": int(span["duration"], 16),
                "tags": [
                    {"key": t["key"], "type": _TAG_TYPES[t["vType"]], "value": _value(t)}
                    for t in span["tags"]
                    if t["key"] != semconv.SERVICE_NAME
                ],
                "logs": [
                    {
                        "timestamp": int(log["timestamp"], 16),
                        "fields": [
                            {"key": f["key"], "type": _TAG_TYPES[f["vType"]], "value": _value(f)}
                            for f in log["fields"]
                        ],
                    }
                    for log in span["logs"]
                ],
                "processID": "p1",
            }
        )
    return {
        "traceID": spans[0]["traceID"],
        "spans": spans,
        "processes": {"p1": {"serviceName": SERVICE, "tags": []}},
    }


def test_jaeger_json_reads_back_into_the_same_turns(
    spans: list[ReadableSpan], jaeger_spans: dict[str, dict[str, Any]]
) -> None:
    """Jaeger JSON of the converted spans, read by groundwire's Jaeger reader: the same turns."""
    live = {turn.trace_id: turn for turn in turns_from_spans(spans)}
    by_trace: dict[str, list[dict[str, Any]]] = {}
    for span in jaeger_spans.values():
        by_trace.setdefault(span["traceIdHigh"] + span["traceIdLow"], []).append(span)
    assert set(by_trace) == set(live)
    for trace_id, trace in by_trace.items():
        document = json.loads(json.dumps({"data": [_jaeger_json(trace)]}))
        records = spans_from_jaeger_trace(document["data"][0])
        originals = {_id(s): s for s in spans}
        for record in records:
            original = originals[record.span_id]
            assert record.parent_span_id == (
                _hex(original.parent.span_id) if original.parent else None
            )
            assert record.resource[semconv.SERVICE_NAME] == SERVICE
        (turn,) = turns_from_spans(records)
        expected: RagTurn = live[trace_id]
        assert (turn.query, turn.answer, turn.trace_id, turn.span_id) == (
            expected.query,
            expected.answer,
            expected.trace_id,
            expected.span_id,
        )
        assert [c.text for c in turn.contexts] == list(DOCUMENTS)
        assert QuotedSpans().evaluate(turn) == QuotedSpans().evaluate(expected)

"""Online scoring into Phoenix: `PhoenixAnnotationProcessor` beside the app's OTLP exporter."""

from __future__ import annotations

import uuid

import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

import groundwire
from groundwire._configure import get_online
from groundwire.phoenix import PhoenixAnnotationProcessor
from tests.phoenix._app import read_annotations, stored_spans, wait_for_spans
from tests.test_assembly_langchain import rag_chain

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


def test_online_scores_become_annotations_on_the_turn_span(phoenix: str) -> None:
    """configure() scores a live LangChain turn; the processor posts the score to Phoenix as an
    annotation on the turn's root span, once, without blocking the app."""
    project = f"online-{uuid.uuid4().hex[:8]}"
    provider = TracerProvider(resource=Resource.create({"openinference.project.name": project}))
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(f"{phoenix}/v1/traces")))
    annotator = PhoenixAnnotationProcessor(phoenix, interval_s=0.2)
    provider.add_span_processor(annotator)
    meters = MeterProvider()
    online = groundwire.configure(
        tracer_provider=provider,
        meter_provider=meters,
        evaluators=["quoted_spans"],
        instrument=["langchain"],
        events="span",
    )
    try:
        answer = 'The context says "Paris is the capital of France" so Paris.'
        assert rag_chain([answer]).invoke("What is the capital of France?") == answer
        assert online.force_flush(10)
    finally:
        groundwire.shutdown(10)
    assert annotator.force_flush(20_000)
    provider.shutdown()
    meters.shutdown()
    assert (annotator.stats.sent, annotator.stats.failed, annotator.dropped) == (1, 0, 0)
    wait_for_spans(phoenix, project, 1)
    (root,) = [s for s in stored_spans(phoenix, project) if s["parent_span_id"] is None]
    (note,) = read_annotations(phoenix, project, [root["span_id"]])
    assert (note["name"], note["annotator_kind"], note["identifier"]) == (
        "quoted_spans",
        "CODE",
        "groundwire",
    )
    assert note["result"]["score"] == 1.0


def test_configure_option_annotates_online_scores(phoenix: str) -> None:
    """`configure(phoenix_annotations=URL)` adds the annotator itself; shutdown posts what is
    queued: the turn's root span gets one quoted_spans annotation in Phoenix."""
    project = f"online-{uuid.uuid4().hex[:8]}"
    provider = TracerProvider(resource=Resource.create({"openinference.project.name": project}))
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(f"{phoenix}/v1/traces")))
    meters = MeterProvider()
    groundwire.configure(
        tracer_provider=provider,
        meter_provider=meters,
        evaluators=["quoted_spans"],
        instrument=["langchain"],
        events="span",
        phoenix_annotations=phoenix,
    )
    try:
        answer = 'The context says "Paris is the capital of France" so Paris.'
        assert rag_chain([answer]).invoke("What is the capital of France?") == answer
    finally:
        assert groundwire.shutdown(20)
    provider.shutdown()
    meters.shutdown()
    wait_for_spans(phoenix, project, 1)
    (root,) = [s for s in stored_spans(phoenix, project) if s["parent_span_id"] is None]
    (note,) = read_annotations(phoenix, project, [root["span_id"]])
    assert (note["name"], note["annotator_kind"]) == ("quoted_spans", "CODE")
    assert note["result"]["score"] == 1.0


def test_configure_refuses_a_phoenix_url_that_is_not_http() -> None:
    """A bad `phoenix_annotations` value is a ValueError naming the option, before anything is
    installed on the app's provider."""
    provider = TracerProvider()
    with pytest.raises(ValueError, match="phoenix_annotations"):
        groundwire.configure(
            tracer_provider=provider,
            meter_provider=MeterProvider(),
            evaluators=["quoted_spans"],
            instrument=False,
            phoenix_annotations="phoenix://127.0.0.1:6006",
        )
    assert get_online() is None
    assert provider._active_span_processor._span_processors == ()

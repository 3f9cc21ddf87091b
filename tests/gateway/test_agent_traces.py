"""Through a real `groundwire serve`: a service that follows only the GenAI conventions and a
LangGraph agent traced by OpenInference, both exported by the OTel SDK's OTLP/HTTP exporter, are
scored once each, under the turn roots that in-process assembly finds, with its scores."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from tests.gateway.conftest import GatewayProcess, RawDownstream

import groundwire
from groundwire import semconv
from groundwire.assembly import turns_from_spans

pytestmark = pytest.mark.slow  # a real `groundwire serve` process

_FAST = ("--quiet-period", "0.3", "--max-wait", "20")


def _provider(endpoint: str, service: str) -> tuple[TracerProvider, InMemorySpanExporter]:
    """A provider exporting to the gateway, keeping a copy of every span in memory."""
    copy = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    provider.add_span_processor(SimpleSpanProcessor(copy))
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=endpoint)))
    return provider, copy


def test_genai_service_and_langgraph_agent_are_scored_once_at_their_turn_roots(
    downstream: RawDownstream, run_gateway: Callable[..., GatewayProcess]
) -> None:
    """One carrier per turn, parented to the root in-process assembly finds (the server span;
    the agent's graph run), carrying the in-process quoted_spans score."""
    from openinference.instrumentation.langchain import LangChainInstrumentor
    from tests.agents import genai_service, lc_apps
    from tests.dialects._apps import restore_langchain

    gateway = run_gateway("--forward", downstream.endpoint, "-e", "quoted_spans", *_FAST)
    endpoint = gateway.url + "/v1/traces"
    service, service_spans = _provider(endpoint, "go-search-api")
    genai_service.ask(service.get_tracer("go.opentelemetry.io/contrib/genai"))
    service.shutdown()
    agent, agent_spans = _provider(endpoint, "agent-app")
    instrumentor = LangChainInstrumentor()
    instrumentor.instrument(tracer_provider=agent)
    try:
        quoted = '"Paris is the capital of France."'
        lc_apps.run_agent(lc_apps.react_agent, lc_apps.retriever_tool(), answer=quoted)
    finally:
        instrumentor.uninstrument()
        restore_langchain()
    agent.shutdown()
    turns = [
        *turns_from_spans(service_spans.get_finished_spans()),
        *turns_from_spans(agent_spans.get_finished_spans()),
    ]
    assert len(turns) == 2
    expected = {
        (turn.trace_id, turn.span_id): groundwire.evaluate(turn, ["quoted_spans"])[
            "quoted_spans"
        ].value
        for turn in turns
    }
    assert list(expected.values()) == [1.0, 1.0]

    def carriers() -> list[object]:
        return [s for s in downstream.spans() if s.name == semconv.EVALUATION_SPAN_NAME]

    assert downstream.wait_for(lambda d: len(carriers()) == 2)
    found = {}
    for carrier in downstream.spans():
        if carrier.name != semconv.EVALUATION_SPAN_NAME:
            continue
        (event,) = carrier.events
        found[(carrier.trace_id, carrier.parent_span_id)] = event.attributes[
            semconv.GEN_AI_EVALUATION_SCORE_VALUE
        ]
    assert found == expected
    health = gateway.wait_health(lambda h: h["turns"]["scored"] == 2)
    assert health["turns"]["scored"] == 2

"""Trace files for the CLI tests: RAG turns with chosen queries, and spans holding no turn."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.offline._traces import answer_for, record_turn, write_groundwire_jsonl


def _provider() -> tuple[TracerProvider, InMemorySpanExporter]:
    """A real SDK provider recording into memory."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "rag-app"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter


def turns_with_queries(queries: Sequence[str]) -> list[ReadableSpan]:
    """One RAG turn (chain > retriever + LLM, OpenInference attributes) per query."""
    provider, exporter = _provider()
    tracer = provider.get_tracer("tests.cli")
    for index, query in enumerate(queries):
        answer = answer_for(index)
        record_turn(tracer, query, answer)
    provider.shutdown()
    return list(exporter.get_finished_spans())


def write_turns(queries: Sequence[str], path: Path) -> Path:
    """A trace file (OTLP/JSON lines) with one turn per query."""
    return write_groundwire_jsonl(turns_with_queries(queries), path, batch=3)


def write_spans_without_turns(path: Path, count: int = 4) -> Path:
    """A trace file of ordinary HTTP spans: readable, but no RAG turn in it."""
    provider, exporter = _provider()
    tracer = provider.get_tracer("tests.cli")
    for index in range(count):
        with tracer.start_as_current_span(f"GET /items/{index}", attributes={"http.method": "GET"}):
            pass
    provider.shutdown()
    return write_groundwire_jsonl(list(exporter.get_finished_spans()), path, batch=2)

"""A real LangChain RAG app traced by OpenInference, exporting to Phoenix over OTLP HTTP."""

from __future__ import annotations

import time
from typing import Any

import httpx
from openinference.instrumentation.langchain import LangChainInstrumentor
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter

from tests.test_assembly_langchain import rag_chain

QUESTIONS: dict[str, str] = {
    "What is the capital of France?": 'The source says "Paris is the capital of France."',
    "What is the capital of Spain?": 'It reads "Madrid is the capital of Spain."',
    "What is the longest river in France?": 'The text says "the Seine is the longest river".',
}
"""Question -> the app's (scripted) answer: two faithful quotes and one invented."""


def run_app(
    base_url: str,
    project: str,
    questions: dict[str, str] = QUESTIONS,
    also: SpanExporter | None = None,
) -> None:
    """Ask each question through the traced chain; spans go to Phoenix's `project` (and `also`)."""
    provider = TracerProvider(resource=Resource.create({"openinference.project.name": project}))
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(f"{base_url}/v1/traces")))
    if also is not None:
        provider.add_span_processor(SimpleSpanProcessor(also))
    instrumentor = LangChainInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    try:
        for question, answer in questions.items():
            rag_chain([answer]).invoke(question)
    finally:
        instrumentor.uninstrument()
        provider.shutdown()


def stored_spans(base_url: str, project: str) -> list[dict[str, Any]]:
    """Every span Phoenix holds for `project` (OTLP listing)."""
    spans: list[dict[str, Any]] = []
    cursor = None
    while True:
        params: dict[str, Any] = {"limit": 1000, **({"cursor": cursor} if cursor else {})}
        body = httpx.get(f"{base_url}/v1/projects/{project}/spans/otlpv1", params=params).json()
        spans += body["data"]
        cursor = body.get("next_cursor")
        if not cursor:
            return spans


def wait_for_spans(base_url: str, project: str, count: int, timeout_s: float = 30) -> None:
    """Wait until Phoenix has stored `count` spans of `project` (ingestion is asynchronous)."""
    deadline = time.monotonic() + timeout_s
    while True:
        response = httpx.get(f"{base_url}/v1/projects/{project}/spans/otlpv1?limit=1000")
        if response.status_code == 200 and len(response.json()["data"]) >= count:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"Phoenix stored fewer than {count} spans of {project}")
        time.sleep(0.2)


def read_annotations(base_url: str, project: str, span_ids: list[str]) -> list[dict[str, Any]]:
    """Every span annotation Phoenix holds on `span_ids` (read back over its REST API)."""
    found: list[dict[str, Any]] = []
    cursor = None
    while True:
        params: dict[str, Any] = {"span_ids": span_ids, "limit": 1000}
        if cursor:
            params["cursor"] = cursor
        response = httpx.get(f"{base_url}/v1/projects/{project}/span_annotations", params=params)
        response.raise_for_status()
        body = response.json()
        found += body["data"]
        cursor = body.get("next_cursor")
        if not cursor:
            return found

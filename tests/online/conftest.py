"""Fixtures for online evaluation: real SDK providers with in-memory readers, spans, evaluators."""

from __future__ import annotations

import asyncio
import multiprocessing
import secrets
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Span, Tracer

import groundwire
from groundwire import RagTurn, Score, semconv
from groundwire.emit import Emitter


@dataclass
class Telemetry:
    """A tracer and meter provider whose output the test can read back."""

    tracer_provider: TracerProvider
    meter_provider: MeterProvider
    spans: InMemorySpanExporter
    reader: InMemoryMetricReader

    @property
    def tracer(self) -> Tracer:
        """The app's tracer."""
        return self.tracer_provider.get_tracer("app")

    def configure(self, **options: Any) -> Any:
        """`groundwire.configure()` on these providers, integrations off unless `instrument`
        is given (the tests' one way to call it on the app's providers)."""
        options.setdefault("instrument", False)
        return groundwire.configure(
            tracer_provider=self.tracer_provider, meter_provider=self.meter_provider, **options
        )

    def finished(self, name: str | None = None) -> list[ReadableSpan]:
        """Finished spans, optionally only those called `name`."""
        return [s for s in self.spans.get_finished_spans() if name is None or s.name == name]

    def points(self, metric: str) -> list[Any]:
        """Every data point of one metric collected now."""
        data = self.reader.get_metrics_data()
        found: list[Any] = []
        for resource_metrics in data.resource_metrics if data else ():
            for scope_metrics in resource_metrics.scope_metrics:
                for m in scope_metrics.metrics:
                    if m.name == metric:
                        found.extend(m.data.data_points)
        return found

    def counts(self, metric: str = semconv.METRIC_EVALUATIONS) -> dict[tuple[str, str], int]:
        """`groundwire.evaluations` as {(evaluator, outcome): count}."""
        return {
            (
                p.attributes[semconv.GEN_AI_EVALUATION_NAME],
                p.attributes[semconv.GROUNDWIRE_OUTCOME],
            ): int(p.value)
            for p in self.points(metric)
        }


@pytest.fixture
def telemetry() -> Iterator[Telemetry]:
    """Fresh SDK providers (never global) with in-memory span and metric readers."""
    spans = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    reader = InMemoryMetricReader()
    meter_provider = MeterProvider(metric_readers=[reader])
    yield Telemetry(tracer_provider, meter_provider, spans, reader)
    meter_provider.shutdown()
    tracer_provider.shutdown()


@pytest.fixture(autouse=True)
def _telemetry_file_in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A logger provider configure() builds for log-based result events writes under tmp_path."""
    monkeypatch.setenv(semconv.ENV_OUTPUT_PATH, str(tmp_path / "groundwire-telemetry.jsonl"))


@pytest.fixture
def emitter(telemetry: Telemetry) -> Emitter:
    """An Emitter writing to the test's providers."""
    return Emitter(
        tracer_provider=telemetry.tracer_provider, meter_provider=telemetry.meter_provider
    )


@pytest.fixture
def online_cleanup() -> Iterator[None]:
    """Whatever a test configured is shut down afterwards."""
    yield
    groundwire.shutdown(5.0)


def record_turn(
    tracer: Tracer,
    *,
    query: str = "Who sat on the mat?",
    answer: str = 'The text says "the cat sat on the mat" plainly.',
    documents: tuple[str, ...] = ("Once upon a time the cat sat on the mat.", "Dogs bark."),
) -> Span:
    """One RAG turn as DESIGN.md section 3 spans: a CHAIN root with a RETRIEVER child."""
    root_attributes = {
        semconv.OPENINFERENCE_SPAN_KIND: semconv.SPAN_KIND_CHAIN,
        semconv.INPUT_VALUE: query,
        semconv.OUTPUT_VALUE: answer,
    }
    with tracer.start_as_current_span("rag", attributes=root_attributes) as root:
        retrieval: dict[str, Any] = {
            semconv.OPENINFERENCE_SPAN_KIND: semconv.SPAN_KIND_RETRIEVER,
            semconv.INPUT_VALUE: query,
        }
        for i, text in enumerate(documents):
            prefix = semconv.RETRIEVAL_DOCUMENTS_PREFIX
            retrieval[semconv.document_attribute(prefix, i, semconv.DOCUMENT_CONTENT)] = text
            retrieval[semconv.document_attribute(prefix, i, semconv.DOCUMENT_ID)] = f"doc{i}"
        with tracer.start_as_current_span("retrieve", attributes=retrieval):
            pass
    return root


def hex_ids(span: ReadableSpan) -> tuple[str, str]:
    """(trace_id, span_id) of an SDK span as hex."""
    assert span.context is not None
    return format(span.context.trace_id, "032x"), format(span.context.span_id, "016x")


def random_turn() -> RagTurn:
    """A turn in a random trace (so that sampling at a rate keeps about that share)."""
    return RagTurn(
        query="q", contexts=["c"], answer="a", trace_id=secrets.token_hex(16), span_id="1" * 16
    )


def make_turn(i: int, answer: str = "an answer") -> RagTurn:
    """A turn with a deterministic trace id built from `i`."""
    return RagTurn(
        query=f"question {i}",
        contexts=[f"context {i}"],
        answer=answer,
        trace_id=f"{i + 1:032x}",
        span_id=f"{i + 1:016x}",
    )


class AnswerLength:
    """A cheap deterministic evaluator: answer length / 100, capped at 1."""

    name = "answer_length"

    def evaluate(self, turn: RagTurn) -> Score:
        """Score the turn."""
        return Score(name=self.name, value=min(1.0, len(turn.answer) / 100), label="measured")


class HasContext:
    """A cheap deterministic evaluator: 1 when the turn has contexts."""

    name = "has_context"

    def evaluate(self, turn: RagTurn) -> Score:
        """Score the turn."""
        return Score(name=self.name, value=1.0 if turn.contexts else 0.0)


class Raises:
    """An evaluator that always raises."""

    name = "raises"

    def evaluate(self, turn: RagTurn) -> Score:
        """Score the turn."""
        raise RuntimeError("evaluator bug")


class Hangs:
    """An evaluator that blocks until released (or 10 s pass)."""

    name = "hangs"

    def __init__(self) -> None:
        self.release = threading.Event()
        self.calls = 0

    def evaluate(self, turn: RagTurn) -> Score:
        """Score the turn."""
        self.calls += 1
        self.release.wait(10)
        return Score(name=self.name, value=1.0)


class Gate:
    """A sync evaluator that waits for a gate to open, to hold work in the runner."""

    name = "gate"

    def __init__(self) -> None:
        self.open = threading.Event()

    def evaluate(self, turn: RagTurn) -> Score:
        """Score the turn."""
        self.open.wait(10)
        return Score(name=self.name, value=0.5)


class Judge:
    """An async evaluator reporting token usage, tracking its peak concurrency."""

    name = "judge"

    def __init__(self, delay_s: float = 0.01, tokens: tuple[int, int] = (100, 20)) -> None:
        self.delay_s = delay_s
        self.tokens = tokens
        self.running = 0
        self.peak = 0
        self.calls = 0

    async def aevaluate(self, turn: RagTurn) -> Score:
        """Score the turn after a delay, reporting token usage."""
        self.calls += 1
        self.running += 1
        self.peak = max(self.peak, self.running)
        try:
            await asyncio.sleep(self.delay_s)
        finally:
            self.running -= 1
        usage = {"input": self.tokens[0], "output": self.tokens[1]}
        return Score(name=self.name, value=0.75, label="grounded", usage=usage)


@pytest.fixture
def reaped() -> Iterator[None]:
    """Worker processes a test killed or ended are reaped before the next test, so none is left
    as a zombie child of the test process (mutmut's runner fails on a child left unreaped)."""
    yield
    deadline = time.monotonic() + 5
    while multiprocessing.active_children() and time.monotonic() < deadline:
        time.sleep(0.05)

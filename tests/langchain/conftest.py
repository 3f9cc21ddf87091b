"""Fixtures: a private TracerProvider with an in-memory exporter, instrumented and torn down."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from groundwire.capture import LIVE_CONTENT
from groundwire_langchain import LangChainInstrumentor

_ENV = (
    "GROUNDWIRE_HIDE_INPUTS",
    "GROUNDWIRE_HIDE_OUTPUTS",
    "GROUNDWIRE_HIDE_DOCUMENT_TEXT",
    "GROUNDWIRE_MAX_VALUE_LENGTH",
)


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """No privacy variable from the outer environment leaks into a test."""
    for name in _ENV:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def exporter() -> InMemorySpanExporter:
    """Where finished spans land."""
    return InMemorySpanExporter()


@pytest.fixture
def provider(exporter: InMemorySpanExporter) -> Iterator[TracerProvider]:
    """A private TracerProvider that exports synchronously into `exporter`."""
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield tracer_provider
    tracer_provider.shutdown()


@pytest.fixture
def instrumentor(provider: TracerProvider) -> Iterator[LangChainInstrumentor]:
    """LangChain instrumented onto `provider`; uninstrumented afterwards."""
    instrumentor = LangChainInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    yield instrumentor
    instrumentor.uninstrument()


@pytest.fixture
def live_content() -> Iterator[None]:
    """The live-content store enabled for one test, emptied and disabled afterwards."""
    LIVE_CONTENT.enabled = True
    yield
    LIVE_CONTENT.enabled = False
    LIVE_CONTENT.clear()


def roots(spans: tuple[ReadableSpan, ...] | list[ReadableSpan]) -> list[ReadableSpan]:
    """Spans whose parent is not among `spans`."""
    ids = {span.context.span_id for span in spans}
    return [span for span in spans if span.parent is None or span.parent.span_id not in ids]


def by_name(spans: tuple[ReadableSpan, ...] | list[ReadableSpan], name: str) -> ReadableSpan:
    """The one span called `name`."""
    found = [span for span in spans if span.name == name]
    assert len(found) == 1, f"expected one span named {name!r}, got {[s.name for s in spans]}"
    return found[0]


def parent_of(
    span: ReadableSpan, spans: tuple[ReadableSpan, ...] | list[ReadableSpan]
) -> ReadableSpan:
    """The span's parent among `spans`."""
    assert span.parent is not None, f"{span.name} has no parent"
    (parent,) = [s for s in spans if s.context.span_id == span.parent.span_id]
    return parent


def assert_well_formed(
    spans: tuple[ReadableSpan, ...] | list[ReadableSpan], traces: int, *, nested_times: bool = True
) -> None:
    """`traces` traces, each with one root, every other span's parent in the same trace, all ended
    (and, with `nested_times`, each span's time inside its parent's)."""
    by_trace: dict[int, list[ReadableSpan]] = {}
    for span in spans:
        assert span.end_time is not None and span.start_time is not None
        by_trace.setdefault(span.context.trace_id, []).append(span)
    assert len(by_trace) == traces
    for trace_spans in by_trace.values():
        assert len(roots(trace_spans)) == 1
        for span in trace_spans:
            if span.parent is not None and span not in roots(trace_spans):
                parent = parent_of(span, trace_spans)
                if not nested_times:
                    continue
                assert parent.start_time is not None and span.start_time is not None
                assert parent.start_time <= span.start_time
                assert parent.end_time is not None and span.end_time is not None
                assert span.end_time <= parent.end_time

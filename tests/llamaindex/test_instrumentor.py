"""LlamaIndexInstrumentor lifecycle: entry point, options, idempotency, uninstrument, global use."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

import pytest
from llama_index.core import VectorStoreIndex
from llama_index.core.instrumentation import get_dispatcher  # type: ignore[attr-defined]
from opentelemetry.instrumentation.dependencies import get_dependency_conflicts
from opentelemetry.instrumentation.utils import suppress_instrumentation
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF

from groundwire_llamaindex import LlamaIndexInstrumentor
from groundwire_llamaindex._handlers import GroundwireEventHandler, GroundwireSpanHandler
from tests.llamaindex.conftest import OpenSpanCounter

Provider = tuple[TracerProvider, InMemorySpanExporter, OpenSpanCounter]


def _ours() -> tuple[int, int]:
    """How many groundwire span and event handlers the root dispatcher has."""
    dispatcher = get_dispatcher()
    return (
        sum(isinstance(h, GroundwireSpanHandler) for h in dispatcher.span_handlers),
        sum(isinstance(h, GroundwireEventHandler) for h in dispatcher.event_handlers),
    )


def test_entry_point_registered() -> None:
    """`opentelemetry-instrument` finds the instrumentor under `groundwire_llamaindex` (a name
    apart from OpenInference's `llama_index`, so either can be disabled alone)."""
    (point,) = [
        ep
        for ep in entry_points(group="opentelemetry_instrumentor")
        if ep.dist is not None and ep.dist.name == "groundwire-llamaindex"
    ]
    assert point.name == "groundwire_llamaindex"
    assert point.load() is LlamaIndexInstrumentor


def test_dependencies_declared_and_satisfied() -> None:
    """The supported LlamaIndex range is declared once and the installed version meets it."""
    assert LlamaIndexInstrumentor().instrumentation_dependencies() == ("llama-index-core >= 0.12",)
    assert get_dependency_conflicts(LlamaIndexInstrumentor().instrumentation_dependencies()) is None


def test_instrument_is_idempotent_and_uninstrument_removes_handlers(
    provider: Provider, index: VectorStoreIndex
) -> None:
    """Instrumenting twice adds one handler pair; uninstrumenting removes it and stops spans."""
    tracer_provider, exporter, _ = provider
    before = _ours()
    LlamaIndexInstrumentor().instrument(tracer_provider=tracer_provider)
    LlamaIndexInstrumentor().instrument(tracer_provider=tracer_provider)
    try:
        assert _ours() == (before[0] + 1, before[1] + 1)
        index.as_query_engine(similarity_top_k=1).query("Where is Paris?")
        assert [s.name for s in exporter.get_finished_spans()].count(
            "RetrieverQueryEngine.query"
        ) == 1
    finally:
        LlamaIndexInstrumentor().uninstrument()
    assert _ours() == before
    exporter.clear()
    index.as_query_engine(similarity_top_k=1).query("Where is Paris?")
    assert exporter.get_finished_spans() == ()


def test_uninstrument_ends_open_spans(provider: Provider, index: VectorStoreIndex) -> None:
    """Uninstrumenting while a streamed answer is unread ends its spans instead of leaking them."""
    tracer_provider, exporter, counter = provider
    LlamaIndexInstrumentor().instrument(tracer_provider=tracer_provider)
    try:
        response = index.as_query_engine(similarity_top_k=1, streaming=True).query("Paris?")
        assert counter.started > counter.ended
    finally:
        LlamaIndexInstrumentor().uninstrument()
    assert counter.started == counter.ended
    assert "RetrieverQueryEngine.query" in [s.name for s in exporter.get_finished_spans()]
    del response


def test_suppressed_instrumentation_makes_no_spans(
    provider: Provider, index: VectorStoreIndex
) -> None:
    """Inside OTel's suppress_instrumentation() a query leaves no spans."""
    tracer_provider, exporter, _ = provider
    LlamaIndexInstrumentor().instrument(tracer_provider=tracer_provider)
    try:
        with suppress_instrumentation():
            index.as_query_engine(similarity_top_k=1).query("Where is Paris?")
    finally:
        LlamaIndexInstrumentor().uninstrument()
    assert exporter.get_finished_spans() == ()


@pytest.mark.parametrize(
    ("options", "error", "message"),
    [
        ({"hide_input": True}, TypeError, "unknown option.*hide_input"),
        ({"hide_inputs": "yes"}, TypeError, "hide_inputs must be a bool"),
        ({"max_value_length": 0}, ValueError, "max_value_length must be at least 1"),
    ],
)
def test_bad_options_fail_clearly(
    options: dict[str, object], error: type[Exception], message: str
) -> None:
    """A misspelt or mistyped option raises at once, naming it, and leaves nothing installed."""
    before = _ours()
    with pytest.raises(error, match=message):
        LlamaIndexInstrumentor().instrument(**options)
    assert not LlamaIndexInstrumentor().is_instrumented_by_opentelemetry
    assert _ours() == before


APP = """
from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor

# The app sets the global provider after opentelemetry-instrument has instrumented LlamaIndex
# (no distro is installed to configure one): spans must still reach it.
provider = TracerProvider(resource=Resource.create({"service.name": "li-app"}))
provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter()))
trace.set_tracer_provider(provider)

from llama_index.core import Document, Settings, VectorStoreIndex
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.llms import MockLLM

Settings.embed_model = MockEmbedding(embed_dim=8)
Settings.llm = MockLLM(max_tokens=3)
index = VectorStoreIndex.from_documents([Document(text="Paris is in France.")])
print(index.as_query_engine().query("Where is Paris?"))
"""


def _json_objects(text: str) -> list[dict[str, object]]:
    """Every JSON object printed in `text` (the console exporter's output)."""
    decoder = json.JSONDecoder()
    objects, position = [], 0
    while (start := text.find("{", position)) != -1:
        value, position = decoder.raw_decode(text, start)
        objects.append(value)
    return objects


@pytest.mark.slow
def test_opentelemetry_instrument_uses_global_provider(tmp_path: Path) -> None:
    """`opentelemetry-instrument python app.py` instruments LlamaIndex via the entry point and
    sends spans to the global provider the app sets."""
    app = tmp_path / "app.py"
    app.write_text(APP)
    env = {
        **os.environ,
        "OTEL_PYTHON_DISABLED_INSTRUMENTATIONS": "langchain,groundwire_langchain,llama_index",
        # No configurator (opentelemetry-distro is installed for tests/zerocode): its global
        # provider would refuse the app's.
        "OTEL_PYTHON_CONFIGURATOR": "none",
    }
    command = Path(sys.executable).parent / "opentelemetry-instrument"
    done = subprocess.run(
        [str(command), sys.executable, str(app)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    spans = [s for s in _json_objects(done.stdout) if "context" in s]
    ours = [s for s in spans if (s.get("attributes") or {}).get("groundwire.framework")]
    assert sorted(s["name"] for s in ours) == ["RetrieverQueryEngine.query", "embeddings unknown"]
    (root,) = [s for s in ours if s["name"] == "RetrieverQueryEngine.query"]
    assert root["attributes"]["output.value"] == "text text text"  # type: ignore[index]
    assert root["resource"]["attributes"]["service.name"] == "li-app"  # type: ignore[index]
    trace_id = root["context"]["trace_id"]  # type: ignore[index]
    names = {s["name"] for s in spans if s["context"]["trace_id"] == trace_id}  # type: ignore[index]
    assert {"CompactAndRefine.synthesize", "text_completion unknown", "embeddings unknown"} <= names


def test_sampled_out_runs_make_no_spans_and_change_nothing(index: VectorStoreIndex) -> None:
    """With a sampler that drops every trace, queries and chats (plain and streamed) answer as
    before and nothing is exported."""
    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider(sampler=ALWAYS_OFF)
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    LlamaIndexInstrumentor().instrument(tracer_provider=tracer_provider)
    try:
        plain = index.as_query_engine(similarity_top_k=1).query("Where is Paris?")
        streamed = index.as_query_engine(similarity_top_k=1, streaming=True).query("Paris?")
        text = "".join(streamed.response_gen)
        chat = index.as_chat_engine(chat_mode="context").stream_chat("Paris?")
        chatted = "".join(chat.response_gen)
    finally:
        LlamaIndexInstrumentor().uninstrument()
    assert str(plain) == text == chatted == "text text text text text text"
    assert exporter.get_finished_spans() == ()

"""The instrumentor's contract: entry point, idempotence, real uninstrumenting, providers, and the
explicit callback handler."""

from __future__ import annotations

import importlib.metadata
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from langchain_core.callbacks import CallbackManager
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF

import groundwire_langchain
from groundwire_langchain import GroundwireCallbackHandler, LangChainInstrumentor
from groundwire_langchain.package import _instruments

from ._app import ANSWER, QUESTION, rag_chain

REPO = Path(__file__).resolve().parents[2]


def _provider() -> tuple[TracerProvider, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter


def test_public_names() -> None:
    """`groundwire_langchain.__all__` is exactly the promised public surface."""
    assert set(groundwire_langchain.__all__) == {
        "GroundwireCallbackHandler",
        "LangChainInstrumentor",
        "__version__",
    }
    for name in groundwire_langchain.__all__:
        assert hasattr(groundwire_langchain, name)


def test_entry_point_is_registered() -> None:
    """`opentelemetry-instrument` finds us in the `opentelemetry_instrumentor` entry-point group."""
    ours = [
        entry_point
        for entry_point in importlib.metadata.entry_points(group="opentelemetry_instrumentor")
        if entry_point.value == "groundwire_langchain:LangChainInstrumentor"
    ]
    assert [entry_point.name for entry_point in ours] == ["groundwire_langchain"]
    assert ours[0].load() is LangChainInstrumentor


def test_supported_range_is_declared_once() -> None:
    """The dependency check uses `package._instruments`, which the installed LangChain meets."""
    assert LangChainInstrumentor().instrumentation_dependencies() == _instruments
    assert _instruments == ("langchain-core >= 0.3",)
    assert LangChainInstrumentor()._check_dependency_conflicts() is None


def test_uninstrument_really_stops_tracing(exporter: InMemorySpanExporter) -> None:
    """After `uninstrument()`, new runs get no handler and make no span; re-instrumenting works."""
    provider, first = _provider()
    instrumentor = LangChainInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    rag_chain().invoke(QUESTION)
    assert len(first.get_finished_spans()) == 9
    instrumentor.uninstrument()
    assert instrumentor.handler is None
    assert not any(
        isinstance(handler, GroundwireCallbackHandler)
        for handler in CallbackManager.configure().handlers
    )
    rag_chain().invoke(QUESTION)
    assert len(first.get_finished_spans()) == 9
    provider_2, second = _provider()
    instrumentor.instrument(tracer_provider=provider_2)
    try:
        rag_chain().invoke(QUESTION)
    finally:
        instrumentor.uninstrument()
    assert len(first.get_finished_spans()) == 9
    assert len(second.get_finished_spans()) == 9


def test_instrument_twice_is_a_no_op(
    instrumentor: LangChainInstrumentor, exporter: InMemorySpanExporter
) -> None:
    """A second `instrument()` changes nothing: runs are traced once, to the first provider."""
    handler = instrumentor.handler
    provider, other = _provider()
    LangChainInstrumentor().instrument(tracer_provider=provider)
    assert LangChainInstrumentor().handler is handler
    rag_chain().invoke(QUESTION)
    assert len(exporter.get_finished_spans()) == 9
    assert other.get_finished_spans() == ()


def test_unknown_option_is_an_error() -> None:
    """A misspelt option (a privacy switch, say) fails loudly instead of being ignored."""
    instrumentor = LangChainInstrumentor()
    with pytest.raises(TypeError, match="hide_input"):
        instrumentor.instrument(hide_input=True)
    assert not instrumentor.is_instrumented_by_opentelemetry


def test_switch_of_the_wrong_type_is_an_error() -> None:
    """A privacy switch given as a string (truthy or not) is refused, naming the switch."""
    with pytest.raises(TypeError, match="hide_outputs"):
        GroundwireCallbackHandler(hide_outputs="no")  # type: ignore[arg-type]
    instrumentor = LangChainInstrumentor()
    with pytest.raises(TypeError, match="hide_inputs"):
        instrumentor.instrument(hide_inputs="yes")
    assert not instrumentor.is_instrumented_by_opentelemetry


def test_loading_the_entry_point_does_not_import_langchain() -> None:
    """Loading the instrumentor (as opentelemetry-instrument does for every app) stays cheap."""
    code = (
        "import sys, groundwire_langchain\n"
        "assert 'langchain_core' not in sys.modules, 'langchain_core imported'\n"
        "groundwire_langchain.GroundwireCallbackHandler\n"
        "assert 'langchain_core' in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_meter_provider_is_accepted(exporter: InMemorySpanExporter) -> None:
    """`meter_provider` is part of the BaseInstrumentor contract and is accepted."""
    provider, spans = _provider()
    instrumentor = LangChainInstrumentor()
    instrumentor.instrument(tracer_provider=provider, meter_provider=None)
    try:
        rag_chain().invoke(QUESTION)
    finally:
        instrumentor.uninstrument()
    assert len(spans.get_finished_spans()) == 9


def test_explicit_handler_without_instrumenting() -> None:
    """`callbacks=[GroundwireCallbackHandler(...)]` traces that call alone."""
    provider, exporter = _provider()
    handler = GroundwireCallbackHandler(provider)
    assert rag_chain().invoke(QUESTION, config={"callbacks": [handler]}) == ANSWER
    assert len(exporter.get_finished_spans()) == 9
    rag_chain().invoke(QUESTION)
    assert len(exporter.get_finished_spans()) == 9
    assert handler.open_runs == 0


def test_explicit_handler_wins_over_the_instrumentor(
    instrumentor: LangChainInstrumentor, exporter: InMemorySpanExporter
) -> None:
    """A handler passed per call replaces the instrumentor's for that call: no duplicate spans."""
    provider, explicit = _provider()
    rag_chain().invoke(QUESTION, config={"callbacks": [GroundwireCallbackHandler(provider)]})
    assert len(explicit.get_finished_spans()) == 9
    assert exporter.get_finished_spans() == ()


def test_unsampled_runs_make_no_spans_and_leave_nothing_open() -> None:
    """With a sampler that drops everything, runs still work and no run stays open."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider(sampler=ALWAYS_OFF)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    handler = GroundwireCallbackHandler(provider)
    assert rag_chain().invoke(QUESTION, config={"callbacks": [handler]}) == ANSWER
    assert exporter.get_finished_spans() == ()
    assert handler.open_runs == 0


def test_opentelemetry_instrument_command(tmp_path: Path) -> None:
    """`opentelemetry-instrument python app.py` instruments LangChain onto the global provider,
    even one the app sets after instrumentation."""
    script = tmp_path / "app.py"
    script.write_text(
        textwrap.dedent(
            """
            from opentelemetry import trace
            from opentelemetry.sdk.trace import TracerProvider
            from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor

            from tests.langchain._app import QUESTION, rag_chain

            # No OTel distro is installed, so the app sets the global provider itself, after
            # opentelemetry-instrument has already instrumented LangChain.
            provider = TracerProvider()
            provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter()))
            trace.set_tracer_provider(provider)
            print("ANSWER:", rag_chain().invoke(QUESTION))
            """
        )
    )
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "OTEL_TRACES_EXPORTER": "console",
        "OTEL_METRICS_EXPORTER": "none",
        "OTEL_LOGS_EXPORTER": "none",
        "OTEL_SERVICE_NAME": "lc-test",
        "OTEL_PYTHON_DISABLED_INSTRUMENTATIONS": "llama_index,groundwire_llamaindex,langchain",
    }
    command = Path(sys.executable).parent / "opentelemetry-instrument"
    result = subprocess.run(
        [str(command), sys.executable, str(script)],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert f"ANSWER: {ANSWER}" in result.stdout
    assert '"groundwire.framework": "langchain"' in result.stdout
    assert '"name": "retrieval CorpusRetriever"' in result.stdout

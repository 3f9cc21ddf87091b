"""Real apps traced by third-party instrumentors, and what each app really did.

Each `record_*` runs a real app (an LCEL chain, a LlamaIndex query engine, a util-genai +
openai-v2 app against `OpenAIServer`, an MLflow-autologged chain in a child process exporting
over OTLP) under the instrumentor on a private provider and returns the finished spans. The
`expected_*` helpers compute the same turn from the app's own parts, not from the spans.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from groundwire import RagTurn
from groundwire.assembly import SpanRecord
from groundwire.exporters import JsonLinesSpanExporter
from groundwire.testing import ReceivedSpan
from tests.test_assembly_langchain import KeywordRetriever, rag_chain

ROOT = Path(__file__).resolve().parents[2]
TRACES = ROOT / "tests" / "data" / "traces"
QUESTIONS = ("What is the capital of France?", "What is the capital of Spain?")
ANSWERS = ('"Paris is the capital of France." So: Paris.', "Madrid.")

Essence = tuple[str, list[str], str]


def essence(turns: Sequence[RagTurn]) -> list[Essence]:
    """What a turn must get right: query, contexts in order, answer."""
    return [(t.query, t.context_texts, t.answer) for t in turns]


def expected_langchain(question: str, answer: str) -> Essence:
    """The turn the LCEL app really made: the retriever's documents, the model's reply."""
    documents = KeywordRetriever().invoke(question)
    return question, [d.page_content for d in documents], answer


def record(
    instrumentors: Sequence[Any], run: Callable[[], object], service: str = "rag-app"
) -> list[ReadableSpan]:
    """Run the app under the instrumentors on a private provider; return its finished spans."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    handlers = _llamaindex_handlers()
    for instrumentor in instrumentors:
        instrumentor.instrument(tracer_provider=provider)
    try:
        run()
    finally:
        for instrumentor in instrumentors:
            instrumentor.uninstrument()
        restore_langchain()
        _restore_llamaindex(handlers)
    return list(exporter.get_finished_spans())


def _llamaindex_handlers() -> tuple[list[Any], list[Any]]:
    """The root LlamaIndex dispatcher's span and event handlers, copied."""
    from llama_index.core.instrumentation import get_dispatcher

    root = get_dispatcher()
    return list(root.span_handlers), list(root.event_handlers)


def _restore_llamaindex(handlers: tuple[list[Any], list[Any]]) -> None:
    """Put back the root dispatcher's handlers: OpenLLMetry 0.62.4's `uninstrument` is a no-op.

    Its span handler would otherwise stay on every later LlamaIndex run in the process.
    """
    from llama_index.core.instrumentation import get_dispatcher

    root = get_dispatcher()
    root.span_handlers[:] = handlers[0]
    root.event_handlers[:] = handlers[1]


_OPENLLMETRY_WRAPPED = (
    ("langchain_core.callbacks.base", "BaseCallbackManager.__init__"),
    ("langgraph.pregel", "Pregel.stream"),
    ("langgraph.pregel", "Pregel.astream"),
    ("langgraph.types", "Command.__init__"),
    *(
        ("langchain.agents.middleware.types", f"AgentMiddleware.{prefix}{hook}")
        for prefix in ("", "a")
        for hook in ("before_model", "after_model", "before_agent", "after_agent")
    ),
)
"""What OpenLLMetry 0.62.4's LangChain instrumentor wraps with dotted names that its own
`uninstrument` cannot unwrap (`unwrap(module, "Class.method")` does not resolve the dot)."""


def restore_langchain() -> None:
    """Undo OpenLLMetry's LangChain wrappers, which its `uninstrument` leaves in place.

    0.62.4 unwraps `("langchain_core.callbacks", "BaseCallbackManager.__init__")` and LangGraph's
    `Pregel.stream` the same way, dotted attributes `unwrap` cannot resolve, so its callback
    handler (and the first provider) would stay attached to every later chain in the process,
    and its `invoke_agent` span would become the parent of every later graph run.
    """
    import importlib

    for module_name, dotted in _OPENLLMETRY_WRAPPED:
        try:
            owner: Any = importlib.import_module(module_name)
        except ImportError:
            continue
        *path, name = dotted.split(".")
        for part in path:
            owner = getattr(owner, part, None)
        if owner is None:
            continue
        function = owner.__dict__.get(name)
        if function is None or not hasattr(function, "__wrapped__"):
            continue
        while hasattr(function, "__wrapped__"):
            function = function.__wrapped__
        setattr(owner, name, function)


def run_langchain(questions: Sequence[str] = QUESTIONS) -> None:
    """The LCEL RAG chain answering each question (one trace each)."""
    for question, answer in zip(questions, ANSWERS, strict=False):
        rag_chain([answer]).invoke(question)


def record_openllmetry_langchain(service: str = "rag-app") -> list[ReadableSpan]:
    """OpenLLMetry's LangChain instrumentor on the LCEL app, two questions."""
    from opentelemetry.instrumentation.langchain import LangchainInstrumentor

    return record([LangchainInstrumentor()], run_langchain, service)


def write_jsonl(spans: Sequence[ReadableSpan], path: Path) -> Path:
    """OTLP/JSON lines through groundwire's exporter, one trace per line."""
    exporter = JsonLinesSpanExporter(path)
    by_trace: dict[int, list[ReadableSpan]] = {}
    for span in spans:
        assert span.context is not None
        by_trace.setdefault(span.context.trace_id, []).append(span)
    for group in by_trace.values():
        exporter.export(group)
    exporter.shutdown()
    return path


def _any_value(value: Any) -> dict[str, Any]:
    """An OTLP/JSON AnyValue."""
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, list | tuple):
        return {"arrayValue": {"values": [_any_value(item) for item in value]}}
    return {"stringValue": str(value)}


def write_records_jsonl(records: Sequence[SpanRecord], path: Path) -> Path:
    """OTLP/JSON lines (hex ids, as the Collector's file exporter writes) from `SpanRecord`s."""
    by_trace: dict[str, list[SpanRecord]] = {}
    for record_ in records:
        by_trace.setdefault(record_.trace_id, []).append(record_)
    with path.open("w", encoding="utf-8") as file:
        for group in by_trace.values():
            spans = [
                {
                    "traceId": r.trace_id,
                    "spanId": r.span_id,
                    **({"parentSpanId": r.parent_span_id} if r.parent_span_id else {}),
                    "name": r.name,
                    "kind": 1,
                    "startTimeUnixNano": str(r.start_time_ns),
                    "endTimeUnixNano": str(r.end_time_ns),
                    "attributes": [
                        {"key": k, "value": _any_value(v)} for k, v in r.attributes.items()
                    ],
                }
                for r in group
            ]
            resource = [{"key": k, "value": _any_value(v)} for k, v in group[0].resource.items()]
            line = {
                "resourceSpans": [
                    {
                        "resource": {"attributes": resource},
                        "scopeSpans": [
                            {"scope": {"name": group[0].instrumentation_scope}, "spans": spans}
                        ],
                    }
                ]
            }
            file.write(json.dumps(line) + "\n")
    return path


def received_records(spans: Sequence[ReceivedSpan]) -> list[SpanRecord]:
    """`SpanRecord`s of spans an OTLP receiver decoded."""
    return [
        SpanRecord(
            trace_id=s.trace_id,
            span_id=s.span_id,
            parent_span_id=s.parent_span_id,
            name=s.name,
            start_time_ns=s.start_time_unix_nano,
            end_time_ns=s.end_time_unix_nano,
            attributes=dict(s.attributes),
            resource=dict(s.resource),
            instrumentation_scope=s.scope,
        )
        for s in spans
    ]


MLFLOW_APP = """
import mlflow
mlflow.langchain.autolog()
from tests.dialects._apps import run_langchain
run_langchain()
from mlflow.tracing.provider import provider
provider.get().force_flush()
"""


def record_mlflow_langchain(endpoint: str, service: str = "mlflow-app") -> None:
    """Run the LCEL app with MLflow's LangChain autolog in a child process, exporting OTLP.

    A child process, because autolog patches LangChain for the whole process.
    """
    env = {
        **os.environ,
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": endpoint,
        "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf",
        "OTEL_SERVICE_NAME": service,
        "PYTHONPATH": os.pathsep.join([str(ROOT), *sys.path]),
    }
    subprocess.run([sys.executable, "-c", MLFLOW_APP], env=env, check=True, timeout=120, cwd=ROOT)


def spans_by_trace(records: Sequence[SpanRecord]) -> Iterator[list[SpanRecord]]:
    """The records grouped by trace, in first-seen order."""
    groups: dict[str, list[SpanRecord]] = {}
    for record_ in records:
        groups.setdefault(record_.trace_id, []).append(record_)
    yield from groups.values()

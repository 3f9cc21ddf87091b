"""Record the trace files under tests/data/traces: `python -m tests.dialects.record [DIR]`.

The same functions serve `test_recorded_files.py`, which records afresh and checks that the
committed files still say what a fresh recording says.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path

from openinference.instrumentation.langchain import LangChainInstrumentor as OpenInference
from opentelemetry.instrumentation.langchain import LangchainInstrumentor

from groundwire.testing import OtlpHttpReceiver
from tests.dialects._apps import (
    ANSWERS,
    QUESTIONS,
    TRACES,
    received_records,
    record,
    record_mlflow_langchain,
    run_langchain,
    write_jsonl,
    write_records_jsonl,
)

__all__ = ["RECORDERS", "record_all"]


def openllmetry_langchain(path: Path) -> Path:
    """OpenLLMetry's LangChain instrumentor, content recorded (its default)."""
    os.environ.pop("TRACELOOP_TRACE_CONTENT", None)
    return write_jsonl(record([LangchainInstrumentor()], run_langchain), path)


def openllmetry_langchain_no_content(path: Path) -> Path:
    """The same app with `TRACELOOP_TRACE_CONTENT=false`."""
    os.environ["TRACELOOP_TRACE_CONTENT"] = "false"
    try:
        spans = record([LangchainInstrumentor()], run_langchain, service="hidden-rag")
    finally:
        os.environ.pop("TRACELOOP_TRACE_CONTENT", None)
    return write_jsonl(spans, path)


def openinference_langchain(path: Path) -> Path:
    """OpenInference's LangChain instrumentor on the same app (the benchmark's reference)."""
    return write_jsonl(record([OpenInference()], run_langchain), path)


def genai_openai_v2(path: Path) -> Path:
    """util-genai workflow and retrieval spans, openai-v2 chat spans (`{id, score}` documents)."""
    from tests.dialects.test_genai import traced_app

    with traced_app("SPAN_ONLY") as (app, exporter):
        for question in QUESTIONS:
            app.ask(question, content=False)
        spans = list(exporter.get_finished_spans())
    return write_jsonl(spans, path)


def genai_events(path: Path) -> Path:
    """The GenAI app whose model calls log their content as events (spans + log records)."""
    from tests.dialects.test_events import record_events

    return record_events(path)


def mlflow_langchain(path: Path) -> Path:
    """MLflow's LangChain autolog in a child process, received over OTLP."""
    with OtlpHttpReceiver() as receiver:
        record_mlflow_langchain(f"http://127.0.0.1:{receiver.port}/v1/traces")
        if not receiver.wait_for(lambda r: len(r.spans()) >= 18, timeout_s=30):
            raise RuntimeError("MLflow's spans did not arrive")
        return write_records_jsonl(received_records(receiver.spans()), path)


def _run_agent() -> None:
    """The LangGraph ReAct agent with the retriever tool over the chain's corpus: each question
    searched as asked, answered as the chain answers it (so the turns equal the chain's)."""
    from tests.agents import lc_apps

    for question, answer in zip(QUESTIONS, ANSWERS, strict=True):
        tool = lc_apps.retriever_tool()
        lc_apps.run_agent(lc_apps.react_agent, tool, (question,), question, answer)


def openinference_langgraph_agent(path: Path) -> Path:
    """OpenInference's LangChain instrumentor on a LangGraph agent with a retriever tool."""
    return write_jsonl(record([OpenInference()], _run_agent), path)


def openllmetry_langgraph_agent(path: Path) -> Path:
    """OpenLLMetry's LangChain instrumentor on the same agent."""
    os.environ.pop("TRACELOOP_TRACE_CONTENT", None)
    return write_jsonl(record([LangchainInstrumentor()], _run_agent), path)


def genai_service(path: Path) -> Path:
    """A service that follows only the GenAI conventions (server, retrieval, chat spans)."""
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from tests.agents import genai_service as service

    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "go-search-api"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("go.opentelemetry.io/contrib/genai")
    service.ask(tracer)
    service.ask(tracer, question="When was it completed?", query_text=False)
    provider.shutdown()
    return write_jsonl(list(exporter.get_finished_spans()), path)


RECORDERS: dict[str, Callable[[Path], Path]] = {
    "openllmetry_langchain.jsonl": openllmetry_langchain,
    "openllmetry_langchain_no_content.jsonl": openllmetry_langchain_no_content,
    "openinference_langchain.jsonl": openinference_langchain,
    "genai_openai_v2.jsonl": genai_openai_v2,
    "genai_events.jsonl": genai_events,
    "mlflow_langchain.jsonl": mlflow_langchain,
    "openinference_langgraph_agent.jsonl": openinference_langgraph_agent,
    "openllmetry_langgraph_agent.jsonl": openllmetry_langgraph_agent,
    "genai_service.jsonl": genai_service,
}
"""File name -> the function that records it."""


def record_all(directory: Path = TRACES) -> list[Path]:
    """Record every file into `directory`."""
    return [recorder(directory / name) for name, recorder in RECORDERS.items()]


if __name__ == "__main__":
    for written in record_all(Path(sys.argv[1]) if len(sys.argv) > 1 else TRACES):
        print(written)

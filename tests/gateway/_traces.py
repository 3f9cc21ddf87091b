"""Hand-built OTLP/JSON traces as a non-Python app sends them (no Python SDK involved).

A TypeScript app with `@opentelemetry/exporter-trace-otlp-http` posts OTLP/JSON: hex ids, times
as decimal strings, attributes as `{key, value: {stringValue}}`. The spans here carry the
attributes the JavaScript OpenInference instrumentation and the GenAI semantic conventions write.
"""

from __future__ import annotations

import json
import random
from typing import Any

CONTEXT = (
    "The Eiffel Tower was completed in 1889. It was designed by the engineering firm of "
    "Gustave Eiffel for the World's Fair."
)
ANSWER = 'According to the source, "the Eiffel Tower was completed in 1889" for the fair.'
QUESTION = "When was the Eiffel Tower completed?"


def _attr(key: str, value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"key": key, "value": {"boolValue": value}}
    if isinstance(value, int):
        return {"key": key, "value": {"intValue": str(value)}}
    if isinstance(value, float):
        return {"key": key, "value": {"doubleValue": value}}
    return {"key": key, "value": {"stringValue": value}}


def new_trace_id() -> str:
    """32 random hex digits."""
    return f"{random.getrandbits(128):032x}"


def new_span_id() -> str:
    """16 random hex digits."""
    return f"{random.getrandbits(64):016x}"


def span(
    trace_id: str,
    span_id: str,
    parent: str | None,
    name: str,
    start: int,
    end: int,
    **attributes: Any,
) -> dict[str, Any]:
    """One OTLP/JSON span."""
    out: dict[str, Any] = {
        "traceId": trace_id,
        "spanId": span_id,
        "name": name,
        "kind": 1,
        "startTimeUnixNano": str(start),
        "endTimeUnixNano": str(end),
        "attributes": [_attr(k.replace("__", "."), v) for k, v in attributes.items()],
        "status": {"code": 0},
    }
    if parent:
        out["parentSpanId"] = parent
    return out


def request(spans: list[dict[str, Any]], service: str = "ts-support-bot") -> bytes:
    """An OTLP/JSON traces request body as the JS exporter sends it."""
    return json.dumps(
        {
            "resourceSpans": [
                {
                    "resource": {
                        "attributes": [
                            _attr("service.name", service),
                            _attr("telemetry.sdk.language", "nodejs"),
                            _attr("telemetry.sdk.name", "opentelemetry"),
                        ]
                    },
                    "scopeSpans": [
                        {"scope": {"name": "@arizeai/openinference-instrumentation-langchain"},
                         "spans": spans}
                    ],
                }
            ]
        }
    ).encode()  # fmt: skip


def openinference_rag_trace(trace_id: str | None = None) -> list[dict[str, Any]]:
    """A RAG turn as the JS OpenInference LangChain instrumentation records it: chain root,
    retriever with documents, LLM with the answer; returned root last."""
    trace_id = trace_id or new_trace_id()
    root, retriever, llm = new_span_id(), new_span_id(), new_span_id()
    t0 = 1_700_000_000_000_000_000
    return [
        span(
            trace_id,
            retriever,
            root,
            "VectorStoreRetriever",
            t0 + 10,
            t0 + 20,
            openinference__span__kind="RETRIEVER",
            input__value=QUESTION,
            **{
                "retrieval.documents.0.document.content": CONTEXT,
                "retrieval.documents.0.document.id": "doc-1",
            },
        ),
        span(
            trace_id,
            llm,
            root,
            "ChatOpenAI",
            t0 + 30,
            t0 + 40,
            openinference__span__kind="LLM",
            llm__model_name="gpt-4o-mini",
            output__value=ANSWER,
        ),
        span(
            trace_id,
            root,
            None,
            "RunnableSequence",
            t0,
            t0 + 50,
            openinference__span__kind="CHAIN",
            input__value=QUESTION,
            output__value=ANSWER,
        ),
    ]


def genai_rag_trace(trace_id: str | None = None) -> list[dict[str, Any]]:
    """The same turn in GenAI semantic conventions only: an agent span, a retrieval span whose
    JSON documents carry their text, a chat span with the messages."""
    trace_id = trace_id or new_trace_id()
    root, retrieval, chat = new_span_id(), new_span_id(), new_span_id()
    t0 = 1_700_000_000_000_000_000
    user = [{"role": "user", "parts": [{"type": "text", "content": QUESTION}]}]
    system = [{"type": "text", "content": CONTEXT}]
    output = [
        {"role": "assistant", "parts": [{"type": "text", "content": ANSWER}],
         "finish_reason": "stop"}
    ]  # fmt: skip
    docs = [{"id": "doc-1", "score": 0.9, "content": CONTEXT}]
    return [
        span(
            trace_id,
            retrieval,
            root,
            "retrieval kb",
            t0 + 10,
            t0 + 20,
            gen_ai__operation__name="retrieval",
            gen_ai__retrieval__query__text=QUESTION,
            gen_ai__retrieval__documents=json.dumps(docs),
            gen_ai__data_source__id="kb",
        ),
        span(
            trace_id,
            chat,
            root,
            "chat gpt-4o-mini",
            t0 + 30,
            t0 + 40,
            gen_ai__operation__name="chat",
            gen_ai__request__model="gpt-4o-mini",
            gen_ai__provider__name="openai",
            gen_ai__system_instructions=json.dumps(system),
            gen_ai__input__messages=json.dumps(user),
            gen_ai__output__messages=json.dumps(output),
        ),
        span(
            trace_id,
            root,
            None,
            "invoke_agent support-bot",
            t0,
            t0 + 50,
            gen_ai__operation__name="invoke_agent",
            gen_ai__input__messages=json.dumps(user),
            gen_ai__output__messages=json.dumps(output),
        ),
    ]


def protobuf_request(index: int, spans: int = 10, pad: int = 0) -> bytes:
    """A binary-protobuf traces request of `spans` spans, trace id `index`, span ids
    `index * 1000 + n + 1` and names `op-<index>-<n>` (plus `pad` bytes of attribute each)."""
    from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
    from opentelemetry.proto.trace.v1 import trace_pb2

    message = trace_service_pb2.ExportTraceServiceRequest()
    scope = message.resource_spans.add().scope_spans.add()
    for number in range(spans):
        item = scope.spans.add()
        item.trace_id = index.to_bytes(16, "big")
        item.span_id = (index * 1000 + number + 1).to_bytes(8, "big")
        item.name = f"op-{index}-{number}"
        item.kind = trace_pb2.Span.SPAN_KIND_INTERNAL
        item.start_time_unix_nano, item.end_time_unix_nano = 1, 2
        if pad:
            attribute = item.attributes.add()
            attribute.key, attribute.value.string_value = "pad", "x" * pad
    return message.SerializeToString()

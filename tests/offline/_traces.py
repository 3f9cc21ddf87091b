"""Trace files for the offline tests, made from real SDK spans in every supported format.

`record_turns` runs small RAG chains through the real OpenTelemetry SDK (OpenInference attributes)
and returns the finished spans; the writers below serialise those spans the way each producer
does: groundwire's own exporter, protobuf's JSON mapping (base64 ids), the Collector's protobuf
file framing, the delimited-protobuf framing, and Jaeger's JSON model (`/api/traces` and the UI's
download).
"""

from __future__ import annotations

import base64
import gzip
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from google.protobuf import json_format
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Tracer

from groundwire.exporters import JsonLinesSpanExporter

KIND = "openinference.span.kind"
DOCS = (
    "The Eiffel Tower is 330 metres tall and stands in Paris.",
    "Paris is the capital of France, on the river Seine.",
)


def answer_for(index: int) -> str:
    """Turn `index`'s answer: even turns quote faithfully, odd ones misquote their source."""
    if index % 2 == 0:
        return f'It says "the Eiffel Tower is 330 metres tall" (turn {index}).'
    return f'It says "the Eiffel Tower is 500 metres wide" (turn {index}).'


def record_turn(tracer: Tracer, query: str, answer: str) -> None:
    """One RAG turn as OpenInference spans: chain > retriever (DOCS) + LLM."""
    with tracer.start_as_current_span(
        "rag", attributes={KIND: "CHAIN", "input.value": query, "output.value": answer}
    ):
        documents = {
            f"retrieval.documents.{i}.document.{field}": value
            for i, doc in enumerate(DOCS)
            for field, value in (("content", doc), ("id", f"doc-{i}"))
        }
        with tracer.start_as_current_span(
            "retrieve", attributes={KIND: "RETRIEVER", "input.value": query, **documents}
        ):
            pass
        with tracer.start_as_current_span(
            "llm", attributes={KIND: "LLM", "llm.model_name": "m", "output.value": answer}
        ):
            pass


def record_turns(count: int, service: str = "rag-app") -> list[ReadableSpan]:
    """`count` RAG turns (chain > retriever + LLM), each its own trace, as finished SDK spans."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("tests.offline")
    for index in range(count):
        query = f"How tall is the Eiffel Tower? ({index})"
        answer = answer_for(index)
        record_turn(tracer, query, answer)
    provider.shutdown()
    return list(exporter.get_finished_spans())


def write_groundwire_jsonl(spans: Sequence[ReadableSpan], path: Path, batch: int = 2) -> Path:
    """OTLP/JSON lines via groundwire's exporter, `batch` spans per line (traces split)."""
    exporter = JsonLinesSpanExporter(path)
    for start in range(0, len(spans), batch):
        exporter.export(spans[start : start + batch])
    exporter.shutdown()
    return path


def write_protobuf_json(spans: Sequence[ReadableSpan], path: Path, batch: int = 3) -> Path:
    """JSON lines from protobuf's own JSON mapping of real OTLP messages: base64 ids."""
    with path.open("w", encoding="utf-8") as file:
        for start in range(0, len(spans), batch):
            message = encode_spans(spans[start : start + batch])
            file.write(json.dumps(json_format.MessageToDict(message)) + "\n")
    return path


def varint(value: int) -> bytes:
    """`value` as a protobuf base-128 varint (the size prefix of `varint` framing)."""
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def write_protobuf(
    spans: Sequence[ReadableSpan], path: Path, *, framing: str, batch: int = 3
) -> Path:
    """OTLP protobuf messages, size-prefixed like the Collector (`fixed32`) or `varint`."""
    with path.open("wb") as file:
        for start in range(0, len(spans), batch):
            body = encode_spans(spans[start : start + batch]).SerializeToString()
            file.write(len(body).to_bytes(4, "big") if framing == "fixed32" else varint(len(body)))
            file.write(body)
    return path


def gzip_copy(path: Path) -> Path:
    """A gzip-compressed copy named `<path>.gz`."""
    target = path.with_name(path.name + ".gz")
    target.write_bytes(gzip.compress(path.read_bytes()))
    return target


def _jaeger_tag(key: str, value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"key": key, "type": "bool", "value": value}
    if isinstance(value, int):
        return {"key": key, "type": "int64", "value": value}
    if isinstance(value, float):
        return {"key": key, "type": "float64", "value": value}
    if isinstance(value, bytes):
        return {"key": key, "type": "binary", "value": base64.b64encode(value).decode()}
    if isinstance(value, tuple | list):
        return {"key": key, "type": "string", "value": json.dumps(list(value))}
    return {"key": key, "type": "string", "value": str(value)}


def jaeger_traces(spans: Sequence[ReadableSpan]) -> list[dict[str, Any]]:
    """The spans as Jaeger JSON model traces (`traceID`, `spans`, `processes`), one per trace."""
    traces: dict[str, dict[str, Any]] = {}
    for span in spans:
        context = span.context
        assert context is not None
        trace_id = format(context.trace_id, "032x")
        trace = traces.setdefault(
            trace_id,
            {
                "traceID": trace_id,
                "spans": [],
                "processes": {
                    "p1": {
                        "serviceName": span.resource.attributes["service.name"],
                        "tags": [_jaeger_tag("telemetry.sdk.language", "python")],
                    }
                },
                "warnings": None,
            },
        )
        references = []
        if span.parent is not None:
            references.append(
                {
                    "refType": "CHILD_OF",
                    "traceID": trace_id,
                    "spanID": format(span.parent.span_id, "016x"),
                }
            )
        tags = [_jaeger_tag(k, v) for k, v in (span.attributes or {}).items()]
        tags.append(_jaeger_tag("otel.scope.name", span.instrumentation_scope.name))  # type: ignore[union-attr]
        tags.append(_jaeger_tag("span.kind", "internal"))
        assert span.start_time is not None and span.end_time is not None
        trace["spans"].append(
            {
                "traceID": trace_id,
                "spanID": format(context.span_id, "016x"),
                "operationName": span.name,
                "references": references,
                "startTime": span.start_time // 1000,
                "duration": (span.end_time - span.start_time) // 1000,
                "tags": tags,
                "logs": [],
                "processID": "p1",
                "warnings": None,
                "flags": 1,
            }
        )
    return list(traces.values())


def write_jaeger_api(spans: Sequence[ReadableSpan], path: Path) -> Path:
    """A `/api/traces` response: `{"data": [...], "total", "limit", "offset", "errors"}`."""
    traces = jaeger_traces(spans)
    body = {"data": traces, "total": len(traces), "limit": 0, "offset": 0, "errors": None}
    path.write_text(json.dumps(body, indent=2), encoding="utf-8")
    return path


def write_jaeger_download(spans: Sequence[ReadableSpan], path: Path) -> Path:
    """The UI's "Download JSON" of one trace: `{"data": [trace]}` (compact, one line)."""
    path.write_text(json.dumps({"data": jaeger_traces(spans)[:1]}), encoding="utf-8")
    return path

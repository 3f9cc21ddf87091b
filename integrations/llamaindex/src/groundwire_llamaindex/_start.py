"""What a LlamaIndex call's span starts with: its name, the attributes known at once, and the
input remembered or captured from the call's arguments."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from opentelemetry.util.types import AttributeValue

from groundwire import semconv
from groundwire.capture import CaptureConfig, retrieval_span_name
from groundwire_llamaindex import _values
from groundwire_llamaindex._llm import describe_llm
from groundwire_llamaindex._record import Record
from groundwire_llamaindex._writing import capture_input

__all__ = ["describe", "start_values"]


def _call_name(llama_id: str) -> str:
    """`RetrieverQueryEngine.query` from LlamaIndex's `RetrieverQueryEngine.query-<uuid>`."""
    name = llama_id.partition("-")[0]
    owner, _, method = name.rpartition(".")
    return f"{owner}.{method.lstrip('_')}" if owner else name


def _model_name(instance: object, field: str) -> str | None:
    """A non-empty string field of `instance`, or None."""
    value = getattr(instance, field, None)
    return value if isinstance(value, str) and value else None


def _data_source_id(retriever: object) -> str | None:
    """The id of the index a retriever reads (`gen_ai.data_source.id`), when it has one."""
    index = getattr(retriever, "_index", None)
    index_id = getattr(index, "index_id", None)
    return index_id if isinstance(index_id, str) and index_id else None


def describe(
    llama_id: str, kind: str, instance: Any, parent: Record | None
) -> tuple[str, dict[str, AttributeValue]]:
    """The span's name and the attributes known when it starts."""
    attributes: dict[str, AttributeValue] = {semconv.OPENINFERENCE_SPAN_KIND: kind}
    if parent is None:
        attributes[semconv.GROUNDWIRE_FRAMEWORK] = semconv.FRAMEWORK_LLAMAINDEX
    if kind == semconv.SPAN_KIND_RETRIEVER:
        return retrieval_span_name(_data_source_id(instance)), attributes
    if kind == semconv.SPAN_KIND_LLM:
        method = llama_id.partition("-")[0].rpartition(".")[2]
        return describe_llm(instance, method, attributes), attributes
    if kind == semconv.SPAN_KIND_EMBEDDING:
        model = _model_name(instance, "model_name")
        attributes[semconv.GEN_AI_OPERATION_NAME] = semconv.GEN_AI_OPERATION_EMBEDDINGS
        if model is None:
            return semconv.GEN_AI_OPERATION_EMBEDDINGS, attributes
        attributes[semconv.EMBEDDING_MODEL_NAME] = model
        attributes[semconv.GEN_AI_REQUEST_MODEL] = model
        return f"{semconv.GEN_AI_OPERATION_EMBEDDINGS} {model}", attributes
    if kind == semconv.SPAN_KIND_RERANKER:
        top_n = getattr(instance, "top_n", None)
        if isinstance(top_n, int) and not isinstance(top_n, bool):
            attributes[semconv.RERANKER_TOP_K] = top_n
        model = _model_name(instance, "model")
        if model is not None:
            attributes[semconv.RERANKER_MODEL_NAME] = model
    return _call_name(llama_id), attributes


def start_values(
    config: CaptureConfig, record: Record, instance: Any, arguments: Mapping[str, Any]
) -> None:
    """Remember (retrievers, rerankers: written at the end) or capture the call's input."""
    kind = record.kind
    if kind == semconv.SPAN_KIND_RETRIEVER:
        record.data_source = _data_source_id(instance)
    if kind in (semconv.SPAN_KIND_RETRIEVER, semconv.SPAN_KIND_RERANKER):
        record.query = _values.query_of(arguments)
        record.input_nodes = arguments.get("nodes")
    elif kind == semconv.SPAN_KIND_EMBEDDING:
        text = _values.query_of(arguments)
        if text is None and isinstance(arguments.get("text"), str):
            text = arguments["text"]
        if text is not None:
            capture_input(config, record, text, semconv.MIME_TEXT)
    elif kind != semconv.SPAN_KIND_LLM:
        value = _values.input_of(arguments)
        if value is not None:
            capture_input(config, record, *value)

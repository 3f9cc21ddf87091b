"""MLflow Tracing 3.x (`mlflow-tracing`, e.g. LangChain autologging), exported over OTLP.

Every `mlflow.*` attribute value is JSON-encoded (a span type arrives as `"\"RETRIEVER\""`).
Role: `mlflow.spanType` (`RETRIEVER`, `RERANKER`, `CHAT_MODEL`/`LLM`, `EMBEDDING`; anything else
is a plain step); input/output: `mlflow.spanInputs` / `mlflow.spanOutputs`; documents: a
retriever's output, a list of `{page_content, metadata, id}` (MLflow's `Document`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from groundwire import semconv
from groundwire._types import Context
from groundwire.assembly._dialects._base import Dialect, Source
from groundwire.assembly._documents import document_list
from groundwire.assembly._extract import decode
from groundwire.assembly._kinds import KIND_OTHER, KIND_RERANKER, KIND_RETRIEVER, KINDS_BY_NAME
from groundwire.assembly._record import SpanRecord

__all__ = ["MLFLOW_SPAN_INPUTS", "MLFLOW_SPAN_OUTPUTS", "MLFLOW_SPAN_TYPE", "MLflow"]

MLFLOW_SPAN_TYPE: Final = "mlflow.spanType"
"""MLflow: the span's type, JSON-encoded (`"RETRIEVER"`, `"CHAT_MODEL"`, `"CHAIN"`, ...)."""
MLFLOW_SPAN_INPUTS: Final = "mlflow.spanInputs"
"""MLflow: the span's inputs, JSON."""
MLFLOW_SPAN_OUTPUTS: Final = "mlflow.spanOutputs"
"""MLflow: the span's outputs, JSON."""
MLFLOW_TRACE_REQUEST_ID: Final = "mlflow.traceRequestId"
"""MLflow: the MLflow trace id (marks MLflow spans)."""

_KINDS: Final = {**KINDS_BY_NAME, "CHAT_MODEL": KINDS_BY_NAME[semconv.SPAN_KIND_LLM]}
"""OpenInference's span type names, and MLflow's for a chat model call (OpenInference's LLM)."""


class MLflow(Dialect):
    """MLflow Tracing's `mlflow.span*` attributes (last in precedence)."""

    name = "mlflow"
    title = "MLflow Tracing"
    input_keys = (MLFLOW_SPAN_INPUTS,)
    output_keys = (MLFLOW_SPAN_OUTPUTS,)
    marker_keys = (MLFLOW_SPAN_TYPE, MLFLOW_TRACE_REQUEST_ID)
    retrieval_hint = "mlflow.spanType=RETRIEVER"
    content_switch = "spans without mlflow.spanInputs / mlflow.spanOutputs"

    def kind(self, attributes: Mapping[str, Any]) -> str | None:
        """`mlflow.spanType`, JSON-decoded (a bare name is accepted too)."""
        raw = attributes.get(MLFLOW_SPAN_TYPE)
        if not isinstance(raw, str):
            return None
        value = raw[1:-1] if len(raw) >= 2 and raw[0] == raw[-1] == '"' else raw
        return _KINDS.get(value.upper(), KIND_OTHER)

    def inputs(self, attributes: Mapping[str, Any]) -> list[Source]:
        """`mlflow.spanInputs`, decoded."""
        return _decoded(attributes, MLFLOW_SPAN_INPUTS)

    def outputs(self, attributes: Mapping[str, Any]) -> list[Source]:
        """`mlflow.spanOutputs`, decoded."""
        return _decoded(attributes, MLFLOW_SPAN_OUTPUTS)

    def documents(self, record: SpanRecord, kind: str) -> tuple[str, list[Context]] | None:
        """A retriever's (or reranker's) output: a list of MLflow `Document`s."""
        raw = record.attributes.get(MLFLOW_SPAN_OUTPUTS)
        if raw is None or kind not in (KIND_RETRIEVER, KIND_RERANKER):
            return None
        value = decode(raw, semconv.MIME_JSON) if isinstance(raw, str) else raw
        documents = document_list(record, MLFLOW_SPAN_OUTPUTS, value)
        return None if documents is None else (MLFLOW_SPAN_OUTPUTS, documents)


def _decoded(attributes: Mapping[str, Any], key: str) -> list[Source]:
    """The JSON-decoded value of `key` (text marked as such), or nothing when absent."""
    raw = attributes.get(key)
    if raw is None:
        return []
    value = decode(raw, semconv.MIME_JSON) if isinstance(raw, str) else raw
    return [(key, value, semconv.MIME_TEXT if isinstance(value, str) else None)]

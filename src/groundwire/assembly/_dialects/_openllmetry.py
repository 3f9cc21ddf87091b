"""OpenLLMetry (Traceloop) 0.62: `opentelemetry-instrumentation-langchain` / `-llamaindex`.

Role: `gen_ai.operation.name=vector_db_retrieve` (LangChain retrievers); for LlamaIndex, whose
spans carry no operation, a `traceloop.entity.name` ending in `Retriever.task` is a retriever and
a span with GenAI messages (or ending in `LLM.task`) a model call; older LLM spans say
`llm.request.type`. Input/output: `traceloop.entity.input` / `traceloop.entity.output` (JSON;
LangChain wraps them as `{"inputs": ...}` / `{"outputs": ...}`), then the newer copies
`gen_ai.task.input` / `gen_ai.task.output`, then the older indexed message attributes
`gen_ai.prompt.{i}.*` / `gen_ai.completion.{i}.*` and `llm.prompts.{i}.*` / `llm.completions.{i}.*`.
Documents: a retriever's entity output, `{"documents": [{"page_content", "metadata"}]}`
(LangChain) or a list of JSON-encoded `NodeWithScore`s (LlamaIndex).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Final

from groundwire import semconv
from groundwire._types import Context
from groundwire.assembly._dialects._base import Dialect, Source
from groundwire.assembly._dialects._genai import system_message_parts
from groundwire.assembly._documents import document_list
from groundwire.assembly._extract import decode
from groundwire.assembly._kinds import KIND_GENERATION, KIND_OTHER, KIND_RETRIEVER, KIND_TOOL
from groundwire.assembly._record import SpanRecord

__all__ = [
    "GEN_AI_TASK_INPUT",
    "GEN_AI_TASK_OUTPUT",
    "TRACELOOP_ENTITY_INPUT",
    "TRACELOOP_ENTITY_NAME",
    "TRACELOOP_ENTITY_OUTPUT",
    "TRACELOOP_SPAN_KIND",
    "OpenLLMetry",
]

TRACELOOP_SPAN_KIND: Final = "traceloop.span.kind"
"""OpenLLMetry: `workflow`, `task`, `agent` or `tool`."""
TRACELOOP_ENTITY_NAME: Final = "traceloop.entity.name"
"""OpenLLMetry: the component's name (LlamaIndex: `<Class>.task` / `<Class>.workflow`)."""
TRACELOOP_ENTITY_INPUT: Final = "traceloop.entity.input"
"""OpenLLMetry: the component's input, JSON."""
TRACELOOP_ENTITY_OUTPUT: Final = "traceloop.entity.output"
"""OpenLLMetry: the component's output, JSON."""
TRACELOOP_WORKFLOW_NAME: Final = "traceloop.workflow.name"
"""OpenLLMetry: the name of the enclosing workflow."""
GEN_AI_TASK_INPUT: Final = "gen_ai.task.input"
"""OpenLLMetry 0.5x+: a copy of `traceloop.entity.input` under its GenAI-style name."""
GEN_AI_TASK_OUTPUT: Final = "gen_ai.task.output"
"""OpenLLMetry 0.5x+: a copy of `traceloop.entity.output`."""
LLM_REQUEST_TYPE: Final = "llm.request.type"
"""Older OpenLLMetry model spans: `chat` or `completion`."""
OPERATION_VECTOR_DB_RETRIEVE: Final = "vector_db_retrieve"
"""OpenLLMetry's `gen_ai.operation.name` on LangChain retriever spans."""

_PROMPT_PREFIXES: Final = ("gen_ai.prompt.", "llm.prompts.")
_COMPLETION_PREFIXES: Final = ("gen_ai.completion.", "llm.completions.")
_INDEXED: Final = re.compile(r"(\d+)\.(role|content)")


class OpenLLMetry(Dialect):
    """OpenLLMetry's `traceloop.*` attributes and its older indexed message attributes."""

    name = "openllmetry"
    title = "OpenLLMetry (Traceloop)"
    input_keys = (TRACELOOP_ENTITY_INPUT, GEN_AI_TASK_INPUT)
    output_keys = (TRACELOOP_ENTITY_OUTPUT, GEN_AI_TASK_OUTPUT)
    output_prefixes = _COMPLETION_PREFIXES
    marker_keys = (TRACELOOP_SPAN_KIND, TRACELOOP_ENTITY_NAME, TRACELOOP_WORKFLOW_NAME)
    retrieval_hint = (
        "gen_ai.operation.name=vector_db_retrieve, traceloop.entity.name=*Retriever.task"
    )
    content_switch = "TRACELOOP_TRACE_CONTENT=false"

    def kind(self, attributes: Mapping[str, Any]) -> str | None:
        """Retrievers and model calls as OpenLLMetry marks them; other traceloop spans: steps."""
        if attributes.get(semconv.GEN_AI_OPERATION_NAME) == OPERATION_VECTOR_DB_RETRIEVE:
            return KIND_RETRIEVER
        name = attributes.get(TRACELOOP_ENTITY_NAME)
        if isinstance(name, str):
            if name.endswith("Retriever.task"):
                return KIND_RETRIEVER
            if name.endswith("LLM.task") or semconv.GEN_AI_OUTPUT_MESSAGES in attributes:
                return KIND_GENERATION
            if name.endswith("Tool.task"):  # LlamaIndex's QueryEngineTool, FunctionTool
                return KIND_TOOL
        if attributes.get(TRACELOOP_SPAN_KIND) == "tool":
            return KIND_TOOL
        request_type = attributes.get(LLM_REQUEST_TYPE)
        if isinstance(request_type, str) and request_type in ("chat", "completion"):
            return KIND_GENERATION
        if TRACELOOP_SPAN_KIND in attributes:
            return KIND_OTHER
        return None

    def inputs(self, attributes: Mapping[str, Any]) -> list[Source]:
        """Entity input (unwrapped from `{"inputs": ...}`), `gen_ai.task.input`, old prompts."""
        sources = [
            _unwrap(key, attributes[key], "inputs") for key in self.input_keys if key in attributes
        ]
        prompts = _indexed_messages(attributes, _PROMPT_PREFIXES, "user")
        if prompts is not None:
            sources.append(prompts)
        return sources

    def outputs(self, attributes: Mapping[str, Any]) -> list[Source]:
        """Entity output (unwrapped from `{"outputs": ...}`), `gen_ai.task.output`, old ones."""
        sources = [
            _unwrap(key, attributes[key], "outputs")
            for key in self.output_keys
            if key in attributes
        ]
        completions = _indexed_messages(attributes, _COMPLETION_PREFIXES, "assistant")
        if completions is not None:
            sources.append(completions)
        return sources

    def documents(self, record: SpanRecord, kind: str) -> tuple[str, list[Context]] | None:
        """A retriever's entity output: LangChain `documents`, or LlamaIndex `NodeWithScore`s."""
        if kind != KIND_RETRIEVER:
            return None
        for key in self.output_keys:
            raw = record.attributes.get(key)
            if raw is None:
                continue
            value = decode(raw, semconv.MIME_JSON) if isinstance(raw, str) else raw
            if isinstance(value, Mapping) and "documents" in value:
                documents = document_list(record, key, value["documents"])
            elif isinstance(value, Sequence) and not isinstance(value, str):
                documents = document_list(record, key, [_node(item) for item in value])
            else:
                continue
            if documents is not None:
                return key, documents
        return None

    def instructions(self, attributes: Mapping[str, Any]) -> tuple[str, list[str]] | None:
        """The system messages among the older indexed prompt attributes."""
        prompts = _indexed_messages(attributes, _PROMPT_PREFIXES, "user")
        if prompts is None:
            return None
        parts = system_message_parts(prompts[1])
        return (prompts[0], parts) if parts else None


def _unwrap(attribute: str, raw: Any, key: str) -> Source:
    """The value under `key` of a JSON object (LangChain's wrapper), else the decoded value.

    A string result is marked as text, so that an answer that itself looks like JSON stays text.
    """
    value = decode(raw, semconv.MIME_JSON) if isinstance(raw, str) else raw
    if isinstance(value, Mapping) and key in value:
        value = value[key]
    return attribute, value, semconv.MIME_TEXT if isinstance(value, str) else None


def _node(item: Any) -> Any:
    """A LlamaIndex `NodeWithScore` (JSON text or object) as `{text, id, score, metadata}`."""
    value = decode(item, semconv.MIME_JSON) if isinstance(item, str) else item
    if not isinstance(value, Mapping):
        return value
    node = value.get("node")
    if not isinstance(node, Mapping):
        return value
    return {
        "text": node.get("text"),
        "id": node.get("id_"),
        "score": value.get("score"),
        "metadata": node.get("metadata"),
    }


def _indexed_messages(
    attributes: Mapping[str, Any], prefixes: tuple[str, ...], default_role: str
) -> tuple[str, list[dict[str, Any]], None] | None:
    """`{prefix}{i}.role` / `{prefix}{i}.content` regrouped as a message list, or None."""
    for prefix in prefixes:
        messages: dict[int, dict[str, Any]] = {}
        for key, value in attributes.items():
            if not key.startswith(prefix):
                continue
            match = _INDEXED.fullmatch(key, len(prefix))
            if match is not None:
                messages.setdefault(int(match.group(1)), {})[match.group(2)] = value
        if messages:
            ordered = [
                {"role": message.get("role", default_role), "content": message.get("content")}
                for _, message in sorted(messages.items())
            ]
            return f"{prefix}{{i}}.content", ordered, None
    return None

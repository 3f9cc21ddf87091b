"""The OpenTelemetry GenAI semantic conventions (`gen_ai.*`), as opentelemetry-util-genai and
opentelemetry-instrumentation-openai-v2 write them.

Role: `gen_ai.operation.name` (`retrieval`; `chat`, `text_completion`, `generate_content`;
`embeddings`; `execute_tool`); input: `gen_ai.input.messages`, `gen_ai.retrieval.query.text`,
`gen_ai.tool.call.arguments`; output: `gen_ai.output.messages`, `gen_ai.tool.call.result`;
documents: `gen_ai.retrieval.documents` (the conventions give only `{id, score}`; text is used
when an instrumentor adds it). A model call's system instructions
(`gen_ai.system_instructions`, else the system messages in `gen_ai.input.messages`) stand in for
the contexts when no retrieval recorded document text (docs/assembly.md, "Contexts").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from groundwire import semconv
from groundwire._types import Context
from groundwire.assembly._dialects._base import Dialect, Source
from groundwire.assembly._documents import document_list
from groundwire.assembly._extract import decode
from groundwire.assembly._kinds import KIND_EMBEDDING, KIND_GENERATION, KIND_RETRIEVER, KIND_TOOL
from groundwire.assembly._record import SpanRecord

__all__ = ["GEN_AI_SYSTEM_INSTRUCTIONS", "GenAI", "text_parts"]

GEN_AI_SYSTEM_INSTRUCTIONS: Final = "gen_ai.system_instructions"
"""GenAI: the system instructions given to the model, a JSON list of parts."""

_KINDS: Final = {
    semconv.GEN_AI_OPERATION_RETRIEVAL: KIND_RETRIEVER,
    semconv.GEN_AI_OPERATION_CHAT: KIND_GENERATION,
    semconv.GEN_AI_OPERATION_TEXT_COMPLETION: KIND_GENERATION,
    "generate_content": KIND_GENERATION,
    semconv.GEN_AI_OPERATION_EMBEDDINGS: KIND_EMBEDDING,
    "execute_tool": KIND_TOOL,
}
_SYSTEM_ROLES: Final = frozenset({"system", "developer"})


class GenAI(Dialect):
    """GenAI semantic-convention attributes (second in precedence)."""

    name = "genai"
    title = "OpenTelemetry GenAI semantic conventions"
    input_keys = (
        semconv.GEN_AI_INPUT_MESSAGES,
        semconv.GEN_AI_RETRIEVAL_QUERY_TEXT,
        semconv.GEN_AI_TOOL_CALL_ARGUMENTS,
    )
    output_keys = (semconv.GEN_AI_OUTPUT_MESSAGES, semconv.GEN_AI_TOOL_CALL_RESULT)
    marker_keys = (semconv.GEN_AI_OPERATION_NAME,)
    retrieval_hint = "gen_ai.operation.name=retrieval"
    content_switch = (
        "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=SPAN_ONLY with "
        "OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental"
    )

    def kind(self, attributes: Mapping[str, Any]) -> str | None:
        """The role named by `gen_ai.operation.name`; None for operations it does not know."""
        operation = attributes.get(semconv.GEN_AI_OPERATION_NAME)
        return _KINDS.get(operation) if isinstance(operation, str) else None

    def inputs(self, attributes: Mapping[str, Any]) -> list[Source]:
        """`gen_ai.input.messages`, then a retrieval's `gen_ai.retrieval.query.text` (text)."""
        sources: list[Source] = []
        if semconv.GEN_AI_INPUT_MESSAGES in attributes:
            sources.append(
                (semconv.GEN_AI_INPUT_MESSAGES, attributes[semconv.GEN_AI_INPUT_MESSAGES], None)
            )
        if semconv.GEN_AI_TOOL_CALL_ARGUMENTS in attributes:
            sources.append(
                (
                    semconv.GEN_AI_TOOL_CALL_ARGUMENTS,
                    attributes[semconv.GEN_AI_TOOL_CALL_ARGUMENTS],
                    None,
                )
            )
        if semconv.GEN_AI_RETRIEVAL_QUERY_TEXT in attributes:
            sources.append(
                (
                    semconv.GEN_AI_RETRIEVAL_QUERY_TEXT,
                    attributes[semconv.GEN_AI_RETRIEVAL_QUERY_TEXT],
                    semconv.MIME_TEXT,
                )
            )
        return sources

    def documents(self, record: SpanRecord, kind: str) -> tuple[str, list[Context]] | None:
        """`gen_ai.retrieval.documents`: a JSON string or a structured list of objects."""
        if kind != KIND_RETRIEVER:
            return None
        raw = record.attributes.get(semconv.GEN_AI_RETRIEVAL_DOCUMENTS)
        if raw is None:
            return None
        value = decode(raw, semconv.MIME_JSON) if isinstance(raw, str) else raw
        documents = document_list(record, semconv.GEN_AI_RETRIEVAL_DOCUMENTS, value)
        return None if documents is None else (semconv.GEN_AI_RETRIEVAL_DOCUMENTS, documents)

    def instructions(self, attributes: Mapping[str, Any]) -> tuple[str, list[str]] | None:
        """`gen_ai.system_instructions` parts, else the system messages' text parts."""
        raw = attributes.get(GEN_AI_SYSTEM_INSTRUCTIONS)
        if raw is not None:
            parts = text_parts(decode(raw, semconv.MIME_JSON) if isinstance(raw, str) else raw)
            if parts:
                return GEN_AI_SYSTEM_INSTRUCTIONS, parts
        raw = attributes.get(semconv.GEN_AI_INPUT_MESSAGES)
        if raw is None:
            return None
        messages = decode(raw, semconv.MIME_JSON) if isinstance(raw, str) else raw
        parts = system_message_parts(messages)
        return (semconv.GEN_AI_INPUT_MESSAGES, parts) if parts else None


def text_parts(value: Any) -> list[str]:
    """The non-empty text of a GenAI parts list (or of a plain string)."""
    if isinstance(value, str):
        return [value] if value.strip() else []
    if not isinstance(value, Sequence):
        return []
    texts: list[str] = []
    for part in value:
        if isinstance(part, str) and part.strip():
            texts.append(part)
        elif isinstance(part, Mapping) and part.get("type", "text") == "text":
            text = part.get("content", part.get("text"))
            if isinstance(text, str) and text.strip():
                texts.append(text)
    return texts


def system_message_parts(messages: Any) -> list[str]:
    """The text parts of the system (or developer) messages in a list of chat messages."""
    if isinstance(messages, str) or not isinstance(messages, Sequence):
        return []
    texts: list[str] = []
    for message in messages:
        if not isinstance(message, Mapping):
            continue
        role = message.get("role")
        if not isinstance(role, str) or role.lower() not in _SYSTEM_ROLES:
            continue
        texts.extend(text_parts(message.get("parts", message.get("content"))))
    return texts

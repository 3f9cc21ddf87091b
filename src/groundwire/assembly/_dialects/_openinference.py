"""OpenInference (Arize Phoenix's instrumentors) and groundwire's own spans.

Role: `openinference.span.kind`; input/output: `input.value` / `output.value` with their mime
types; documents: the flattened `retrieval.documents.{i}.document.*` and
`reranker.output_documents.{i}.document.*`.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from typing import Any, Final

from groundwire import semconv
from groundwire._types import Context
from groundwire.assembly._dialects._base import Dialect, Source
from groundwire.assembly._documents import document
from groundwire.assembly._kinds import KIND_OTHER, KIND_RERANKER, KINDS_BY_NAME
from groundwire.assembly._record import SpanRecord

__all__ = ["LLM_INPUT_MESSAGES", "LLM_OUTPUT_MESSAGES", "OpenInference", "flattened_documents"]

LLM_INPUT_MESSAGES: Final = "llm.input_messages"
"""OpenInference: a model call's input messages, `llm.input_messages.{i}.message.*`."""
LLM_OUTPUT_MESSAGES: Final = "llm.output_messages"
"""OpenInference: a model call's output messages, `llm.output_messages.{i}.message.*`."""
_MESSAGE_FIELD: Final = re.compile(
    r"(\d+)\.message\.(?:(role|content|name|tool_call_id)"
    r"|contents\.(\d+)\.message_content\.text"
    r"|(tool_calls)\.(\d+)\.tool_call\.\S+)"
)

logger = logging.getLogger("groundwire.assembly")
_DOCUMENT: Final = "document."
_DOCUMENT_CUT: Final = len(_DOCUMENT)
_MALFORMED: Final = (-1, "")
_KNOWN_KEYS: Final = 4096
_DOCUMENT_KEYS: Final[dict[str, dict[str, tuple[int, str]]]] = {}
"""Document attribute keys already taken apart, by prefix: the same few keys (`...0.document.
content`, ...) recur on every retriever span, and parsing them was the costliest part of reading
its documents. At most `_KNOWN_KEYS` per prefix are kept (a bounded memory, whatever the input)."""


class OpenInference(Dialect):
    """OpenInference attributes: the first dialect asked (our own spans write it too)."""

    name = "openinference"
    title = "OpenInference"
    input_keys = (semconv.INPUT_VALUE,)
    output_keys = (semconv.OUTPUT_VALUE,)
    marker_keys = (semconv.OPENINFERENCE_SPAN_KIND,)
    retrieval_hint = "openinference.span.kind=RETRIEVER"
    content_switch = "OPENINFERENCE_HIDE_INPUTS / OPENINFERENCE_HIDE_OUTPUTS (or GROUNDWIRE_HIDE_*)"

    def kind(self, attributes: Mapping[str, Any]) -> str | None:
        """`openinference.span.kind`; any kind it sets is final (CHAIN, AGENT: plain steps)."""
        kind = attributes.get(semconv.OPENINFERENCE_SPAN_KIND)
        if isinstance(kind, str):
            return KINDS_BY_NAME.get(kind.upper(), KIND_OTHER)
        return None

    def inputs(self, attributes: Mapping[str, Any]) -> list[Source]:
        """`input.value` (with `input.mime_type`), then a reranker's `reranker.query`."""
        sources: list[Source] = []
        if semconv.INPUT_VALUE in attributes:
            sources.append(
                (
                    semconv.INPUT_VALUE,
                    attributes[semconv.INPUT_VALUE],
                    attributes.get(semconv.INPUT_MIME_TYPE),
                )
            )
        if semconv.RERANKER_QUERY in attributes:
            sources.append((semconv.RERANKER_QUERY, attributes[semconv.RERANKER_QUERY], None))
        messages = indexed_messages(attributes, LLM_INPUT_MESSAGES)
        if messages is not None:
            sources.append((LLM_INPUT_MESSAGES, messages, None))
        return sources

    def outputs(self, attributes: Mapping[str, Any]) -> list[Source]:
        """A model call's `llm.output_messages.*` (structured), then `output.value`.

        The messages come first: LlamaIndex's `output.value` is `str(ChatResponse)`
        (`"assistant: ..."`), and a tool-call-only message must not fall back to it as text.
        """
        sources: list[Source] = []
        messages = indexed_messages(attributes, LLM_OUTPUT_MESSAGES)
        if messages is not None:
            sources.append((LLM_OUTPUT_MESSAGES, messages, None))
        if semconv.OUTPUT_VALUE in attributes:
            sources.append(
                (
                    semconv.OUTPUT_VALUE,
                    attributes[semconv.OUTPUT_VALUE],
                    attributes.get(semconv.OUTPUT_MIME_TYPE),
                )
            )
        return sources

    def documents(self, record: SpanRecord, kind: str) -> tuple[str, list[Context]] | None:
        """`retrieval.documents.*` for retrievers, `reranker.output_documents.*` for rerankers."""
        prefix = (
            semconv.RERANKER_OUTPUT_DOCUMENTS_PREFIX
            if kind == KIND_RERANKER
            else semconv.RETRIEVAL_DOCUMENTS_PREFIX
        )
        documents = flattened_documents(record, prefix)
        return None if documents is None else (prefix, documents)


def flattened_documents(record: SpanRecord, prefix: str) -> list[Context] | None:
    """OpenInference's `{prefix}.{i}.document.{field}` attributes, regrouped by `i`."""
    start = prefix + "."
    known = _DOCUMENT_KEYS.setdefault(start, {})
    fields: dict[int, dict[str, Any]] = {}
    for key, value in record.attributes.items():
        if not key.startswith(start):
            continue
        place = known.get(key)
        if place is None:
            place = _document_key(key, len(start))
            if len(known) < _KNOWN_KEYS:
                known[key] = place
        if place is _MALFORMED:
            logger.debug("span %s: malformed document attribute %r skipped", record.span_id, key)
            continue
        index, name = place
        fields.setdefault(index, {})[name] = value
    if not fields:
        return None
    documents: list[Context] = []
    for index in sorted(fields):
        built = document(record, f"{prefix}.{index}", fields[index], len(documents))
        if built is not None:
            documents.append(built)
    return documents


def _document_key(key: str, cut: int) -> tuple[int, str]:
    """`(i, field)` of a key `{prefix}.{i}.document.{field}` (`cut` is the length of
    `{prefix}.`), or `_MALFORMED`."""
    index_text, _, name = key[cut:].partition(".")
    if not index_text.isdecimal() or not name.startswith(_DOCUMENT):
        return _MALFORMED
    return int(index_text), name[_DOCUMENT_CUT:]


def indexed_messages(attributes: Mapping[str, Any], prefix: str) -> list[dict[str, Any]] | None:
    """`{prefix}.{i}.message.*` regrouped into chat messages (`role`, `content`, `tool_calls`).

    Text parts (`message.contents.{j}.message_content.text`) are joined into `content`; a tool
    call only marks the message (`tool_calls`), so it is never taken for an answer.
    """
    start = prefix + "."
    messages: dict[int, dict[str, Any]] = {}
    parts: dict[int, dict[int, str]] = {}
    for key, value in attributes.items():
        if not key.startswith(start):
            continue
        match = _MESSAGE_FIELD.fullmatch(key[len(start) :])
        if match is None:
            continue
        index = int(match.group(1))
        message = messages.setdefault(index, {})
        if match.group(2) is not None and isinstance(value, str):
            message[match.group(2)] = value
        elif match.group(3) is not None and isinstance(value, str):
            parts.setdefault(index, {})[int(match.group(3))] = value
        elif match.group(4) is not None:
            message.setdefault("tool_calls", []).append(match.group(5))
    if not messages:
        return None
    for index, texts in parts.items():
        if "content" not in messages[index]:
            messages[index]["content"] = "".join(texts[j] for j in sorted(texts))
    return [messages[index] for index in sorted(messages)]

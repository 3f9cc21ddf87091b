"""Turn LangChain run values (strings, dicts, messages, documents, prompts) into span text.

A string stays plain text, and so does a mapping with a single string value and a message with
plain string content (how a chain's question or answer usually travels). Anything else becomes
JSON through a small encoder that knows LangChain's value types, so nothing is serialised twice.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.documents import Document
from langchain_core.messages import BaseMessage
from langchain_core.prompt_values import ChatPromptValue, PromptValue
from pydantic import BaseModel

from groundwire import semconv
from groundwire._types import Context
from groundwire.capture import content_id

__all__ = ["message_dicts", "to_context", "to_text"]

_ROLES = {
    "human": "user",
    "ai": "assistant",
    "HumanMessageChunk": "user",
    "AIMessageChunk": "assistant",
    "SystemMessageChunk": "system",
    "ToolMessageChunk": "tool",
    "ChatMessageChunk": "chat",
}
"""LangChain message types whose chat role has another name."""

_SCORE_KEYS = ("score", "relevance_score")
"""Metadata keys a LangChain retriever or compressor puts a document's score under."""


def to_text(value: Any) -> tuple[str, str]:
    """`(text, mime type)` for one run value: plain text where the value is text, else JSON."""
    if isinstance(value, str):
        return value, semconv.MIME_TEXT
    if isinstance(value, Mapping) and len(value) == 1:
        (only,) = value.values()
        if isinstance(only, str):
            return only, semconv.MIME_TEXT
    if (
        isinstance(value, BaseMessage)
        and isinstance(value.content, str)
        and not getattr(value, "tool_calls", None)
    ):
        return value.content, semconv.MIME_TEXT
    return json.dumps(value, default=_encode, ensure_ascii=False), semconv.MIME_JSON


def message_dicts(messages: Sequence[BaseMessage]) -> list[dict[str, Any]]:
    """Chat messages as `{"role", "content"}` dicts (plus tool calls when there are any)."""
    return [_message(message) for message in messages]


def to_context(document: Document, rank: int) -> Context:
    """A LangChain `Document` as a groundwire `Context`; id from the document, else its content."""
    metadata = document.metadata or {}
    text = document.page_content
    doc_id = document.id
    if doc_id is None and metadata.get("id") is not None:
        doc_id = str(metadata["id"])
    score = None
    for key in _SCORE_KEYS:
        candidate = metadata.get(key)
        if isinstance(candidate, int | float) and not isinstance(candidate, bool):
            score = float(candidate)
            break
    return Context(
        text=text,
        id=doc_id if doc_id is not None else content_id(text),
        score=score,
        rank=rank,
        metadata=dict(metadata),
    )


def _message(message: BaseMessage) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "role": _ROLES.get(message.type, message.type),
        "content": message.content,
    }
    tool_calls = getattr(message, "tool_calls", None)
    if tool_calls:
        entry["tool_calls"] = tool_calls
    return entry


def _encode(value: Any) -> Any:
    """`json.dumps` fallback for the LangChain and Python types that JSON does not know."""
    if isinstance(value, BaseMessage):
        return _message(value)
    if isinstance(value, Document):
        encoded: dict[str, Any] = {"page_content": value.page_content, "metadata": value.metadata}
        if value.id is not None:
            encoded["id"] = value.id
        return encoded
    if isinstance(value, ChatPromptValue):
        return message_dicts(value.messages)
    if isinstance(value, PromptValue):
        return value.to_string()
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if isinstance(value, set | frozenset | tuple):
        return list(value)
    return str(value)

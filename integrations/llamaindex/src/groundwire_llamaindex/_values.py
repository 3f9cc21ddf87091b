"""Read queries, answers, nodes, messages and token counts out of LlamaIndex objects.

Plain text stays plain (a query string, a Response's text); only values with no text form are
written as JSON, so the common path serialises nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, Final

from llama_index.core.workflow import StopEvent

from groundwire import semconv
from groundwire._types import Context
from groundwire.capture import safe_json

__all__ = [
    "contexts_of",
    "input_of",
    "llm_output_of",
    "messages_json",
    "output_of",
    "query_of",
    "query_text",
    "token_counts",
]

logger = logging.getLogger("groundwire_llamaindex")

Value = tuple[str, str]
"""A captured value and its MIME type (`text/plain` or `application/json`)."""

_QUERY_ARGUMENTS: Final = (
    "str_or_query_bundle",
    "query_bundle",
    "query",
    "query_str",
    "message",
    "input",
)
"""Argument names under which LlamaIndex components take their query, most specific first."""


def query_text(query: object) -> str | None:
    """The text of a query string or `QueryBundle`; None for anything else."""
    if isinstance(query, str):
        return query
    text = getattr(query, "query_str", None)
    return text if isinstance(text, str) else None


def query_of(arguments: Mapping[str, Any]) -> str | None:
    """The query text among a call's arguments, if it has one."""
    for name in _QUERY_ARGUMENTS:
        if name in arguments:
            text = query_text(arguments[name])
            if text is not None:
                return text
    return None


def input_of(arguments: Mapping[str, Any]) -> Value | None:
    """A call's input: its query as plain text when it has one, else its arguments as JSON.

    A workflow run's input is its start event's fields. Arguments that are None are left out,
    and a single string argument is written as plain text.
    """
    text = query_of(arguments)
    if text is not None:
        return text, semconv.MIME_TEXT
    fields = getattr(arguments.get("start_event"), "_data", None)
    if isinstance(fields, Mapping):
        payload = dict(fields)
    else:
        payload = {name: value for name, value in arguments.items() if value is not None}
    if not payload:
        return None
    if len(payload) == 1:
        (only,) = payload.values()
        if isinstance(only, str):
            return only, semconv.MIME_TEXT
    return safe_json(payload), semconv.MIME_JSON


def output_of(result: object) -> Value | None:
    """A call's output: the text of a string, Response or tool output; anything else as JSON."""
    if result is None:
        return None
    if isinstance(result, StopEvent):  # a workflow's result
        result = result.result
        if result is None:
            return None
    if isinstance(result, str):
        return result, semconv.MIME_TEXT
    if hasattr(result, "response"):  # Response, AgentChatResponse
        text = result.response
        if isinstance(text, str):
            return text, semconv.MIME_TEXT
        if text is None:
            return None
    content = getattr(result, "content", None)  # ToolOutput, ChatMessage
    if isinstance(content, str):
        return content, semconv.MIME_TEXT
    return safe_json(result), semconv.MIME_JSON


def llm_output_of(response: object) -> str | None:
    """The text of a `CompletionResponse`, `ChatResponse` or string an LLM returned."""
    if isinstance(response, str):
        return response
    message = getattr(response, "message", None)
    if message is not None:
        content = getattr(message, "content", None)
        return content if isinstance(content, str) else None
    text = getattr(response, "text", None)
    return text if isinstance(text, str) else None


def messages_json(messages: Iterable[Any]) -> str:
    """Chat messages as JSON: `[{"role": ..., "content": ...}, ...]`."""
    rows = []
    for message in messages:
        role = getattr(message, "role", None)
        rows.append(
            {"role": getattr(role, "value", role), "content": getattr(message, "content", None)}
        )
    return safe_json(rows)


def contexts_of(nodes: object) -> list[Context]:
    """`NodeWithScore`s as `Context`s in the order given (node id, score, text, metadata)."""
    if not isinstance(nodes, Iterable):
        return []
    contexts: list[Context] = []
    for rank, item in enumerate(nodes):
        try:
            node = getattr(item, "node", item)
            score = getattr(item, "score", None)
            contexts.append(
                Context(
                    text=node.get_content(),
                    id=node.node_id,
                    score=float(score) if score is not None else None,
                    rank=rank,
                    metadata=dict(node.metadata or {}),
                )
            )
        except Exception:
            logger.debug("skipped node %d that is not a LlamaIndex node", rank, exc_info=True)
    return contexts


_PROMPT_KEYS: Final = ("prompt_tokens", "input_tokens")
_COMPLETION_KEYS: Final = ("completion_tokens", "output_tokens")
_TOTAL_KEYS: Final = ("total_tokens",)


def _lookup(source: object, keys: tuple[str, ...]) -> int | None:
    """The first whole-number value under one of `keys` in a mapping or object."""
    for key in keys:
        value = source.get(key) if isinstance(source, Mapping) else getattr(source, key, None)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None


def _usage_sources(response: object) -> Iterator[object]:
    """Where an LLM response may report usage: `additional_kwargs`, `raw.usage`."""
    extra = getattr(response, "additional_kwargs", None)
    if isinstance(extra, Mapping):
        yield extra
    raw = getattr(response, "raw", None)
    if raw is not None:
        usage = raw.get("usage") if isinstance(raw, Mapping) else getattr(raw, "usage", None)
        if usage is not None:
            yield usage


def token_counts(response: object) -> tuple[int | None, int | None, int | None]:
    """(prompt, completion, total) tokens an LLM response reports, None where it says nothing.

    Looks in `additional_kwargs` (where LlamaIndex's OpenAI LLM puts them) and then in the raw
    provider response's `usage` (OpenAI and Anthropic field names).
    """
    prompt = completion = total = None
    for source in _usage_sources(response):
        prompt = prompt if prompt is not None else _lookup(source, _PROMPT_KEYS)
        completion = completion if completion is not None else _lookup(source, _COMPLETION_KEYS)
        total = total if total is not None else _lookup(source, _TOTAL_KEYS)
    if total is None and prompt is not None and completion is not None:
        total = prompt + completion
    return prompt, completion, total

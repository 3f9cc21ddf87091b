"""Find the question or the answer inside an `input.value` / `output.value`, text or JSON.

Frameworks record inputs and outputs in many shapes: plain text, a dict of chain inputs
(`{"question": ...}`), a LlamaIndex query bundle, LangChain message dumps, GenAI-convention
message lists. `query_text` and `answer_text` walk those shapes in a fixed, documented order
(docs/assembly.md, "Query" and "Answer") and return None when nothing fits.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from groundwire import semconv

__all__ = [
    "ANSWER_KEYS",
    "QUERY_KEYS",
    "answer_text",
    "decode",
    "has_tool_calls",
    "nested_values",
    "query_text",
    "user_message_text",
]

logger = logging.getLogger("groundwire.assembly")

QUERY_KEYS: Final = (
    "question",
    "query",
    "query_str",
    "input",
    "user_input",
    "prompt",
    "message",
    "text",
    "content",
)
"""Keys tried in order when an input is a JSON object."""
ANSWER_KEYS: Final = (
    "answer",
    "output",
    "response",
    "result",
    "output_text",
    "text",
    "content",
    "generation",
    "message",
)
"""Keys tried in order when an output is a JSON object."""

_USER_ROLES: Final = frozenset({"user", "human", "humanmessage", "humanmessagechunk"})
_ASSISTANT_ROLES: Final = frozenset(
    {"assistant", "ai", "model", "aimessage", "aimessagechunk", "chatmessage"}
)
_TOOL_ROLES: Final = frozenset({"tool", "toolmessage", "function", "functionmessage", "ipython"})
"""Roles of tool results: never a question, never an answer (they are contexts)."""
_WRAPPER_KEYS: Final = ("data", "kwargs", "messages", "generations")
_REACT_ANSWER: Final = re.compile(r"^\s*Thought:.*?\n\s*Answer:\s*(.+)$", re.DOTALL)
"""A ReAct agent's final step: the answer is what follows its last `Answer:`."""
_MAX_DEPTH: Final = 8
_ABSENT: Final = object()


def decode(value: Any, mime_type: Any = None) -> Any:
    """The structured value behind an attribute: parsed JSON, or the text itself.

    Strings are parsed when the mime type says JSON, or when none is given and the text looks
    like a JSON object, array or string; text that fails to parse stays text.
    """
    if not isinstance(value, str):
        return value
    if mime_type == semconv.MIME_TEXT:
        return value
    stripped = value.lstrip()
    if mime_type != semconv.MIME_JSON and not stripped.startswith(("{", "[", '"')):
        return value
    try:
        return json.loads(value)
    except ValueError:
        if mime_type == semconv.MIME_JSON:
            logger.debug("value declared as JSON does not parse; reading it as text")
        return value


def nested_values(value: Any) -> Iterable[Any]:
    """What a decoded value holds one level down: a mapping's values, a list's items (strings
    and bytes hold none), for the depth-first walks over outputs."""
    if isinstance(value, Mapping):
        return value.values()
    if isinstance(value, Sequence) and not isinstance(value, str | bytes):
        return value
    return ()


def query_text(value: Any) -> str | None:
    """The user's question inside a decoded input value, or None."""
    return _find(value, QUERY_KEYS, _USER_ROLES, 0)


def answer_text(value: Any) -> str | None:
    """The generated answer inside a decoded output value, or None.

    A ReAct step (`Thought: ... Answer: X`) gives X, as the agent's own parser does.
    """
    text = _find(value, ANSWER_KEYS, _ASSISTANT_ROLES, 0)
    if text is not None and text.lstrip().startswith("Thought:"):
        match = _REACT_ANSWER.match(text)
        if match is not None:
            answer = match.group(1).rsplit("\nAnswer:", 1)[-1].strip()
            return answer or None
    return text


def user_message_text(value: Any) -> str | None:
    """The last user message in a decoded model input; None for plain text (a prompt that may
    hold the contexts too, not the user's question) or when no user message is found."""
    return _last_user_message(value, 0)


def _last_user_message(value: Any, depth: int) -> str | None:
    """Depth-first through mappings and lists; the first message list with a user message wins."""
    if depth > _MAX_DEPTH or isinstance(value, str | bytes | bytearray):
        return None
    if isinstance(value, Mapping):
        if _role(value) in _USER_ROLES:
            return _message_text(value)
        items: Sequence[Any] = list(value.values())
    elif isinstance(value, Sequence):
        users = [item for item in value if isinstance(item, Mapping) and _role(item) in _USER_ROLES]
        for message in reversed(users):
            text = _message_text(message)
            if text is not None:
                return text
        items = value
    else:
        return None
    for item in items:
        text = _last_user_message(item, depth + 1)
        if text is not None:
            return text
    return None


def _find(value: Any, keys: Sequence[str], roles: frozenset[str], depth: int) -> str | None:
    """Dispatch on the value's shape; None when nothing textual is found."""
    if depth > _MAX_DEPTH:
        return None
    if isinstance(value, str):
        return value if value.strip() else None
    if isinstance(value, Mapping):
        return _from_mapping(value, keys, roles, depth)
    if isinstance(value, Sequence) and not isinstance(value, bytes | bytearray):
        return _from_sequence(value, keys, roles, depth)
    return None


def _from_mapping(
    value: Mapping[Any, Any], keys: Sequence[str], roles: frozenset[str], depth: int
) -> str | None:
    """A message's text, then known keys, wrappers, a lone entry, a lone string value."""
    is_message = _role(value) is not None
    if is_message:
        text = _message_text(value)
        if text is not None:
            return text
    for group in (keys, _WRAPPER_KEYS):  # the known keys first, then the wrappers
        for key in group:
            item = value.get(key, _ABSENT)
            if item is not _ABSENT:
                text = _find(item, keys, roles, depth + 1)
                if text is not None:
                    return text
    if len(value) == 1:
        return _find(next(iter(value.values())), keys, roles, depth + 1)
    if is_message:  # a message with no text: its lone string would be the role's name
        return None
    strings = [item for item in value.values() if isinstance(item, str) and item.strip()]
    return strings[0] if len(strings) == 1 else None


def _from_sequence(
    value: Sequence[Any], keys: Sequence[str], roles: frozenset[str], depth: int
) -> str | None:
    """The last message of the wanted role (else the last message); a one-item list's item."""
    messages = [item for item in value if isinstance(item, Mapping) and _role(item) is not None]
    if messages:
        # Tool results and tool-calling steps are never the question or the answer, and the
        # user's own message is never the answer.
        excluded = _TOOL_ROLES | (_USER_ROLES if roles is _ASSISTANT_ROLES else frozenset())
        messages = [
            item for item in messages if _role(item) not in excluded and not has_tool_calls(item)
        ]
        preferred = [item for item in messages if _role(item) in roles]
        for message in reversed(preferred or messages):
            text = _message_text(message)
            if text is not None:
                return text
        return None
    if len(value) == 1:
        return _find(value[0], keys, roles, depth + 1)
    return None


def _role(message: Mapping[Any, Any]) -> str | None:
    """The lower-cased role of a message-like mapping, or None when it is not a message."""
    role = message.get("role")
    if isinstance(role, str):
        return role.lower()
    if "content" in message or "parts" in message or _serialised_data(message) is not None:
        kind = message.get("type")
        if isinstance(kind, str):
            return kind.lower()
    lc_id = message.get("id")
    if message.get("lc") is not None and isinstance(lc_id, list) and lc_id:
        last = lc_id[-1]
        return last.lower() if isinstance(last, str) else None
    return None


def _serialised_data(message: Mapping[Any, Any]) -> Mapping[Any, Any] | None:
    """The `data` of a LangChain message serialised as `{"type": "ai", "data": {...}}`."""
    data = message.get("data")
    if isinstance(data, Mapping) and isinstance(message.get("type"), str) and "content" in data:
        return data
    return None


def has_tool_calls(message: Mapping[Any, Any]) -> bool:
    """True when a chat message asks for tool calls (an agent's intermediate step).

    LangChain keeps them in `tool_calls` (top level, in serialised `data` or lc `kwargs`),
    OpenAI-style dumps too; GenAI messages as `tool_call` parts.
    """
    for holder in (message, message.get("data"), message.get("kwargs")):
        if isinstance(holder, Mapping) and holder.get("tool_calls"):
            return True
    parts = message.get("parts")
    if isinstance(parts, Sequence) and not isinstance(parts, str | bytes):
        return any(isinstance(p, Mapping) and p.get("type") == "tool_call" for p in parts)
    return False


def _message_text(message: Mapping[Any, Any]) -> str | None:
    """The text of one chat message: `content` (string or parts), GenAI `parts`, LlamaIndex
    `blocks`, or the content of a serialised LangChain message (`data` or lc `kwargs`)."""
    for key in ("content", "parts", "blocks"):
        text = _parts_text(message.get(key))
        if text is not None:
            return text
    for key in ("data", "kwargs"):
        inner = message.get(key)
        if isinstance(inner, Mapping):
            text = _parts_text(inner.get("content"))
            if text is not None:
                return text
    return None


def _parts_text(content: Any) -> str | None:
    """Text of a message `content`: a string, or the joined text parts of a list."""
    if isinstance(content, str):
        return content if content.strip() else None
    if isinstance(content, Sequence) and not isinstance(content, bytes | bytearray):
        texts: list[str] = []
        for part in content:
            if isinstance(part, str):
                texts.append(part)
            elif isinstance(part, Mapping) and part.get("type", part.get("block_type", "text")) == (
                "text"
            ):
                text = part.get("content", part.get("text"))
                if isinstance(text, str):
                    texts.append(text)
        joined = "".join(texts)
        return joined if joined.strip() else None
    return None

"""The script of `OpenAIServer`: scripted replies, reply sources, and the requests it records.

`Reply` is one HTTP answer (status, JSON or raw body, headers, delay); `chat_completion` builds a
`chat.completion` body; `structured` answers in whatever shape an instructor client asked for
(a tool call or JSON content); `RecordedRequest` is what the server keeps of each request.
Kept apart from the server so the wire format of a reply can be read (and changed) on its own.
"""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeAlias

__all__ = [
    "RecordedRequest",
    "Reply",
    "ReplySource",
    "chat_completion",
    "structured",
]

_ids = itertools.count(1)


def chat_completion(
    content: str | None = None,
    *,
    tool_calls: list[dict[str, Any]] | None = None,
    model: str = "scripted-model",
    usage: tuple[int, int] | None = (10, 5),
    finish_reason: str | None = None,
) -> dict[str, Any]:
    """A `chat.completion` response body with one choice; `usage` is (prompt, completion) tokens."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls is not None:
        message["tool_calls"] = tool_calls
    body: dict[str, Any] = {
        "id": f"chatcmpl-{next(_ids)}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": finish_reason or ("tool_calls" if tool_calls else "stop"),
            }
        ],
    }
    if usage is not None:
        prompt, completion = usage
        body["usage"] = {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        }
    return body


@dataclass(frozen=True)
class Reply:
    """One scripted HTTP reply: status, a JSON or raw body, headers, and a delay before sending."""

    status: int = 200
    json: Any = None
    """A JSON-serialisable body (ignored when `body` is given)."""
    body: bytes | str | None = None
    """A raw body, sent as is (for malformed replies)."""
    headers: Mapping[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    """Seconds to wait before answering (to exercise client timeouts and latency)."""

    @classmethod
    def chat(
        cls,
        content: str,
        *,
        usage: tuple[int, int] | None = (10, 5),
        model: str = "scripted-model",
        delay_s: float = 0.0,
    ) -> Reply:
        """A successful completion whose message content is `content`."""
        return cls(json=chat_completion(content, usage=usage, model=model), delay_s=delay_s)

    @classmethod
    def tool_call(
        cls,
        name: str,
        arguments: Any,
        *,
        usage: tuple[int, int] | None = (10, 5),
        model: str = "scripted-model",
        delay_s: float = 0.0,
    ) -> Reply:
        """A completion calling tool `name` with `arguments` (JSON-encoded unless a str)."""
        call = _tool_call(name, arguments)
        return cls(
            json=chat_completion(None, tool_calls=[call], usage=usage, model=model), delay_s=delay_s
        )

    @classmethod
    def error(
        cls,
        status: int,
        message: str = "scripted error",
        *,
        headers: Mapping[str, str] | None = None,
        delay_s: float = 0.0,
    ) -> Reply:
        """An error reply in OpenAI's shape: `{"error": {"message", "type", "code"}}`."""
        body = {"error": {"message": message, "type": "scripted_error", "code": str(status)}}
        return cls(status=status, json=body, headers=dict(headers or {}), delay_s=delay_s)


ReplySource: TypeAlias = Reply | Callable[[Any], Reply]
"""A reply, or a callable building one from the request's parsed JSON body."""


def _tool_call(name: str, arguments: Any) -> dict[str, Any]:
    """One `tool_calls` entry of an assistant message."""
    encoded = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {
        "id": f"call_{next(_ids)}",
        "type": "function",
        "function": {"name": name, "arguments": encoded},
    }


def structured(
    data: Any,
    *,
    usage: tuple[int, int] | None = (10, 5),
    model: str = "scripted-model",
    delay_s: float = 0.0,
) -> Callable[[Any], Reply]:
    """A reply source answering with `data` in whatever shape the request asked for.

    A request offering tools (instructor's TOOLS mode) gets a call of the first tool with `data`
    as arguments; any other request gets `data` as JSON message content (JSON / MD_JSON modes).
    """

    def build(request: Any) -> Reply:
        """The reply in the shape this request asked for."""
        tools = request.get("tools") if isinstance(request, dict) else None
        if tools:
            name = tools[0].get("function", {}).get("name", "tool")
            return Reply.tool_call(name, data, usage=usage, model=model, delay_s=delay_s)
        content = data if isinstance(data, str) else json.dumps(data)
        return Reply.chat(content, usage=usage, model=model, delay_s=delay_s)

    return build


@dataclass(frozen=True)
class RecordedRequest:
    """One request the server received."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    json: Any
    """The parsed JSON body, or None when it was not JSON."""
    received_at: float
    """`time.monotonic()` when the request was read."""

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The chat messages of a chat-completions request (empty otherwise)."""
        if isinstance(self.json, dict) and isinstance(self.json.get("messages"), list):
            return list(self.json["messages"])
        return []

    @property
    def text(self) -> str:
        """All message contents joined by newlines: handy for asserting what the model saw."""
        parts = [m.get("content") for m in self.messages]
        return "\n".join(p for p in parts if isinstance(p, str))

"""Helpers for the judge tests: fast judge configs and per-prompt reply routing."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

from groundwire.judges import JudgeConfig
from groundwire.testing import OpenAIServer, Reply, ReplySource


def fast_config(server: OpenAIServer, **options: Any) -> JudgeConfig:
    """A judge config pointing at `server`, with millisecond backoff and no cache by default."""
    settings: dict[str, Any] = {
        "model": "judge-model",
        "base_url": server.base_url,
        "api_key": "test-key",
        "backoff_base_s": 0.01,
        "backoff_max_s": 0.05,
        "timeout_s": 5.0,
        "cache": "off",
    }
    settings.update(options)
    return JudgeConfig(**settings)


def route(routes: dict[str, Sequence[ReplySource]]) -> Callable[[Any], Reply]:
    """A reply source dispatching on a marker in the system prompt; each route's replies are used
    in order, the last one repeating. Needed because the two judges' requests race."""
    lock = threading.Lock()
    queues = {marker: list(replies) for marker, replies in routes.items()}

    def reply(request: Any) -> Reply:
        system = request["messages"][0]["content"]
        for marker, queue in queues.items():
            if marker in system:
                with lock:
                    source = queue.pop(0) if len(queue) > 1 else queue[0]
                return source if isinstance(source, Reply) else source(request)
        return Reply.error(500, f"no route for system prompt {system[:60]!r}")

    return reply


SUPPORT = "You check whether an answer is backed"
"""Marker of groundedness judge A's system prompt."""
ADDED = "You are an auditor looking for content"
"""Marker of groundedness judge B's system prompt."""
CLAIMS = "You split an answer into atomic claims"
AUDIT = "You audit one citation"

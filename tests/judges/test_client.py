"""JudgeClient against the scripted server: retries, Retry-After, timeouts, cache, concurrency."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

from groundwire.judges import (
    InvalidJudgeOutputError,
    JudgeCallError,
    JudgeClient,
    JudgeReply,
)
from groundwire.judges._prompts import GroundednessRating as Rating
from groundwire.testing import OpenAIServer, Reply, structured
from tests.judges._helpers import fast_config

MESSAGES = [{"role": "user", "content": "rate this"}]


def ask(client: JudgeClient, inputs: dict[str, Any] | None = None) -> JudgeReply[Rating]:
    """Run one `ask` from sync test code."""
    coroutine = client.ask(Rating, MESSAGES, prompt_version="test/1", inputs=inputs or {"x": 1})
    return asyncio.run(coroutine)


def test_valid_reply_usage_and_temperature(openai_server: OpenAIServer) -> None:
    """A valid reply is parsed, its usage recorded, and the request is sent at temperature 0."""
    openai_server.enqueue(structured({"rating": 2}, usage=(120, 7)))
    reply = ask(JudgeClient(fast_config(openai_server)))
    assert reply.value.rating == 2
    assert (reply.usage.input, reply.usage.output) == (120, 7)
    assert (reply.cached, reply.attempts) == (False, 1)
    request = openai_server.requests[0].json
    assert request["temperature"] == 0
    assert request["model"] == "judge-model"


def test_429_honours_retry_after(openai_server: OpenAIServer) -> None:
    """A 429 with Retry-After: 1 is retried no sooner than one second later."""
    openai_server.enqueue(
        Reply.error(429, "rate limited", headers={"Retry-After": "1"}), structured({"rating": 1})
    )
    reply = ask(JudgeClient(fast_config(openai_server)))
    first, second = openai_server.requests
    assert reply.value.rating == 1 and reply.attempts == 2
    assert second.received_at - first.received_at >= 0.95


def test_retry_after_ms_preferred(openai_server: OpenAIServer) -> None:
    """`retry-after-ms` gives sub-second waits and wins over the backoff."""
    headers = {"retry-after-ms": "300", "Retry-After": "1"}
    openai_server.enqueue(Reply.error(503, headers=headers), structured({"rating": 1}))
    ask(JudgeClient(fast_config(openai_server)))
    first, second = openai_server.requests
    assert 0.28 <= second.received_at - first.received_at < 0.9


def test_retry_after_beyond_limit_fails_at_once(openai_server: OpenAIServer) -> None:
    """A Retry-After longer than max_retry_after_s fails the call instead of waiting."""
    openai_server.enqueue(Reply.error(429, headers={"Retry-After": "120"}))
    started = time.monotonic()
    with pytest.raises(JudgeCallError, match="retry after 120"):
        ask(JudgeClient(fast_config(openai_server, max_retry_after_s=5)))
    assert time.monotonic() - started < 1.0
    assert len(openai_server.requests) == 1


def test_5xx_retried_until_exhausted(openai_server: OpenAIServer) -> None:
    """5xx replies are retried max_retries times, then the call fails naming the error."""
    openai_server.set_default(Reply.error(502, "bad gateway"))
    with pytest.raises(JudgeCallError, match=r"after 3 attempts.*bad gateway"):
        ask(JudgeClient(fast_config(openai_server, max_retries=2)))
    assert len(openai_server.requests) == 3


def test_4xx_not_retried(openai_server: OpenAIServer) -> None:
    """A 400 is the caller's fault: no retry."""
    openai_server.set_default(Reply.error(400, "bad request"))
    with pytest.raises(JudgeCallError, match="BadRequestError"):
        ask(JudgeClient(fast_config(openai_server)))
    assert len(openai_server.requests) == 1


def test_timeout_retried(openai_server: OpenAIServer) -> None:
    """A reply slower than timeout_s is abandoned and the call retried."""
    openai_server.enqueue(Reply.chat("late", delay_s=2.0), structured({"rating": 0}))
    started = time.monotonic()
    reply = ask(JudgeClient(fast_config(openai_server, timeout_s=0.3)))
    assert reply.value.rating == 0 and reply.attempts == 2
    assert time.monotonic() - started < 1.5


def test_timeouts_exhausted(openai_server: OpenAIServer) -> None:
    """Only timeouts: the call fails with a timeout error after 1 + max_retries attempts."""
    openai_server.set_default(Reply.chat("late", delay_s=2.0))
    with pytest.raises(JudgeCallError, match="Timeout"):
        ask(JudgeClient(fast_config(openai_server, timeout_s=0.2, max_retries=1)))
    assert len(openai_server.requests) == 2


def test_malformed_body_retried(openai_server: OpenAIServer) -> None:
    """A reply body that is not JSON is treated as transient and retried."""
    openai_server.enqueue(Reply(body="<html>proxy error</html>"), structured({"rating": 2}))
    assert ask(JudgeClient(fast_config(openai_server))).value.rating == 2


def test_invalid_reply_not_retried_by_client(openai_server: OpenAIServer) -> None:
    """A reply that fails validation raises InvalidJudgeOutputError at once, with its usage."""
    openai_server.enqueue(structured({"rating": 7}, usage=(50, 3)))
    with pytest.raises(InvalidJudgeOutputError) as caught:
        ask(JudgeClient(fast_config(openai_server)))
    assert caught.value.usage.input == 50
    assert len(openai_server.requests) == 1


def test_memory_cache_hit_avoids_request(openai_server: OpenAIServer) -> None:
    """The same prompt version, model and inputs are answered from the cache, for free."""
    openai_server.enqueue(structured({"rating": 2}))
    client = JudgeClient(fast_config(openai_server, cache="memory"))
    first, second = ask(client), ask(client)
    assert len(openai_server.requests) == 1
    assert second.cached and second.value.rating == 2 and second.usage.input == 0
    assert not first.cached


def test_cache_key_includes_inputs(openai_server: OpenAIServer) -> None:
    """Different inputs miss the cache."""
    openai_server.set_default(structured({"rating": 2}))
    client = JudgeClient(fast_config(openai_server, cache="memory"))
    ask(client, {"x": 1})
    ask(client, {"x": 2})
    assert len(openai_server.requests) == 2


def test_cache_off_asks_every_time(openai_server: OpenAIServer) -> None:
    """With the cache off every call reaches the server."""
    openai_server.set_default(structured({"rating": 2}))
    client = JudgeClient(fast_config(openai_server, cache="off"))
    ask(client)
    ask(client)
    assert client.cache is None and len(openai_server.requests) == 2


def test_disk_cache_survives_clients(openai_server: OpenAIServer, tmp_path: Path) -> None:
    """The disk cache serves a reply to a new client (as a second offline run would be)."""
    openai_server.set_default(structured({"rating": 1}))
    config = fast_config(openai_server, cache="disk", cache_dir=str(tmp_path / "cache"))
    ask(JudgeClient(config))
    second = ask(JudgeClient(config))
    assert second.cached and second.value.rating == 1
    assert len(openai_server.requests) == 1


def test_concurrency_limit(openai_server: OpenAIServer) -> None:
    """At most max_concurrency calls in flight: 6 calls of 0.2 s with a limit of 2 take 0.6 s."""
    openai_server.set_default(structured({"rating": 1}, delay_s=0.2))
    client = JudgeClient(fast_config(openai_server, max_concurrency=2))

    async def main() -> None:
        await asyncio.gather(
            *(client.ask(Rating, MESSAGES, prompt_version="t", inputs={"i": i}) for i in range(6))
        )

    started = time.monotonic()
    asyncio.run(main())
    elapsed = time.monotonic() - started
    assert elapsed >= 0.55, elapsed
    assert openai_server.max_in_flight == 2


def test_json_mode(openai_server: OpenAIServer) -> None:
    """mode='json' asks for JSON content instead of a tool call, and parses it."""
    openai_server.enqueue(structured({"rating": 1}))
    reply = ask(JudgeClient(fast_config(openai_server, mode="json")))
    assert reply.value.rating == 1
    assert "tools" not in openai_server.requests[0].json

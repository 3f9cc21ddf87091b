"""The scripted OpenAI-protocol test server, driven by the real openai and instructor clients."""

from __future__ import annotations

import asyncio
import json
import time

import instructor
import openai
import pytest
from pydantic import BaseModel

from groundwire.testing import OpenAIServer, Reply, structured


class _Rating(BaseModel):
    rating: int


def _client(server: OpenAIServer, **kwargs: object) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.base_url, api_key="test", max_retries=0, **kwargs)  # type: ignore[arg-type]


def test_chat_reply_and_request_recorded(openai_server: OpenAIServer) -> None:
    """A scripted chat reply reaches the client and the request body is recorded."""
    openai_server.enqueue(Reply.chat("hello", usage=(7, 3)))
    completion = _client(openai_server).chat.completions.create(
        model="m", messages=[{"role": "user", "content": "hi there"}], temperature=0
    )
    assert completion.choices[0].message.content == "hello"
    assert completion.usage is not None and completion.usage.prompt_tokens == 7
    (request,) = openai_server.requests
    assert request.path == "/v1/chat/completions"
    assert request.json["temperature"] == 0
    assert request.text == "hi there"
    assert request.headers["authorization"] == "Bearer test"


def test_structured_reply_follows_instructor_tools_mode(openai_server: OpenAIServer) -> None:
    """`structured` answers a tools request with a tool call instructor parses."""
    openai_server.enqueue(structured({"rating": 2}))
    client = instructor.from_openai(_client(openai_server), mode=instructor.Mode.TOOLS)
    result = client.chat.completions.create(
        model="m", response_model=_Rating, messages=[{"role": "user", "content": "rate"}]
    )
    assert result.rating == 2
    assert openai_server.requests[0].json["tools"][0]["function"]["name"] == "_Rating"


def test_structured_reply_follows_instructor_json_mode(openai_server: OpenAIServer) -> None:
    """`structured` answers a request without tools with JSON content."""
    openai_server.enqueue(structured({"rating": 1}))
    client = instructor.from_openai(_client(openai_server), mode=instructor.Mode.JSON)
    result = client.chat.completions.create(
        model="m", response_model=_Rating, messages=[{"role": "user", "content": "rate"}]
    )
    assert result.rating == 1
    assert "tools" not in openai_server.requests[0].json


def test_error_status_and_headers(openai_server: OpenAIServer) -> None:
    """An error reply carries its status, OpenAI error body and headers to the client."""
    openai_server.enqueue(Reply.error(429, "slow down", headers={"Retry-After": "3"}))
    with pytest.raises(openai.RateLimitError) as caught:
        _client(openai_server).chat.completions.create(model="m", messages=[])
    assert caught.value.response.headers["retry-after"] == "3"
    assert "slow down" in str(caught.value)


def test_malformed_body(openai_server: OpenAIServer) -> None:
    """A raw malformed body is sent as is."""
    openai_server.enqueue(Reply(body=b"{not json"))
    with pytest.raises(json.JSONDecodeError):
        _client(openai_server).chat.completions.create(model="m", messages=[])


def test_delay_triggers_client_timeout(openai_server: OpenAIServer) -> None:
    """A delayed reply outlasts a short client timeout."""
    openai_server.enqueue(Reply.chat("late", delay_s=2.0))
    started = time.monotonic()
    with pytest.raises(openai.APITimeoutError):
        _client(openai_server, timeout=0.2).chat.completions.create(model="m", messages=[])
    assert time.monotonic() - started < 1.5


def test_empty_script_answers_500(openai_server: OpenAIServer) -> None:
    """With no reply queued and no default the server answers 500, so the test fails loudly."""
    with pytest.raises(openai.InternalServerError):
        _client(openai_server).chat.completions.create(model="m", messages=[])


def test_default_callable_and_concurrency() -> None:
    """A default callable serves every request; delayed requests are served concurrently."""
    with OpenAIServer(lambda request: Reply.chat(request["model"], delay_s=0.2)) as server:

        async def main() -> list[str | None]:
            client = openai.AsyncOpenAI(base_url=server.base_url, api_key="t", max_retries=0)
            calls = [client.chat.completions.create(model=f"m{i}", messages=[]) for i in range(8)]
            results = await asyncio.gather(*calls)
            await client.close()
            return [r.choices[0].message.content for r in results]

        contents = asyncio.run(main())
    assert sorted(contents) == sorted(f"m{i}" for i in range(8))
    assert server.request_count == 8
    assert server.max_in_flight >= 4, "delayed replies were not served concurrently"

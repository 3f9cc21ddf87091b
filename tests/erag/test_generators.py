"""Generator adapters and batching: real LangChain, LlamaIndex and OpenAI-protocol objects."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Sequence
from typing import Any

import pytest
from langchain_core.language_models.fake_chat_models import ParrotFakeChatModel
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from llama_index.core.llms import ChatMessage, MockLLM

from groundwire.evaluators.erag import (
    DEFAULT_PROMPT,
    LangChainGenerator,
    LlamaIndexGenerator,
    OpenAIGenerator,
    as_text_generator,
    batchify_text_generator,
    erag_score,
)
from groundwire.testing import OpenAIServer, Reply

INPUTS = {"who built it?": ["Gustave Eiffel built the tower."], "when?": ["It opened in 1889."]}


class _InFlight:
    """Counts concurrent calls of an async function and remembers the peak."""

    def __init__(self) -> None:
        self.now = 0
        self.peak = 0

    async def __call__(self, query: str, documents: Sequence[str]) -> str:
        self.now += 1
        self.peak = max(self.peak, self.now)
        await asyncio.sleep(0.01)
        self.now -= 1
        return documents[0].upper()


def test_sync_function_runs_in_order_in_the_callers_thread() -> None:
    """batchify_text_generator(f) calls f per query, in order, on the calling thread."""
    calls: list[tuple[str, int]] = []

    def answer(query: str, documents: Sequence[str]) -> str:
        calls.append((query, threading.get_ident()))
        return documents[0]

    outputs = batchify_text_generator(answer)(INPUTS)
    assert outputs == {query: docs[0] for query, docs in INPUTS.items()}
    assert calls == [(query, threading.get_ident()) for query in INPUTS]


def test_async_function_respects_the_concurrency_limit() -> None:
    """An async per-query function runs concurrently, never more than max_concurrency at once."""
    counter = _InFlight()
    generator = batchify_text_generator(counter, max_concurrency=3)
    inputs = {f"q{i}": [f"doc {i}"] for i in range(10)}
    assert generator(inputs) == {f"q{i}": f"DOC {i}" for i in range(10)}
    assert counter.peak == 3


def test_sync_function_gets_as_many_threads_as_the_limit() -> None:
    """A blocking sync function runs max_concurrency calls at once, beyond the default pool."""
    lock = threading.Lock()
    state = {"now": 0, "peak": 0}

    def blocking(query: str, documents: Sequence[str]) -> str:
        with lock:
            state["now"] += 1
            state["peak"] = max(state["peak"], state["now"])
        time.sleep(0.05)
        with lock:
            state["now"] -= 1
        return query

    inputs = {f"q{i}": ["d"] for i in range(24)}
    assert batchify_text_generator(blocking, max_concurrency=12)(inputs) == {q: q for q in inputs}
    assert state["peak"] == 12


def test_limit_is_shared_by_concurrent_callers() -> None:
    """Two batches generated at once through one generator share its limit."""
    counter = _InFlight()
    generator = batchify_text_generator(counter, max_concurrency=4)

    async def both() -> None:
        batch = {f"q{i}": ["d"] for i in range(6)}
        await asyncio.gather(generator.agenerate(batch), generator.agenerate(batch))

    asyncio.run(both())
    assert counter.peak == 4


def test_prompt_template_rejects_unknown_fields() -> None:
    """A prompt template may use only {query} and {context}; others are named in the error."""
    with pytest.raises(ValueError, match=r"unknown field\(s\) \['question'\]"):
        LangChainGenerator(ParrotFakeChatModel(), prompt="{question} {context}")
    with pytest.raises(ValueError, match="max_concurrency must be a positive integer"):
        LangChainGenerator(ParrotFakeChatModel(), max_concurrency=0)


def test_langchain_chat_model_gets_the_formatted_prompt() -> None:
    """A chat model receives DEFAULT_PROMPT filled with the query and the document."""
    outputs = LangChainGenerator(ParrotFakeChatModel())(INPUTS)
    for query, documents in INPUTS.items():
        assert outputs[query] == DEFAULT_PROMPT.format(query=query, context=documents[0])


def test_langchain_chain_with_a_prompt_callable() -> None:
    """A chain starting with a prompt template gets the dict the prompt callable builds."""
    chain = (
        ChatPromptTemplate.from_messages([("human", "Q: {question}\nD: {doc}")])
        | ParrotFakeChatModel()
        | StrOutputParser()
    )
    generator = LangChainGenerator(
        chain, prompt=lambda query, docs: {"question": query, "doc": docs[0]}
    )
    assert generator({"why?": ["because"]}) == {"why?": "Q: why?\nD: because"}


def test_langchain_non_text_output_is_a_clear_error() -> None:
    """A runnable returning neither a message nor a str fails saying what to do."""
    chain = ChatPromptTemplate.from_messages([("human", "{question}")])
    generator = LangChainGenerator(chain, prompt=lambda query, docs: {"question": query})
    with pytest.raises(TypeError, match="ChatPromptValue; expected a message or a str"):
        generator({"q": ["d"]})


def test_llamaindex_mock_llm_completion_and_chat() -> None:
    """A LlamaIndex MockLLM completes the prompt string, or chats when given messages."""
    outputs = LlamaIndexGenerator(MockLLM())(INPUTS)
    assert outputs["when?"] == DEFAULT_PROMPT.format(query="when?", context="It opened in 1889.")
    chat = LlamaIndexGenerator(
        MockLLM(), prompt=lambda query, docs: [ChatMessage(role="user", content=docs[0])]
    )
    assert chat({"q": ["hello"]}) == {"q": "user: hello\nassistant: "}


def test_as_text_generator_wraps_framework_objects() -> None:
    """LangChain runnables and LlamaIndex LLMs are wrapped in their adapters automatically."""
    assert isinstance(as_text_generator(ParrotFakeChatModel()), LangChainGenerator)
    assert isinstance(as_text_generator(MockLLM()), LlamaIndexGenerator)
    with pytest.raises(TypeError, match="got int"):
        as_text_generator(3)


def _answer_from_document(request: Any) -> Reply:
    """The server's model: answers with the first word after 'Document:' in the prompt."""
    text = request["messages"][0]["content"]
    return Reply.chat(text.split("Document:\n", 1)[1].split()[0], usage=(7, 2), delay_s=0.2)


def test_openai_generator_against_a_real_http_server(openai_server: OpenAIServer) -> None:
    """Each document is one chat-completions request; calls overlap up to max_concurrency."""
    openai_server.set_default(_answer_from_document)
    generator = OpenAIGenerator(
        "tiny-model", base_url=openai_server.base_url, api_key="test", max_concurrency=4
    )
    retrieval = {f"q{i}": [f"word{i}{j} rest" for j in range(2)] for i in range(4)}
    result = erag_score(
        retrieval,
        {q: [docs[1].split()[0]] for q, docs in retrieval.items()},
        generator,
        "exact_match",
        ["P_1", "success_2"],
    )
    assert result["aggregated"] == {"P_1": 0.0, "success_2": 1.0}
    requests = openai_server.requests
    assert len(requests) == 8
    assert {r.json["model"] for r in requests} == {"tiny-model"}
    assert {r.json["temperature"] for r in requests} == {0.0}
    assert any("word11 rest" in r.text and "Question: q1" in r.text for r in requests)
    arrivals = sorted(r.received_at for r in requests)
    assert arrivals[3] - arrivals[0] < 0.15  # the first four went out together
    assert arrivals[4] - arrivals[0] >= 0.15  # the fifth waited for a free slot
    assert arrivals[-1] - arrivals[0] < 7 * 0.2  # one call after another would take longer


def test_openai_generator_survives_repeated_sync_runs(openai_server: OpenAIServer) -> None:
    """Each sync call runs in a fresh event loop with its own client, closed afterwards."""
    openai_server.set_default(Reply.chat("ok"))
    generator = OpenAIGenerator("m", base_url=openai_server.base_url, api_key="test")
    for _ in range(3):
        assert generator({"q": ["d"]}) == {"q": "ok"}
    assert openai_server.request_count == 3


def test_openai_server_error_propagates(openai_server: OpenAIServer) -> None:
    """A failing model call fails erag_score (no label is invented)."""
    import openai

    openai_server.set_default(Reply.error(500, "boom"))
    generator = OpenAIGenerator("m", base_url=openai_server.base_url, api_key="test", max_retries=0)
    with pytest.raises(openai.InternalServerError, match="boom"):
        erag_score({"q": ["d"]}, {"q": ["x"]}, generator, "contains", ["P_1"])


def test_aerag_score_equals_erag_score() -> None:
    """The async form gives the sync form's result, for adapters and plain callables alike."""
    from groundwire.evaluators.erag import aerag_score

    retrieval = {"q1": ["paris, of course", "rome"], "q2": ["nothing", "berlin it is"]}
    expected = {"q1": ["Paris"], "q2": ["Berlin"]}
    metrics = ["P", "success_1", "map"]

    def echo(inputs: dict[str, list[str]]) -> dict[str, str]:
        return {query: documents[0] for query, documents in inputs.items()}

    parrot = LangChainGenerator(ParrotFakeChatModel(), prompt="{context}")
    sync = erag_score(retrieval, expected, echo, "contains", metrics)
    assert sync["aggregated"] == {"P": 0.5, "success_1": 0.5, "map": 0.75}
    for generator in (echo, parrot):
        assert asyncio.run(aerag_score(retrieval, expected, generator, "contains", metrics)) == sync
    assert erag_score(retrieval, expected, parrot, "contains", metrics) == sync
